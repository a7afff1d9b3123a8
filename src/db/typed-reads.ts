// The reads of lists and relations as SQL statements (issues 29 and 36), for every caller: the
// lists of students, teachers and classrooms and their relations, read through Prisma's raw-query
// API (`$queryRawUnsafe`) instead of its model queries, which cost two to three times as much per
// request (BENCHMARKS.md).
//
// Statements are built here only, from the tables below, and registered as they are built (and the
// bulk upsert's reads and writes in typed-writes.ts, from its own fixed table): the school client
// runs no other raw statement. Every statement takes the school as its parameter $1, and every
// tenant table it reads carries `<alias>.school_id = $1`, and every join and subquery joins on the
// school too (`c.school_id = s.school_id`: on Citus, the distribution column, so that a statement
// runs on the school's shard group even where the school's conditions are taken away). A statement
// built for a teacher also takes the teacher as $2, and every tenant table it reads, the
// subqueries' included, carries the teacher's reach (teacherReach below: the teacher's classrooms through their assignments, the
// students of those classrooms, the teachers of those classrooms and the teacher). The statements'
// own parameters follow. The school and the teacher are bound by wall 1's step (tenant.ts,
// typedStatementArgs), never by a caller, and a statement that is not registered, reads a table
// without those conditions, or was built for another kind of caller, is refused before it runs. A
// statement also says which columns it reads (selects, filters or orders by): wall 1's reach step
// refuses one that reads a column outside the caller's scopes (reach.ts). Wall 2 holds as for every
// statement: enterSchoolSession runs it in the school's session (with the teacher, for a teacher),
// and row-level security admits the school's rows, and the teacher's reach, only.
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
  Classroom: 'classrooms',
  AcademicSession: 'academic_sessions',
  Course: 'courses',
  // A teacher's assignments, read as OneRoster's enrollments of teachers (src/oneroster/enrollments.ts).
  TeacherClassroom: 'teacher_classrooms',
  // A student's guardians, parents and relatives, read as OneRoster's users of those roles (src/oneroster/kinds.ts).
  Agent: 'agents'
} as const

export type TypedModel = keyof typeof TYPED_TABLES

/** The SQL type of each scalar field of the typed models (PostgreSQL's udt_name): checked against the database. */
/** A person's names and identifiers: the same columns on students, teachers and agents. */
const PERSON_NAMES = {
  givenName: 'text',
  familyName: 'text',
  preferredName: 'text',
  middleName: 'text',
  preferredMiddleName: 'text',
  preferredLastName: 'text',
  pronouns: 'text',
  username: 'text',
  userIds: '_text'
} as const

/** A user's roles in the school (OneRoster's roles.csv): the same columns on students, teachers and agents. */
const ROLE_TYPES = {
  roleBeginDate: 'date',
  roleEndDate: 'date',
  secondaryRoles: 'jsonb'
} as const

/** OneRoster's demographics: the same columns on students and teachers (DEMOGRAPHIC_COLUMNS). */
const DEMOGRAPHIC_TYPES = {
  dateOfBirth: 'date',
  sex: 'text',
  americanIndianOrAlaskaNative: 'bool',
  asian: 'bool',
  blackOrAfricanAmerican: 'bool',
  nativeHawaiianOrOtherPacificIslander: 'bool',
  white: 'bool',
  demographicRaceTwoOrMoreRaces: 'bool',
  hispanicOrLatinoEthnicity: 'bool',
  countryOfBirthCode: 'text',
  stateOfBirthAbbreviation: 'text',
  cityOfBirth: 'text',
  publicSchoolResidenceStatus: 'text'
} as const

export const COLUMN_TYPES = {
  Student: {
    schoolId: 'uuid',
    id: 'uuid',
    sourcedId: 'text',
    fullName: 'text',
    ...PERSON_NAMES,
    sms: 'text',
    phone: 'text',
    ...ROLE_TYPES,
    studentNumber: 'text',
    email: 'text',
    ...DEMOGRAPHIC_TYPES,
    gradeLevel: 'GradeLevel',
    status: 'StudentStatus',
    enrollmentStartDate: 'date',
    enrollmentEndDate: 'date',
    enrollmentSourcedId: 'text',
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
    ...PERSON_NAMES,
    sms: 'text',
    phone: 'text',
    ...ROLE_TYPES,
    email: 'text',
    title: 'text',
    ...DEMOGRAPHIC_TYPES,
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
    courseId: 'uuid',
    termIds: '_uuid',
    classCode: 'text',
    classType: 'text',
    location: 'text',
    periods: '_text',
    grades: '_text',
    subjects: '_text',
    subjectCodes: '_text',
    createdAt: 'timestamptz',
    updatedAt: 'timestamptz',
    version: 'int4'
  },
  AcademicSession: {
    schoolId: 'uuid',
    id: 'uuid',
    sourcedId: 'text',
    title: 'text',
    type: 'AcademicSessionType',
    startDate: 'date',
    endDate: 'date',
    schoolYear: 'int4',
    parentId: 'uuid',
    version: 'int4',
    createdAt: 'timestamptz',
    updatedAt: 'timestamptz'
  },
  Course: {
    schoolId: 'uuid',
    id: 'uuid',
    sourcedId: 'text',
    title: 'text',
    courseCode: 'text',
    grades: '_text',
    subjects: '_text',
    subjectCodes: '_text',
    schoolYearId: 'uuid',
    version: 'int4',
    createdAt: 'timestamptz',
    updatedAt: 'timestamptz'
  },
  TeacherClassroom: {
    schoolId: 'uuid',
    teacherId: 'uuid',
    classroomId: 'uuid',
    role: 'TeacherRole',
    createdAt: 'timestamptz',
    id: 'uuid',
    sourcedId: 'text',
    beginDate: 'date',
    endDate: 'date',
    updatedAt: 'timestamptz'
  },
  Agent: {
    schoolId: 'uuid',
    id: 'uuid',
    sourcedId: 'text',
    role: 'text',
    ...PERSON_NAMES,
    email: 'text',
    sms: 'text',
    phone: 'text',
    ...ROLE_TYPES,
    status: 'TeacherStatus',
    studentIds: '_uuid',
    version: 'int4',
    createdAt: 'timestamptz',
    updatedAt: 'timestamptz'
  }
} as const satisfies {
  Student: Record<Prisma.StudentScalarFieldEnum, string>
  Teacher: Record<Prisma.TeacherScalarFieldEnum, string>
  Classroom: Record<Prisma.ClassroomScalarFieldEnum, string>
  AcademicSession: Record<Prisma.AcademicSessionScalarFieldEnum, string>
  Course: Record<Prisma.CourseScalarFieldEnum, string>
  TeacherClassroom: Record<Prisma.TeacherClassroomScalarFieldEnum, string>
  Agent: Record<Prisma.AgentScalarFieldEnum, string>
}

/**
 * A student's and a teacher's columns of OneRoster's demographics (DemographicsDType), each named as
 * 1EdTech's field but the date of birth: what makes a demographics record, and what it answers.
 */
export const DEMOGRAPHIC_COLUMNS = Object.keys(DEMOGRAPHIC_TYPES) as ReadonlyArray<keyof typeof DEMOGRAPHIC_TYPES>

/** The enumerations among the column types: read, compared and ordered by their names (as text). */
const ENUM_TYPES: ReadonlySet<string> = new Set(['GradeLevel', 'StudentStatus', 'TeacherStatus', 'AcademicSessionType', 'TeacherRole'])

/** The column of a field: its name in snake case (schema.prisma maps every field so). */
export function columnOf (field: string): string {
  return field.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase())
}

const ALIAS: Readonly<Record<TypedModel, string>> = { Student: 's', Teacher: 't', Classroom: 'c', AcademicSession: 'a', Course: 'k', TeacherClassroom: 'e', Agent: 'g' }

/**
 * What a registered statement does, as the model operation it stands for: a read (`findMany`, the
 * default), or one of the bulk upsert's writes (typed-writes.ts), whose returned rows the access
 * audit counts as records written.
 */
export type TypedOperation = 'findMany' | 'count' | 'createManyAndReturn' | 'updateManyAndReturn'

/**
 * Whose rows a statement reads: the school's (an administrator's or a client's statement), or a
 * teacher's reach within it (a teacher's statement, which takes the teacher as $2).
 */
export type StatementReach = 'school' | 'teacher'

/** Records joined to each row of a statement, read as `<name>.<field>` and answered as `row.<name>`. */
export interface Joined {
  readonly name: string
  readonly model: TypedModel
  readonly fields: readonly string[]
}

/** A registered statement: what it reads or writes (the access audit counts its rows as records of `model`). */
export interface TypedStatement {
  readonly sql: string
  readonly model: TypedModel
  /** The records joined to each row (a student's classroom, an assignment's teacher and classroom). */
  readonly joined: readonly Joined[]
  /** Every column it reads, selects, filters or orders by, or writes, as `Model.field`. */
  readonly columns: readonly string[]
  /** Whose rows it reads; the school's when left out. */
  readonly reach?: StatementReach
  /** A write's operation (typed-writes.ts); a read when left out. */
  readonly operation?: TypedOperation
}

/** The operation a registered statement stands for. */
export function operationOf (statement: TypedStatement): TypedOperation {
  return statement.operation ?? 'findMany'
}

/** Whether a registered statement only reads (a list, or a count of one: OneRoster's X-Total-Count). */
export function readsOnly (statement: TypedStatement): boolean {
  const operation = operationOf(statement)
  return operation === 'findMany' || operation === 'count'
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

const TENANT_TABLES: ReadonlySet<string> = new Set(['students', 'teachers', 'classrooms', 'teacher_classrooms', 'academic_sessions', 'courses', 'agents'])
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

// ---- A teacher's reach -------------------------------------------------------------------------

/**
 * The condition that confines the rows of `table` read as `alias` to the reach of the teacher $2
 * (docs/api/access.md): a classroom they are assigned to, a student of one, an assignment of one,
 * a teacher of one or themselves. Each reads the teacher's assignments in a subquery of its own,
 * aliased after the table it confines (`r<alias>`, `q<alias>`), which takes the school as every
 * table does. Null for a table outside a teacher's reach.
 */
export function teacherReach (table: string, alias: string): string | null {
  const mine = (r: string): string => `FROM teacher_classrooms ${r} WHERE ${r}.school_id = $1 AND ${r}.school_id = ${alias}.school_id AND ${r}.teacher_id = $2::uuid`
  const r = `r${alias}`
  switch (table) {
    case 'classrooms': return `EXISTS (SELECT 1 ${mine(r)} AND ${r}.classroom_id = ${alias}.id)`
    case 'students':
    case 'teacher_classrooms': return `EXISTS (SELECT 1 ${mine(r)} AND ${r}.classroom_id = ${alias}.classroom_id)`
    // The school's calendar and courses: no one's personal data, read whole by a teacher (their
    // policies have no teacher clause either, migration academic_sessions_and_courses).
    case 'academic_sessions':
    case 'courses': return `${alias}.school_id IS NOT NULL AND $2::uuid IS NOT NULL`
    // A student's guardians, parents and relatives: none in a teacher's reach (docs/decisions.md
    // "A student's agents"; the policy of migration agents admits none to a teacher's session).
    case 'agents': return `${alias}.school_id IS NULL AND $2::uuid IS NOT NULL`
    case 'teachers': {
      const q = `q${alias}`
      return `(${alias}.id = $2::uuid OR EXISTS (SELECT 1 FROM teacher_classrooms ${r} JOIN teacher_classrooms ${q} ON ${q}.school_id = $1 AND ${q}.school_id = ${r}.school_id AND ${q}.classroom_id = ${r}.classroom_id ` +
        `WHERE ${r}.school_id = $1 AND ${r}.school_id = ${alias}.school_id AND ${r}.teacher_id = $2::uuid AND ${q}.teacher_id = ${alias}.id))`
    }
    default: return null
  }
}

/** `sql` with each table's reach condition taken out, and the aliases of the tables that had one. */
function withoutReach (sql: string): { rest: string, reached: Set<string> } {
  let rest = sql
  const reached = new Set<string>()
  for (const [, table, alias] of sql.matchAll(TABLE_REFERENCE)) {
    const condition = teacherReach(table!, alias!)
    if (condition !== null && rest.includes(condition)) {
      rest = rest.split(condition).join('TRUE')
      reached.add(alias!)
    }
  }
  return { rest, reached }
}

const reachPlacements = new LRUCache<string, { error: string | null }>({ max: KEPT })

/**
 * Why a teacher's statement does not confine what it reads to the teacher's reach, or null when it
 * does: every table it reads outside the reach conditions has its own (`teacherReach`), and the
 * teacher ($2) appears in those conditions only.
 */
export function reachPlacementError (sql: string): string | null {
  const known = reachPlacements.get(sql)
  if (known !== undefined) return known.error
  const { rest, reached } = withoutReach(sql)
  let error: string | null = null
  for (const [, table, alias] of rest.matchAll(TABLE_REFERENCE)) {
    if (!reached.has(alias!)) {
      error = `${table} ${alias} is not confined to the teacher's reach`
      break
    }
  }
  if (error === null && /\$2(?!\d)/.test(rest)) error = 'the teacher ($2) is taken by the reach conditions only'
  reachPlacements.set(sql, { error })
  return error
}

/**
 * Why wall 1 refuses the statement `sql` on a client of this kind of caller (a teacher's, or the
 * school's), or null: it is not one of this module's, it does not take the school where wall 1
 * puts it, it was built for the other kind of caller, or a teacher's does not confine every table
 * it reads to the teacher's reach.
 */
export function statementRefusal (sql: unknown, reach: StatementReach): string | null {
  const statement = registeredStatement(sql)
  if (statement === undefined) return 'Raw SQL is not available on a school-scoped client'
  const error = schoolPlacementError(statement.sql)
  if (error !== null) return `The statement does not take the school: ${error}`
  const built = statement.reach ?? 'school'
  if (built !== reach) {
    return reach === 'teacher'
      ? 'A teacher\'s client runs the statements built for a teacher\'s reach only'
      : 'A statement built for a teacher\'s reach runs on that teacher\'s client only'
  }
  if (reach === 'teacher') {
    const reachError = reachPlacementError(statement.sql)
    if (reachError !== null) return `The statement does not take the teacher's reach: ${reachError}`
  }
  return null
}

const unfiltered = new LRUCache<string, string>({ max: KEPT })

/**
 * For the isolation tests that take wall 1 away only: the registered statement `sql` with its
 * school conditions (`$1::uuid IS NOT NULL`) and a teacher's reach conditions (`$2::uuid IS NOT
 * NULL`) taken out, so that wall 2 alone stands.
 */
export function withoutSchoolConditions (sql: string): string {
  let text = unfiltered.get(sql)
  if (text === undefined) {
    const statement = registeredStatement(sql)!
    let rest = sql
    if (statement.reach === 'teacher') {
      for (const [, table, alias] of sql.matchAll(TABLE_REFERENCE)) {
        const condition = teacherReach(table!, alias!)
        if (condition !== null) rest = rest.split(condition).join('$2::uuid IS NOT NULL')
      }
    }
    text = rest.replace(SCHOOL_CONDITION, '$$1::uuid IS NOT NULL')
    unfiltered.set(sql, text)
    registerStatement({ ...statement, sql: text })
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
  /** A classroom this teacher has an assignment to. */
  | { readonly kind: 'taughtBy', readonly teacherId: string }
  /** Any of these records (ids). */
  | { readonly kind: 'ids', readonly ids: readonly string[] }
  /** A record whose list `field` (an array column: an agent's student_ids) holds `value`, by `@>` (the list's GIN index). */
  | { readonly kind: 'holds', readonly field: string, readonly value: string }
  /** Any of the records with these sourcedKeys (a sourcedId, or the id of a record without one). */
  | { readonly kind: 'sourcedKeys', readonly keys: readonly string[] }
  /** A record whose classroom (its classroom_id) is a OneRoster class: it has a course and a term that exists (as classKey). */
  | { readonly kind: 'inClass' }
  /** A filter of OneRoster's grammar: comparisons of fields, joined by AND and OR (src/oneroster/filter.ts). */
  | { readonly kind: 'predicate', readonly predicate: Predicate }

/** OneRoster's comparison operators; `~` is "contains", ignoring case. */
export type Comparison = '=' | '!=' | '>' | '>=' | '<' | '<=' | '~'

/**
 * A boolean expression over a model's fields (or its KEYS): a comparison of one with a value, a
 * constant (a comparison the caller decided without the database, such as a field every record of
 * the model has the same value of), or all or any of several.
 */
export type Predicate =
  | { readonly kind: 'compare', readonly field: string, readonly op: Comparison, readonly value: string }
  | { readonly kind: 'constant', readonly value: boolean }
  | { readonly kind: 'all' | 'any', readonly parts: readonly Predicate[] }

/** A value that is not one column: its model (any when undefined), the columns it reads, its SQL. */
interface Key {
  readonly model?: TypedModel
  readonly columns: readonly string[]
  /** A list (text[]): compared by whether it holds the value. */
  readonly list?: true
  readonly sql: (alias: string, reach: StatementReach) => string
}

/** A record's sourcedId, or its id when it has none, read as `alias`. */
const sourcedSql = (a: string): string => `COALESCE(${a}.sourced_id, ${a}.id::text)`

/** The sourcedKey of the academic session `id` names (a column of the record read as `a`), by a subquery aliased `alias`. */
const sessionKey = (alias: string, reach: StatementReach, a: string, id: string): string =>
  `(SELECT ${sourcedSql(alias)} FROM academic_sessions ${alias} WHERE ${confined('academic_sessions', alias, reach)} AND ${alias}.school_id = ${a}.school_id AND ${alias}.id = ${a}.${id})`

/**
 * Values a statement reads, filters or orders by that are not one column: `sourcedKey` is a
 * record's sourcedId, or its id when it has none (OneRoster's sourcedId of a record entered by hand,
 * docs/api/oneroster.md); `modifiedAt` its updated_at as OneRoster writes it; the others are the
 * sourcedKeys of the academic sessions a record refers to (a session's parent and children, a
 * course's school year), each read by a subquery that takes the school, and a teacher's reach, as
 * every table does.
 */
const KEYS: Readonly<Record<string, Key>> = {
  sourcedKey: { columns: ['sourcedId', 'id'], sql: (a) => sourcedSql(a) },
  // A record's last write in UTC as text (2026-01-31 08:00:00.12: PostgreSQL's digits of the
  // fraction), for OneRoster's dateLastModified (src/oneroster/kinds.ts): the driver makes no Date
  // of it for the answer to write again. (to_char writing ISO 8601 itself cost PostgreSQL 0.58 µs
  // a row against this text's 0.23.)
  modifiedAt: { columns: ['updatedAt'], sql: (a) => `(${a}.updated_at AT TIME ZONE 'UTC')::text` },
  parentKey: { model: 'AcademicSession', columns: ['parentId'], sql: (a, reach) => sessionKey('ap', reach, a, 'parent_id') },
  childKeys: {
    model: 'AcademicSession',
    columns: ['id'],
    sql: (a, reach) => `ARRAY(SELECT ${sourcedSql('ac')} FROM academic_sessions ac WHERE ${confined('academic_sessions', 'ac', reach)} ` +
      `AND ac.school_id = ${a}.school_id AND ac.parent_id = ${a}.id ORDER BY 1)`
  },
  schoolYearKey: { model: 'Course', columns: ['schoolYearId'], sql: (a, reach) => sessionKey('ay', reach, a, 'school_year_id') },
  // A classroom's course and terms (OneRoster's class), read as the sessions are.
  courseKey: {
    model: 'Classroom',
    columns: ['courseId'],
    sql: (a, reach) => `(SELECT ${sourcedSql('ck')} FROM courses ck WHERE ${confined('courses', 'ck', reach)} AND ck.school_id = ${a}.school_id AND ck.id = ${a}.course_id)`
  },
  // Whether the classroom is a OneRoster class: it has a course and a term that exists (ClassDType requires both).
  classKey: {
    model: 'Classroom',
    columns: ['courseId', 'termIds'],
    sql: (a, reach) => `(${a}.course_id IS NOT NULL AND EXISTS (SELECT 1 FROM academic_sessions aq WHERE ${confined('academic_sessions', 'aq', reach)} ` +
      `AND aq.school_id = ${a}.school_id AND aq.id = ANY(${a}.term_ids)))`
  },
  // OneRoster's enrollments (src/oneroster/enrollments.ts): a student's classroom and a teacher's
  // assignment. A student's enrollment is its imported sourcedId, else the student's id; the class is
  // the classroom's sourcedKey when the classroom is a class (a course and a term, as classKey), else
  // none; a teacher's enrollment names its teacher by the teacher's sourcedKey.
  enrollmentKey: { model: 'Student', columns: ['enrollmentSourcedId', 'id'], sql: (a) => `COALESCE(${a}.enrollment_sourced_id, ${a}.id::text)` },
  enrolledClassKey: {
    columns: ['classroomId'],
    sql: (a, reach) => `(SELECT ${sourcedSql('ce')} FROM classrooms ce WHERE ${confined('classrooms', 'ce', reach)} AND ce.school_id = ${a}.school_id AND ce.id = ${a}.classroom_id ` +
      `AND ce.course_id IS NOT NULL AND EXISTS (SELECT 1 FROM academic_sessions ae WHERE ${confined('academic_sessions', 'ae', reach)} AND ae.school_id = ce.school_id AND ae.id = ANY(ce.term_ids)))`
  },
  enrolledTeacherKey: {
    model: 'TeacherClassroom',
    columns: ['teacherId'],
    sql: (a, reach) => `(SELECT ${sourcedSql('te')} FROM teachers te WHERE ${confined('teachers', 'te', reach)} AND te.school_id = ${a}.school_id AND te.id = ${a}.teacher_id)`
  },
  // Whether the student or teacher has a OneRoster demographics record: one of its demographic
  // columns holds a value (DEMOGRAPHIC_COLUMNS, the same on both tables; wall 1 admits it to a caller
  // holding roster-demographics.readonly only).
  demographicsKey: {
    columns: DEMOGRAPHIC_COLUMNS,
    sql: (a) => `(${DEMOGRAPHIC_COLUMNS.map((field) => `${a}.${columnOf(field)} IS NOT NULL`).join(' OR ')})`
  },
  // A student's agents (the agents whose student_ids hold it) and an agent's students, each by
  // sourcedKey in that order: OneRoster's `agents` of a user (src/oneroster/kinds.ts). A student
  // removed leaves its id in no answer: only the students the school holds are read. A student's
  // agents by `@>`, which the agents' GIN index answers (migration agents_by_student).
  agentKeys: {
    model: 'Student',
    columns: ['id'],
    list: true,
    sql: (a, reach) => `ARRAY(SELECT ${sourcedSql('ga')} FROM agents ga WHERE ${confined('agents', 'ga', reach)} ` +
      `AND ga.school_id = ${a}.school_id AND ga.student_ids @> ARRAY[${a}.id] ORDER BY 1)`
  },
  agentStudentKeys: {
    model: 'Agent',
    columns: ['studentIds'],
    list: true,
    sql: (a, reach) => `ARRAY(SELECT ${sourcedSql('sg')} FROM students sg WHERE ${confined('students', 'sg', reach)} ` +
      `AND sg.school_id = ${a}.school_id AND sg.id = ANY(${a}.student_ids) ORDER BY 1)`
  },
  // A user's roles in the school beside its primary one (migration user_roles): the secondary
  // roles' names, and the role types it has (primary always, secondary with any), as lists a
  // filter asks whether they hold a value (src/oneroster/kinds.ts roles). Read from the row's own
  // JSON: no other table.
  // The same roles as one value for an answer (src/oneroster/kinds.ts roles): NULL for a user
  // without any (most; the driver then makes one NULL of the row, not three), else {b, e, s}: the
  // primary role's begin and end days (YYYY-MM-DD) and the secondary roles.
  roleDetails: {
    columns: ['roleBeginDate', 'roleEndDate', 'secondaryRoles'],
    sql: (a) => `(CASE WHEN ${a}.role_begin_date IS NULL AND ${a}.role_end_date IS NULL AND ${a}.secondary_roles IS NULL THEN NULL ` +
      `ELSE jsonb_build_object('b', ${a}.role_begin_date, 'e', ${a}.role_end_date, 's', ${a}.secondary_roles) END)`
  },
  secondaryRoleNames: {
    columns: ['secondaryRoles'],
    list: true,
    sql: (a) => `ARRAY(SELECT jsonb_array_elements(${a}.secondary_roles) ->> 'role')`
  },
  roleTypes: {
    columns: ['secondaryRoles'],
    list: true,
    sql: (a) => `(CASE WHEN jsonb_array_length(${a}.secondary_roles) > 0 THEN ARRAY['primary', 'secondary'] ELSE ARRAY['primary'] END)`
  },
  termKeys: {
    model: 'Classroom',
    columns: ['termIds'],
    list: true,
    sql: (a, reach) => `ARRAY(SELECT ${sourcedSql('at')} FROM academic_sessions at WHERE ${confined('academic_sessions', 'at', reach)} ` +
      `AND at.school_id = ${a}.school_id AND at.id = ANY(${a}.term_ids) ORDER BY array_position(${a}.term_ids, at.id))`
  }
}

/** Whether `field` names one of KEYS (not a column). */
export const isKey = (field: string): boolean => Object.hasOwn(KEYS, field)

/** The columns a field or key reads. */
export const columnsOfValue = (field: string): readonly string[] => isKey(field) ? KEYS[field]!.columns : [field]

/** The SQL of a field or key of `model` read as `alias`. */
function valueSql (model: TypedModel, alias: string, field: string, reach: StatementReach): string {
  if (isKey(field)) {
    const key = KEYS[field]!
    if (key.model !== undefined && key.model !== model) throw new Error(`${model} has no ${field}`)
    return key.sql(alias, reach)
  }
  columnType(model, field)
  return `${alias}.${columnOf(field)}`
}

/** The SQL a field or key orders by: an enum by its name (as text), as a caller merging two lists compares it. */
function orderSql (model: TypedModel, alias: string, field: string, reach: StatementReach): string {
  const value = valueSql(model, alias, field, reach)
  if (isKey(field)) return value
  return ENUM_TYPES.has(columnType(model, field)) ? `${value}::text` : value
}

/** The fields (and keys' columns) a predicate reads. */
function predicateFields (predicate: Predicate): string[] {
  switch (predicate.kind) {
    case 'compare': return [...columnsOfValue(predicate.field)]
    case 'constant': return []
    default: return predicate.parts.flatMap(predicateFields)
  }
}

/** The shape of a predicate (its fields and operators, not its values): what a statement is kept by. */
function predicateShape (predicate: Predicate): unknown {
  switch (predicate.kind) {
    case 'compare': return [predicate.field, predicate.op]
    case 'constant': return predicate.value
    default: return [predicate.kind, predicate.parts.map(predicateShape)]
  }
}

/**
 * The SQL of a predicate, its values as parameters: a date column compared as a timestamp (the
 * caller has checked the value is one), a list (text[]) by whether it holds the value (= and !=
 * only), any other as text (an enum by its name, a uuid by its text, a day as YYYY-MM-DD);
 * `!=` keeps the records without a value; `~` is ILIKE with the wildcards escaped.
 */
function predicateSql (model: TypedModel, alias: string, predicate: Predicate, next: (value: unknown) => string, reach: StatementReach): string {
  switch (predicate.kind) {
    case 'constant': return predicate.value ? 'TRUE' : 'FALSE'
    case 'all':
    case 'any': {
      if (predicate.parts.length === 0) return predicate.kind === 'all' ? 'TRUE' : 'FALSE'
      return `(${predicate.parts.map((part) => predicateSql(model, alias, part, next, reach)).join(predicate.kind === 'all' ? ' AND ' : ' OR ')})`
    }
    case 'compare': {
      const value = valueSql(model, alias, predicate.field, reach)
      if (isKey(predicate.field) ? KEYS[predicate.field]!.list === true : columnType(model, predicate.field) === '_text') {
        if (predicate.op !== '=' && predicate.op !== '!=') throw new Error(`${model}.${predicate.field} is a list: compared with = or != only`)
        const holds = `${next(predicate.value)} = ANY(${value})`
        return predicate.op === '=' ? `COALESCE(${holds}, FALSE)` : `NOT COALESCE(${holds}, FALSE)`
      }
      if (predicate.op === '~') return `${value}::text ILIKE ${next(`%${predicate.value.replace(/[\\%_]/g, (c) => '\\' + c)}%`)}`
      const date = !isKey(predicate.field) && columnType(model, predicate.field) === 'timestamptz'
      const left = date ? value : `${value}::text`
      const right = date ? `${next(predicate.value)}::timestamptz` : next(predicate.value)
      // (Not IS DISTINCT FROM: wall 1 reads every FROM as a table.)
      return predicate.op === '!=' ? `(${left} IS NULL OR ${left} <> ${right})` : `${left} ${predicate.op} ${right}`
    }
  }
}

/** What a list reads: its columns, filter, order, cursor and size, for a caller of `reach`. */
export interface ListRead {
  readonly model: TypedModel
  /** Scalar fields of the model; `id` is always read. */
  readonly fields: readonly string[]
  /** Student only: the fields of its classroom, read by a join (`id` always), or undefined. */
  readonly classroom?: readonly string[] | undefined
  readonly conditions: readonly ListCondition[]
  /** The fields (or KEYS) of the order, the last one `id`. */
  readonly order: readonly string[]
  readonly descending: boolean
  /** The cursor's sort key, one value per field of the order; undefined for the first page. */
  readonly after?: readonly unknown[] | undefined
  readonly take: number
  /** Records skipped before the first one read (OneRoster's `offset`); none when undefined. */
  readonly skip?: number | undefined
  /** Whose rows: a teacher's statement confines every table to the teacher's reach. */
  readonly reach: StatementReach
  /**
   * Each row also carries `$total`, the number of records that meet the conditions in all
   * (OneRoster's X-Total-Count), counted by a subquery of the statement: the page and its total in
   * one statement and one transaction.
   */
  readonly total?: boolean | undefined
}

/** A statement with its parameters (the school and the teacher not among them: wall 1 binds them). */
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

/** The fields of `model`, `id` first and once. */
function withId (fields: readonly string[]): string[] {
  return ['id', ...fields.filter((field) => field !== 'id')]
}

// Columns of the typed models that are never null: one of them tells a joined record from none.
const NOT_NULL: ReadonlySet<string> = new Set(['id', 'name', 'fullName', 'createdAt', 'updatedAt'])

/** The fields of a joined record read: those selected, and `id` when none of them is never null. */
function joinedFields (fields: readonly string[]): string[] {
  return fields.some((field) => NOT_NULL.has(field)) ? [...new Set(fields)] : withId(fields)
}

/**
 * `alias.column AS "field"` for each field (`id` first, once), a joined record's (joinedFields) as
 * `"<name>.<field>"`; a key of the record (KEYS) as its SQL, for a caller of `reach`.
 */
function selectList (model: TypedModel, alias: string, fields: readonly string[], prefix = '', reach: StatementReach = 'school'): string[] {
  return selected(model, alias, fields, prefix, reach).map(({ value, name }) => `${value} AS "${name}"`)
}

/** selectList's items apart: each field's SQL value and the name it is answered as. */
function selected (model: TypedModel, alias: string, fields: readonly string[], prefix = '', reach: StatementReach = 'school'): Array<{ value: string, name: string }> {
  return (prefix === '' ? withId(fields) : joinedFields(fields)).map((field) => {
    if (prefix === '' && isKey(field)) return { value: valueSql(model, alias, field, reach), name: field }
    const type = columnType(model, field)
    // Enums as text: the answer's strings, whatever the driver makes of a type it does not know.
    const value = ENUM_TYPES.has(type) ? `${alias}.${columnOf(field)}::text` : `${alias}.${columnOf(field)}`
    return { value, name: prefix + field }
  })
}

/** The placeholder of a value of `field`, typed as its column. */
function typedPlaceholder (model: TypedModel, field: string, placeholder: string): string {
  const type = columnType(model, field)
  return type === 'timestamptz' ? `${placeholder}::timestamptz` : type === 'uuid' ? `${placeholder}::uuid` : placeholder
}

/** The conditions that confine `table` read as `alias` to the caller: the school, and a teacher's reach. */
function confined (table: string, alias: string, reach: StatementReach): string {
  const school = `${alias}.school_id = $1`
  return reach === 'teacher' ? `${school} AND ${teacherReach(table, alias)!}` : school
}

/** A statement's parameters after wall 1's: $2 on, or $3 on for a teacher's. */
function parameters (reach: StatementReach): { values: unknown[], next: (value: unknown) => string } {
  const values: unknown[] = []
  const first = reach === 'teacher' ? 3 : 2
  return { values, next: (value) => `$${first + values.push(value) - 1}` }
}

/** The statement built once per shape, registered again if dropped from the registry meanwhile. */
function kept (shape: string, build: () => Omit<TypedStatement, 'columns'> & { columns: Iterable<string> }): TypedStatement {
  let statement = statements.get(shape)
  if (statement === undefined) {
    const built = build()
    statement = registerStatement({ ...built, columns: [...new Set(built.columns)] })
    statements.set(shape, statement)
  }
  return registerStatement(statement)
}

const qualified = (model: TypedModel, fields: Iterable<string>): string[] => [...fields].map((field) => `${model}.${field}`)

/** The SQL of a list's conditions on `model` read as `alias`, their values as parameters. */
function conditionsSql (model: TypedModel, alias: string, conditions: readonly ListCondition[], reach: StatementReach, next: (value: unknown) => string): string[] {
  const a = alias
  const parts: string[] = []
  for (const condition of conditions) {
    switch (condition.kind) {
      case 'equals': {
        const type = columnType(model, condition.field)
        parts.push(type === 'uuid'
          ? `${a}.${columnOf(condition.field)} = ${next(condition.value)}::uuid`
          : `${a}.${columnOf(condition.field)}::text = ${next(condition.value)}`)
        break
      }
      case 'equalsIgnoringCase':
        parts.push(`lower(${a}.${columnOf(condition.field)}) = lower(${next(condition.value)})`)
        break
      case 'contains': {
        const pattern = next(`%${condition.pattern}%`)
        parts.push(`(${condition.fields.map((field) => `${a}.${columnOf(field)} ILIKE ${pattern}`).join(' OR ')})`)
        break
      }
      case 'ids':
        parts.push(`${a}.id = ANY(${next(condition.ids)}::uuid[])`)
        break
      case 'holds': {
        const type = columnType(model, condition.field)
        if (!type.startsWith('_')) throw new Error(`${model}.${condition.field} is not a list`)
        parts.push(`${a}.${columnOf(condition.field)} @> ARRAY[${next(condition.value)}::${type.slice(1)}]`)
        break
      }
      case 'sourcedKeys':
        parts.push(`${KEYS.sourcedKey!.sql(a, reach)} = ANY(${next(condition.keys)}::text[])`)
        break
      case 'inClass':
        // Uncorrelated: the school's classes read once (an InitPlan), each record's classroom
        // looked up in them, so that a page still stops at LIMIT by its order's index and the
        // count reads the classroom index only; not a subquery for each record (PostgreSQL's CPU
        // for a page of enrollments and its count, BENCHMARKS.md). As a semi-join (IN) the planner
        // misjudged a class's students (the school and classroom estimated independent) and
        // sorted the school's every enrollment for a page.
        columnType(model, 'classroomId')
        parts.push(`${a}.classroom_id = ANY(ARRAY(SELECT ci.id FROM classrooms ci WHERE ${confined('classrooms', 'ci', reach)} AND ci.course_id IS NOT NULL ` +
          `AND EXISTS (SELECT 1 FROM academic_sessions ai WHERE ${confined('academic_sessions', 'ai', reach)} AND ai.school_id = ci.school_id AND ai.id = ANY(ci.term_ids))))`)
        break
      case 'teaches':
        parts.push(`EXISTS (SELECT 1 FROM teacher_classrooms tc WHERE ${confined('teacher_classrooms', 'tc', reach)} AND tc.school_id = ${a}.school_id AND tc.teacher_id = ${a}.id AND tc.classroom_id = ${next(condition.classroomId)}::uuid)`)
        break
      case 'taughtBy':
        parts.push(`EXISTS (SELECT 1 FROM teacher_classrooms tc WHERE ${confined('teacher_classrooms', 'tc', reach)} AND tc.school_id = ${a}.school_id AND tc.classroom_id = ${a}.id AND tc.teacher_id = ${next(condition.teacherId)}::uuid)`)
        break
      case 'predicate':
        parts.push(predicateSql(model, a, condition.predicate, next, reach))
        break
    }
  }
  return parts
}

/** The shape of a list's conditions (kinds and fields, not values). */
const conditionsShape = (conditions: readonly ListCondition[]): unknown[] => conditions.map((c) =>
  c.kind === 'contains' ? [c.kind, c.fields] : c.kind === 'holds' ? [c.kind, c.field] : c.kind === 'teaches' || c.kind === 'taughtBy' || c.kind === 'ids' || c.kind === 'sourcedKeys' || c.kind === 'inClass' ? [c.kind] : c.kind === 'predicate' ? [c.kind, predicateShape(c.predicate)] : [c.kind, c.field])

/** The fields a list's conditions read. */
const conditionsFields = (conditions: readonly ListCondition[]): string[] => conditions.flatMap((c) =>
  c.kind === 'contains' ? c.fields : c.kind === 'teaches' || c.kind === 'taughtBy' || c.kind === 'ids' ? [] : c.kind === 'inClass' ? ['classroomId'] : c.kind === 'sourcedKeys' ? [...columnsOfValue('sourcedKey')] : c.kind === 'predicate' ? predicateFields(c.predicate) : [c.field])

/** The statement and parameters of one page of a list. */
export function listRead (read: ListRead): Read {
  const { values, next } = parameters(read.reach)
  const a = ALIAS[read.model]
  const parts = conditionsSql(read.model, a, read.conditions, read.reach, next)
  // What the total counts: the conditions, not the cursor.
  const counted = [...parts]
  if (read.after !== undefined) {
    // As paging.ts's keysetAfter: the leading bound starts the index scan at the cursor, the row
    // comparison drops the ties before it.
    const placeholders = read.order.map((field, i) => typedPlaceholder(read.model, field, next(read.after![i])))
    const op = read.descending ? '<' : '>'
    const columns = read.order.map((field) => `${a}.${columnOf(field)}`)
    if (read.order.length > 1) parts.push(`${columns[0]} ${op}= ${placeholders[0]}`)
    parts.push(`(${columns.join(', ')}) ${op} (${placeholders.join(', ')})`)
  }
  const limit = next(read.take)
  // OneRoster's paging by offset (the GraphQL API's is by keyset: `after`).
  const skip = read.skip === undefined || read.skip === 0 ? undefined : next(read.skip)
  const classroom = read.model === 'Student' ? read.classroom : undefined
  const total = read.total === true
  const shape = JSON.stringify(['list', read.reach, read.model, read.fields, classroom, conditionsShape(read.conditions), read.order, read.descending, read.after !== undefined, skip !== undefined, total])
  const statement = kept(shape, () => {
    const table = TYPED_TABLES[read.model]
    const select = selectList(read.model, a, read.fields, '', read.reach)
    let from = `${table} ${a}`
    const joined: Joined[] = []
    if (classroom !== undefined) {
      const studentsClassroom = `${confined('classrooms', 'c', read.reach)} AND c.school_id = s.school_id AND c.id = s.classroom_id`
      if (read.reach === 'teacher' && joinedFields(classroom).length === 1) {
        // A teacher's page is her classrooms' students sorted (PostgreSQL reads them by classroom,
        // then sorts for the LIMIT): a join reads the classroom of every one of them before the
        // sort, a subquery in the select list is postponed after the LIMIT (`flat`: 20 classroom
        // reads instead of 80, PostgreSQL's CPU per request 482-499 to 313-342 µs, BENCHMARKS.md "A
        // teacher's and a client's reads"). A subquery per field: with two (`nested`'s id and
        // name, all 80 rows kept) the join costs less. The school's page stops at LIMIT by the
        // index, so its join reads as few rows and costs less than a subquery.
        select.push(...selected('Classroom', 'c', classroom, 'classroom.').map(({ value, name }) =>
          `(SELECT ${value} FROM classrooms c WHERE ${studentsClassroom}) AS "${name}"`))
      } else {
        select.push(...selectList('Classroom', 'c', classroom, 'classroom.'))
        from += ` LEFT JOIN classrooms c ON ${studentsClassroom}`
      }
      joined.push({ name: 'classroom', model: 'Classroom', fields: joinedFields(classroom) })
    }
    // Uncorrelated, so run once (an InitPlan), by the count's own plan: the page still stops at
    // LIMIT by the index. (count(*) OVER () read and sorted every matching row: PostgreSQL's CPU
    // per 100-page 2,174 against 1,425 µs, BENCHMARKS.md.)
    if (total) select.push(`(SELECT count(*)::int FROM ${table} ${a} WHERE ${[confined(table, a, read.reach), ...counted].join(' AND ')}) AS "$total"`)
    const direction = read.descending ? 'DESC' : 'ASC'
    const sql = `SELECT ${select.join(', ')} FROM ${from} WHERE ${[confined(table, a, read.reach), ...parts].join(' AND ')} ` +
      `ORDER BY ${read.order.map((field) => `${orderSql(read.model, a, field, read.reach)} ${direction}`).join(', ')} LIMIT ${limit}${skip === undefined ? '' : ` OFFSET ${skip}`}`
    return {
      sql,
      model: read.model,
      joined,
      reach: read.reach,
      columns: [...qualified(read.model, [...withId(read.fields).flatMap(columnsOfValue), ...conditionsFields(read.conditions), ...read.order.flatMap(columnsOfValue)]), ...qualified('Classroom', classroom === undefined ? [] : joinedFields(classroom))]
    }
  })
  return { statement, values }
}

/** What a count reads: the records of `model` that meet the conditions, for a caller of `reach`. */
export interface CountRead {
  readonly model: TypedModel
  readonly conditions: readonly ListCondition[]
  readonly reach: StatementReach
}

/**
 * The statement of the number of records of a list (OneRoster's X-Total-Count): one row, `count`.
 * A count hands over no record: the access audit does not count it (operation `count`).
 */
export function countRead (read: CountRead): Read {
  const { values, next } = parameters(read.reach)
  const a = ALIAS[read.model]
  const parts = conditionsSql(read.model, a, read.conditions, read.reach, next)
  const shape = JSON.stringify(['count', read.reach, read.model, conditionsShape(read.conditions)])
  const statement = kept(shape, () => {
    const table = TYPED_TABLES[read.model]
    return {
      sql: `SELECT count(*)::int AS "count" FROM ${table} ${a} WHERE ${[confined(table, a, read.reach), ...parts].join(' AND ')}`,
      model: read.model,
      joined: [],
      reach: read.reach,
      operation: 'count',
      columns: qualified(read.model, ['id', ...conditionsFields(read.conditions)])
    }
  })
  return { statement, values }
}

/** The relations of a page read as one statement each, for all of the page's rows (loaders). */
export type RelationName = 'Classroom.teachers' | 'Teacher.classrooms' | 'Classroom.students' | 'Student.contacts' | 'Contact.students'

/**
 * The relations through the assignments (teacher_classrooms tc): the related model, its table and
 * alias, the assignment's column of the parent and of the related record, and the related
 * records' order.
 */
const THROUGH_ASSIGNMENTS = {
  'Classroom.teachers': { model: 'Teacher', table: 'teachers', alias: 't', parent: 'classroom_id', related: 'teacher_id', order: 'fullName' },
  'Teacher.classrooms': { model: 'Classroom', table: 'classrooms', alias: 'c', parent: 'teacher_id', related: 'classroom_id', order: 'name' }
} as const satisfies Partial<Record<RelationName, { model: TypedModel, table: string, alias: string, parent: string, related: string, order: string }>>

/**
 * The statement of a relation for parents `ids`: each row is a record of the related model with the
 * parent's id as `$parent`, in the relation's order. `fields` of the related model (`id` always);
 * Classroom.students and Contact.students also read the student's classroom's `classroom` fields, when given.
 */
export function relationRead (relation: RelationName, fields: readonly string[], ids: readonly string[], reach: StatementReach, classroom?: readonly string[]): Read {
  const { values, next } = parameters(reach)
  const parents = next(ids)
  const shape = JSON.stringify(['relation', reach, relation, fields, classroom])
  const statement = kept(shape, () => {
    // Students (s), with their classroom (c) when asked: the select list, the joined record and its columns.
    const students = (): { select: string[], join: string, joined: Joined[], columns: string[] } => {
      const select = selectList('Student', 's', fields)
      if (classroom === undefined) return { select, join: '', joined: [], columns: [] }
      select.push(...selectList('Classroom', 'c', classroom, 'classroom.'))
      return {
        select,
        join: ` LEFT JOIN classrooms c ON ${confined('classrooms', 'c', reach)} AND c.school_id = s.school_id AND c.id = s.classroom_id`,
        joined: [{ name: 'classroom', model: 'Classroom', fields: joinedFields(classroom) }],
        columns: qualified('Classroom', joinedFields(classroom))
      }
    }
    // An agent (g) and its students (s), joined by the agent's student_ids: the students the school
    // holds only (an id left by a student removed joins none).
    const agentStudents = `agents g JOIN students s ON ${confined('students', 's', reach)} AND s.school_id = g.school_id AND s.id = ANY(g.student_ids)`
    switch (relation) {
      case 'Classroom.students': {
        const { select, join, joined, columns } = students()
        return {
          sql: `SELECT s.classroom_id AS "$parent", ${select.join(', ')} FROM students s${join} ` +
            `WHERE ${confined('students', 's', reach)} AND s.classroom_id = ANY(${parents}::uuid[]) ORDER BY s.full_name ASC, s.id ASC`,
          model: 'Student',
          joined,
          reach,
          columns: [...qualified('Student', [...withId(fields), 'classroomId', 'fullName']), ...columns]
        }
      }
      // A student's contacts: the agents whose student_ids overlap the parents (`&&`, which the
      // agents' GIN index answers, migration agents_by_student), each once per student of theirs
      // among the parents.
      case 'Student.contacts':
        return {
          sql: `SELECT s.id AS "$parent", ${selectList('Agent', 'g', fields).join(', ')} FROM ${agentStudents} ` +
            `WHERE ${confined('agents', 'g', reach)} AND g.student_ids && ${parents}::uuid[] AND s.id = ANY(${parents}::uuid[]) ` +
            'ORDER BY g.family_name ASC, g.given_name ASC, g.id ASC',
          model: 'Agent',
          joined: [],
          reach,
          columns: [...qualified('Agent', [...withId(fields), 'studentIds', 'familyName', 'givenName']), 'Student.id']
        }
      // A contact's students, by full name.
      case 'Contact.students': {
        const { select, join, joined, columns } = students()
        return {
          sql: `SELECT g.id AS "$parent", ${select.join(', ')} FROM ${agentStudents}${join} ` +
            `WHERE ${confined('agents', 'g', reach)} AND g.id = ANY(${parents}::uuid[]) ORDER BY s.full_name ASC, s.id ASC`,
          model: 'Student',
          joined,
          reach,
          columns: [...qualified('Student', [...withId(fields), 'fullName']), 'Agent.id', 'Agent.studentIds', ...columns]
        }
      }
    }
    const { model, table, alias, parent, related, order } = THROUGH_ASSIGNMENTS[relation]
    return {
      sql: `SELECT tc.${parent} AS "$parent", ${selectList(model, alias, fields).join(', ')} FROM teacher_classrooms tc ` +
        `JOIN ${table} ${alias} ON ${confined(table, alias, reach)} AND ${alias}.school_id = tc.school_id AND ${alias}.id = tc.${related} ` +
        `WHERE ${confined('teacher_classrooms', 'tc', reach)} AND tc.${parent} = ANY(${parents}::uuid[]) ORDER BY ${alias}.${columnOf(order)} ASC, tc.${related} ASC`,
      model,
      joined: [],
      reach,
      columns: qualified(model, [...withId(fields), order])
    }
  })
  return { statement, values }
}

/** The assignments of a classroom (by teacher name) or of a teacher (by classroom name). */
export type AssignmentsName = 'Classroom.teacherAssignments' | 'Teacher.classroomAssignments'

/**
 * The statement of the assignments of parents `ids`: each row an assignment with the parent's id as
 * `$parent`, its `role`, its `teacher` (`teacher` fields) and its `classroom` (`classroom` fields),
 * in the relation's order. Its rows count as the teachers they hand over (the access audit).
 */
export function assignmentsRead (relation: AssignmentsName, teacher: readonly string[], classroom: readonly string[], ids: readonly string[], reach: StatementReach): Read {
  const { values, next } = parameters(reach)
  const parents = next(ids)
  const shape = JSON.stringify(['assignments', reach, relation, teacher, classroom])
  const statement = kept(shape, () => {
    const byClassroom = relation === 'Classroom.teacherAssignments'
    const order = byClassroom ? 't.full_name ASC, tc.teacher_id ASC' : 'c.name ASC, tc.classroom_id ASC'
    return {
      sql: `SELECT tc.${byClassroom ? 'classroom_id' : 'teacher_id'} AS "$parent", tc.role::text AS "role", ` +
        `${[...selectList('Teacher', 't', teacher, 'teacher.'), ...selectList('Classroom', 'c', classroom, 'classroom.')].join(', ')} FROM teacher_classrooms tc ` +
        `JOIN teachers t ON ${confined('teachers', 't', reach)} AND t.school_id = tc.school_id AND t.id = tc.teacher_id ` +
        `JOIN classrooms c ON ${confined('classrooms', 'c', reach)} AND c.school_id = tc.school_id AND c.id = tc.classroom_id ` +
        `WHERE ${confined('teacher_classrooms', 'tc', reach)} AND tc.${byClassroom ? 'classroom_id' : 'teacher_id'} = ANY(${parents}::uuid[]) ORDER BY ${order}`,
      model: 'Teacher',
      joined: [{ name: 'teacher', model: 'Teacher', fields: joinedFields(teacher) }, { name: 'classroom', model: 'Classroom', fields: joinedFields(classroom) }],
      reach,
      columns: [...qualified('Teacher', [...joinedFields(teacher), 'fullName']), ...qualified('Classroom', [...joinedFields(classroom), 'name'])]
    }
  })
  return { statement, values }
}

/**
 * The rows of a statement as the model operations return them: each joined record becomes the
 * row's `<name>` (null without one, as a student without a classroom). One pass; nothing is done to a
 * row that has no join.
 */
export function rowsOf<T> (statement: TypedStatement, rows: Array<Record<string, unknown>>): T[] {
  for (const { name, fields } of statement.joined) {
    const keys = fields.map((field) => name + '.' + field)
    const present = name + '.' + fields.find((field) => NOT_NULL.has(field))!
    for (const row of rows) {
      if (row[present] === null) {
        row[name] = null
        continue
      }
      const nested: Record<string, unknown> = {}
      for (let i = 0; i < fields.length; i++) nested[fields[i]!] = row[keys[i]!]
      row[name] = nested
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
