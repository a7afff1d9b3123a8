// OneRoster academicSessions.csv and courses.csv → the school's academic sessions and courses,
// checked whole before anything is written, as oneroster.ts checks the people and classes: a bad
// row stops the import with its file, line and reason.
//
// Mapping (docs/running/import.md): every column the binding gives is kept as given (a session's
// type in 1EdTech's spelling, a course's grade codes as the CEDS codes of the file), but for
// courses.csv's orgSourcedId (the import is into one school). Bulk and delta as for the other
// files: a bulk file is the whole truth of its kind for the records of the import's (with a
// sourcedId), a delta changes what it lists; a removal that would leave a session's parent or a
// course's school year pointing at nothing is refused.
import { v7 as uuidv7 } from 'uuid'
import type { Bundle, Row, Table } from './bundle.js'
import { day, fail, fileOf, GRADES, keyedRows, manifestOf, text, type FileMode, type Keyed } from './oneroster.js'

/** 1EdTech's session types, as the binding and the database spell them. */
export const SESSION_TYPES = ['schoolYear', 'term', 'gradingPeriod', 'semester'] as const
export type SessionType = typeof SESSION_TYPES[number]

export interface AcademicSessionRecord {
  id: string
  sourcedId: string
  title: string
  type: SessionType
  /** YYYY-MM-DD. */
  startDate: string
  endDate: string
  schoolYear: number
  parentId: string | null
}

export interface CourseRecord {
  id: string
  sourcedId: string
  title: string
  courseCode: string | null
  grades: string[]
  subjects: string[]
  subjectCodes: string[]
  schoolYearId: string | null
}

export interface CalendarPlan {
  /** Parents before their children, so that every chunk of the write finds its parents. */
  academicSessions: AcademicSessionRecord[]
  courses: CourseRecord[]
  removed: {
    academicSessions: Array<{ id: string, sourcedId: string }>
    courses: Array<{ id: string, sourcedId: string }>
  }
}

/** What the school has of them: natural keys to ids, and the references a removal may break. */
export interface ExistingCalendar {
  academicSessions: Array<{ id: string, sourcedId: string | null, parentId: string | null }>
  courses: Array<{ id: string, sourcedId: string | null, schoolYearId: string | null }>
}

interface File {
  table: Table
  mode: FileMode
}

/** The records of the school a file takes away: of the import's, left out of a bulk file or listed tobedeleted. */
function removedBy<T extends { sourcedId: string | null }> (file: File | undefined, rows: Keyed[], existing: T[]): T[] {
  if (file === undefined) return []
  const active = new Set(rows.filter((k) => !k.deleted).map((k) => k.sourcedId))
  const listed = new Set(rows.map((k) => k.sourcedId))
  return existing.filter((r) => r.sourcedId !== null && (file.mode === 'bulk' || listed.has(r.sourcedId)) && !active.has(r.sourcedId))
}

/** The line that removes a record: its tobedeleted row in a delta, none when a bulk file leaves it out. */
const lineOf = (rows: Keyed[], sourcedId: string | null): number | undefined => rows.find((k) => k.sourcedId === sourcedId)?.row.line

function list (table: Table, row: Row, column: string, max: number): string[] {
  const values = row.get(column).split(',').map((v) => v.trim()).filter((v) => v !== '')
  for (const v of values) if (v.length > max) fail(table, row.line, `${column} has a value of more than ${max} characters`)
  return values
}

function gradeCodes (table: Table, row: Row): string[] {
  const codes = list(table, row, 'grades', 16)
  for (const code of codes) {
    if (GRADES[code.toUpperCase()] === undefined) {
      fail(table, row.line, `grade "${code}" is not a OneRoster grade (IT, PR, PK, TK, KG, 01 to 13, UG, Other)`)
    }
  }
  return codes
}

function sessionType (table: Table, row: Row): SessionType {
  const value = row.get('type')
  const type = SESSION_TYPES.find((t) => t.toLowerCase() === value.toLowerCase())
  if (type === undefined) fail(table, row.line, `type "${value}" is not a session type (${SESSION_TYPES.join(', ')})`)
  return type!
}

function schoolYearOf (table: Table, row: Row): number {
  const value = row.get('schoolYear')
  if (!/^\d{4}$/.test(value)) fail(table, row.line, value === '' ? 'schoolYear is empty' : `schoolYear "${value}" is not a year (YYYY)`)
  return Number(value)
}

/**
 * Checks academicSessions.csv and courses.csv against themselves and the school's records;
 * returns what to write and what to remove. A file absent changes nothing.
 */
export function planCalendar (bundle: Bundle, existing: ExistingCalendar): CalendarPlan {
  const manifest = manifestOf(bundle)
  const sessionsFile = fileOf(bundle, manifest, 'academicSessions.csv', ['sourcedId', 'title', 'type', 'startDate', 'endDate', 'schoolYear'])
  const coursesFile = fileOf(bundle, manifest, 'courses.csv', ['sourcedId', 'title'])
  const sessionRows = sessionsFile === undefined ? [] : keyedRows(sessionsFile.table, sessionsFile.mode)
  const courseRows = coursesFile === undefined ? [] : keyedRows(coursesFile.table, coursesFile.mode)

  // --- Sessions.
  const removedSessions = removedBy(sessionsFile, sessionRows, existing.academicSessions)
  const removedSessionIds = new Set(removedSessions.map((s) => s.id))
  const keptSessions = existing.academicSessions.filter((s) => !removedSessionIds.has(s.id))
  const sessionBySourced = new Map(keptSessions.filter((s) => s.sourcedId !== null).map((s) => [s.sourcedId!, s.id]))
  const sessions = new Map<string, AcademicSessionRecord & { parentSourcedId: string, line: number }>()
  for (const { sourcedId, row, deleted } of sessionRows) {
    if (deleted) continue
    const table = sessionsFile!.table
    const title = text(table, row, 'title')
    if (title === null) fail(table, row.line, 'title is empty')
    const startDate = day(table, row, 'startDate')
    const endDate = day(table, row, 'endDate')
    if (startDate === null) fail(table, row.line, 'startDate is empty')
    if (endDate === null) fail(table, row.line, 'endDate is empty')
    if (endDate! < startDate!) fail(table, row.line, `endDate ${endDate!} is before startDate ${startDate!}`)
    const parentSourcedId = row.get('parentSourcedId')
    if (parentSourcedId === sourcedId) fail(table, row.line, 'parentSourcedId is the session itself')
    sessions.set(sourcedId, {
      id: sessionBySourced.get(sourcedId) ?? uuidv7(),
      sourcedId,
      title: title!,
      type: sessionType(table, row),
      startDate: startDate!,
      endDate: endDate!,
      schoolYear: schoolYearOf(table, row),
      parentId: null,
      parentSourcedId,
      line: row.line
    })
  }
  for (const [sourcedId, s] of sessions) sessionBySourced.set(sourcedId, s.id)
  const gone = (sourcedId: string): string => removedSessions.some((s) => s.sourcedId === sourcedId)
    ? `academic session "${sourcedId}" is one this import removes (academicSessions.csv leaves it out or marks it tobedeleted)`
    : `academic session "${sourcedId}" is neither in academicSessions.csv nor in the school`
  for (const s of sessions.values()) {
    if (s.parentSourcedId === '') continue
    const parent = sessionBySourced.get(s.parentSourcedId)
    if (parent === undefined) fail(sessionsFile!.table, s.line, `parentSourcedId: ${gone(s.parentSourcedId)}`)
    s.parentId = parent!
  }
  // A session the import removes may be no kept session's parent.
  const parentOf = new Map(keptSessions.map((s) => [s.id, s.parentId]))
  for (const s of sessions.values()) parentOf.set(s.id, s.parentId)
  for (const removed of removedSessions) {
    const child = [...parentOf].find(([, parent]) => parent === removed.id)
    if (child !== undefined) {
      const name = [...sessions.values()].find((s) => s.id === child[0])?.sourcedId ?? keptSessions.find((s) => s.id === child[0])?.sourcedId ?? child[0]
      fail(sessionsFile!.table, lineOf(sessionRows, removed.sourcedId), `academic session "${removed.sourcedId!}" is removed, but it is the parent of "${name}", which stays`)
    }
  }
  // Parents first; a cycle of parents is refused.
  const depth = new Map<string, number>()
  const depthOf = (id: string, seen: Set<string>): number => {
    const known = depth.get(id)
    if (known !== undefined) return known
    const parent = parentOf.get(id) ?? null
    if (seen.has(id)) {
      const s = [...sessions.values()].find((r) => r.id === id)
      return fail(sessionsFile!.table, s?.line, `the parents of academic session "${s?.sourcedId ?? id}" lead back to it`)
    }
    const d = parent === null ? 0 : depthOf(parent, seen.add(id)) + 1
    depth.set(id, d)
    return d
  }
  for (const s of sessions.values()) depthOf(s.id, new Set())
  const academicSessions = [...sessions.values()]
    .sort((x, y) => depth.get(x.id)! - depth.get(y.id)!)
    .map(({ parentSourcedId: _p, line: _l, ...record }) => record)

  // --- Courses.
  const removedCourses = removedBy(coursesFile, courseRows, existing.courses)
  const removedCourseIds = new Set(removedCourses.map((c) => c.id))
  const keptCourses = existing.courses.filter((c) => !removedCourseIds.has(c.id))
  const courseBySourced = new Map(keptCourses.filter((c) => c.sourcedId !== null).map((c) => [c.sourcedId!, c.id]))
  const courses: CourseRecord[] = []
  for (const { sourcedId, row, deleted } of courseRows) {
    if (deleted) continue
    const table = coursesFile!.table
    const title = text(table, row, 'title')
    if (title === null) fail(table, row.line, 'title is empty')
    const year = row.get('schoolYearSourcedId')
    const schoolYearId = year === '' ? null : sessionBySourced.get(year)
    if (schoolYearId === undefined) fail(table, row.line, `schoolYearSourcedId: ${gone(year)}`)
    courses.push({
      id: courseBySourced.get(sourcedId) ?? uuidv7(),
      sourcedId,
      title: title!,
      courseCode: text(table, row, 'courseCode', 64),
      grades: gradeCodes(table, row),
      subjects: list(table, row, 'subjects', 200),
      subjectCodes: list(table, row, 'subjectCodes', 64),
      schoolYearId: schoolYearId!
    })
  }
  // A session the import removes may be no kept course's school year.
  const inFile = new Set(courses.map((c) => c.id))
  const yearOf = [...keptCourses.filter((c) => !inFile.has(c.id)), ...courses]
  for (const removed of removedSessions) {
    const course = yearOf.find((c) => c.schoolYearId === removed.id)
    if (course !== undefined) {
      fail(sessionsFile!.table, lineOf(sessionRows, removed.sourcedId), `academic session "${removed.sourcedId!}" is removed, but it is the school year of course "${course.sourcedId ?? course.id}", which stays`)
    }
  }

  return {
    academicSessions,
    courses,
    removed: {
      academicSessions: removedSessions.map((s) => ({ id: s.id, sourcedId: s.sourcedId! })),
      courses: removedCourses.map((c) => ({ id: c.id, sourcedId: c.sourcedId! }))
    }
  }
}
