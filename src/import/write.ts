// Writes an import plan in one transaction, a few thousand rows per statement (arrays unnested by
// PostgreSQL), comparing before writing: a row whose columns are all the same is not touched, so a
// second run of the same bundle updates nothing and adds nothing to the change feed.
import type { Existing, ImportPlan } from './oneroster.js'

/** The one connection of an import: a pg client or the embedded PGlite. */
export interface Sql {
  query: <T = Record<string, unknown>>(text: string, params?: unknown[]) => Promise<T[]>
}

export interface Counts {
  created: number
  updated: number
  unchanged: number
}

export interface WriteSummary {
  classrooms: Counts
  students: Counts
  teachers: Counts
  teacherAssignments: Counts
}

/** Rows per statement: large enough to amortise a round trip, small enough for steady progress. */
const CHUNK = 5_000

interface Column<R> {
  name: string
  type: string
  value: (row: R) => unknown
}

/**
 * INSERT ... SELECT FROM unnest(arrays) ON CONFLICT (key) DO UPDATE ... WHERE something differs.
 * Returns the created and updated counts (xmax = 0 marks a row this statement inserted).
 */
async function upsert<R> (
  sql: Sql,
  table: string,
  schoolId: string,
  rows: R[],
  key: string[],
  columns: Array<Column<R>>,
  options: { updatedAt: boolean, onProgress: (n: number) => void }
): Promise<Counts> {
  const counts: Counts = { created: 0, updated: 0, unchanged: 0 }
  const names = columns.map((c) => `"${c.name}"`)
  const compared = columns.filter((c) => !key.includes(c.name))
  const stamps = options.updatedAt ? ', "created_at", "updated_at"' : ', "created_at"'
  const stampValues = options.updatedAt ? ', now(), now()' : ', now()'
  // An updated row takes the inserted row's now() (EXCLUDED): Citus takes no function but an
  // immutable one in DO UPDATE SET, nor a parameter there in an INSERT ... SELECT.
  const text = `
    INSERT INTO "${table}" ("school_id", ${names.join(', ')}${stamps})
    SELECT $1::uuid, ${columns.map((c) => `u."${c.name}"`).join(', ')}${stampValues}
    FROM unnest(${columns.map((c, i) => `$${i + 2}::${c.type}[]`).join(', ')}) AS u(${names.join(', ')})
    ON CONFLICT ("school_id", ${key.map((k) => `"${k}"`).join(', ')}) DO UPDATE SET
      ${compared.map((c) => `"${c.name}" = EXCLUDED."${c.name}"`).join(', ')}${options.updatedAt ? ', "updated_at" = EXCLUDED."updated_at"' : ''}
    WHERE (${compared.map((c) => `"${table}"."${c.name}"`).join(', ')}, NULL)
      IS DISTINCT FROM (${compared.map((c) => `EXCLUDED."${c.name}"`).join(', ')}, NULL)
    RETURNING (xmax = 0) AS "created"`
  for (let start = 0; start < rows.length; start += CHUNK) {
    const chunk = rows.slice(start, start + CHUNK)
    const params: unknown[] = [schoolId, ...columns.map((c) => chunk.map(c.value))]
    const written = await sql.query<{ created: boolean }>(text, params)
    for (const row of written) {
      if (row.created) counts.created += 1
      else counts.updated += 1
    }
    counts.unchanged += chunk.length - written.length
    options.onProgress(chunk.length)
  }
  return counts
}

/** The school's records that an import matches against (natural keys and names). */
export async function readExisting (sql: Sql): Promise<Existing> {
  // Row-level security limits these to the transaction's school (and the WHERE does on its own).
  const classrooms = await sql.query<{ id: string, sourcedId: string | null, name: string }>(
    'SELECT "id", "sourced_id" AS "sourcedId", "name" FROM "classrooms" WHERE "school_id" = current_setting(\'app.school_id\')::uuid')
  const students = await sql.query<{ id: string, sourcedId: string | null, studentNumber: string | null }>(
    'SELECT "id", "sourced_id" AS "sourcedId", "student_number" AS "studentNumber" FROM "students" WHERE "school_id" = current_setting(\'app.school_id\')::uuid AND ("sourced_id" IS NOT NULL OR "student_number" IS NOT NULL)')
  const teachers = await sql.query<{ id: string, sourcedId: string | null }>(
    'SELECT "id", "sourced_id" AS "sourcedId" FROM "teachers" WHERE "school_id" = current_setting(\'app.school_id\')::uuid AND "sourced_id" IS NOT NULL')
  return { classrooms, students, teachers }
}

export function rowsToWrite (plan: ImportPlan): number {
  return plan.classrooms.length + plan.students.length + plan.teachers.length + plan.assignments.length
}

export async function writePlan (sql: Sql, schoolId: string, plan: ImportPlan, onProgress: (n: number) => void): Promise<WriteSummary> {
  const options = { updatedAt: true, onProgress }
  const classrooms = await upsert(sql, 'classrooms', schoolId, plan.classrooms, ['id'], [
    { name: 'id', type: 'uuid', value: (r) => r.id },
    { name: 'sourced_id', type: 'text', value: (r) => r.sourcedId },
    { name: 'name', type: 'text', value: (r) => r.name },
    { name: 'grade_level', type: '"GradeLevel"', value: (r) => r.gradeLevel },
    { name: 'subject', type: 'text', value: (r) => r.subject }
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
    { name: 'status', type: '"TeacherStatus"', value: (r) => r.status }
  ], options)
  const students = await upsert(sql, 'students', schoolId, plan.students, ['id'], [
    { name: 'id', type: 'uuid', value: (r) => r.id },
    { name: 'sourced_id', type: 'text', value: (r) => r.sourcedId },
    { name: 'given_name', type: 'text', value: (r) => r.givenName },
    { name: 'family_name', type: 'text', value: (r) => r.familyName },
    { name: 'preferred_name', type: 'text', value: (r) => r.preferredName },
    { name: 'student_number', type: 'text', value: (r) => r.studentNumber },
    { name: 'email', type: 'text', value: (r) => r.email },
    { name: 'date_of_birth', type: 'date', value: (r) => r.dateOfBirth },
    { name: 'grade_level', type: '"GradeLevel"', value: (r) => r.gradeLevel },
    { name: 'status', type: '"StudentStatus"', value: (r) => r.status },
    { name: 'enrollment_start_date', type: 'date', value: (r) => r.enrollmentStartDate },
    { name: 'enrollment_end_date', type: 'date', value: (r) => r.enrollmentEndDate },
    { name: 'classroom_id', type: 'uuid', value: (r) => r.classroomId }
  ], options)
  const teacherAssignments = await upsert(sql, 'teacher_classrooms', schoolId, plan.assignments, ['teacher_id', 'classroom_id'], [
    { name: 'teacher_id', type: 'uuid', value: (r) => r.teacherId },
    { name: 'classroom_id', type: 'uuid', value: (r) => r.classroomId },
    { name: 'role', type: '"TeacherRole"', value: (r) => r.role }
  ], { updatedAt: false, onProgress })
  return { classrooms, students, teachers, teacherAssignments }
}
