// The binding's records as this service holds them, declared once per kind: each field of
// OneRoster's UserDType and OrgDType that the data model holds, the columns it reads, its value in
// an answer, what a comparison on it (a filter) becomes over those columns, and what it sorts by.
// A field the model does not hold (userMasterIdentifier, userProfiles, ...) is not here and never
// answered; docs/api/oneroster.md lists the decisions.
//
// - sourcedId: the record's imported sourcedId, or its id when it has none (one entered by hand):
//   the key `sourcedKey` of typed-reads.ts, by which /users/{sourcedId} finds it too.
// - status: `active` for every record held; a delta's deletions (deletions.ts) answer
//   `tobedeleted` from the change feed's tombstones.
// - A student's and a teacher's role is their table's: one role, primary, in the caller's school;
//   an agent's (a guardian, parent or relative) is its `role` column's.
import type { Comparison, ListCondition, Predicate, TypedModel } from '../db/typed-reads.js'
import type { GradeLevel } from '../generated/prisma/enums.js'
import { CEDS_GRADE } from '../records/writes.js'
import { compareValues } from './filter.js'
import { OneRosterError } from './status-info.js'

type Row = Readonly<Record<string, unknown>>

/** A reference to an org (OrgGUIDRefDType). */
export interface OrgRef { readonly href: string, readonly sourcedId: string, readonly type: 'org' }

/** What an answer's references need: the caller's school, and its reference (made once per request, shared by every record). */
export interface AnswerContext {
  readonly schoolId: string
  readonly school: OrgRef
  /** The binding's URL as the request reached it (scheme, host, base path): what a reference's href starts with. */
  readonly base: string
}

/** One field of the binding (or a dotted path of one, for filters only). */
export interface BindingField {
  /** The model's columns it reads; none for a value every record of the kind has. */
  readonly columns: readonly string[]
  /** Its value in an answer; undefined leaves it out. Absent for a dotted path (filters only). */
  readonly answer?: (row: Row, context: AnswerContext) => unknown
  /** A comparison on it over the columns; throws invalid_filter_field for a value it cannot have. */
  readonly compare: (op: Comparison, value: string, context: AnswerContext) => Predicate
  /** The field (or key) of the model it sorts by; the records' order (id) for a value every record has. */
  readonly sort: string
}

/** A kind of record served from one table: its model and fields. */
export interface Kind {
  readonly model: TypedModel
  readonly fields: Readonly<Record<string, BindingField>>
}

const badValue = (field: string, message: string): OneRosterError => new OneRosterError('invalid_filter_field', `filter: ${field} ${message}`)

const compare = (field: string) => (op: Comparison, value: string): Predicate => ({ kind: 'compare', field, op, value })

/** A text column, answered when it has a value. */
function text (field: string): BindingField {
  return { columns: [field], answer: (row) => row[field] ?? undefined, compare: compare(field), sort: field }
}

/** A value every record of the kind has: its comparisons are decided without the database. */
function constant (value: (context: AnswerContext) => string, answered = true): BindingField {
  return {
    columns: [],
    ...(answered ? { answer: (_row: Row, context: AnswerContext) => value(context) } : {}),
    compare: (op, given, context) => ({ kind: 'constant', value: compareValues(value(context), op, given) }),
    sort: 'id'
  }
}

/** An ISO 8601 date-time with its zone, or a day (its start, UTC): what a date filter compares with. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/

/** A date filter's value as a time; throws invalid_filter_field for one that is not a date-time, or for `~`. */
export function parseDateTime (name: string, op: Comparison, value: string): Date {
  const date = DATE_TIME.test(value) ? new Date(value) : undefined
  if (date === undefined || Number.isNaN(date.getTime())) throw badValue(name, `must be compared with an ISO 8601 date-time such as 2026-01-31T00:00:00.000Z (got '${value}')`)
  if (op === '~') throw badValue(name, 'is a date: compare it with = != > >= < <=')
  return date
}

/**
 * A UTC timestamp's text as PostgreSQL writes it (2026-01-31 08:00:00.12, the fraction's digits
 * only when not zero) as ISO 8601 with milliseconds (2026-01-31T08:00:00.120Z).
 */
export function isoOfUtcText (text: string): string {
  if (text.length >= 19 && text.length <= 26 && text.charCodeAt(10) === 32 /* space */) {
    const fraction = text.slice(19)
    if (fraction === '') return `${text.slice(0, 10)}T${text.slice(11, 19)}.000Z`
    if (fraction.charCodeAt(0) === 46 /* . */) return `${text.slice(0, 10)}T${text.slice(11, 19)}${(fraction + '00').slice(0, 4)}Z`
  }
  // Anything else: through Date.
  return new Date(`${text.replace(' ', 'T')}Z`).toISOString()
}

/**
 * dateLastModified: the record's last write (updatedAt), ISO 8601 with milliseconds in UTC, from
 * its UTC text (typed-reads.ts modifiedAt): a Date made of the column and written again by
 * toISOString cost 0.75 µs a record, the largest part of a page's answer (BENCHMARKS.md).
 */
const dateLastModified: BindingField = {
  columns: ['modifiedAt'],
  answer: (row) => isoOfUtcText(row.modifiedAt as string),
  compare: (op, value) => ({ kind: 'compare', field: 'updatedAt', op, value: parseDateTime('dateLastModified', op, value).toISOString() }),
  sort: 'updatedAt'
}

/**
 * enabledUser: 'true' while the record's status is ACTIVE (the OneRoster import writes
 * enabledUser=false as INACTIVE); a student graduated, transferred or withdrawn is not enabled either.
 */
const enabledUser: BindingField = {
  columns: ['status'],
  answer: (row) => String(row.status === 'ACTIVE'),
  compare (op, value) {
    if ((op !== '=' && op !== '!=') || (value !== 'true' && value !== 'false')) throw badValue('enabledUser', `is 'true' or 'false', compared with = or != (got ${op}'${value}')`)
    return { kind: 'compare', field: 'status', op: (value === 'true') === (op === '=') ? '=' : '!=', value: 'ACTIVE' }
  },
  sort: 'status'
}

const GRADE_OF_CEDS = new Map(Object.entries(CEDS_GRADE).map(([level, code]) => [code, level]))

/** grades: a student's grade level, one CEDS code (none without one); a filter on it asks whether the list holds the code. */
const grades: BindingField = {
  columns: ['gradeLevel'],
  answer: (row) => row.gradeLevel === null ? [] : [CEDS_GRADE[row.gradeLevel as GradeLevel]],
  compare (op, value) {
    if (op !== '=' && op !== '!=') throw badValue('grades', `is compared with = or != (got ${op})`)
    const level = GRADE_OF_CEDS.get(value)
    return level === undefined ? { kind: 'constant', value: op === '!=' } : { kind: 'compare', field: 'gradeLevel', op, value: level }
  },
  sort: 'gradeLevel'
}

/**
 * userIds: the user's other identifiers, each kept as `type:identifier` (the import's reading of the
 * file's `{type:identifier}`), answered as UserIdDType; left out without any. Not filtered by.
 */
const userIds: BindingField = {
  columns: ['userIds'],
  answer: (row) => {
    const ids = row.userIds as string[] | null
    if (ids === null || ids.length === 0) return undefined
    return ids.map((id) => {
      const at = id.indexOf(':')
      return { type: id.slice(0, at), identifier: id.slice(at + 1) }
    })
  },
  compare: () => { throw badValue('userIds', 'is a list of identifiers: not filtered by') },
  sort: 'id'
}

/**
 * agents: the users a user is an agent of or has as agents (UserGUIDRefDType), by the sourcedKeys a
 * key of the statement reads (typed-reads.ts agentKeys, agentStudentKeys), in their order; left out
 * without any (a teacher reads no agent: docs/decisions.md "A student's agents"). Not filtered by.
 */
function agentRefs (key: string): BindingField {
  return {
    columns: [key],
    answer: (row, context) => {
      const keys = row[key] as string[] | null
      if (keys === null || keys.length === 0) return undefined
      return keys.map((sourcedId) => ({ href: `${context.base}/users/${encodeURIComponent(sourcedId)}`, sourcedId, type: 'user' }))
    },
    compare: () => { throw badValue('agents', 'is a list of references: not filtered by') },
    sort: 'id'
  }
}

/** A role of RoleDType in the caller's school, with its dates when it has them. */
function roleOf (roleType: 'primary' | 'secondary', role: unknown, context: AnswerContext, beginDate: string | null | undefined, endDate: string | null | undefined): Row {
  const out: Record<string, unknown> = { roleType, role, org: context.school }
  if (beginDate != null) out.beginDate = beginDate
  if (endDate != null) out.endDate = endDate
  return out
}

/**
 * The roles of a user in the caller's school: its primary role (the kind's, a constant, or its
 * `role` column's: an agent) with the dates roles.csv gave it, then its secondary roles in the
 * school as the import kept them (migration user_roles), in the file's order. A filter on
 * `roles.role` with = or != asks whether any of its roles is (none is) the value; `~` and the
 * orderings compare the primary role. `roles.roleType` asks whether it has a role of that type.
 */
function roleFields (role: string | undefined): Record<string, BindingField> {
  const primary = (op: Comparison, value: string): Predicate =>
    role !== undefined ? { kind: 'constant', value: compareValues(role, op, value) } : { kind: 'compare', field: 'role', op, value }
  const compareRole = (op: Comparison, value: string): Predicate =>
    op === '=' || op === '!='
      ? { kind: op === '=' ? 'any' : 'all', parts: [primary(op, value), { kind: 'compare', field: 'secondaryRoleNames', op, value }] }
      : primary(op, value)
  const columns = [...(role === undefined ? ['role'] : []), 'roleDetails']
  return {
    roles: {
      columns,
      answer: (row, context) => {
        // The key roleDetails (typed-reads.ts): null for a user without dates or secondary roles.
        const details = row.roleDetails as { b: string | null, e: string | null, s: Array<{ role: string, beginDate?: string, endDate?: string }> | null } | null
        const primary = roleOf('primary', role ?? row.role, context, details?.b, details?.e)
        if (details?.s == null) return [primary]
        return [primary, ...details.s.map((other) => roleOf('secondary', other.role, context, other.beginDate, other.endDate))]
      },
      compare: compareRole,
      sort: 'id'
    },
    'roles.role': { columns: [...(role === undefined ? ['role'] : []), 'secondaryRoles'], compare: compareRole, sort: role === undefined ? 'role' : 'id' },
    'roles.roleType': {
      columns: ['secondaryRoles'],
      compare (op, value) {
        if (op !== '=' && op !== '!=') throw badValue('roles.roleType', `is compared with = or != (got ${op})`)
        return { kind: 'compare', field: 'roleTypes', op, value }
      },
      sort: 'id'
    }
  }
}

/** The fields of a user of one role (or of its `role` column: an agent) in the caller's school. */
function userFields (role: 'student' | 'teacher' | undefined): Record<string, BindingField> {
  return {
    sourcedId: { columns: ['sourcedId', 'id'], answer: (row) => row.sourcedId ?? row.id, compare: compare('sourcedKey'), sort: 'sourcedKey' },
    status: constant(() => 'active'),
    dateLastModified,
    username: text('username'),
    userIds,
    enabledUser,
    givenName: text('givenName'),
    familyName: text('familyName'),
    middleName: text('middleName'),
    preferredFirstName: text('preferredName'),
    preferredMiddleName: text('preferredMiddleName'),
    preferredLastName: text('preferredLastName'),
    pronouns: text('pronouns'),
    ...roleFields(role),
    'roles.org.sourcedId': constant((context) => context.schoolId, false),
    primaryOrg: { ...constant((context) => context.schoolId, false), answer: (_row, context) => context.school },
    'primaryOrg.sourcedId': constant((context) => context.schoolId, false),
    email: text('email'),
    sms: text('sms'),
    phone: text('phone')
  }
}

/** Students as OneRoster users of role student: identifier is the student number, grades the grade level, agents their guardians, parents and relatives. */
export const STUDENT_USERS: Kind = {
  model: 'Student',
  fields: { ...userFields('student'), identifier: text('studentNumber'), agents: agentRefs('agentKeys'), grades }
}

/** Teachers as OneRoster users of role teacher. */
export const TEACHER_USERS: Kind = {
  model: 'Teacher',
  fields: userFields('teacher')
}

/**
 * A student's guardians, parents and relatives (the import's users of those roles) as OneRoster
 * users of their role: agents are the students they are an agent of (UserDType: "the agents of a
 * guardian are her students"). No identifier nor grades.
 */
export const AGENT_USERS: Kind = {
  model: 'Agent',
  fields: { ...userFields(undefined), agents: agentRefs('agentStudentKeys') }
}

/** The fields of UserDType this service answers, in the binding's order: what `fields` may name. */
export const USER_FIELDS: readonly string[] = [
  'sourcedId', 'status', 'dateLastModified', 'username', 'userIds', 'enabledUser', 'givenName', 'familyName', 'middleName', 'preferredFirstName',
  'preferredMiddleName', 'preferredLastName', 'pronouns', 'roles', 'primaryOrg', 'identifier', 'email', 'sms', 'phone', 'agents', 'grades'
]

/** The school's columns an org answer reads. */
export interface SchoolRow { id: string, name: string, updatedAt: Date }

/**
 * The caller's school as an org of type school. It has no sourcedId of its own: its sourcedId is
 * its id, and so is its identifier (OrgDType requires one; the model keeps no NCES or state id).
 */
export const ORG_FIELDS: Readonly<Record<string, { answer: (school: SchoolRow) => string, date?: true }>> = {
  sourcedId: { answer: (school) => school.id },
  status: { answer: () => 'active' },
  dateLastModified: { answer: (school) => school.updatedAt.toISOString(), date: true },
  name: { answer: (school) => school.name },
  type: { answer: () => 'school' },
  identifier: { answer: (school) => school.id }
}

// ---- Academic sessions and courses (AcademicSessionDType, CourseDType) -------------------------

/** The sourcedId of a record: its imported one, or its id (one entered by hand). */
const sourcedId: BindingField = { columns: ['sourcedId', 'id'], answer: (row) => row.sourcedId ?? row.id, compare: compare('sourcedKey'), sort: 'sourcedKey' }

/** A reference to an academic session (AcadSessionGUIDRefDType) by its sourcedKey. */
const sessionRef = (key: string, context: AnswerContext): Row =>
  ({ href: `${context.base}/academicSessions/${encodeURIComponent(key)}`, sourcedId: key, type: 'academicSession' })

/** The reference to the session a key of the row names (`parentKey`, `schoolYearKey`); left out without one. */
function sessionReference (key: string): BindingField {
  return { columns: [key], answer: (row, context) => row[key] == null ? undefined : sessionRef(row[key] as string, context), compare: compare(key), sort: key }
}

const DAY = /^\d{4}-\d{2}-\d{2}$/

/** A day (YYYY-MM-DD, as the binding writes dates): compared as that text, which orders as the days do. */
function day (field: string, name: string): BindingField {
  return {
    columns: [field],
    answer: (row) => {
      const value = row[field]
      return value instanceof Date ? value.toISOString().slice(0, 10) : typeof value === 'string' ? value.slice(0, 10) : undefined
    },
    compare (op, value) {
      if (op !== '~' && !DAY.test(value)) throw badValue(name, `is a date: compare it with a day such as 2026-09-01 (got '${value}')`)
      return { kind: 'compare', field, op, value }
    },
    sort: field
  }
}

/** A list of texts kept as given (a course's grades, subjects, subject codes); a filter asks whether it holds the value. */
function texts (field: string): BindingField {
  return {
    columns: [field],
    answer: (row) => row[field] ?? [],
    compare (op, value) {
      if (op !== '=' && op !== '!=') throw badValue(field, `is a list: compared with = or != (got ${op})`)
      return { kind: 'compare', field, op, value }
    },
    sort: field
  }
}

/**
 * Academic sessions (school years, terms, grading periods, semesters) as the import keeps them: the
 * type in 1EdTech's spelling, the school year as its four digits, the parent and children by their
 * sourcedIds. AcademicSessionDType has no org: the school is not sent.
 */
export const ACADEMIC_SESSIONS: Kind = {
  model: 'AcademicSession',
  fields: {
    sourcedId,
    status: constant(() => 'active'),
    dateLastModified,
    title: text('title'),
    startDate: day('startDate', 'startDate'),
    endDate: day('endDate', 'endDate'),
    type: text('type'),
    parent: sessionReference('parentKey'),
    'parent.sourcedId': { columns: ['parentKey'], compare: compare('parentKey'), sort: 'parentKey' },
    children: {
      columns: ['childKeys'],
      answer: (row, context) => (row.childKeys as string[] | null ?? []).map((key) => sessionRef(key, context)),
      compare: () => { throw badValue('children', 'is a list of references: filter by parent.sourcedId instead') },
      sort: 'id'
    },
    schoolYear: {
      columns: ['schoolYear'],
      answer: (row) => String(row.schoolYear),
      compare (op, value) {
        if (op !== '~' && !/^\d{4}$/.test(value)) throw badValue('schoolYear', `is a year: compare it with four digits such as 2027 (got '${value}')`)
        return { kind: 'compare', field: 'schoolYear', op, value }
      },
      sort: 'schoolYear'
    }
  }
}

/** The fields of AcademicSessionDType this service answers, in the binding's order: what `fields` may name. */
export const ACADEMIC_SESSION_FIELDS: readonly string[] = ['sourcedId', 'status', 'dateLastModified', 'title', 'startDate', 'endDate', 'type', 'parent', 'children', 'schoolYear']

/**
 * Courses as the import keeps them: the school year by its sourcedId, grades as the CEDS codes of the
 * file, subjects and subject codes as given; the org is the caller's school (a course is one
 * school's). A course without a code is sent without courseCode (docs/api/oneroster.md).
 */
export const COURSES: Kind = {
  model: 'Course',
  fields: {
    sourcedId,
    status: constant(() => 'active'),
    dateLastModified,
    title: text('title'),
    schoolYear: sessionReference('schoolYearKey'),
    'schoolYear.sourcedId': { columns: ['schoolYearKey'], compare: compare('schoolYearKey'), sort: 'schoolYearKey' },
    courseCode: text('courseCode'),
    grades: texts('grades'),
    subjects: texts('subjects'),
    org: { ...constant((context) => context.schoolId, false), answer: (_row, context) => context.school },
    'org.sourcedId': constant((context) => context.schoolId, false),
    subjectCodes: texts('subjectCodes')
  }
}

/** The fields of CourseDType this service answers, in the binding's order: what `fields` may name. */
export const COURSE_FIELDS: readonly string[] = ['sourcedId', 'status', 'dateLastModified', 'title', 'schoolYear', 'courseCode', 'grades', 'subjects', 'org', 'subjectCodes']

/** A reference of a record's key (`courseKey`) to a record of the binding (CourseGUIDRefDType ...). */
function keyReference (key: string, path: string, type: string): BindingField {
  return {
    columns: [key],
    answer: (row, context) => row[key] == null ? undefined : { href: `${context.base}/${path}/${encodeURIComponent(row[key] as string)}`, sourcedId: row[key], type },
    compare: compare(key),
    sort: key
  }
}

/**
 * Classrooms as OneRoster classes (ClassDType): those with a course and terms, the import's (a
 * classroom made by GraphQL or the CLI has neither, and ClassDType requires both: it is not served
 * as a class, docs/api/oneroster.md). The title is the classroom's name; the school is the caller's.
 */
export const CLASSES: Kind = {
  model: 'Classroom',
  fields: {
    sourcedId,
    status: constant(() => 'active'),
    dateLastModified,
    title: text('name'),
    classCode: text('classCode'),
    classType: text('classType'),
    location: text('location'),
    grades: texts('grades'),
    subjects: texts('subjects'),
    course: keyReference('courseKey', 'courses', 'course'),
    'course.sourcedId': { columns: ['courseKey'], compare: compare('courseKey'), sort: 'courseKey' },
    school: { ...constant((context) => context.schoolId, false), answer: (_row, context) => context.school },
    'school.sourcedId': constant((context) => context.schoolId, false),
    terms: {
      columns: ['termKeys'],
      answer: (row, context) => (row.termKeys as string[] | null ?? []).map((key) => sessionRef(key, context)),
      compare: () => { throw badValue('terms', 'is a list of references: filter by terms.sourcedId instead') },
      sort: 'id'
    },
    'terms.sourcedId': {
      columns: ['termKeys'],
      compare (op, value) {
        if (op !== '=' && op !== '!=') throw badValue('terms.sourcedId', `is a list: compared with = or != (got ${op})`)
        return { kind: 'compare', field: 'termKeys', op, value }
      },
      sort: 'id'
    },
    subjectCodes: texts('subjectCodes'),
    periods: texts('periods')
  }
}

/** The fields of ClassDType this service answers, in the binding's order: what `fields` may name. */
export const CLASS_FIELDS: readonly string[] = [
  'sourcedId', 'status', 'dateLastModified', 'title', 'classCode', 'classType', 'location', 'grades', 'subjects', 'course', 'school', 'terms', 'subjectCodes', 'periods'
]

/** The route condition of every class collection: a classroom with a course and terms. */
export const IS_CLASS = { kind: 'predicate', predicate: { kind: 'compare', field: 'classKey', op: '=', value: 'true' } } as const

// ---- Enrollments (EnrollmentDType) ------------------------------------------------------------

/** A reference to a record of the binding by a key of the row (UserGUIDRefDType, ClassGUIDRefDType). */
function keyRef (key: string, path: string, type: string): BindingField {
  return { ...keyReference(key, path, type), compare: () => { throw badValue(type, `is a reference: filter by ${type}.sourcedId instead`) } }
}

/** A field one kind of enrollment has no value of (a student's primary): a comparison holds for != only. */
const absent: BindingField = { columns: [], compare: (op) => ({ kind: 'constant', value: op === '!=' }), sort: 'id' }

/** The fields every enrollment has: the school's, its class, status and role. */
function enrollmentFields (role: 'student' | 'teacher'): Record<string, BindingField> {
  return {
    status: constant(() => 'active'),
    class: keyRef('enrolledClassKey', 'classes', 'class'),
    'class.sourcedId': { columns: ['classroomId'], compare: compare('enrolledClassKey'), sort: 'enrolledClassKey' },
    school: { ...constant((context) => context.schoolId, false), answer: (_row, context) => context.school },
    'school.sourcedId': constant((context) => context.schoolId, false),
    role: constant(() => role)
  }
}

// ---- Demographics (DemographicsDType) --------------------------------------------------------

/** A flag of the race and ethnicity (a boolean column): 'true' or 'false', as the binding writes it; left out without a value. */
function flag (field: string): BindingField {
  return {
    columns: [field],
    answer: (row) => typeof row[field] === 'boolean' ? String(row[field]) : undefined,
    compare (op, value) {
      if ((op !== '=' && op !== '!=') || (value !== 'true' && value !== 'false')) throw badValue(field, `is 'true' or 'false', compared with = or != (got ${op}'${value}')`)
      return { kind: 'compare', field, op, value }
    },
    sort: field
  }
}

/**
 * A student's enrollment: its classroom (students.classroom_id), when that classroom is a class.
 * Its sourcedId is the import's (enrollment_sourced_id), else the student's id; its dates are the
 * student's enrollment dates; it changes with the student (dateLastModified: the student's
 * updatedAt, a move included). `primary` is a teacher's only (1EdTech: "Applicable only to teachers").
 */
export const STUDENT_ENROLLMENTS: Kind = {
  model: 'Student',
  fields: {
    ...enrollmentFields('student'),
    sourcedId: { columns: ['enrollmentKey'], answer: (row) => row.enrollmentKey, compare: compare('enrollmentKey'), sort: 'enrollmentKey' },
    dateLastModified,
    user: { ...keyReference('sourcedKey', 'users', 'user'), columns: ['sourcedKey'], compare: () => { throw badValue('user', 'is a reference: filter by user.sourcedId instead') } },
    'user.sourcedId': { columns: ['sourcedId', 'id'], compare: compare('sourcedKey'), sort: 'sourcedKey' },
    primary: absent,
    beginDate: day('enrollmentStartDate', 'beginDate'),
    endDate: day('enrollmentEndDate', 'endDate')
  }
}

/**
 * A teacher's enrollment: an assignment (teacher_classrooms) to a classroom that is a class. Its
 * sourcedId is the import's, else the assignment's id; `primary` is 'true' for the PRIMARY role,
 * 'false' for ASSISTANT (an aide of the file is a teacher here, not primary).
 */
export const TEACHER_ENROLLMENTS: Kind = {
  model: 'TeacherClassroom',
  fields: {
    ...enrollmentFields('teacher'),
    sourcedId,
    dateLastModified,
    user: { ...keyReference('enrolledTeacherKey', 'users', 'user'), compare: () => { throw badValue('user', 'is a reference: filter by user.sourcedId instead') } },
    'user.sourcedId': { columns: ['enrolledTeacherKey'], compare: compare('enrolledTeacherKey'), sort: 'enrolledTeacherKey' },
    primary: {
      columns: ['role'],
      answer: (row) => String(row.role === 'PRIMARY'),
      compare (op, value) {
        if ((op !== '=' && op !== '!=') || (value !== 'true' && value !== 'false')) throw badValue('primary', `is 'true' or 'false', compared with = or != (got ${op}'${value}')`)
        return { kind: 'compare', field: 'role', op: (value === 'true') === (op === '=') ? '=' : '!=', value: 'PRIMARY' }
      },
      sort: 'role'
    },
    beginDate: day('beginDate', 'beginDate'),
    endDate: day('endDate', 'endDate')
  }
}

/** The route condition of every enrollment collection: its classroom is a class of the binding (CLASSES: a course and a term). */
export const ENROLLMENT_IN_CLASS: ListCondition = { kind: 'inClass' }

/** The fields of EnrollmentDType this service answers, in the binding's order: what `fields` may name. */
export const ENROLLMENT_FIELDS: readonly string[] = ['sourcedId', 'status', 'dateLastModified', 'user', 'class', 'school', 'role', 'primary', 'beginDate', 'endDate']

/**
 * A student's or a teacher's demographics, kept on the student or teacher (typed-reads.ts
 * DEMOGRAPHIC_COLUMNS, the same columns on both): its sourcedId is the user's, its dateLastModified
 * the user's last write; birthDate is the date of birth. Every field but the record's own needs
 * roster-demographics.readonly (wall 1's column scopes).
 */
const demographicsOf = (model: 'Student' | 'Teacher'): Kind => ({
  model,
  fields: {
    sourcedId,
    status: constant(() => 'active'),
    dateLastModified,
    birthDate: day('dateOfBirth', 'birthDate'),
    sex: text('sex'),
    americanIndianOrAlaskaNative: flag('americanIndianOrAlaskaNative'),
    asian: flag('asian'),
    blackOrAfricanAmerican: flag('blackOrAfricanAmerican'),
    nativeHawaiianOrOtherPacificIslander: flag('nativeHawaiianOrOtherPacificIslander'),
    white: flag('white'),
    demographicRaceTwoOrMoreRaces: flag('demographicRaceTwoOrMoreRaces'),
    hispanicOrLatinoEthnicity: flag('hispanicOrLatinoEthnicity'),
    countryOfBirthCode: text('countryOfBirthCode'),
    stateOfBirthAbbreviation: text('stateOfBirthAbbreviation'),
    cityOfBirth: text('cityOfBirth'),
    publicSchoolResidenceStatus: text('publicSchoolResidenceStatus')
  }
})

/** Students' demographics. */
export const STUDENT_DEMOGRAPHICS: Kind = demographicsOf('Student')
/** Teachers' demographics. */
export const TEACHER_DEMOGRAPHICS: Kind = demographicsOf('Teacher')

/** The fields of DemographicsDType this service answers, in the binding's order: what `fields` may name. */
export const DEMOGRAPHICS_FIELDS: readonly string[] = Object.keys(STUDENT_DEMOGRAPHICS.fields)

/** The route condition of the demographics: a student or teacher with one of its demographic columns set. */
export const HAS_DEMOGRAPHICS = { kind: 'predicate', predicate: { kind: 'compare', field: 'demographicsKey', op: '=', value: 'true' } } as const
