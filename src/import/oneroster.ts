// OneRoster 1.1/1.2 CSV → the school's records. Everything is checked here, before anything is
// written: a bad row stops the import with its file, line and reason.
//
// Mapping (docs/running/import.md):
//   users.csv (role from roles.csv in 1.2, or the `role` column of 1.1): students and teachers;
//     guardians, parents and relatives as the school's agents, linked to their students by
//     agentSourcedIds (agents.ts); other roles (aides, administrators, ...) are skipped.
//   classes.csv → classrooms (title → name; one grade → grade level; subjects → subject).
//   enrollments.csv → a student's classroom (the homeroom class if any, else the first listed) with
//     its begin and end dates; a teacher's classrooms, `primary` true → PRIMARY, false → ASSISTANT,
//     with its begin and end dates; each kept with the enrollment's sourcedId (OneRoster's
//     enrollments, src/oneroster/enrollments.ts).
//   roles.csv (1.2) → each user's kind (its primary role, in any org) and its roles in the school:
//     the primary role's dates and the secondary roles, rows of the school's org only (--org, or
//     the one org the file names), kept on the user's row (RoleDetails, user-details.ts).
//   demographics.csv → a student's or a teacher's demographics: birthDate, sex, the race and
//     ethnicity flags, the place of birth and the public school residence status (rows of users of
//     other roles are skipped; a row of a user that is neither in users.csv nor in the school is refused).
//
// Bulk and delta (the manifest's file.<name>): a bulk file is the whole truth of its kind for the
// records of the import's (those with a sourcedId): what it does not hold is removed, enrollments
// ended; a delta file changes what it lists, rows tobedeleted removing theirs; a file absent changes
// nothing. Removals are planned here, with everything else, and written by write.ts.
import { v7 as uuidv7 } from 'uuid'
import { DEMOGRAPHIC_COLUMNS } from '../db/typed-reads.js'
import { planAgents, isAgentRole, type AgentLinks, type AgentRecord, type AgentRole, type ExistingAgent } from './agents.js'
import { ImportError, readTable, type Bundle, type Row, type Table } from './bundle.js'
import { NO_ROLE_DETAILS, ONEROSTER_ROLES, roleDetailsIn, sameRoleDetails, secondaryRole, type RoleDetails, type UserDetails } from './user-details.js'

export type { RoleDetails, UserDetails }

export type GradeLevel =
  | 'PRE_KINDERGARTEN' | 'KINDERGARTEN' | 'GRADE_1' | 'GRADE_2' | 'GRADE_3' | 'GRADE_4' | 'GRADE_5'
  | 'GRADE_6' | 'GRADE_7' | 'GRADE_8' | 'GRADE_9' | 'GRADE_10' | 'GRADE_11' | 'GRADE_12' | 'GRADE_13'
  | 'UNGRADED'

/** CEDS grade codes as OneRoster uses them. */
export const GRADES: Record<string, GradeLevel> = {
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
  /** OneRoster's class fields, kept as given; the course and terms by id once resolveClassReferences has run. */
  classCode: string | null
  classType: string | null
  location: string | null
  periods: string[]
  grades: string[]
  subjects: string[]
  subjectCodes: string[]
  courseId: string | null
  termIds: string[]
  /** classes.csv's courseSourcedId and termSourcedIds, and the row's line, for resolveClassReferences. */
  references?: { table: Table, line: number, course: string, terms: string[] }
}

/**
 * A student's or a teacher's demographics as demographics.csv gives them (DEMOGRAPHIC_COLUMNS of
 * typed-reads.ts, birthDate as dateOfBirth): all null for a user the file does not hold.
 */
export interface Demographics {
  dateOfBirth: string | null
  sex: string | null
  americanIndianOrAlaskaNative: boolean | null
  asian: boolean | null
  blackOrAfricanAmerican: boolean | null
  nativeHawaiianOrOtherPacificIslander: boolean | null
  white: boolean | null
  demographicRaceTwoOrMoreRaces: boolean | null
  hispanicOrLatinoEthnicity: boolean | null
  countryOfBirthCode: string | null
  stateOfBirthAbbreviation: string | null
  cityOfBirth: string | null
  publicSchoolResidenceStatus: string | null
}

/** Demographics whose every field (DEMOGRAPHIC_COLUMNS) is `valueOf` it. */
function demographicsOf (valueOf: (field: keyof Demographics) => Demographics[keyof Demographics]): Demographics {
  const out: Partial<Record<keyof Demographics, Demographics[keyof Demographics]>> = {}
  for (const field of DEMOGRAPHIC_COLUMNS) out[field] = valueOf(field)
  return out as Demographics
}

const NO_DEMOGRAPHICS: Demographics = demographicsOf(() => null)

/** The demographics among a student's or a teacher's values. */
const demographicsIn = (values: Demographics): Demographics => demographicsOf((field) => values[field])

const sameDemographics = (a: Demographics, b: Demographics): boolean => DEMOGRAPHIC_COLUMNS.every((field) => a[field] === b[field])

export interface StudentRecord extends Demographics, UserDetails, RoleDetails {
  id: string
  sourcedId: string
  givenName: string
  familyName: string
  preferredName: string | null
  studentNumber: string | null
  email: string | null
  gradeLevel: GradeLevel | null
  status: 'ACTIVE' | 'INACTIVE'
  enrollmentStartDate: string | null
  enrollmentEndDate: string | null
  /** The sourcedId of the enrollment that placed the student in the classroom (null without one). */
  enrollmentSourcedId: string | null
  classroomId: string | null
}

export interface TeacherRecord extends Demographics, UserDetails, RoleDetails {
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
  /** The enrollment's sourcedId, begin and end dates (YYYY-MM-DD). */
  sourcedId: string
  beginDate: string | null
  endDate: string | null
}

/** A student the users file does not hold, whose classroom, enrollment dates, demographics or roles change. */
export interface StudentUpdate extends Demographics, RoleDetails {
  id: string
  classroomId: string | null
  enrollmentStartDate: string | null
  enrollmentEndDate: string | null
  enrollmentSourcedId: string | null
}

/** A teacher the users file does not hold, whose demographics or roles change. */
export interface TeacherUpdate extends Demographics, RoleDetails {
  id: string
}

/** An agent the users file does not hold, whose roles change (roles.csv). */
export interface AgentRoleUpdate extends RoleDetails {
  id: string
}

/**
 * What an import takes away (docs/running/import.md): records of the import's (with a
 * sourcedId) that a bulk file does not hold or a delta file marks tobedeleted, and enrollments
 * ended. An assignment of a removed teacher or classroom goes with it and is not listed again.
 */
export interface Removals {
  classrooms: Array<{ id: string, sourcedId: string, name: string }>
  teachers: Array<{ id: string, sourcedId: string }>
  students: Array<{ id: string, sourcedId: string }>
  agents: Array<{ id: string, sourcedId: string }>
  /** Assignments deleted; `teacher` is the teacher's sourcedId, `classroom` the classroom's name. */
  assignments: Array<{ teacherId: string, classroomId: string, teacher: string, classroom: string }>
  /** Students who stay but leave their classroom; `student` is the sourcedId, or the id of one made by hand. */
  enrollments: Array<{ studentId: string, student: string, classroom: string }>
}

export interface ImportPlan {
  classrooms: ClassroomRecord[]
  students: StudentRecord[]
  teachers: TeacherRecord[]
  /** The file's guardians, parents and relatives (agents.ts). */
  agents: AgentRecord[]
  /** Agents kept but not in users.csv whose students the file changes. */
  agentLinks: AgentLinks[]
  assignments: AssignmentRecord[]
  /** Students kept but not in users.csv whose enrollment or birth date the bundle changes. */
  studentUpdates: StudentUpdate[]
  /** Teachers kept but not in users.csv whose demographics or roles the bundle changes. */
  teacherUpdates: TeacherUpdate[]
  /** Agents kept but not in users.csv whose roles the bundle changes. */
  agentRoleUpdates: AgentRoleUpdate[]
  removed: Removals
  /** Users of other roles (aides, administrators, ...) and their enrollments, not imported. */
  skippedUsers: number
  skippedEnrollments: number
}

/** A plan that writes nothing, for tests that fill in a part. */
export function emptyPlan (): ImportPlan {
  return {
    classrooms: [],
    students: [],
    teachers: [],
    agents: [],
    agentLinks: [],
    assignments: [],
    studentUpdates: [],
    teacherUpdates: [],
    agentRoleUpdates: [],
    removed: { classrooms: [], teachers: [], students: [], agents: [], assignments: [], enrollments: [] },
    skippedUsers: 0,
    skippedEnrollments: 0
  }
}

/** What the school has already: natural keys to ids, so that rows are matched, not duplicated. */
export interface Existing {
  classrooms: Array<{ id: string, sourcedId: string | null, name: string }>
  /** Every student of the school; dates as YYYY-MM-DD. */
  students: Array<Demographics & RoleDetails & {
    id: string
    sourcedId: string | null
    studentNumber: string | null
    classroomId: string | null
    enrollmentStartDate: string | null
    enrollmentEndDate: string | null
    enrollmentSourcedId: string | null
  }>
  /** The teachers with a sourcedId (the others are not the import's); dates as YYYY-MM-DD. */
  teachers: Array<Demographics & RoleDetails & { id: string, sourcedId: string | null }>
  /** Every agent of the school, with its role, students and role details. */
  agents: Array<ExistingAgent & RoleDetails & { role: string }>
  assignments: Array<{ teacherId: string, classroomId: string }>
}

export const fail = (table: Table | string, line: number | undefined, reason: string): never => {
  throw new ImportError(typeof table === 'string' ? table : table.file, line, reason)
}

const DAY = /^(\d{4})-(\d{2})-(\d{2})(?:T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/
const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

export function day (table: Table, row: Row, column: string): string | null {
  const value = row.get(column)
  if (value === '') return null
  if (!isDay(value)) fail(table, row.line, `${column} "${value}" is not a date (YYYY-MM-DD)`)
  return value.slice(0, 10)
}

/** OneRoster dates are YYYY-MM-DD; a date-time is accepted for its day. */
function isDay (value: string): boolean {
  const match = DAY.exec(value)
  const year = Number(match?.[1])
  const month = Number(match?.[2])
  const date = Number(match?.[3])
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return !(match === null || month < 1 || month > 12 || date < 1 || date > MONTH_DAYS[month - 1]! || (month === 2 && date === 29 && !leap))
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

/** A comma-separated list of a row, each value trimmed, none empty. */
function listOf (table: Table, row: Row, column: string, max = 200): string[] {
  const values = row.get(column).split(',').map((v) => v.trim()).filter((v) => v !== '')
  for (const v of values) if (v.length > max) fail(table, row.line, `${column} has a value of more than ${max} characters`)
  return values
}

/** Whether the bundle's manifest gives `file` (e.g. courses.csv) as bulk or delta. */
export function bundleHolds (bundle: Bundle, file: string): boolean {
  const property = `file.${file.replace(/\.csv$/i, '')}`.toLowerCase()
  return [...manifestOf(bundle)].some(([key, mode]) => key.toLowerCase() === property && (mode === 'bulk' || mode === 'delta'))
}

/**
 * A class's course and terms by id: classes.csv names them by sourcedId, each one the bundle's
 * (`courses`, `sessions`: what the import keeps, its own and the school's) or refused, with its line.
 * A bundle without courses.csv (or academicSessions.csv) may name ones the school does not have, as
 * bundles did before the import kept them: such a reference is not kept (the class has no course,
 * or fewer terms), and nothing is invented (`strict` false for that file).
 */
export function resolveClassReferences (
  plan: ImportPlan, courses: ReadonlyMap<string, string>, terms: ReadonlyMap<string, string>, strict: { courses: boolean, terms: boolean }
): void {
  for (const classroom of plan.classrooms) {
    const references = classroom.references
    if (references === undefined) continue
    const { table, line } = references
    if (references.course !== '') {
      const id = courses.get(references.course)
      if (id === undefined && strict.courses) fail(table, line, `courseSourcedId "${references.course}" is not a course of the school's or of courses.csv`)
      classroom.courseId = id ?? null
    }
    classroom.termIds = references.terms.flatMap((term) => {
      const id = terms.get(term)
      if (id === undefined && strict.terms) fail(table, line, `termSourcedIds: "${term}" is not an academic session of the school's or of academicSessions.csv`)
      return id === undefined ? [] : [id]
    })
    delete classroom.references
  }
}

/**
 * userIds as OneRoster's CSV writes them: `{type:identifier}` items separated by commas (braces
 * optional without a comma inside), the type before the first colon; each kept as `type:identifier`.
 */
function userIdsOf (table: Table, row: Row): string[] {
  const value = row.get('userIds')
  if (value === '') return []
  const braced = value.includes('{')
  if (braced && value.replace(/\{[^{}]*\}/g, '').replace(/[\s,]/g, '') !== '') fail(table, row.line, `userIds: "${value}" is not a list of {type:identifier}`)
  const items = braced ? [...value.matchAll(/\{([^{}]*)\}/g)].map((match) => match[1]!) : value.split(',')
  return items.map((item) => {
    const at = item.indexOf(':')
    const type = item.slice(0, at).trim()
    const identifier = item.slice(at + 1).trim()
    if (at < 0 || type === '' || identifier === '') fail(table, row.line, `userIds: "${item.trim()}" is not {type:identifier}`)
    if (item.length > 200) fail(table, row.line, 'userIds: an identifier has more than 200 characters')
    return `${type}:${identifier}`
  })
}

/** The columns of users.csv kept beside the names (UserDetails), checked. */
function userDetails (table: Table, row: Row): UserDetails {
  const userIds = userIdsOf(table, row)
  return {
    middleName: text(table, row, 'middleName'),
    preferredMiddleName: text(table, row, 'preferredMiddleName'),
    // 1.2's CSV names it preferredFamilyName (UserDType: preferredLastName).
    preferredLastName: text(table, row, 'preferredFamilyName') ?? text(table, row, 'preferredLastName'),
    pronouns: text(table, row, 'pronouns'),
    username: text(table, row, 'username'),
    userIds,
    sms: text(table, row, 'sms', 64),
    phone: text(table, row, 'phone', 64)
  }
}

/** 1EdTech's values of sex (DemographicsDType); an extension is written ext:name. */
const SEXES = ['male', 'female', 'unspecified', 'other']

/** A row of demographics.csv: each column as the binding holds it, checked. */
function demographicsRow (table: Table, row: Row): Demographics {
  const sex = text(table, row, 'sex', 64)
  if (sex !== null && !SEXES.includes(sex) && !/^ext:[a-zA-Z0-9.\-_]+$/.test(sex)) {
    fail(table, row.line, `sex "${sex}" is not one of ${SEXES.join(', ')} or an extension ext:name`)
  }
  return {
    dateOfBirth: day(table, row, 'birthDate'),
    sex,
    americanIndianOrAlaskaNative: bool(table, row, 'americanIndianOrAlaskaNative'),
    asian: bool(table, row, 'asian'),
    blackOrAfricanAmerican: bool(table, row, 'blackOrAfricanAmerican'),
    nativeHawaiianOrOtherPacificIslander: bool(table, row, 'nativeHawaiianOrOtherPacificIslander'),
    white: bool(table, row, 'white'),
    demographicRaceTwoOrMoreRaces: bool(table, row, 'demographicRaceTwoOrMoreRaces'),
    hispanicOrLatinoEthnicity: bool(table, row, 'hispanicOrLatinoEthnicity'),
    countryOfBirthCode: text(table, row, 'countryOfBirthCode', 64),
    stateOfBirthAbbreviation: text(table, row, 'stateOfBirthAbbreviation', 64),
    cityOfBirth: text(table, row, 'cityOfBirth'),
    publicSchoolResidenceStatus: text(table, row, 'publicSchoolResidenceStatus')
  }
}

function bool (table: Table, row: Row, column: string): boolean | null {
  const value = row.get(column).toLowerCase()
  if (value === '') return null
  if (value === 'true' || value === '1') return true
  if (value === 'false' || value === '0') return false
  return fail(table, row.line, `${column} must be true or false (got "${row.get(column)}")`)
}

export function text (table: Table, row: Row, column: string, max = 200): string | null {
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

/** How the manifest marks a file the import reads; undefined: absent (not read, nothing of it changes). */
export type FileMode = 'bulk' | 'delta'

/** A row of a file keyed by its sourcedId; `deleted` for status tobedeleted (delta files only). */
export interface Keyed {
  sourcedId: string
  row: Row
  deleted: boolean
}

/**
 * A row's status, as OneRoster's CSV binding has it: a bulk file holds the records that exist
 * (status empty or active; a record goes by leaving its row out), a delta file the records that
 * changed, each `active` or `tobedeleted` with its `dateLastModified`.
 */
function rowDeleted (table: Table, row: Row, mode: FileMode): boolean {
  const status = row.get('status').toLowerCase()
  if (mode === 'bulk') {
    if (status === '' || status === 'active') return false
    if (status === 'tobedeleted') {
      fail(table, row.line, `status tobedeleted is for delta files: the manifest marks ${table.file} bulk, where a record is removed by leaving its row out`)
    }
    return fail(table, row.line, `status must be active or empty in a bulk file (got "${row.get('status')}")`)
  }
  if (status !== 'active' && status !== 'tobedeleted') {
    fail(table, row.line, status === ''
      ? 'status is empty: every row of a delta file is active or tobedeleted'
      : `status must be active or tobedeleted (got "${row.get('status')}")`)
  }
  const modified = row.get('dateLastModified')
  if (modified === '') fail(table, row.line, 'dateLastModified is empty: every row of a delta file has one')
  if (!isDay(modified)) fail(table, row.line, `dateLastModified "${modified}" is not a date-time (YYYY-MM-DDThh:mm:ssZ)`)
  return status === 'tobedeleted'
}

/** Rows of a file with a sourcedId each, once each, with their status. */
export function keyedRows (table: Table, mode: FileMode): Keyed[] {
  const seen = new Map<string, number>()
  return table.rows.map((row): Keyed => {
    const id = row.get('sourcedId')
    if (id === '') fail(table, row.line, 'sourcedId is empty')
    if (id.length > 255) fail(table, row.line, 'sourcedId has more than 255 characters')
    const first = seen.get(id)
    if (first !== undefined) fail(table, row.line, `sourcedId "${id}" is already on line ${first}`)
    seen.set(id, row.line)
    return { sourcedId: id, row, deleted: rowDeleted(table, row, mode) }
  })
}

type Role = 'student' | 'teacher' | AgentRole | 'other'

function roleOf (name: string): Role {
  const role = name.trim().toLowerCase()
  return role === 'student' ? 'student' : role === 'teacher' ? 'teacher' : isAgentRole(role) ? role : 'other'
}

/** The manifest's properties, values in lower case. */
export function manifestOf (bundle: Bundle): Map<string, string> {
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

/**
 * A file the import reads and how the manifest marks it. A file it marks absent is not read; one
 * present that it does not mark is refused: a bulk file removes what it does not hold, and the
 * import does not guess.
 */
export function fileOf (bundle: Bundle, manifest: Map<string, string>, file: string, required: string[]): { table: Table, mode: FileMode } | undefined {
  const property = `file.${file.replace(/\.csv$/, '')}`
  const mode = manifest.get(property)
  if (mode === 'absent') return undefined
  const present = bundle.has(file.toLowerCase())
  if (mode === undefined) {
    if (present) fail('manifest.csv', undefined, `${property} is not given, but the bundle has ${file}: say bulk, delta or absent`)
    return undefined
  }
  if (mode !== 'bulk' && mode !== 'delta') return fail('manifest.csv', undefined, `${property} must be bulk, delta or absent (got "${mode}")`)
  if (!present) fail(file, undefined, `the manifest lists it (${mode}), but the bundle has no such file`)
  return { table: readTable(bundle, file, required)!, mode }
}

/** A student's classroom and enrollment dates; the enrollment that places them there. */
interface Placement {
  classroomId: string | null
  enrollmentStartDate: string | null
  enrollmentEndDate: string | null
  enrollmentSourcedId: string | null
}

interface Candidate extends Placement {
  classroomId: string
  homeroom: boolean
}

export interface PlanOptions {
  /** The sourcedId of the bundle's org that is the school (`--org`): roles.csv's rows of other orgs are no roles in the school. */
  org?: string | undefined
}

/** roles.csv's rows of a user in the school's org, in the file's order. */
interface RoleRow {
  row: Row
  /** As the file gives it: '' for none (1.2 requires one; a row without one is read as a primary role). */
  roleType: 'primary' | 'secondary' | ''
  deleted: boolean
}

/**
 * The org of roles.csv that is the school: `--org`, else the one org its rows name (none when they
 * name none). A file naming several is refused without `--org`: the import does not guess which
 * roles are the school's.
 */
function schoolOrgOf (table: Table, org: string | undefined): string | undefined {
  const orgs = [...new Set(table.rows.map((row) => row.get('orgSourcedId')).filter((o) => o !== ''))]
  const named = orgs.slice(0, 5).map((o) => `"${o}"`).join(', ') + (orgs.length > 5 ? ', ...' : '')
  if (org !== undefined) {
    if (orgs.length > 0 && !orgs.includes(org)) fail(table, undefined, `--org "${org}" is not an org of roles.csv (it names ${named})`)
    return org
  }
  if (orgs.length > 1) fail(table, undefined, `roles.csv names ${orgs.length} orgs (${named}): say which one is this school with --org`)
  return orgs[0]
}

const ROLE_NAMES = new Map<string, string>(ONEROSTER_ROLES.map((role) => [role.toLowerCase(), role]))

/** A secondary role's name in 1EdTech's spelling (RoleEnum), or an extension (ext:name) as given. */
function roleName (table: Table, row: Row): string {
  const given = row.get('role').trim()
  const name = ROLE_NAMES.get(given.toLowerCase()) ?? (/^ext:[a-zA-Z0-9.\-_]+$/.test(given) ? given : undefined)
  if (name === undefined) fail(table, row.line, `role "${given}" is not a OneRoster 1.2 role (${ONEROSTER_ROLES.join(', ')}, or ext:name)`)
  return name!
}

/**
 * Checks the whole bundle against itself and the school's records; returns what to write and what
 * to remove. A file absent from the bundle changes nothing; a bulk file is the whole truth of its
 * kind for the import's records (those with a sourcedId); a delta file changes the records it lists.
 */
export function planImport (bundle: Bundle, existing: Existing, options: PlanOptions = {}): ImportPlan {
  const manifest = manifestOf(bundle)
  const users = fileOf(bundle, manifest, 'users.csv', ['sourcedId'])
  const classes = fileOf(bundle, manifest, 'classes.csv', ['sourcedId', 'title'])
  const enrollments = fileOf(bundle, manifest, 'enrollments.csv', ['sourcedId', 'classSourcedId', 'userSourcedId', 'role'])
  const roles = fileOf(bundle, manifest, 'roles.csv', ['userSourcedId', 'role'])
  const demographics = fileOf(bundle, manifest, 'demographics.csv', ['sourcedId'])
  // academicSessions.csv and courses.csv are planned by calendar.ts; a bundle of them alone is an import too.
  const calendar = ['file.academicsessions', 'file.courses'].some((p) => [...manifest].some(([k, v]) => k.toLowerCase() === p && (v === 'bulk' || v === 'delta')))
  if (users === undefined && classes === undefined && enrollments === undefined && roles === undefined && demographics === undefined && !calendar) {
    fail('manifest.csv', undefined, 'users.csv, classes.csv, enrollments.csv, roles.csv, demographics.csv, academicSessions.csv and courses.csv are all absent: nothing to import')
  }

  // --- Roles: 1.2's roles.csv (the primary role of each user, in any org, is its kind), else 1.1's
  // users.role column. The rows in the school's org are also the user's roles in the school.
  const userRole = new Map<string, Role>()
  const roleRows = new Map<string, RoleRow[]>()
  if (roles !== undefined) {
    const primary = new Set<string>()
    const schoolOrg = schoolOrgOf(roles.table, options.org)
    const roleLines = new Map<string, number>()
    for (const row of roles.table.rows) {
      const user = row.get('userSourcedId')
      if (user === '') fail(roles.table, row.line, 'userSourcedId is empty')
      if (row.get('role') === '') fail(roles.table, row.line, 'role is empty')
      const roleType = row.get('roleType').trim().toLowerCase()
      if (roleType !== '' && roleType !== 'primary' && roleType !== 'secondary') fail(roles.table, row.line, `roleType "${row.get('roleType')}" is not primary or secondary`)
      const key = row.get('sourcedId')
      if (key !== '') {
        const other = roleLines.get(key)
        if (other !== undefined) fail(roles.table, row.line, `sourcedId "${key}" is already the role on line ${other}`)
        roleLines.set(key, row.line)
      }
      const deleted = rowDeleted(roles.table, row, roles.mode)
      const org = row.get('orgSourcedId')
      if (org === '' || org === schoolOrg) {
        const list = roleRows.get(user) ?? []
        list.push({ row, roleType: roleType as RoleRow['roleType'], deleted })
        roleRows.set(user, list)
      }
      // A role taken away (delta) is no role of the user's.
      if (deleted) continue
      const isPrimary = roleType === 'primary'
      if (!userRole.has(user) || (isPrimary && !primary.has(user))) userRole.set(user, roleOf(row.get('role')))
      if (isPrimary) primary.add(user)
    }
  }
  /**
   * A user's roles in the school (RoleDetails): what roles.csv's rows of the user in the school's
   * org say. A bulk file is the whole truth of them (a user without a row has none); a delta changes
   * what it names (the primary role's dates; a secondary role by its sourcedId: added, changed, or
   * taken away by a row tobedeleted); without roles.csv they stay. The primary row is the first one
   * of roleType primary, else the first without a roleType (the one that gives the kind above).
   */
  const roleDetailsOf = (sourcedId: string, before: RoleDetails): RoleDetails => {
    const rows = roleRows.get(sourcedId)
    if (roles === undefined || (rows === undefined && roles.mode === 'delta')) return roleDetailsIn(before)
    const table = roles.table
    let details = roles.mode === 'bulk' ? NO_ROLE_DETAILS : roleDetailsIn(before)
    const primaryRow = rows?.find((r) => r.roleType === 'primary') ?? rows?.find((r) => r.roleType === '')
    for (const { row, roleType, deleted } of rows ?? []) {
      if (roleType !== 'secondary' && row !== primaryRow?.row) continue
      const begin = day(table, row, 'beginDate')
      const end = day(table, row, 'endDate')
      if (begin !== null && end !== null && end < begin) fail(table, row.line, `endDate ${end} is before beginDate ${begin}`)
      if (roleType !== 'secondary') {
        details = { ...details, roleBeginDate: deleted ? null : begin, roleEndDate: deleted ? null : end }
        continue
      }
      const key = row.get('sourcedId')
      if (key === '') fail(table, row.line, 'sourcedId is empty: a secondary role is kept by it')
      const at = details.secondaryRoles.findIndex((r) => r.sourcedId === key)
      const list = details.secondaryRoles.slice()
      if (deleted) {
        if (at >= 0) list.splice(at, 1)
      } else {
        const role = secondaryRole(key, roleName(table, row), begin, end)
        if (at >= 0) list[at] = role
        else list.push(role)
      }
      details = { ...details, secondaryRoles: list }
    }
    return details
  }
  const roleColumn = users !== undefined && (users.table.columns.has('role') || users.table.columns.has('roles'))
  if (users !== undefined && users.mode === 'bulk' && roles === undefined && !roleColumn) {
    fail(users.table, 1, 'no role: OneRoster 1.2 bundles give roles in roles.csv, 1.1 bundles in a "role" column of users.csv')
  }

  // --- What the school has, and what of it the bundle takes away: a record of the import's (with
  // a sourcedId) that a bulk file does not hold (as its kind), or a delta file lists otherwise.
  const classRows = classes === undefined ? [] : keyedRows(classes.table, classes.mode)
  const userRows = users === undefined ? [] : keyedRows(users.table, users.mode)
  const activeClasses = new Set(classRows.filter((k) => !k.deleted).map((k) => k.sourcedId))
  const listedClasses = new Set(classRows.map((k) => k.sourcedId))
  const removedClassrooms = existing.classrooms.filter((c) => c.sourcedId !== null &&
    (classes?.mode === 'bulk' || listedClasses.has(c.sourcedId)) && !activeClasses.has(c.sourcedId))

  const existingStudentBySourced = new Map(existing.students.filter((s) => s.sourcedId !== null).map((s) => [s.sourcedId!, s]))
  const existingTeacherBySourced = new Map(existing.teachers.filter((s) => s.sourcedId !== null).map((s) => [s.sourcedId!, s.id]))
  const existingAgentBySourced = new Map(existing.agents.filter((a) => a.sourcedId !== null).map((a) => [a.sourcedId!, a]))
  const rolesMayBeOmitted = users?.mode === 'delta' || roles?.mode === 'delta'
  const roleByUser = new Map<string, Role>()
  for (const { sourcedId, row, deleted } of userRows) {
    if (deleted) continue
    let role = roles !== undefined ? userRole.get(sourcedId) : (roleColumn ? roleOf(row.get('role') || row.get('roles')) : undefined)
    // A delta need not repeat an unchanged role: a user the school has keeps their kind.
    if (role === undefined && rolesMayBeOmitted) {
      role = existingStudentBySourced.has(sourcedId) ? 'student' : existingTeacherBySourced.has(sourcedId) ? 'teacher' : existingAgentBySourced.get(sourcedId)?.role as AgentRole | undefined
    }
    if (role === undefined) {
      fail(users!.table, row.line, roles !== undefined
        ? `user "${sourcedId}" has no role in roles.csv`
        : `user "${sourcedId}" has no role: OneRoster 1.2 bundles give roles in roles.csv, 1.1 bundles in a "role" column of users.csv`)
    }
    roleByUser.set(sourcedId, role!)
  }
  const listedUsers = new Set(userRows.map((k) => k.sourcedId))
  const takenAway = (sourcedId: string | null, kind: Role): boolean => sourcedId !== null &&
    (users?.mode === 'bulk' || listedUsers.has(sourcedId)) && roleByUser.get(sourcedId) !== kind
  const removedStudents = existing.students.filter((s) => takenAway(s.sourcedId, 'student'))
  const removedTeachers = existing.teachers.filter((s) => takenAway(s.sourcedId, 'teacher'))
  // An agent's role may change between guardian, parent and relative: it stays the same agent.
  const removedAgents = existing.agents.filter((a) => a.sourcedId !== null && (users?.mode === 'bulk' || listedUsers.has(a.sourcedId)) &&
    !isAgentRole(roleByUser.get(a.sourcedId) ?? 'other'))
  const removedClassIds = new Set(removedClassrooms.map((c) => c.id))
  const removedStudentIds = new Set(removedStudents.map((s) => s.id))
  const removedTeacherIds = new Set(removedTeachers.map((s) => s.id))
  const removedSourced = new Map<string, string>([
    ...removedClassrooms.map((c): [string, string] => [`class ${c.sourcedId!}`, 'classroom']),
    ...removedStudents.map((s): [string, string] => [`user ${s.sourcedId!}`, 'student']),
    ...removedTeachers.map((s): [string, string] => [`user ${s.sourcedId!}`, 'teacher']),
    ...removedAgents.map((a): [string, string] => [`user ${a.sourcedId!}`, 'guardian, parent or relative'])
  ])
  const keptClassrooms = existing.classrooms.filter((c) => !removedClassIds.has(c.id))
  const keptStudents = existing.students.filter((s) => !removedStudentIds.has(s.id))

  // --- Classes.
  const byTitle = new Map<string, number>()
  for (const { row, deleted } of classRows) if (!deleted) byTitle.set(row.get('title'), (byTitle.get(row.get('title')) ?? 0) + 1)
  const existingClassBySourced = new Map(keptClassrooms.filter((c) => c.sourcedId !== null).map((c) => [c.sourcedId!, c]))
  const existingClassByName = new Map(keptClassrooms.map((c) => [c.name, c]))
  const classroomNames = new Map<string, number>()
  const classrooms: ClassroomRecord[] = []
  const classBySourced = new Map<string, { id: string, homeroom: boolean }>()
  for (const { sourcedId, row, deleted } of classRows) {
    if (deleted) continue
    const title = row.get('title')
    if (title === '') fail(classes!.table, row.line, 'title is empty')
    // Classroom names are unique in a school; sections that share a title get their code (or id).
    // In a delta, the title may also be that of a class of the school's that the delta leaves out.
    const code = row.get('classCode')
    const sharedTitle = byTitle.get(title)! > 1 || (classes!.mode === 'delta' && (existingClassByName.get(title)?.sourcedId ?? sourcedId) !== sourcedId)
    const name = sharedTitle ? `${title} (${code !== '' ? code : sourcedId})` : title
    if (name.length > 200) fail(classes!.table, row.line, 'title has more than 200 characters')
    const other = classroomNames.get(name)
    if (other !== undefined) fail(classes!.table, row.line, `classroom name "${name}" is already the name of the class on line ${other} (names are unique in a school)`)
    classroomNames.set(name, row.line)
    const gradeList = grades(classes!.table, row)
    let id = existingClassBySourced.get(sourcedId)?.id
    const named = existingClassByName.get(name)
    if (named !== undefined && named.id !== id) {
      // A classroom made by hand with this name and no sourcedId becomes this class.
      if (id === undefined && named.sourcedId === null) {
        id = named.id
      } else {
        fail(classes!.table, row.line, `classroom name "${name}" is taken in the school by another classroom${named.sourcedId === null ? '' : ` (sourcedId "${named.sourcedId}")`}`)
      }
    }
    id ??= uuidv7()
    const subjectList = listOf(classes!.table, row, 'subjects')
    const subjects = subjectList.join(', ')
    const classType = row.get('classType').trim()
    if (classType !== '' && !/^(homeroom|scheduled|ext:[a-zA-Z0-9.\-_]+)$/i.test(classType)) {
      fail(classes!.table, row.line, `classType "${classType}" is not a OneRoster class type (homeroom, scheduled or ext:name)`)
    }
    classrooms.push({
      id,
      sourcedId,
      name,
      gradeLevel: gradeList.length === 1 ? gradeList[0]! : null,
      subject: subjects === '' ? null : subjects.slice(0, 200),
      classCode: text(classes!.table, row, 'classCode'),
      classType: classType === '' ? null : classType.startsWith('ext:') ? classType : classType.toLowerCase(),
      location: text(classes!.table, row, 'location'),
      periods: listOf(classes!.table, row, 'periods'),
      grades: row.get('grades').split(',').map((g) => g.trim()).filter((g) => g !== ''),
      subjects: subjectList,
      subjectCodes: listOf(classes!.table, row, 'subjectCodes'),
      courseId: null,
      termIds: [],
      references: { table: classes!.table, line: row.line, course: row.get('courseSourcedId').trim(), terms: listOf(classes!.table, row, 'termSourcedIds') }
    })
    classBySourced.set(sourcedId, { id, homeroom: row.get('classType').toLowerCase() === 'homeroom' })
  }
  for (const c of keptClassrooms) {
    if (c.sourcedId !== null && !classBySourced.has(c.sourcedId)) classBySourced.set(c.sourcedId, { id: c.id, homeroom: false })
  }

  // --- Demographics: a bulk demographics.csv is all of them (a student or teacher it leaves out has
  // none); a delta changes those it lists, a row tobedeleted taking them all away. Each row's user
  // is checked once the users are known (below).
  const demographicsBySourced = new Map<string, Demographics>()
  const demographicsRows = demographics === undefined ? [] : keyedRows(demographics.table, demographics.mode)
  if (demographics !== undefined) {
    for (const { sourcedId, row, deleted } of demographicsRows) {
      demographicsBySourced.set(sourcedId, deleted ? NO_DEMOGRAPHICS : demographicsRow(demographics.table, row))
    }
  }
  const demographicsOf = (sourcedId: string, before: Demographics): Demographics =>
    demographicsBySourced.get(sourcedId) ?? (demographics?.mode === 'bulk' ? NO_DEMOGRAPHICS : demographicsIn(before))

  // --- Users.
  const existingStudent = new Map(keptStudents.filter((s) => s.sourcedId !== null).map((s) => [s.sourcedId!, s]))
  const existingByNumber = new Map(keptStudents.filter((s) => s.studentNumber !== null).map((s) => [s.studentNumber!, s]))
  const keptTeachers = existing.teachers.filter((s) => s.sourcedId !== null && !removedTeacherIds.has(s.id))
  const existingTeacherRow = new Map(keptTeachers.map((s) => [s.sourcedId!, s]))
  const existingTeacher = new Map(keptTeachers.map((s) => [s.sourcedId!, s.id]))
  const students = new Map<string, StudentRecord>()
  const teachers = new Map<string, TeacherRecord>()
  const skippedUsers = new Set<string>()
  const numbers = new Map<string, number>()
  const removedAgentIds = new Set(removedAgents.map((a) => a.id))
  const existingAgentRow = new Map(existing.agents.filter((a) => a.sourcedId !== null && !removedAgentIds.has(a.id)).map((a) => [a.sourcedId!, a]))
  const agentRows: Parameters<typeof planAgents>[0]['agents'] = []
  const studentAgents = new Map<string, Parameters<typeof planAgents>[0]['students'][number]['named']>() // student sourcedId → its agentSourcedIds
  for (const { sourcedId, row, deleted } of userRows) {
    if (deleted) continue
    const role = roleByUser.get(sourcedId)!
    if (role === 'other') {
      skippedUsers.add(sourcedId)
      continue
    }
    const table = users!.table
    const givenName = text(table, row, 'givenName') ?? ''
    const familyName = text(table, row, 'familyName') ?? ''
    if (givenName === '' && familyName === '') fail(table, row.line, 'givenName and familyName are both empty')
    const enabled = bool(table, row, 'enabledUser')
    const status = enabled === false ? 'INACTIVE' : 'ACTIVE'
    const preferredName = text(table, row, 'preferredGivenName') ?? text(table, row, 'preferredFirstName')
    const mail = email(table, row)
    const details = userDetails(table, row)
    const named = { table, row, sourcedIds: listOf(table, row, 'agentSourcedIds', 255) }
    if (isAgentRole(role)) {
      const before = existingAgentRow.get(sourcedId)
      agentRows.push({
        record: { id: before?.id ?? uuidv7(), sourcedId, role, givenName, familyName, preferredName, email: mail, status, ...details, ...roleDetailsOf(sourcedId, before ?? NO_ROLE_DETAILS) },
        named
      })
      continue
    }
    if (role === 'student') studentAgents.set(sourcedId, named)
    if (role === 'teacher') {
      teachers.set(sourcedId, {
        id: existingTeacher.get(sourcedId) ?? uuidv7(),
        sourcedId,
        givenName,
        familyName,
        preferredName,
        email: mail,
        status,
        ...details,
        ...demographicsOf(sourcedId, existingTeacherRow.get(sourcedId) ?? NO_DEMOGRAPHICS),
        ...roleDetailsOf(sourcedId, existingTeacherRow.get(sourcedId) ?? NO_ROLE_DETAILS)
      })
      continue
    }
    const gradeList = grades(table, row)
    const studentNumber = text(table, row, 'identifier', 64)
    let before = existingStudent.get(sourcedId)
    if (studentNumber !== null) {
      const other = numbers.get(studentNumber)
      if (other !== undefined) fail(table, row.line, `identifier "${studentNumber}" is already the student number on line ${other}`)
      numbers.set(studentNumber, row.line)
      const holder = existingByNumber.get(studentNumber)
      if (holder !== undefined && holder.id !== before?.id) {
        // A student entered by hand with this number and no sourcedId is this student.
        if (before === undefined && holder.sourcedId === null) {
          before = holder
        } else {
          fail(table, row.line, `identifier "${studentNumber}" is the student number of another student of the school${holder.sourcedId === null ? '' : ` (sourcedId "${holder.sourcedId}")`}`)
        }
      }
    }
    students.set(sourcedId, {
      id: before?.id ?? uuidv7(),
      sourcedId,
      givenName,
      familyName,
      preferredName,
      studentNumber,
      email: mail,
      ...details,
      ...demographicsOf(sourcedId, before ?? NO_DEMOGRAPHICS),
      ...roleDetailsOf(sourcedId, before ?? NO_ROLE_DETAILS),
      gradeLevel: gradeList[0] ?? null,
      status,
      // The placement below decides these.
      enrollmentStartDate: before?.enrollmentStartDate ?? null,
      enrollmentEndDate: before?.enrollmentEndDate ?? null,
      enrollmentSourcedId: before?.enrollmentSourcedId ?? null,
      classroomId: before?.classroomId ?? null
    })
  }

  // --- Enrollments: resolved against the bundle's users and classes, then the school's.
  const studentBySourced = new Map<string, string>([...existingStudent].map(([sourcedId, s]) => [sourcedId, s.id]))
  for (const [sourcedId, s] of students) studentBySourced.set(sourcedId, s.id)

  // --- Agents: the file's guardians, parents and relatives, and the students each is an agent of.
  const teacherKeys = new Set([...existingTeacher.keys(), ...teachers.keys()])
  const planned = planAgents({
    agents: agentRows,
    students: [...studentAgents].map(([sourcedId, named]) => ({ id: students.get(sourcedId)!.id, named })),
    kept: existing.agents.filter((a) => !removedAgentIds.has(a.id)),
    studentBySourced,
    removedStudents: removedStudentIds,
    otherUser: (sourcedId) => teacherKeys.has(sourcedId)
      ? 'a teacher'
      : removedSourced.has(`user ${sourcedId}`)
        ? `a ${removedSourced.get(`user ${sourcedId}`)!} this import removes (users.csv leaves it out or marks it tobedeleted)`
        : skippedUsers.has(sourcedId) ? 'of a role this service does not keep' : studentBySourced.has(sourcedId) ? 'a student' : undefined,
    fail
  })
  const teacherBySourced = new Map(existingTeacher)
  for (const [sourcedId, s] of teachers) teacherBySourced.set(sourcedId, s.id)
  const refuse = (table: Table, row: Row, what: 'class' | 'user', sourcedId: string, fallback: string): never =>
    fail(table, row.line, removedSourced.has(`${what} ${sourcedId}`)
      ? `${what} "${sourcedId}" is a ${removedSourced.get(`${what} ${sourcedId}`)!} this import removes (${what === 'class' ? 'classes' : 'users'}.csv leaves it out or marks it tobedeleted)`
      : fallback)
  // A demographics row names a student or a teacher of the bundle or the school; one of a user of
  // another role (an agent of the bundle or the school, a role not kept) is skipped (as their
  // enrollments are), one of a user none holds is refused. A row tobedeleted of an unknown user
  // takes nothing away.
  const agentSourced = new Set([...agentRows.map((a) => a.record.sourcedId), ...existing.agents.map((a) => a.sourcedId)])
  for (const { sourcedId, row, deleted } of demographicsRows) {
    if (deleted || skippedUsers.has(sourcedId) || agentSourced.has(sourcedId) || studentBySourced.has(sourcedId) || teacherBySourced.has(sourcedId)) continue
    refuse(demographics!.table, row, 'user', sourcedId, `user "${sourcedId}" is neither a student nor a teacher of users.csv or of the school: demographics.csv keeps theirs only`)
  }

  const assignments = new Map<string, AssignmentRecord>()
  const endedAssignments = new Set<string>()
  const candidates = new Map<string, Candidate[]>() // student id → active enrollments, in file order
  const leaving = new Map<string, Set<string>>() // student id → classrooms a delta ends
  let skippedEnrollments = 0
  for (const { row, deleted } of enrollments === undefined ? [] : keyedRows(enrollments.table, enrollments.mode)) {
    const table = enrollments!.table
    const classId = row.get('classSourcedId')
    const userId = row.get('userSourcedId')
    if (classId === '') fail(table, row.line, 'classSourcedId is empty')
    if (userId === '') fail(table, row.line, 'userSourcedId is empty')
    const role = row.get('role').toLowerCase()
    if (role === '') fail(table, row.line, 'role is empty')
    const kind = role === 'student' ? 'student' : role === 'teacher' || role === 'aide' ? 'teacher' : 'other'
    const klass = classBySourced.get(classId)
    if (deleted) {
      // Ends the enrollment it names; one whose class or user is gone (or never came) has ended.
      const student = studentBySourced.get(userId)
      const teacher = teacherBySourced.get(userId)
      if (klass === undefined) continue
      if (kind === 'student' && student !== undefined) leaving.set(student, (leaving.get(student) ?? new Set()).add(klass.id))
      if (kind === 'teacher' && teacher !== undefined) endedAssignments.add(`${teacher}/${klass.id}`)
      continue
    }
    if (klass === undefined) refuse(table, row, 'class', classId, `class "${classId}" is neither in classes.csv nor in the school`)
    const begin = day(table, row, 'beginDate')
    const end = day(table, row, 'endDate')
    if (begin !== null && end !== null && end < begin) fail(table, row.line, `endDate ${end} is before beginDate ${begin}`)
    const primary = bool(table, row, 'primary')
    if (skippedUsers.has(userId) || kind === 'other') {
      skippedEnrollments += 1
      continue
    }
    const student = studentBySourced.get(userId)
    const teacher = teacherBySourced.get(userId)
    if (student === undefined && teacher === undefined) refuse(table, row, 'user', userId, `user "${userId}" is neither in users.csv nor in the school`)
    if (kind === 'student') {
      if (student === undefined) fail(table, row.line, `user "${userId}" is enrolled as a student but is a teacher`)
      const list = candidates.get(student!) ?? []
      list.push({ classroomId: klass!.id, homeroom: klass!.homeroom, enrollmentStartDate: begin, enrollmentEndDate: end, enrollmentSourcedId: row.get('sourcedId') })
      candidates.set(student!, list)
    } else {
      if (teacher === undefined) fail(table, row.line, `user "${userId}" is enrolled as a ${role} but is a student`)
      const key = `${teacher!}/${klass!.id}`
      const assigned: AssignmentRecord['role'] = role === 'teacher' && primary !== false ? 'PRIMARY' : 'ASSISTANT'
      const before = assignments.get(key)
      if (before === undefined || assigned === 'PRIMARY') {
        assignments.set(key, { teacherId: teacher!, classroomId: klass!.id, role: assigned, sourcedId: row.get('sourcedId'), beginDate: begin, endDate: end })
      }
    }
  }

  // --- Each student's classroom (one per student). A bulk enrollments.csv decides it for every
  // student of the import's: a homeroom class first, else the first enrollment listed, else none.
  // A delta ends the classroom it marks tobedeleted and moves a student into a homeroom class, or
  // into a class when they have none; a classroom this import removes is left. A student made by
  // hand (no sourcedId) only leaves a removed classroom.
  const NONE: Placement = { classroomId: null, enrollmentStartDate: null, enrollmentEndDate: null, enrollmentSourcedId: null }
  const place = (studentId: string, managed: boolean, current: Placement): Placement => {
    let now = current
    if (now.classroomId !== null && removedClassIds.has(now.classroomId)) now = managed ? NONE : { ...now, classroomId: null, enrollmentSourcedId: null }
    if (!managed) return now
    const options = candidates.get(studentId) ?? []
    const best = options.find((o) => o.homeroom) ?? options[0]
    const placed = (c: Candidate): Placement => ({
      classroomId: c.classroomId, enrollmentStartDate: c.enrollmentStartDate, enrollmentEndDate: c.enrollmentEndDate, enrollmentSourcedId: c.enrollmentSourcedId
    })
    if (enrollments?.mode === 'bulk') return best === undefined ? NONE : placed(best)
    if (now.classroomId !== null && leaving.get(studentId)?.has(now.classroomId) === true) now = NONE
    if (best !== undefined && (now.classroomId === null || best.classroomId === now.classroomId || best.homeroom)) return placed(best)
    return now
  }
  const classroomName = new Map(existing.classrooms.map((c) => [c.id, c.name]))
  const existingById = new Map(keptStudents.map((s) => [s.id, s]))
  const ended: Removals['enrollments'] = []
  const endedIf = (studentId: string, student: string, before: string | null, after: string | null): void => {
    if (before !== null && after === null) ended.push({ studentId, student, classroom: classroomName.get(before) ?? before })
  }
  for (const record of students.values()) {
    const before = existingById.get(record.id)
    const placement = place(record.id, true, record)
    Object.assign(record, placement)
    endedIf(record.id, record.sourcedId, before?.classroomId ?? null, placement.classroomId)
  }
  const inUsersFile = new Set([...students.values()].map((s) => s.id))
  const studentUpdates: StudentUpdate[] = []
  for (const s of keptStudents) {
    if (inUsersFile.has(s.id)) continue
    const managed = s.sourcedId !== null
    const placement = place(s.id, managed, s)
    const kept = managed ? demographicsOf(s.sourcedId!, s) : demographicsIn(s)
    const roleDetails = managed ? roleDetailsOf(s.sourcedId!, s) : roleDetailsIn(s)
    endedIf(s.id, s.sourcedId ?? s.id, s.classroomId, placement.classroomId)
    const update: StudentUpdate = { id: s.id, ...placement, ...kept, ...roleDetails }
    if (update.classroomId !== s.classroomId || update.enrollmentStartDate !== s.enrollmentStartDate ||
        update.enrollmentEndDate !== s.enrollmentEndDate || update.enrollmentSourcedId !== s.enrollmentSourcedId || !sameDemographics(update, s) ||
        !sameRoleDetails(update, s)) {
      studentUpdates.push(update)
    }
  }

  // --- Teachers the users file does not hold: their demographics and roles only; agents: their roles.
  const teacherUpdates: TeacherUpdate[] = []
  for (const s of keptTeachers) {
    if (teachers.has(s.sourcedId!)) continue
    const kept = demographicsOf(s.sourcedId!, s)
    const roleDetails = roleDetailsOf(s.sourcedId!, s)
    if (!sameDemographics(kept, s) || !sameRoleDetails(roleDetails, s)) teacherUpdates.push({ id: s.id, ...kept, ...roleDetails })
  }
  const agentsInFile = new Set(agentRows.map((a) => a.record.sourcedId))
  const agentRoleUpdates: AgentRoleUpdate[] = []
  for (const [sourcedId, a] of existingAgentRow) {
    if (agentsInFile.has(sourcedId)) continue
    const roleDetails = roleDetailsOf(sourcedId, a)
    if (!sameRoleDetails(roleDetails, a)) agentRoleUpdates.push({ id: a.id, ...roleDetails })
  }

  // --- Assignments ended: a bulk enrollments.csv ends those of the import's teachers in the
  // import's classes that it does not hold; a delta those it marks tobedeleted. Those of a removed
  // teacher or classroom go with it.
  const teacherSourced = new Map(existing.teachers.filter((s) => s.sourcedId !== null).map((s) => [s.id, s.sourcedId!]))
  const classSourced = new Map(existing.classrooms.filter((c) => c.sourcedId !== null).map((c) => [c.id, c.sourcedId!]))
  const endedList: Removals['assignments'] = []
  for (const a of existing.assignments) {
    if (removedTeacherIds.has(a.teacherId) || removedClassIds.has(a.classroomId)) continue
    const key = `${a.teacherId}/${a.classroomId}`
    if (assignments.has(key)) continue
    const managed = teacherSourced.has(a.teacherId) && classSourced.has(a.classroomId)
    if ((enrollments?.mode === 'bulk' && managed) || endedAssignments.has(key)) {
      endedList.push({ ...a, teacher: teacherSourced.get(a.teacherId) ?? a.teacherId, classroom: classroomName.get(a.classroomId) ?? a.classroomId })
    }
  }

  return {
    classrooms,
    students: [...students.values()],
    teachers: [...teachers.values()],
    agents: planned.agents,
    agentLinks: planned.links,
    assignments: [...assignments.values()],
    studentUpdates,
    teacherUpdates,
    agentRoleUpdates,
    removed: {
      classrooms: removedClassrooms.map((c) => ({ id: c.id, sourcedId: c.sourcedId!, name: c.name })),
      teachers: removedTeachers.map((s) => ({ id: s.id, sourcedId: s.sourcedId! })),
      students: removedStudents.map((s) => ({ id: s.id, sourcedId: s.sourcedId! })),
      agents: removedAgents.map((a) => ({ id: a.id, sourcedId: a.sourcedId! })),
      assignments: endedList,
      enrollments: ended
    },
    skippedUsers: skippedUsers.size,
    skippedEnrollments
  }
}
