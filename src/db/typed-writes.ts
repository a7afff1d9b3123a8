// The bulk upsert's statements (issue 30, point 9): the read of a batch's students by sourcedId, and
// its writes as the OneRoster import writes, one array per column unnested by PostgreSQL, in place
// of Prisma's model operations (one bind parameter per value, one UPDATE per set of equal changes).
//
// As the typed reads (typed-reads.ts), whose registry and placement rule they share: built here
// only, from the fixed column table below, and registered as they are built; the school is their $1,
// bound by wall 1's step (tenant.ts, typedStatementArgs), never by a caller, and wall 1 refuses a
// write that does not take it where the rule says before it runs: the INSERT's first column
// (`INSERT INTO students (school_id, ...) SELECT $1::uuid, ...`), the UPDATE's first condition
// (`WHERE s.school_id = $1 AND s.id = u.id`). Wall 2 holds as for every statement: they run in the
// school's session (an interactive transaction of the school client), and row-level security
// admits (USING) and lets be written (WITH CHECK) the school's rows only.
//
// The school client runs them only for a caller who reaches the whole school with every column, on
// plain PostgreSQL or PGlite (`$typedWrites()`); on Citus, and for a narrower caller, the upsert
// keeps the model operations.
import { LRUCache } from 'lru-cache'
import { columnOf, COLUMN_TYPES, registerStatement, type TypedStatement } from './typed-reads.js'

/** The fields of a student a bulk upsert writes, in the order of their columns in a statement. */
export const STUDENT_WRITTEN = [
  'sourcedId', 'fullName', 'givenName', 'familyName', 'preferredName', 'studentNumber', 'email',
  'dateOfBirth', 'gradeLevel', 'status', 'enrollmentStartDate', 'enrollmentEndDate'
] as const satisfies ReadonlyArray<keyof typeof COLUMN_TYPES.Student>

export type StudentWritten = typeof STUDENT_WRITTEN[number]

const WRITTEN: ReadonlySet<string> = new Set(STUDENT_WRITTEN)

/** The SQL type of a written field's array: enums by their quoted names. */
function arrayType (field: StudentWritten | 'id'): string {
  const type = COLUMN_TYPES.Student[field]
  return /^[a-z0-9_]+$/.test(type) ? `${type}[]` : `"${type}"[]`
}

/** A field's value as its array carries it: a day as YYYY-MM-DD (never a Date the driver would shift to its time zone). */
function arrayValue (field: StudentWritten, value: unknown): unknown {
  if (value instanceof Date) {
    if (COLUMN_TYPES.Student[field] !== 'date') throw new Error(`${field} is not a day`)
    return value.toISOString().slice(0, 10)
  }
  return value ?? null
}

/** A field's value as a row read by studentsBySourcedId gives it: days and enums as text. */
export function comparable (field: StudentWritten, value: unknown): unknown {
  return value instanceof Date ? arrayValue(field, value) : value ?? null
}

/** Fields given, in the table's order: the key of a statement's shape. */
function ordered (fields: Iterable<string>): StudentWritten[] {
  const given = new Set(fields)
  for (const field of given) if (!WRITTEN.has(field)) throw new Error(`A bulk upsert does not write ${field}`)
  return STUDENT_WRITTEN.filter((field) => given.has(field))
}

const kept = new LRUCache<string, TypedStatement>({ max: 10_000 })

function statement (key: string, build: () => TypedStatement): TypedStatement {
  let found = kept.get(key)
  if (found === undefined) {
    found = build()
    kept.set(key, found)
  }
  // Registered again if it was dropped from the registry meanwhile (the two are bounded apart).
  return registerStatement(found)
}

/** A statement with its parameters (the school not among them: wall 1 binds it). */
export interface Write {
  readonly statement: TypedStatement
  readonly values: unknown[]
}

/**
 * The school's students with these sourcedIds, with the written fields (days and enums as text) and
 * their ids and versions: one read by the unique index (school_id, sourced_id).
 */
export function studentsBySourcedId (sourcedIds: readonly string[]): Write {
  return {
    statement: statement('lookup', () => {
      const columns = STUDENT_WRITTEN.map((field) => {
        const type = COLUMN_TYPES.Student[field]
        const text = type === 'date' || !/^[a-z0-9_]+$/.test(type) ? '::text' : ''
        return `s.${columnOf(field)}${text} AS "${field}"`
      })
      return {
        sql: `SELECT s.id AS "id", s.version AS "version", ${columns.join(', ')} FROM students s WHERE s.school_id = $1 AND s.sourced_id = ANY($2::text[])`,
        model: 'Student',
        joined: [],
        columns: ['Student.id', 'Student.version', ...STUDENT_WRITTEN.map((field) => `Student.${field}`)]
      }
    }),
    values: [[...sourcedIds]]
  }
}

/**
 * New students, each with its id and the fields given (the same ones for every row; the others
 * take their columns' defaults, as a model create leaves them out): one INSERT of unnested arrays,
 * returning each row's id, sourcedId and version.
 */
export function insertStudents (fields: Iterable<string>, rows: ReadonlyArray<{ id: string, data: Readonly<Record<string, unknown>> }>): Write {
  const given = ordered(fields)
  const columns = ['id', ...given.map(columnOf)]
  return {
    statement: statement(`insert:${given.join(',')}`, () => ({
      sql: `INSERT INTO students (school_id, ${columns.join(', ')}, updated_at) SELECT $1::uuid, ${columns.map((c) => `u.${c}`).join(', ')}, now() ` +
        `FROM unnest(${['id' as const, ...given].map((field, i) => `$${i + 2}::${arrayType(field)}`).join(', ')}) AS u(${columns.join(', ')}) ` +
        'RETURNING id AS "id", sourced_id AS "sourcedId", version AS "version"',
      model: 'Student',
      joined: [],
      columns: given.map((field) => `Student.${field}`),
      operation: 'createManyAndReturn'
    })),
    values: [rows.map((row) => row.id), ...given.map((field) => rows.map((row) => arrayValue(field, row.data[field])))]
  }
}

/**
 * Changes to students by id, the same fields for every row (each row its own values): one UPDATE
 * from unnested arrays, returning each row's id and its version after the write.
 */
export function updateStudents (fields: Iterable<string>, rows: ReadonlyArray<{ id: string, changes: Readonly<Record<string, unknown>> }>): Write {
  const given = ordered(fields)
  if (given.length === 0) throw new Error('An update changes a field')
  const columns = given.map(columnOf)
  return {
    statement: statement(`update:${given.join(',')}`, () => ({
      sql: `UPDATE students s SET ${columns.map((c) => `${c} = u.${c}`).join(', ')}, updated_at = now() ` +
        `FROM unnest(${['id' as const, ...given].map((field, i) => `$${i + 2}::${arrayType(field)}`).join(', ')}) AS u(id, ${columns.join(', ')}) ` +
        'WHERE s.school_id = $1 AND s.id = u.id RETURNING s.id AS "id", s.version AS "version"',
      model: 'Student',
      joined: [],
      columns: given.map((field) => `Student.${field}`),
      operation: 'updateManyAndReturn'
    })),
    values: [rows.map((row) => row.id), ...given.map((field) => rows.map((row) => arrayValue(field, row.changes[field])))]
  }
}
