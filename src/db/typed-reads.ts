// The hot reads as SQL statements (issue 29): the lists of students, teachers and classrooms and
// their relations, read through Prisma's raw-query API (`$queryRawUnsafe`) instead of its model
// queries, which cost two to three times as much per request (BENCHMARKS.md).
//
// Statements are built here only, from the tables below, and registered as they are built (and the
// bulk upsert's reads and writes in typed-writes.ts, from its own fixed table): the school client
// runs no other raw statement. Every statement takes the school as its parameter $1,
// and every tenant table it reads carries `<alias>.school_id = $1`; the statements' own parameters
// follow. The school is bound by wall 1's step (tenant.ts, typedStatementArgs), never by a caller,
// and a statement that is not registered, or reads a table without that condition, is refused
// before it runs. Wall 2 holds as for every statement: enterSchoolSession runs it in the school's
// session, and row-level security admits the school's rows only.
//
// Types: a statement's columns are the model's scalar fields, aliased to their Prisma names, so its
// rows have the generated client's row types (`Pick<Student, ...>`); COLUMN_TYPES says the SQL type
// of each, checked against the generated client by the compiler and against the migrated database
// by test/typed-reads.test.ts (part of `npm test`, on the embedded database too).
import { LRUCache } from 'lru-cache'
import type { Prisma } from '../generated/prisma/client.js'

/** The models whose lists are read as statements, and their tables. */
export const TYPED_TABLES = {
  Student: 'students',
  Teacher: 'teachers',
  Classroom: 'classrooms'
} as const

export type TypedModel = keyof typeof TYPED_TABLES

/** The SQL type of each scalar field of the typed models (PostgreSQL's udt_name): checked against the database. */
export const COLUMN_TYPES = {
  Student: {
    schoolId: 'uuid',
    id: 'uuid',
    sourcedId: 'text',
    fullName: 'text',
    givenName: 'text',
    familyName: 'text',
    preferredName: 'text',
    studentNumber: 'text',
    email: 'text',
    dateOfBirth: 'date',
    gradeLevel: 'GradeLevel',
    status: 'StudentStatus',
    enrollmentStartDate: 'date',
    enrollmentEndDate: 'date',
    classroomId: 'uuid',
    createdAt: 'timestamptz',
    updatedAt: 'timestamptz',
    version: 'int4'
  },
  Teacher: {
    schoolId: 'uuid',
    id: 'uuid',
    sourcedId: 'text',
    fullName: 'text',
    givenName: 'text',
    familyName: 'text',
    preferredName: 'text',
    email: 'text',
    title: 'text',
    status: 'TeacherStatus',
    createdAt: 'timestamptz',
    updatedAt: 'timestamptz',
    version: 'int4'
  },
  Classroom: {
    schoolId: 'uuid',
    id: 'uuid',
    sourcedId: 'text',
    name: 'text',
    gradeLevel: 'GradeLevel',
    subject: 'text',
    createdAt: 'timestamptz',
    updatedAt: 'timestamptz',
    version: 'int4'
  }
} as const satisfies {
  Student: Record<Prisma.StudentScalarFieldEnum, string>
  Teacher: Record<Prisma.TeacherScalarFieldEnum, string>
  Classroom: Record<Prisma.ClassroomScalarFieldEnum, string>
}

/** The column of a field: its name in snake case (schema.prisma maps every field so). */
export function columnOf (field: string): string {
  return field.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase())
}

const ALIAS: Readonly<Record<TypedModel, string>> = { Student: 's', Teacher: 't', Classroom: 'c' }

/**
 * What a registered statement does, as the model operation it stands for: a read (`findMany`, the
 * default), or one of the bulk upsert's writes (typed-writes.ts), whose returned rows the access
 * audit counts as records written.
 */
export type TypedOperation = 'findMany' | 'createManyAndReturn' | 'updateManyAndReturn'

/** A registered statement: what it reads or writes (the access audit counts its rows as records of `model`). */
export interface TypedStatement {
  readonly sql: string
  readonly model: TypedModel
  /** The fields of the joined classroom, read as `classroom.<field>` (a student's, when selected). */
  readonly classroom: readonly string[] | undefined
  /** A write's operation (typed-writes.ts); a read when left out. */
  readonly operation?: TypedOperation
}

/** The operation a registered statement stands for. */
export function operationOf (statement: TypedStatement): TypedOperation {
  return statement.operation ?? 'findMany'
}

// Statements are kept per shape (list, columns, filter kinds, order, cursor or not): a few dozen in
// practice, but a caller chooses the columns, so the kept ones are bounded. A statement dropped
// between its building and its run (only by thousands of other shapes in between) is refused by
// wall 1 like any unknown statement: fails closed.
const KEPT = 10_000
const REGISTERED = new LRUCache<string, TypedStatement>({ max: KEPT })

/** The registered statement of this text, or undefined. */
export function registeredStatement (sql: unknown): TypedStatement | undefined {
  return typeof sql === 'string' ? REGISTERED.get(sql) : undefined
}

/**
 * Registers a statement. Exported for the tests that show what wall 1 refuses; the school client
 * still refuses a registered statement whose tables do not take the school.
 */
export function registerStatement (statement: TypedStatement): TypedStatement {
  const known = REGISTERED.get(statement.sql)
  if (known !== undefined) return known
  REGISTERED.set(statement.sql, statement)
  return statement
}

const TENANT_TABLES: ReadonlySet<string> = new Set(['students', 'teachers', 'classrooms', 'teacher_classrooms'])
const SCHOOL_CONDITION = /\b([a-z_]+)\.school_id = \$1\b/g
const TABLE_REFERENCE = /\b(?:FROM|JOIN)\s+([a-z_]+)\s+([a-z_]+)\b/gi
const placements = new LRUCache<string, { error: string | null }>({ max: KEPT })

/**
 * Why a statement does not take the school where wall 1 puts it ($1, in `<alias>.school_id = $1` of
 * every table it reads), or null when it does. Statements are few: the answer is kept per text.
 */
export function schoolPlacementError (sql: string): string | null {
  const known = placements.get(sql)
  if (known !== undefined) return known.error
  const error = placementError(sql)
  placements.set(sql, { error })
  return error
}

function placementError (sql: string): string | null {
  if (sql.includes(';')) return 'a statement is one statement'
  if (/^(?:INSERT|UPDATE)\b/i.test(sql)) return writePlacementError(sql)
  if (!/^SELECT\b/.test(sql)) return 'a statement is a SELECT, or one of the writes of typed-writes.ts'
  const filtered = new Set([...sql.matchAll(SCHOOL_CONDITION)].map((m) => m[1]!))
  const tables = [...sql.matchAll(TABLE_REFERENCE)]
  if (tables.length === 0) return 'a statement reads a table'
  // Only the tenant tables, each named with an alias: `FROM students s`, `JOIN classrooms c`.
  const mentioned = /\b(?:FROM|JOIN)\b/gi
  if ([...sql.matchAll(mentioned)].length !== tables.length) return 'every table a statement reads has an alias'
  for (const [, table, alias] of tables) {
    if (!TENANT_TABLES.has(table!)) return `a statement reads the tenant tables only (not ${table})`
    if (!filtered.has(alias!)) return `${table} ${alias} does not take the school (${alias}.school_id = $1)`
  }
  return null
}

// The writes (typed-writes.ts) have two forms, and only these, each taking the school exactly once,
// where wall 1 binds it: an INSERT whose first column is school_id and whose rows are selected from
// unnested arrays with $1 as that column's value; an UPDATE of one aliased tenant table from
// unnested arrays, whose WHERE begins with `<alias>.school_id = $1 AND`. No other table, no
// subquery, no OR (which would escape the WHERE's first condition), no ON CONFLICT, no CTE, and
// school_id named once: an UPDATE cannot set it, an INSERT cannot take it from elsewhere.
const INSERT_FORM = /^INSERT INTO ([a-z_]+) \(school_id, [a-z_]+(?:, [a-z_]+)*\) SELECT \$1::uuid, (?:[^()$]|\(\))+ FROM unnest\(([^()]*)\) AS u\([a-z_]+(?:, [a-z_]+)*\) RETURNING [^()$]+$/
const UPDATE_FORM = /^UPDATE ([a-z_]+) ([a-z_]+) SET (?:[^()$]|\(\))+ FROM unnest\(([^()]*)\) AS u\([a-z_]+(?:, [a-z_]+)*\) WHERE \2\.school_id = \$1 AND (?:[^()$])+ RETURNING [^()$]+$/
/** The arrays a write unnests: its own parameters ($2 on), each typed as an array. */
const UNNESTED = /^\$(?:[2-9]|[1-9]\d+)::(?:[a-z0-9_]+|"[A-Za-z]+")\[\](?:, \$(?:[2-9]|[1-9]\d+)::(?:[a-z0-9_]+|"[A-Za-z]+")\[\])*$/

function writePlacementError (sql: string): string | null {
  if ([...sql.matchAll(/\$1(?!\d)/g)].length !== 1) return 'a write takes the school ($1) once'
  if ([...sql.matchAll(/\bschool_id\b/g)].length !== 1) return 'a write names school_id once, where it takes the school'
  if (/\b(?:OR|JOIN|WITH|CONFLICT|USING)\b/i.test(sql)) return 'a write reads no other table and has no OR, JOIN, CTE or ON CONFLICT'
  if ([...sql.matchAll(/\bFROM\b/gi)].length !== 1) return 'a write reads unnested arrays only (one FROM unnest)'
  const insert = INSERT_FORM.exec(sql)
  const update = insert === null ? UPDATE_FORM.exec(sql) : null
  if (insert === null && update === null) {
    return 'a write is INSERT INTO <table> (school_id, ...) SELECT $1::uuid, ... FROM unnest(...) AS u(...) RETURNING ..., ' +
      'or UPDATE <table> <alias> SET ... FROM unnest(...) AS u(...) WHERE <alias>.school_id = $1 AND ... RETURNING ...'
  }
  const table = insert?.[1] ?? update![1]!
  if (!TENANT_TABLES.has(table)) return `a statement writes the tenant tables only (not ${table})`
  if ([...sql.matchAll(/\bSELECT\b/gi)].length !== (insert === null ? 0 : 1)) return 'a write has no subquery'
  if (!UNNESTED.test(insert?.[2] ?? update![3]!)) return 'a write unnests its own parameters only ($2 on, each an array)'
  return null
}

/**
 * Why wall 1 refuses the statement `sql`, or null: it is not one of this module's, or it does not
 * take the school where wall 1 puts it.
 */
export function statementRefusal (sql: unknown): string | null {
  if (registeredStatement(sql) === undefined) return 'Raw SQL is not available on a school-scoped client'
  const error = schoolPlacementError(sql as string)
  return error === null ? null : `The statement does not take the school: ${error}`
}

const unfiltered = new LRUCache<string, string>({ max: KEPT })

/**
 * For the isolation tests that take wall 1 away only: the registered statement `sql` with its
 * school conditions taken out (`$1::uuid IS NOT NULL`), so that wall 2 alone stands.
 */
export function withoutSchoolConditions (sql: string): string {
  let text = unfiltered.get(sql)
  if (text === undefined) {
    text = sql.replace(SCHOOL_CONDITION, '$$1::uuid IS NOT NULL')
    unfiltered.set(sql, text)
    registerStatement({ ...registeredStatement(sql)!, sql: text })
  }
  return text
}

// ---- The statements ---------------------------------------------------------------------------

/** One condition of a list's filter. */
export type ListCondition =
  | { readonly kind: 'equals', readonly field: string, readonly value: string }
  | { readonly kind: 'equalsIgnoringCase', readonly field: string, readonly value: string }
  /** Any of the fields contains the text (a LIKE pattern with its wildcards escaped), ignoring case. */
  | { readonly kind: 'contains', readonly fields: readonly string[], readonly pattern: string }
  /** A teacher with an assignment to this classroom. */
  | { readonly kind: 'teaches', readonly classroomId: string }

/** What a list reads: its columns, filter, order, cursor and size. */
export interface ListRead {
  readonly model: TypedModel
  /** Scalar fields of the model; `id` is always read. */
  readonly fields: readonly string[]
  /** Student only: the fields of its classroom, read by a join (`id` always), or undefined. */
  readonly classroom?: readonly string[] | undefined
  readonly conditions: readonly ListCondition[]
  /** The fields of the order, the last one `id`. */
  readonly order: readonly string[]
  readonly descending: boolean
  /** The cursor's sort key, one value per field of the order; undefined for the first page. */
  readonly after?: readonly unknown[] | undefined
  readonly take: number
}

/** A statement with its parameters (the school not among them: wall 1 binds it). */
export interface Read {
  readonly statement: TypedStatement
  readonly values: unknown[]
}

const statements = new LRUCache<string, TypedStatement>({ max: KEPT })

function columnType (model: TypedModel, field: string): string {
  const type = (COLUMN_TYPES[model] as Record<string, string>)[field]
  if (type === undefined) throw new Error(`${model} has no column ${field}`)
  return type
}

// Columns of a classroom that are never null: one of them tells a joined classroom from none.
const NOT_NULL: ReadonlySet<string> = new Set(['id', 'name', 'createdAt', 'updatedAt'])

/** The fields of a joined classroom read: those selected, and `id` when none of them is never null. */
function joinedFields (fields: readonly string[]): string[] {
  return fields.some((field) => NOT_NULL.has(field)) ? [...fields] : ['id', ...fields]
}

/** `alias.column AS "field"` for each field (id first, once; a joined classroom's as joinedFields). */
function selectList (model: TypedModel, alias: string, fields: readonly string[], prefix = ''): string[] {
  const unique = prefix === '' ? ['id', ...fields.filter((field) => field !== 'id')] : joinedFields(fields)
  return unique.map((field) => {
    const type = columnType(model, field)
    // Enums as text: the answer's strings, whatever the driver makes of a type it does not know.
    const column = type === 'GradeLevel' || type.endsWith('Status') ? `${alias}.${columnOf(field)}::text` : `${alias}.${columnOf(field)}`
    return `${column} AS "${prefix}${field}"`
  })
}

/** The placeholder of a cursor value of `field`, typed as its column. */
function typedPlaceholder (model: TypedModel, field: string, n: number): string {
  const type = columnType(model, field)
  return type === 'timestamptz' ? `$${n}::timestamptz` : type === 'uuid' ? `$${n}::uuid` : `$${n}`
}

/** The statement and parameters of one page of a list. */
export function listRead (read: ListRead): Read {
  const values: unknown[] = []
  const parts: string[] = []
  const a = ALIAS[read.model]
  for (const condition of read.conditions) {
    switch (condition.kind) {
      case 'equals': {
        values.push(condition.value)
        const type = columnType(read.model, condition.field)
        parts.push(type === 'uuid'
          ? `${a}.${columnOf(condition.field)} = $${values.length + 1}::uuid`
          : `${a}.${columnOf(condition.field)}::text = $${values.length + 1}`)
        break
      }
      case 'equalsIgnoringCase':
        values.push(condition.value)
        parts.push(`lower(${a}.${columnOf(condition.field)}) = lower($${values.length + 1})`)
        break
      case 'contains':
        values.push(`%${condition.pattern}%`)
        parts.push(`(${condition.fields.map((field) => `${a}.${columnOf(field)} ILIKE $${values.length + 1}`).join(' OR ')})`)
        break
      case 'teaches':
        values.push(condition.classroomId)
        parts.push(`EXISTS (SELECT 1 FROM teacher_classrooms tc WHERE tc.school_id = $1 AND tc.teacher_id = ${a}.id AND tc.classroom_id = $${values.length + 1}::uuid)`)
        break
    }
  }
  if (read.after !== undefined) {
    // As paging.ts's keysetAfter: the leading bound starts the index scan at the cursor, the row
    // comparison drops the ties before it.
    const first = values.length + 2
    values.push(...read.after)
    const placeholders = read.order.map((field, i) => typedPlaceholder(read.model, field, first + i))
    const op = read.descending ? '<' : '>'
    const columns = read.order.map((field) => `${a}.${columnOf(field)}`)
    if (read.order.length > 1) parts.push(`${columns[0]} ${op}= ${placeholders[0]}`)
    parts.push(`(${columns.join(', ')}) ${op} (${placeholders.join(', ')})`)
  }
  values.push(read.take)
  const shape = JSON.stringify([read.model, read.fields, read.classroom, read.conditions.map((c) => c.kind === 'contains' ? [c.kind, c.fields] : c.kind === 'teaches' ? [c.kind] : [c.kind, c.field]), read.order, read.descending, read.after !== undefined])
  let statement = statements.get(shape)
  if (statement === undefined) {
    const table = TYPED_TABLES[read.model]
    const select = selectList(read.model, a, read.fields)
    let from = `${table} ${a}`
    const classroom = read.model === 'Student' ? read.classroom : undefined
    if (classroom !== undefined) {
      select.push(...selectList('Classroom', 'c', classroom, 'classroom.'))
      from += ' LEFT JOIN classrooms c ON c.school_id = $1 AND c.id = s.classroom_id'
    }
    const direction = read.descending ? 'DESC' : 'ASC'
    const sql = `SELECT ${select.join(', ')} FROM ${from} WHERE ${[`${a}.school_id = $1`, ...parts].join(' AND ')} ` +
      `ORDER BY ${read.order.map((field) => `${a}.${columnOf(field)} ${direction}`).join(', ')} LIMIT $${values.length + 1}`
    statement = registerStatement({ sql, model: read.model, classroom })
    statements.set(shape, statement)
  }
  // Registered again if it was dropped from the registry meanwhile (the two are bounded apart).
  return { statement: registerStatement(statement), values }
}

/** The relations of a page read as one statement each, for all of the page's rows (loaders). */
export type RelationName = 'Classroom.teachers' | 'Teacher.classrooms' | 'Classroom.students'

/**
 * The relations through the assignments (teacher_classrooms tc): the related model, its alias, the
 * assignment's column of the parent and of the related record, and the related records' order.
 */
const THROUGH_ASSIGNMENTS = {
  'Classroom.teachers': { model: 'Teacher', alias: 't', parent: 'classroom_id', related: 'teacher_id', order: 't.full_name' },
  'Teacher.classrooms': { model: 'Classroom', alias: 'c', parent: 'teacher_id', related: 'classroom_id', order: 'c.name' }
} as const satisfies Partial<Record<RelationName, { model: TypedModel, alias: string, parent: string, related: string, order: string }>>

/**
 * The statement of a relation for parents `ids`: each row is a record of the related model with the
 * parent's id as `$parent`, in the relation's order. `fields` of the related model (`id` always);
 * Classroom.students reads whole rows with the student's classroom.
 */
export function relationRead (relation: RelationName, fields: readonly string[], ids: readonly string[]): Read {
  const shape = JSON.stringify([relation, fields])
  let statement = statements.get(shape)
  if (statement === undefined) {
    let sql: string
    let model: TypedModel
    let classroom: readonly string[] | undefined
    if (relation === 'Classroom.students') {
      model = 'Student'
      classroom = Object.keys(COLUMN_TYPES.Classroom)
      sql = `SELECT s.classroom_id AS "$parent", ${[...selectList('Student', 's', fields), ...selectList('Classroom', 'c', classroom, 'classroom.')].join(', ')} ` +
        'FROM students s LEFT JOIN classrooms c ON c.school_id = $1 AND c.id = s.classroom_id ' +
        'WHERE s.school_id = $1 AND s.classroom_id = ANY($2::uuid[]) ORDER BY s.full_name ASC, s.id ASC'
    } else {
      const through = THROUGH_ASSIGNMENTS[relation]
      const { alias, parent, related } = through
      model = through.model
      sql = `SELECT tc.${parent} AS "$parent", ${selectList(model, alias, fields).join(', ')} FROM teacher_classrooms tc ` +
        `JOIN ${TYPED_TABLES[model]} ${alias} ON ${alias}.school_id = $1 AND ${alias}.id = tc.${related} ` +
        `WHERE tc.school_id = $1 AND tc.${parent} = ANY($2::uuid[]) ORDER BY ${through.order} ASC, tc.${related} ASC`
    }
    statement = registerStatement({ sql, model, classroom })
    statements.set(shape, statement)
  }
  return { statement: registerStatement(statement), values: [ids] }
}

/**
 * The rows of a statement as the model path returns them: a student's joined classroom becomes its
 * `classroom` (null without one). One pass; nothing is done to a row that has no join.
 */
export function rowsOf<T> (statement: TypedStatement, rows: Array<Record<string, unknown>>): T[] {
  const classroom = statement.classroom
  if (classroom !== undefined) {
    const fields = joinedFields(classroom)
    const keys = fields.map((field) => 'classroom.' + field)
    const present = 'classroom.' + fields.find((field) => NOT_NULL.has(field))!
    for (const row of rows) {
      if (row[present] === null) {
        row.classroom = null
        continue
      }
      const nested: Record<string, unknown> = {}
      for (let i = 0; i < fields.length; i++) nested[fields[i]!] = row[keys[i]!]
      row.classroom = nested
    }
  }
  return rows as T[]
}

/** Rows of a relation's statement grouped by their parent, in the parents' order. */
export function byParent<T> (statement: TypedStatement, rows: Array<Record<string, unknown>>, ids: readonly string[]): T[][] {
  const groups = new Map<string, T[]>()
  for (const row of rowsOf<T & { $parent: string }>(statement, rows)) {
    const list = groups.get(row.$parent)
    if (list === undefined) groups.set(row.$parent, [row])
    else list.push(row)
  }
  return ids.map((id) => groups.get(id) ?? [])
}
