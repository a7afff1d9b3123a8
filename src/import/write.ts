// Writes an import plan in one transaction, a few thousand rows per statement (arrays unnested by
// PostgreSQL), comparing before writing: a row whose columns are all the same is not touched, so a
// second run of the same bundle updates nothing and adds nothing to the change feed. Removals go
// first, a few thousand ids per DELETE, so that a name or student number they free can be taken by
// the rows written after them; the triggers write their change feed entries (DELETED tombstones).
import { COLUMN_TYPES, columnOf, DEMOGRAPHIC_COLUMNS } from '../db/typed-reads.js'
import type { AgentRecord } from './agents.js'
import type { Demographics, Existing, ImportPlan, RoleDetails, StudentRecord, StudentUpdate, TeacherRecord, TeacherUpdate, UserDetails } from './oneroster.js'

/** The one connection of an import: a pg client or the embedded PGlite. */
export interface Sql {
  query: <T = Record<string, unknown>>(text: string, params?: unknown[]) => Promise<T[]>
}

export interface Counts {
  created: number
  updated: number
  unchanged: number
  removed: number
}

export interface WriteSummary {
  classrooms: Counts
  students: Counts
  teachers: Counts
  /** Guardians, parents and relatives; `updated` counts those whose students only changed too. */
  agents: Counts
  teacherAssignments: Counts
  /** Students who stay, taken out of their classroom. */
  studentEnrollmentsEnded: number
}

/** Rows per statement: large enough to amortise a round trip, small enough for steady progress. */
export const CHUNK = 5_000

interface Column<R> {
  name: string
  /** The element type of the parameter's array. */
  type: string
  /** The column's type when the element is written as another (a text[] column as its array literal: unnest flattens arrays of arrays). */
  cast?: string
  value: (row: R) => unknown
}

/** A student's or a teacher's demographic columns (typed-reads.ts DEMOGRAPHIC_COLUMNS, the same on both tables), each of its type. */
function demographicColumns<R extends Demographics> (): Array<Column<R>> {
  return DEMOGRAPHIC_COLUMNS.map((field) => ({ name: columnOf(field), type: COLUMN_TYPES.Student[field] === 'bool' ? 'boolean' : COLUMN_TYPES.Student[field], value: (r: R) => r[field] }))
}

/** A user's columns of users.csv beside the names (UserDetails); no identifiers written as NULL, as a record made by hand has. */
function detailColumns<R extends UserDetails> (): Array<Column<R>> {
  return [
    { name: 'middle_name', type: 'text', value: (r) => r.middleName },
    { name: 'preferred_middle_name', type: 'text', value: (r) => r.preferredMiddleName },
    { name: 'preferred_last_name', type: 'text', value: (r) => r.preferredLastName },
    { name: 'pronouns', type: 'text', value: (r) => r.pronouns },
    { name: 'username', type: 'text', value: (r) => r.username },
    { name: 'user_ids', type: 'text', cast: 'text[]', value: (r) => r.userIds.length === 0 ? null : arrayLiteral(r.userIds) },
    { name: 'sms', type: 'text', value: (r) => r.sms },
    { name: 'phone', type: 'text', value: (r) => r.phone }
  ]
}

/** A user's roles in the school (RoleDetails, roles.csv): the primary role's dates, the secondary roles as JSON (NULL without any). */
function roleColumns<R extends RoleDetails> (): Array<Column<R>> {
  return [
    { name: 'role_begin_date', type: 'date', value: (r) => r.roleBeginDate },
    { name: 'role_end_date', type: 'date', value: (r) => r.roleEndDate },
    { name: 'secondary_roles', type: 'jsonb', value: (r) => r.secondaryRoles.length === 0 ? null : JSON.stringify(r.secondaryRoles) }
  ]
}

/**
 * INSERT ... SELECT FROM unnest(arrays) ON CONFLICT (key) DO UPDATE ... WHERE something differs.
 * Returns the created and updated counts (xmax = 0 marks a row this statement inserted).
 */
export async function upsert<R> (
  sql: Sql,
  table: string,
  schoolId: string,
  rows: R[],
  key: string[],
  columns: Array<Column<R>>,
  options: { updatedAt: boolean, onProgress: (n: number) => void, updatedIds?: Set<string> }
): Promise<Counts> {
  const counts: Counts = { created: 0, updated: 0, unchanged: 0, removed: 0 }
  const updatedIds = options.updatedIds
  const names = columns.map((c) => `"${c.name}"`)
  const compared = columns.filter((c) => !key.includes(c.name))
  const stamps = options.updatedAt ? ', "created_at", "updated_at"' : ', "created_at"'
  const stampValues = options.updatedAt ? ', now(), now()' : ', now()'
  // An updated row takes the inserted row's now() (EXCLUDED): Citus takes no function but an
  // immutable one in DO UPDATE SET, nor a parameter there in an INSERT ... SELECT.
  const text = `
    INSERT INTO "${table}" ("school_id", ${names.join(', ')}${stamps})
    SELECT $1::uuid, ${columns.map((c) => `u."${c.name}"${c.cast === undefined ? '' : `::${c.cast}`}`).join(', ')}${stampValues}
    FROM unnest(${columns.map((c, i) => `$${i + 2}::${c.type}[]`).join(', ')}) AS u(${names.join(', ')})
    ON CONFLICT ("school_id", ${key.map((k) => `"${k}"`).join(', ')}) DO UPDATE SET
      ${compared.map((c) => `"${c.name}" = EXCLUDED."${c.name}"`).join(', ')}${options.updatedAt ? ', "updated_at" = EXCLUDED."updated_at"' : ''}
    WHERE (${compared.map((c) => `"${table}"."${c.name}"`).join(', ')}, NULL)
      IS DISTINCT FROM (${compared.map((c) => `EXCLUDED."${c.name}"`).join(', ')}, NULL)
    RETURNING (xmax = 0) AS "created"${updatedIds === undefined ? '' : ', "id"'}`
  for (let start = 0; start < rows.length; start += CHUNK) {
    const chunk = rows.slice(start, start + CHUNK)
    const params: unknown[] = [schoolId, ...columns.map((c) => chunk.map(c.value))]
    const written = await sql.query<{ created: boolean, id?: string }>(text, params)
    for (const row of written) {
      if (row.created) {
        counts.created += 1
      } else {
        counts.updated += 1
        updatedIds?.add(row.id!)
      }
    }
    counts.unchanged += chunk.length - written.length
    options.onProgress(chunk.length)
  }
  return counts
}

/** Deletes the school's rows of `table` with these ids, a few thousand per statement; returns how many went. */
export async function removeById (sql: Sql, table: string, schoolId: string, ids: string[], onProgress: (n: number) => void): Promise<number> {
  let removed = 0
  for (let start = 0; start < ids.length; start += CHUNK) {
    const chunk = ids.slice(start, start + CHUNK)
    removed += (await sql.query(`DELETE FROM "${table}" WHERE "school_id" = $1::uuid AND "id" = ANY($2::uuid[]) RETURNING "id"`, [schoolId, chunk])).length
    onProgress(chunk.length)
  }
  return removed
}

/** A user's roles as the plan compares them: dates as YYYY-MM-DD, no secondary role as none. */
const ROLES_SELECT = '"role_begin_date"::text AS "roleBeginDate", "role_end_date"::text AS "roleEndDate", COALESCE("secondary_roles", \'[]\'::jsonb) AS "secondaryRoles"'

/** The school's records that an import matches against (natural keys and names) and may change. */
export async function readExisting (sql: Sql): Promise<Existing> {
  // Row-level security limits these to the transaction's school (and the WHERE does on its own).
  const classrooms = await sql.query<{ id: string, sourcedId: string | null, name: string }>(
    'SELECT "id", "sourced_id" AS "sourcedId", "name" FROM "classrooms" WHERE "school_id" = current_setting(\'app.school_id\')::uuid')
  // Dates as text: YYYY-MM-DD, as the plan compares them (pg would make local-time Dates).
  const demographicsSelect = DEMOGRAPHIC_COLUMNS.map((field) => `"${columnOf(field)}"${field === 'dateOfBirth' ? '::text' : ''} AS "${field}"`).join(', ')
  const students = await sql.query<Existing['students'][number]>(
    'SELECT "id", "sourced_id" AS "sourcedId", "student_number" AS "studentNumber", "classroom_id" AS "classroomId", ' +
    '"enrollment_start_date"::text AS "enrollmentStartDate", "enrollment_end_date"::text AS "enrollmentEndDate", ' +
    '"enrollment_sourced_id" AS "enrollmentSourcedId", ' +
    demographicsSelect + ', ' + ROLES_SELECT + ' ' +
    'FROM "students" WHERE "school_id" = current_setting(\'app.school_id\')::uuid')
  const teachers = await sql.query<Existing['teachers'][number]>(
    `SELECT "id", "sourced_id" AS "sourcedId", ${demographicsSelect}, ${ROLES_SELECT} ` +
    'FROM "teachers" WHERE "school_id" = current_setting(\'app.school_id\')::uuid AND "sourced_id" IS NOT NULL')
  const agents = await sql.query<Existing['agents'][number]>(
    `SELECT "id", "sourced_id" AS "sourcedId", "role", COALESCE("student_ids", '{}')::text[] AS "studentIds", ${ROLES_SELECT} ` +
    'FROM "agents" WHERE "school_id" = current_setting(\'app.school_id\')::uuid')
  const assignments = await sql.query<{ teacherId: string, classroomId: string }>(
    'SELECT "teacher_id" AS "teacherId", "classroom_id" AS "classroomId" FROM "teacher_classrooms" WHERE "school_id" = current_setting(\'app.school_id\')::uuid')
  return { classrooms, students, teachers, agents, assignments }
}

export function rowsToWrite (plan: ImportPlan): number {
  const { removed } = plan
  return plan.classrooms.length + plan.students.length + plan.teachers.length + plan.assignments.length + plan.studentUpdates.length + plan.teacherUpdates.length +
    plan.agents.length + plan.agentLinks.length + plan.agentRoleUpdates.length +
    removed.classrooms.length * 2 + removed.teachers.length + removed.students.length + removed.agents.length + removed.assignments.length
}

export async function writePlan (sql: Sql, schoolId: string, plan: ImportPlan, onProgress: (n: number) => void): Promise<WriteSummary> {
  const { removed } = plan
  // Removals first. Assignments ended, then the records (their own assignments go by cascade).
  let endedAssignments = 0
  for (let start = 0; start < removed.assignments.length; start += CHUNK) {
    const chunk = removed.assignments.slice(start, start + CHUNK)
    // Pairs as text: a plain WHERE with array parameters, as a school's statement on Citus needs.
    const rows = await sql.query(`
      DELETE FROM "teacher_classrooms" WHERE "school_id" = $1::uuid AND "teacher_id" = ANY($2::uuid[])
        AND ("teacher_id"::text || '/' || "classroom_id"::text) = ANY($3::text[])
      RETURNING "teacher_id"`,
    [schoolId, chunk.map((a) => a.teacherId), chunk.map((a) => `${a.teacherId}/${a.classroomId}`)])
    endedAssignments += rows.length
    onProgress(chunk.length)
  }
  const studentsRemoved = await removeById(sql, 'students', schoolId, removed.students.map((s) => s.id), onProgress)
  const teachersRemoved = await removeById(sql, 'teachers', schoolId, removed.teachers.map((s) => s.id), onProgress)
  const agentsRemoved = await removeById(sql, 'agents', schoolId, removed.agents.map((s) => s.id), onProgress)
  // A classroom's students leave it before it goes (the key is ON DELETE RESTRICT), those of the
  // import's with their enrollment dates (as the plan has them, unless it places them elsewhere,
  // below); those made by hand keep theirs.
  const updatedStudents = new Set<string>()
  const leaving = removed.classrooms.map((c) => c.id)
  // The transaction's now(), as the upserts stamp theirs, sent as a parameter (as Prisma sends
  // updatedAt): the statement holds no function for Citus to evaluate.
  const now = leaving.length === 0 ? undefined : (await sql.query<{ now: string }>('SELECT now()::text AS "now"'))[0]!.now
  for (let start = 0; start < leaving.length; start += CHUNK) {
    const rows = await sql.query<{ id: string }>(`
      UPDATE "students" SET "classroom_id" = NULL, "enrollment_sourced_id" = NULL, "updated_at" = $3::timestamptz,
        "enrollment_start_date" = CASE WHEN "sourced_id" IS NULL THEN "enrollment_start_date" END,
        "enrollment_end_date" = CASE WHEN "sourced_id" IS NULL THEN "enrollment_end_date" END
      WHERE "school_id" = $1::uuid AND "classroom_id" = ANY($2::uuid[]) RETURNING "id"`,
    [schoolId, leaving.slice(start, start + CHUNK), now])
    for (const row of rows) updatedStudents.add(row.id)
    onProgress(Math.min(CHUNK, leaving.length - start))
  }
  const classroomsRemoved = await removeById(sql, 'classrooms', schoolId, leaving, onProgress)

  const options = { updatedAt: true, onProgress }
  const classrooms = await upsert(sql, 'classrooms', schoolId, plan.classrooms, ['id'], [
    { name: 'id', type: 'uuid', value: (r) => r.id },
    { name: 'sourced_id', type: 'text', value: (r) => r.sourcedId },
    { name: 'name', type: 'text', value: (r) => r.name },
    { name: 'grade_level', type: '"GradeLevel"', value: (r) => r.gradeLevel },
    { name: 'subject', type: 'text', value: (r) => r.subject },
    { name: 'course_id', type: 'uuid', value: (r) => r.courseId },
    { name: 'term_ids', type: 'text', cast: 'uuid[]', value: (r) => arrayLiteral(r.termIds) },
    { name: 'class_code', type: 'text', value: (r) => r.classCode },
    { name: 'class_type', type: 'text', value: (r) => r.classType },
    { name: 'location', type: 'text', value: (r) => r.location },
    { name: 'periods', type: 'text', cast: 'text[]', value: (r) => arrayLiteral(r.periods) },
    { name: 'grades', type: 'text', cast: 'text[]', value: (r) => arrayLiteral(r.grades) },
    { name: 'subjects', type: 'text', cast: 'text[]', value: (r) => arrayLiteral(r.subjects) },
    { name: 'subject_codes', type: 'text', cast: 'text[]', value: (r) => arrayLiteral(r.subjectCodes) }
  ], options)
  // full_name is left to the trigger students_names / teachers_names: derived from the names on
  // insert, renewed on a change of names unless it was set on its own.
  const teachers = await upsert(sql, 'teachers', schoolId, plan.teachers, ['id'], [
    { name: 'id', type: 'uuid', value: (r) => r.id },
    { name: 'sourced_id', type: 'text', value: (r) => r.sourcedId },
    { name: 'given_name', type: 'text', value: (r) => r.givenName },
    { name: 'family_name', type: 'text', value: (r) => r.familyName },
    { name: 'preferred_name', type: 'text', value: (r) => r.preferredName },
    { name: 'email', type: 'text', value: (r) => r.email },
    { name: 'status', type: '"TeacherStatus"', value: (r) => r.status },
    ...detailColumns<TeacherRecord>(),
    ...demographicColumns<TeacherRecord>(),
    ...roleColumns<TeacherRecord>()
  ], options)
  // Teachers the users file does not hold: their demographics and roles only (each exists, as the students' updates below).
  const teacherUpdates = await upsert(sql, 'teachers', schoolId, plan.teacherUpdates, ['id'], [
    { name: 'id', type: 'uuid', value: (r) => r.id },
    ...demographicColumns<TeacherUpdate>(),
    ...roleColumns<TeacherUpdate>()
  ], options)
  if (teacherUpdates.created > 0) throw new Error('A teacher of the school went while the import ran: nothing was written')
  const written = await upsert(sql, 'students', schoolId, plan.students, ['id'], [
    { name: 'id', type: 'uuid', value: (r) => r.id },
    { name: 'sourced_id', type: 'text', value: (r) => r.sourcedId },
    { name: 'given_name', type: 'text', value: (r) => r.givenName },
    { name: 'family_name', type: 'text', value: (r) => r.familyName },
    { name: 'preferred_name', type: 'text', value: (r) => r.preferredName },
    { name: 'student_number', type: 'text', value: (r) => r.studentNumber },
    { name: 'email', type: 'text', value: (r) => r.email },
    ...demographicColumns<StudentRecord>(),
    ...detailColumns<StudentRecord>(),
    ...roleColumns<StudentRecord>(),
    { name: 'grade_level', type: '"GradeLevel"', value: (r) => r.gradeLevel },
    { name: 'status', type: '"StudentStatus"', value: (r) => r.status },
    { name: 'enrollment_start_date', type: 'date', value: (r) => r.enrollmentStartDate },
    { name: 'enrollment_end_date', type: 'date', value: (r) => r.enrollmentEndDate },
    { name: 'enrollment_sourced_id', type: 'text', value: (r) => r.enrollmentSourcedId },
    { name: 'classroom_id', type: 'uuid', value: (r) => r.classroomId }
  ], { ...options, updatedIds: updatedStudents })
  // Students the users file does not hold: their classroom, enrollment dates, demographics and roles only
  // (each of them exists: the import holds the school's lock since it read them).
  const updates = await upsert(sql, 'students', schoolId, plan.studentUpdates, ['id'], [
    { name: 'id', type: 'uuid', value: (r) => r.id },
    { name: 'classroom_id', type: 'uuid', value: (r) => r.classroomId },
    { name: 'enrollment_start_date', type: 'date', value: (r) => r.enrollmentStartDate },
    { name: 'enrollment_end_date', type: 'date', value: (r) => r.enrollmentEndDate },
    { name: 'enrollment_sourced_id', type: 'text', value: (r) => r.enrollmentSourcedId },
    ...demographicColumns<StudentUpdate>(),
    ...roleColumns<StudentUpdate>()
  ], { ...options, updatedIds: updatedStudents })
  if (updates.created > 0) throw new Error('A student of the school went while the import ran: nothing was written')
  const teacherAssignments = await upsert(sql, 'teacher_classrooms', schoolId, plan.assignments, ['teacher_id', 'classroom_id'], [
    { name: 'teacher_id', type: 'uuid', value: (r) => r.teacherId },
    { name: 'classroom_id', type: 'uuid', value: (r) => r.classroomId },
    { name: 'role', type: '"TeacherRole"', value: (r) => r.role },
    // The enrollment's own (OneRoster's enrollments); the assignment's id is the database's.
    { name: 'sourced_id', type: 'text', value: (r) => r.sourcedId },
    { name: 'begin_date', type: 'date', value: (r) => r.beginDate },
    { name: 'end_date', type: 'date', value: (r) => r.endDate }
  ], options)
  // A student written twice (left a removed classroom, then placed) is one update.
  const agents = await upsert(sql, 'agents', schoolId, plan.agents, ['id'], [
    { name: 'id', type: 'uuid', value: (r) => r.id },
    { name: 'sourced_id', type: 'text', value: (r) => r.sourcedId },
    { name: 'role', type: 'text', value: (r) => r.role },
    { name: 'given_name', type: 'text', value: (r) => r.givenName },
    { name: 'family_name', type: 'text', value: (r) => r.familyName },
    { name: 'preferred_name', type: 'text', value: (r) => r.preferredName },
    { name: 'email', type: 'text', value: (r) => r.email },
    { name: 'status', type: '"TeacherStatus"', value: (r) => r.status },
    ...detailColumns<AgentRecord>(),
    ...roleColumns<AgentRecord>(),
    { name: 'student_ids', type: 'text', cast: 'uuid[]', value: (r) => r.studentIds.length === 0 ? null : arrayLiteral(r.studentIds) }
  ], options)
  // The students of agents the file does not hold (an UPDATE: an upsert's insert would want the whole row).
  let agentLinksUpdated = 0
  const linkedAt = plan.agentLinks.length === 0 ? undefined : (await sql.query<{ now: string }>('SELECT now()::text AS "now"'))[0]!.now
  for (let start = 0; start < plan.agentLinks.length; start += CHUNK) {
    const chunk = plan.agentLinks.slice(start, start + CHUNK)
    const rows = await sql.query(`
      UPDATE "agents" SET "student_ids" = u."student_ids"::uuid[], "updated_at" = $4::timestamptz
      FROM unnest($2::uuid[], $3::text[]) AS u("id", "student_ids")
      WHERE "agents"."school_id" = $1::uuid AND "agents"."id" = u."id" AND "agents"."student_ids" IS DISTINCT FROM u."student_ids"::uuid[]
      RETURNING "agents"."id"`,
    [schoolId, chunk.map((r) => r.id), chunk.map((r) => r.studentIds.length === 0 ? null : arrayLiteral(r.studentIds)), linkedAt])
    agentLinksUpdated += rows.length
    onProgress(chunk.length)
  }
  // The roles of agents the file does not hold, as their students above.
  let agentRolesUpdated = 0
  const rolesAt = plan.agentRoleUpdates.length === 0 ? undefined : (await sql.query<{ now: string }>('SELECT now()::text AS "now"'))[0]!.now
  for (let start = 0; start < plan.agentRoleUpdates.length; start += CHUNK) {
    const chunk = plan.agentRoleUpdates.slice(start, start + CHUNK)
    const columns = roleColumns<typeof chunk[number]>()
    const rows = await sql.query(`
      UPDATE "agents" SET ${columns.map((c) => `"${c.name}" = u."${c.name}"`).join(', ')}, "updated_at" = $6::timestamptz
      FROM unnest($2::uuid[], ${columns.map((c, i) => `$${i + 3}::${c.type}[]`).join(', ')}) AS u("id", ${columns.map((c) => `"${c.name}"`).join(', ')})
      WHERE "agents"."school_id" = $1::uuid AND "agents"."id" = u."id"
        AND (${columns.map((c) => `"agents"."${c.name}"`).join(', ')}) IS DISTINCT FROM (${columns.map((c) => `u."${c.name}"`).join(', ')})
      RETURNING "agents"."id"`,
    [schoolId, chunk.map((r) => r.id), ...columns.map((c) => chunk.map(c.value)), rolesAt])
    agentRolesUpdated += rows.length
    onProgress(chunk.length)
  }
  const inFile = new Set(plan.students.map((s) => s.id))
  const updatedInFile = [...updatedStudents].filter((id) => inFile.has(id)).length
  return {
    classrooms: { ...classrooms, removed: classroomsRemoved },
    teachers: { ...teachers, updated: teachers.updated + teacherUpdates.updated, removed: teachersRemoved },
    agents: { ...agents, updated: agents.updated + agentLinksUpdated + agentRolesUpdated, removed: agentsRemoved },
    students: {
      created: written.created,
      updated: updatedStudents.size,
      unchanged: plan.students.length - written.created - updatedInFile,
      removed: studentsRemoved
    },
    teacherAssignments: { ...teacherAssignments, removed: endedAssignments },
    studentEnrollmentsEnded: removed.enrollments.length
  }
}

/** A list as a PostgreSQL array literal (one text per row): unnest of a text[][] would flatten them. */
export const arrayLiteral = (values: readonly string[]): string => `{${values.map((v) => `"${v.replace(/["\\]/g, '\\$&')}"`).join(',')}}`
