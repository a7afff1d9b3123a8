// Writes the academic sessions and courses of an import (calendar.ts plans them) in the import's
// transaction, as write.ts writes the rest: removals first (courses, then sessions: a session and
// its children go in one statement, whose keys are checked at its end), then sessions parents
// first, then courses; a row whose columns are all the same is not touched.
import type { CalendarPlan, ExistingCalendar } from './calendar.js'
import { removeById, upsert, type Counts, type Sql } from './write.js'

export interface CalendarSummary {
  academicSessions: Counts
  courses: Counts
}

/** The school's sessions and courses, as the plan matches them (row-level security and the WHERE confine them). */
export async function readExistingCalendar (sql: Sql): Promise<ExistingCalendar> {
  const academicSessions = await sql.query<ExistingCalendar['academicSessions'][number]>(
    'SELECT "id", "sourced_id" AS "sourcedId", "parent_id" AS "parentId" FROM "academic_sessions" WHERE "school_id" = current_setting(\'app.school_id\')::uuid')
  const courses = await sql.query<ExistingCalendar['courses'][number]>(
    'SELECT "id", "sourced_id" AS "sourcedId", "school_year_id" AS "schoolYearId" FROM "courses" WHERE "school_id" = current_setting(\'app.school_id\')::uuid')
  return { academicSessions, courses }
}

export function calendarRowsToWrite (plan: CalendarPlan): number {
  return plan.academicSessions.length + plan.courses.length + plan.removed.academicSessions.length + plan.removed.courses.length
}

export async function writeCalendar (sql: Sql, schoolId: string, plan: CalendarPlan, onProgress: (n: number) => void): Promise<CalendarSummary> {
  // A classroom of a removed course loses it (the classes the import writes name their course again).
  const removedCourses = plan.removed.courses.map((c) => c.id)
  if (removedCourses.length > 0) {
    await sql.query('UPDATE "classrooms" SET "course_id" = NULL WHERE "school_id" = $1::uuid AND "course_id" = ANY($2::uuid[])', [schoolId, removedCourses])
  }
  const coursesRemoved = await removeById(sql, 'courses', schoolId, plan.removed.courses.map((c) => c.id), onProgress)
  const sessionsRemoved = await removeById(sql, 'academic_sessions', schoolId, plan.removed.academicSessions.map((s) => s.id), onProgress)
  const options = { updatedAt: true, onProgress }
  const academicSessions = await upsert(sql, 'academic_sessions', schoolId, plan.academicSessions, ['id'], [
    { name: 'id', type: 'uuid', value: (r) => r.id },
    { name: 'sourced_id', type: 'text', value: (r) => r.sourcedId },
    { name: 'title', type: 'text', value: (r) => r.title },
    { name: 'type', type: '"AcademicSessionType"', value: (r) => r.type },
    { name: 'start_date', type: 'date', value: (r) => r.startDate },
    { name: 'end_date', type: 'date', value: (r) => r.endDate },
    { name: 'school_year', type: 'int4', value: (r) => r.schoolYear },
    { name: 'parent_id', type: 'uuid', value: (r) => r.parentId }
  ], options)
  // Lists as PostgreSQL array literals (one text per course): unnest of a text[][] would flatten them.
  const literal = (values: string[]): string => `{${values.map((v) => `"${v.replace(/["\\]/g, '\\$&')}"`).join(',')}}`
  const courses = await upsert(sql, 'courses', schoolId, plan.courses, ['id'], [
    { name: 'id', type: 'uuid', value: (r) => r.id },
    { name: 'sourced_id', type: 'text', value: (r) => r.sourcedId },
    { name: 'title', type: 'text', value: (r) => r.title },
    { name: 'course_code', type: 'text', value: (r) => r.courseCode },
    { name: 'grades', type: 'text', cast: 'text[]', value: (r) => literal(r.grades) },
    { name: 'subjects', type: 'text', cast: 'text[]', value: (r) => literal(r.subjects) },
    { name: 'subject_codes', type: 'text', cast: 'text[]', value: (r) => literal(r.subjectCodes) },
    { name: 'school_year_id', type: 'uuid', value: (r) => r.schoolYearId }
  ], options)
  return {
    academicSessions: { ...academicSessions, removed: sessionsRemoved },
    courses: { ...courses, removed: coursesRemoved }
  }
}
