// The binding's records as this service holds them, declared once per kind: each field of
// OneRoster's UserDType and OrgDType that the data model holds, the columns it reads, its value in
// an answer, what a comparison on it (a filter) becomes over those columns, and what it sorts by.
// A field the model does not hold (middleName, username, userIds, phone, agents, ...) is not here
// and never answered; docs/api/oneroster.md lists the decisions.
//
// - sourcedId: the record's imported sourcedId, or its id when it has none (one entered by hand):
//   the key `sourcedKey` of typed-reads.ts, by which /users/{sourcedId} finds it too.
// - status: `active` for every record held (a deleted record is gone; the change feed's tombstones
//   are not served yet).
// - A student's and a teacher's role is their table's: one role, primary, in the caller's school.
import type { Comparison, Predicate, TypedModel } from '../db/typed-reads.js'
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

/** dateLastModified: the record's last write (updatedAt), ISO 8601 with milliseconds in UTC. */
const dateLastModified: BindingField = {
  columns: ['updatedAt'],
  answer: (row) => new Date(row.updatedAt as Date | string).toISOString(),
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

/** The fields of a user of one role in the caller's school. */
function userFields (role: 'student' | 'teacher'): Record<string, BindingField> {
  return {
    sourcedId: { columns: ['sourcedId', 'id'], answer: (row) => row.sourcedId ?? row.id, compare: compare('sourcedKey'), sort: 'sourcedKey' },
    status: constant(() => 'active'),
    dateLastModified,
    enabledUser,
    givenName: text('givenName'),
    familyName: text('familyName'),
    preferredFirstName: text('preferredName'),
    roles: { ...constant(() => role, false), answer: (_row, context) => [{ roleType: 'primary', role, org: context.school }] },
    'roles.role': constant(() => role, false),
    'roles.roleType': constant(() => 'primary', false),
    'roles.org.sourcedId': constant((context) => context.schoolId, false),
    primaryOrg: { ...constant((context) => context.schoolId, false), answer: (_row, context) => context.school },
    'primaryOrg.sourcedId': constant((context) => context.schoolId, false),
    email: text('email')
  }
}

/** Students as OneRoster users of role student: identifier is the student number, grades the grade level. */
export const STUDENT_USERS: Kind = {
  model: 'Student',
  fields: { ...userFields('student'), identifier: text('studentNumber'), grades }
}

/** Teachers as OneRoster users of role teacher. */
export const TEACHER_USERS: Kind = {
  model: 'Teacher',
  fields: userFields('teacher')
}

/** The fields of UserDType this service answers, in the binding's order: what `fields` may name. */
export const USER_FIELDS: readonly string[] = [
  'sourcedId', 'status', 'dateLastModified', 'enabledUser', 'givenName', 'familyName', 'preferredFirstName',
  'roles', 'primaryOrg', 'identifier', 'email', 'grades'
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
