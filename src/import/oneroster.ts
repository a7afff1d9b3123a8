// OneRoster 1.1/1.2 CSV → the school's records. Everything is checked here, before anything is
// written: a bad row stops the import with its file, line and reason.
//
// Mapping (README "Importing OneRoster"):
//   users.csv (role from roles.csv in 1.2, or the `role` column of 1.1): students and teachers;
//     other roles (parents, administrators, ...) are skipped.
//   classes.csv → classrooms (title → name; one grade → grade level; subjects → subject).
//   enrollments.csv → a student's classroom (the homeroom class if any, else the first listed) with
//     its begin and end dates; a teacher's classrooms, `primary` true → PRIMARY, false → ASSISTANT.
//   demographics.csv → birthDate.
import { randomBytes } from 'node:crypto'
import { ImportError, readTable, type Bundle, type Row, type Table } from './bundle.js'

export type GradeLevel =
  | 'PRE_KINDERGARTEN' | 'KINDERGARTEN' | 'GRADE_1' | 'GRADE_2' | 'GRADE_3' | 'GRADE_4' | 'GRADE_5'
  | 'GRADE_6' | 'GRADE_7' | 'GRADE_8' | 'GRADE_9' | 'GRADE_10' | 'GRADE_11' | 'GRADE_12' | 'GRADE_13'
  | 'UNGRADED'

/** CEDS grade codes as OneRoster uses them. */
const GRADES: Record<string, GradeLevel> = {
  IT: 'PRE_KINDERGARTEN',
  PR: 'PRE_KINDERGARTEN',
  PK: 'PRE_KINDERGARTEN',
  TK: 'PRE_KINDERGARTEN',
  KG: 'KINDERGARTEN',
  UG: 'UNGRADED',
  OTHER: 'UNGRADED',
  ...Object.fromEntries(Array.from({ length: 13 }, (_, i) => [String(i + 1).padStart(2, '0'), `GRADE_${i + 1}` as GradeLevel])),
  ...Object.fromEntries(Array.from({ length: 9 }, (_, i) => [String(i + 1), `GRADE_${i + 1}` as GradeLevel]))
}

export interface ClassroomRecord {
  id: string
  sourcedId: string
  name: string
  gradeLevel: GradeLevel | null
  subject: string | null
}

export interface StudentRecord {
  id: string
  sourcedId: string
  givenName: string
  familyName: string
  preferredName: string | null
  studentNumber: string | null
  email: string | null
  dateOfBirth: string | null
  gradeLevel: GradeLevel | null
  status: 'ACTIVE' | 'INACTIVE'
  enrollmentStartDate: string | null
  enrollmentEndDate: string | null
  classroomId: string | null
}

export interface TeacherRecord {
  id: string
  sourcedId: string
  givenName: string
  familyName: string
  preferredName: string | null
  email: string | null
  status: 'ACTIVE' | 'INACTIVE'
}

export interface AssignmentRecord {
  teacherId: string
  classroomId: string
  role: 'PRIMARY' | 'ASSISTANT'
}

export interface ImportPlan {
  classrooms: ClassroomRecord[]
  students: StudentRecord[]
  teachers: TeacherRecord[]
  assignments: AssignmentRecord[]
  /** Users of other roles (parents, administrators, ...) and their enrollments, not imported. */
  skippedUsers: number
  skippedEnrollments: number
}

/** What the school has already: natural keys to ids, so that rows are matched, not duplicated. */
export interface Existing {
  classrooms: Array<{ id: string, sourcedId: string | null, name: string }>
  students: Array<{ id: string, sourcedId: string | null, studentNumber: string | null }>
  teachers: Array<{ id: string, sourcedId: string | null }>
}

// Random bytes are drawn 64 KiB at a time: one system call per 4,096 ids, not one per id.
let pool = Buffer.alloc(0)
let poolOffset = 0

/** UUID version 7 (time-ordered, like the ids Prisma makes for these tables). */
export function uuidv7 (): string {
  if (poolOffset + 16 > pool.length) {
    pool = randomBytes(65_536)
    poolOffset = 0
  }
  const bytes = pool.subarray(poolOffset, poolOffset + 16)
  poolOffset += 16
  bytes.writeUIntBE(Date.now(), 0, 6)
  bytes[6] = (bytes[6]! & 0x0f) | 0x70
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

const fail = (table: Table | string, line: number | undefined, reason: string): never => {
  throw new ImportError(typeof table === 'string' ? table : table.file, line, reason)
}

const DAY = /^(\d{4})-(\d{2})-(\d{2})(?:T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/
const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

function day (table: Table, row: Row, column: string): string | null {
  const value = row.get(column)
  if (value === '') return null
  // OneRoster dates are YYYY-MM-DD; a date-time is accepted for its day.
  const match = DAY.exec(value)
  const year = Number(match?.[1])
  const month = Number(match?.[2])
  const date = Number(match?.[3])
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  if (match === null || month < 1 || month > 12 || date < 1 || date > MONTH_DAYS[month - 1]! || (month === 2 && date === 29 && !leap)) {
    fail(table, row.line, `${column} "${value}" is not a date (YYYY-MM-DD)`)
  }
  return value.slice(0, 10)
}

function grades (table: Table, row: Row): GradeLevel[] {
  const value = row.get('grades')
  if (value === '') return []
  return value.split(',').map((code) => {
    const grade = GRADES[code.trim().toUpperCase()]
    if (grade === undefined) {
      fail(table, row.line, `grade "${code.trim()}" is not a OneRoster grade (IT, PR, PK, TK, KG, 01 to 13, UG, Other)`)
    }
    return grade!
  })
}

function bool (table: Table, row: Row, column: string): boolean | null {
  const value = row.get(column).toLowerCase()
  if (value === '') return null
  if (value === 'true' || value === '1') return true
  if (value === 'false' || value === '0') return false
  return fail(table, row.line, `${column} must be true or false (got "${row.get(column)}")`)
}

function text (table: Table, row: Row, column: string, max = 200): string | null {
  const value = row.get(column)
  if (value === '') return null
  if (value.length > max) fail(table, row.line, `${column} has more than ${max} characters`)
  return value
}

function email (table: Table, row: Row): string | null {
  const value = text(table, row, 'email', 254)
  if (value !== null && !/^[^\s@]+@[^\s@]+$/.test(value)) fail(table, row.line, `email "${value}" is not an email address`)
  return value
}

/** Rows of a file with a sourcedId each, once each, and no deletion (status tobedeleted). */
function keyedRows (table: Table): Array<[string, Row]> {
  const seen = new Map<string, number>()
  return table.rows.map((row): [string, Row] => {
    const id = row.get('sourcedId')
    if (id === '') fail(table, row.line, 'sourcedId is empty')
    if (id.length > 255) fail(table, row.line, 'sourcedId has more than 255 characters')
    const first = seen.get(id)
    if (first !== undefined) fail(table, row.line, `sourcedId "${id}" is already on line ${first}`)
    seen.set(id, row.line)
    const status = row.get('status').toLowerCase()
    if (status === 'tobedeleted') {
      fail(table, row.line, `status tobedeleted: deletions are not imported (remove the row, or delete the record by other means)`)
    } else if (status !== '' && status !== 'active') {
      fail(table, row.line, `status must be active, tobedeleted or empty (got "${row.get('status')}")`)
    }
    return [id, row]
  })
}

type Role = 'student' | 'teacher' | 'other'

function roleOf (name: string): Role {
  const role = name.trim().toLowerCase()
  return role === 'student' ? 'student' : role === 'teacher' ? 'teacher' : 'other'
}

/** Whether a manifest marks a file absent (then it is not read even when present). */
function manifestOf (bundle: Bundle): Map<string, string> {
  const table = readTable(bundle, 'manifest.csv', ['propertyName', 'value'])
  if (table === undefined) return fail('manifest.csv', undefined, 'the bundle has no manifest.csv (a OneRoster CSV bundle starts with one)')
  const entries = new Map<string, string>()
  for (const row of table.rows) entries.set(row.get('propertyName'), row.get('value').toLowerCase())
  const version = entries.get('oneroster.version')
  if (version !== undefined && version !== '1.1' && version !== '1.2') {
    fail(table, undefined, `oneroster.version ${version} is not supported (1.1 or 1.2)`)
  }
  return entries
}

function table (bundle: Bundle, manifest: Map<string, string>, file: string, required: string[], needed: boolean): Table | undefined {
  const mode = manifest.get(`file.${file.replace(/\.csv$/, '')}`)
  if (mode === 'absent') {
    if (needed) fail('manifest.csv', undefined, `${file} is marked absent, but an import needs it`)
    return undefined
  }
  const found = readTable(bundle, file, required)
  if (found === undefined && (needed || mode === 'bulk' || mode === 'delta')) {
    fail(file, undefined, mode === undefined ? 'the bundle has no such file' : `the manifest lists it (${mode}), but the bundle has no such file`)
  }
  return found
}

/** Checks the whole bundle against itself and the school's records; returns what to write. */
export function planImport (bundle: Bundle, existing: Existing): ImportPlan {
  const manifest = manifestOf(bundle)
  const users = table(bundle, manifest, 'users.csv', ['sourcedId'], true)!
  const classes = table(bundle, manifest, 'classes.csv', ['sourcedId', 'title'], true)!
  const enrollments = table(bundle, manifest, 'enrollments.csv', ['sourcedId', 'classSourcedId', 'userSourcedId', 'role'], true)!
  const roles = table(bundle, manifest, 'roles.csv', ['userSourcedId', 'role'], false)
  const demographics = table(bundle, manifest, 'demographics.csv', ['sourcedId'], false)

  // --- Roles: 1.2's roles.csv (the primary role of each user), else 1.1's users.role column.
  const userRole = new Map<string, Role>()
  if (roles !== undefined) {
    const primary = new Set<string>()
    for (const row of roles.rows) {
      const user = row.get('userSourcedId')
      if (user === '') fail(roles, row.line, 'userSourcedId is empty')
      if (row.get('role') === '') fail(roles, row.line, 'role is empty')
      const isPrimary = row.get('roleType').toLowerCase() === 'primary'
      if (!userRole.has(user) || (isPrimary && !primary.has(user))) userRole.set(user, roleOf(row.get('role')))
      if (isPrimary) primary.add(user)
    }
  } else if (!users.columns.has('role') && !users.columns.has('roles')) {
    fail(users, 1, 'no role: OneRoster 1.2 bundles give roles in roles.csv, 1.1 bundles in a "role" column of users.csv')
  }

  // --- Classes.
  const classRows = keyedRows(classes)
  const byTitle = new Map<string, number>()
  for (const [, row] of classRows) byTitle.set(row.get('title'), (byTitle.get(row.get('title')) ?? 0) + 1)
  const existingClassBySourced = new Map(existing.classrooms.filter((c) => c.sourcedId !== null).map((c) => [c.sourcedId!, c]))
  const existingClassByName = new Map(existing.classrooms.map((c) => [c.name, c]))
  const classroomNames = new Map<string, number>()
  const classrooms: ClassroomRecord[] = []
  const classBySourced = new Map<string, { id: string, homeroom: boolean }>()
  for (const [sourcedId, row] of classRows) {
    const title = row.get('title')
    if (title === '') fail(classes, row.line, 'title is empty')
    // Classroom names are unique in a school; sections that share a title get their code (or id).
    const code = row.get('classCode')
    const name = byTitle.get(title)! > 1 ? `${title} (${code !== '' ? code : sourcedId})` : title
    if (name.length > 200) fail(classes, row.line, 'title has more than 200 characters')
    const other = classroomNames.get(name)
    if (other !== undefined) fail(classes, row.line, `classroom name "${name}" is already the name of the class on line ${other} (names are unique in a school)`)
    classroomNames.set(name, row.line)
    const gradeList = grades(classes, row)
    let id = existingClassBySourced.get(sourcedId)?.id
    const named = existingClassByName.get(name)
    if (named !== undefined && named.id !== id) {
      // A classroom made by hand with this name and no sourcedId becomes this class.
      if (id === undefined && named.sourcedId === null) {
        id = named.id
      } else {
        fail(classes, row.line, `classroom name "${name}" is taken in the school by another classroom${named.sourcedId === null ? '' : ` (sourcedId "${named.sourcedId}")`}`)
      }
    }
    id ??= uuidv7()
    const subjects = row.get('subjects').split(',').map((s) => s.trim()).filter((s) => s !== '').join(', ')
    classrooms.push({
      id,
      sourcedId,
      name,
      gradeLevel: gradeList.length === 1 ? gradeList[0]! : null,
      subject: subjects === '' ? null : subjects.slice(0, 200)
    })
    classBySourced.set(sourcedId, { id, homeroom: row.get('classType').toLowerCase() === 'homeroom' })
  }
  for (const c of existing.classrooms) {
    if (c.sourcedId !== null && !classBySourced.has(c.sourcedId)) classBySourced.set(c.sourcedId, { id: c.id, homeroom: false })
  }

  // --- Birth dates.
  const birthDates = new Map<string, string | null>()
  if (demographics !== undefined) {
    for (const [sourcedId, row] of keyedRows(demographics)) birthDates.set(sourcedId, day(demographics, row, 'birthDate'))
  }

  // --- Users.
  const existingStudent = new Map(existing.students.filter((s) => s.sourcedId !== null).map((s) => [s.sourcedId!, s]))
  const existingByNumber = new Map(existing.students.filter((s) => s.studentNumber !== null).map((s) => [s.studentNumber!, s]))
  const existingTeacher = new Map(existing.teachers.filter((s) => s.sourcedId !== null).map((s) => [s.sourcedId!, s.id]))
  const students = new Map<string, StudentRecord & { line: number }>()
  const teachers = new Map<string, TeacherRecord>()
  const skippedUsers = new Set<string>()
  const numbers = new Map<string, number>()
  for (const [sourcedId, row] of keyedRows(users)) {
    const role = roles !== undefined ? userRole.get(sourcedId) : roleOf(row.get('role') || row.get('roles'))
    if (role === undefined) fail(users, row.line, `user "${sourcedId}" has no role in roles.csv`)
    if (role === 'other') {
      skippedUsers.add(sourcedId)
      continue
    }
    const givenName = text(users, row, 'givenName') ?? ''
    const familyName = text(users, row, 'familyName') ?? ''
    if (givenName === '' && familyName === '') fail(users, row.line, 'givenName and familyName are both empty')
    const enabled = bool(users, row, 'enabledUser')
    const status = enabled === false ? 'INACTIVE' : 'ACTIVE'
    const preferredName = text(users, row, 'preferredGivenName') ?? text(users, row, 'preferredFirstName')
    const mail = email(users, row)
    if (role === 'teacher') {
      teachers.set(sourcedId, {
        id: existingTeacher.get(sourcedId) ?? uuidv7(),
        sourcedId,
        givenName,
        familyName,
        preferredName,
        email: mail,
        status
      })
      continue
    }
    const gradeList = grades(users, row)
    const studentNumber = text(users, row, 'identifier', 64)
    let id = existingStudent.get(sourcedId)?.id
    if (studentNumber !== null) {
      const other = numbers.get(studentNumber)
      if (other !== undefined) fail(users, row.line, `identifier "${studentNumber}" is already the student number on line ${other}`)
      numbers.set(studentNumber, row.line)
      const holder = existingByNumber.get(studentNumber)
      if (holder !== undefined && holder.id !== id) {
        // A student entered by hand with this number and no sourcedId is this student.
        if (id === undefined && holder.sourcedId === null) {
          id = holder.id
        } else {
          fail(users, row.line, `identifier "${studentNumber}" is the student number of another student of the school${holder.sourcedId === null ? '' : ` (sourcedId "${holder.sourcedId}")`}`)
        }
      }
    }
    students.set(sourcedId, {
      line: row.line,
      id: id ?? uuidv7(),
      sourcedId,
      givenName,
      familyName,
      preferredName,
      studentNumber,
      email: mail,
      dateOfBirth: birthDates.get(sourcedId) ?? null,
      gradeLevel: gradeList[0] ?? null,
      status,
      enrollmentStartDate: null,
      enrollmentEndDate: null,
      classroomId: null
    })
  }

  // --- Enrollments.
  const assignments = new Map<string, AssignmentRecord>()
  const placed = new Map<string, boolean>() // student sourcedId → placed in a homeroom
  let skippedEnrollments = 0
  for (const [, row] of keyedRows(enrollments)) {
    const classId = row.get('classSourcedId')
    const userId = row.get('userSourcedId')
    if (classId === '') fail(enrollments, row.line, 'classSourcedId is empty')
    if (userId === '') fail(enrollments, row.line, 'userSourcedId is empty')
    const klass = classBySourced.get(classId)
    if (klass === undefined) fail(enrollments, row.line, `class "${classId}" is neither in classes.csv nor in the school`)
    const begin = day(enrollments, row, 'beginDate')
    const end = day(enrollments, row, 'endDate')
    if (begin !== null && end !== null && end < begin) fail(enrollments, row.line, `endDate ${end} is before beginDate ${begin}`)
    const primary = bool(enrollments, row, 'primary')
    const role = row.get('role').toLowerCase()
    if (role === '') fail(enrollments, row.line, 'role is empty')
    if (skippedUsers.has(userId)) {
      skippedEnrollments += 1
      continue
    }
    const student = students.get(userId)
    const teacher = teachers.get(userId)
    if (student === undefined && teacher === undefined) fail(enrollments, row.line, `user "${userId}" is not in users.csv`)
    if (role === 'student') {
      if (student === undefined) fail(enrollments, row.line, `user "${userId}" is enrolled as a student but is a teacher in users.csv`)
      // One classroom per student: a homeroom class wins, else the first enrollment listed.
      const inHomeroom = placed.get(userId)
      if (inHomeroom === true || (inHomeroom === false && !klass!.homeroom)) continue
      placed.set(userId, klass!.homeroom)
      student!.classroomId = klass!.id
      student!.enrollmentStartDate = begin
      student!.enrollmentEndDate = end
    } else if (role === 'teacher' || role === 'aide') {
      if (teacher === undefined) fail(enrollments, row.line, `user "${userId}" is enrolled as a ${role} but is a student in users.csv`)
      const key = `${teacher!.id}/${klass!.id}`
      const assigned: AssignmentRecord['role'] = role === 'teacher' && primary !== false ? 'PRIMARY' : 'ASSISTANT'
      const before = assignments.get(key)
      if (before === undefined || assigned === 'PRIMARY') assignments.set(key, { teacherId: teacher!.id, classroomId: klass!.id, role: assigned })
    } else {
      skippedEnrollments += 1
    }
  }

  return {
    classrooms,
    students: [...students.values()].map(({ line: _line, ...s }) => s),
    teachers: [...teachers.values()],
    assignments: [...assignments.values()],
    skippedUsers: skippedUsers.size,
    skippedEnrollments
  }
}
