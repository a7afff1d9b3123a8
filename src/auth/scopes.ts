// Scopes after OneRoster 1.2's rostering scopes, and the scope every field of the schema needs.
//
// - `roster-core.readonly`: the school, classrooms, and people's identity and enrollment (ids,
//   sourcedId, names, grade level, status, classroom links, enrollment dates, the change feed).
// - `roster.readonly`: the full roster: the core plus contact and school-issued identifiers (email,
//   title, student number, the school's address and phone). Holding it grants the core too, as in
//   OneRoster, where roster.readonly covers every endpoint roster-core.readonly does.
// - `roster-demographics.readonly`: demographic fields (date of birth; OneRoster's demographics:
//   sex, race and ethnicity, place of birth, residence status). On its own it grants
//   nothing else: a client asks for it beside a roster scope.
// - Writes (docs/api/mutations.md): `roster-core.createput` creates and changes records and links
//   (the core fields); `roster.createput` grants it and also writes the fields outside the core
//   (WRITE_COLUMN_SCOPES: student number, email, date of birth, title); `roster.delete` deletes.
//   Writing grants no reading: a mutation's answer is read with the read scopes, and a client writes
//   only columns it may read (wall 1, src/db/reach.ts). OneRoster 1.2's rostering REST binding
//   defines read scopes only; these names follow its `.createput`/`.delete` pattern (gradebook).
//
// A caller holds scopes: a client those it was given (or the subset its token asked for); a user
// those of their role (ROLE_SCOPES). Every field of the schema is in FIELD_SCOPES (a test checks
// that the table and the schema list the same fields, and that the table of docs/api/access.md is this one), and an
// operation selecting a field outside the caller's scopes is refused before it runs
// (src/graphql/scope-check.ts).
import type { DeniedColumns } from '../db/reach.js'
import { DEMOGRAPHIC_COLUMNS } from '../db/typed-reads.js'

export const SCOPES = [
  'roster-core.readonly', 'roster.readonly', 'roster-demographics.readonly',
  'roster-core.createput', 'roster.createput', 'roster.delete'
] as const
export type Scope = typeof SCOPES[number]

/** The scopes that read: what a read-only integration (the demo client) holds. */
export const READ_SCOPES: readonly Scope[] = SCOPES.filter((scope) => scope.endsWith('.readonly'))

const CORE: Scope = 'roster-core.readonly'
const FULL: Scope = 'roster.readonly'
const DEMOGRAPHICS: Scope = 'roster-demographics.readonly'
const WRITE_CORE: Scope = 'roster-core.createput'
const WRITE_FULL: Scope = 'roster.createput'
const DELETE: Scope = 'roster.delete'

export function isScope (value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value)
}

/**
 * The prefix of OneRoster 1.2's scope names as its clients send them (1EdTech's OpenAPI file of the
 * rostering service: `https://purl.imsglobal.org/spec/or/v1p2/scope/roster-core.readonly`). Its three
 * read scopes are OneRoster's; the write scopes under it are this service's extension.
 */
export const ONEROSTER_SCOPE_PREFIX = 'https://purl.imsglobal.org/spec/or/v1p2/scope/'

/** A scope named in its short form or in OneRoster's full form; undefined for any other name. */
export function parseScope (name: string): Scope | undefined {
  const short = name.startsWith(ONEROSTER_SCOPE_PREFIX) ? name.slice(ONEROSTER_SCOPE_PREFIX.length) : name
  return isScope(short) ? short : undefined
}

/** A scope in OneRoster's full form. */
export const fullScopeName = (scope: Scope): string => ONEROSTER_SCOPE_PREFIX + scope

/** The scopes each scope grants besides itself. */
const GRANTS_ALSO: Readonly<Record<Scope, readonly Scope[]>> = {
  'roster-core.readonly': [],
  'roster.readonly': [CORE],
  'roster-demographics.readonly': [],
  'roster-core.createput': [],
  'roster.createput': [WRITE_CORE],
  'roster.delete': []
}

/**
 * Users' roles and their scopes. A school administrator holds every scope, the write scopes too. A
 * teacher holds the roster without demographics (need to know: a class list, contacts and student
 * numbers, not dates of birth), reads only their reach inside the school (src/db/reach.ts), and
 * writes nothing.
 */
export const ROLE_SCOPES = {
  admin: SCOPES,
  teacher: [CORE, FULL]
} as const satisfies Record<string, readonly Scope[]>
export type Role = keyof typeof ROLE_SCOPES

/**
 * What a field needs: a scope; `none` for the fields that take credentials of their own (login,
 * refresh) and their results; `user` for what only a user may do (a client has no refresh token to
 * log out). A record mutation needs a write scope.
 */
export type Requirement = Scope | 'none' | 'user'

/** What a caller may do: the scopes it holds, whether it is a user, and whether a teacher. */
export interface Access {
  readonly scopes: readonly Scope[]
  readonly user: boolean
  /** A teacher, who reads only their reach (src/db/reach.ts) whatever their scopes: not TEACHER_UNREACHABLE. */
  readonly teacher?: boolean
}

/**
 * The fields a teacher may not select whatever the scopes: the ways to a student's contacts, which
 * a teacher's reach holds none of (docs/decisions.md "A student's agents"; wall 1's `teacherReach`
 * and wall 2's policy of `agents` admit none). An operation selecting one is refused before it runs,
 * as a field outside the caller's scopes is (src/graphql/scope-check.ts), not answered with an empty
 * list that would say the student has no contact.
 */
export const TEACHER_UNREACHABLE: Readonly<Record<string, readonly string[]>> = {
  Query: ['contacts', 'contactsPage', 'contact'],
  Student: ['contacts']
}

/** Whether `Type.field` is one of TEACHER_UNREACHABLE. */
export function outsideTeacherReach (type: string, field: string): boolean {
  return TEACHER_UNREACHABLE[type]?.includes(field) === true
}

export function holds (access: Access, requirement: Requirement): boolean {
  if (requirement === 'none') return true
  if (requirement === 'user') return access.user
  return access.scopes.some((scope) => scope === requirement || GRANTS_ALSO[scope].includes(requirement))
}

/**
 * Whether a caller holding `held` may be given `asked` (RFC 6749 §3.3: a client may ask for less
 * than it was granted, and its token then carries what it asked for): decided by what the scopes
 * grant, field by field of FIELD_SCOPES and column by column of COLUMN_SCOPES, not by their names,
 * so that `roster.readonly` covers `roster-core.readonly`.
 */
export function covers (held: readonly Scope[], asked: readonly Scope[]): boolean {
  const access: Access = { scopes: held, user: false }
  return asked.every((scope) => grantedBy(scope).every((requirement) => holds(access, requirement)))
}

/** Normalizes and checks a scope set: undefined when `asked` is empty or not covered by `held`. */
export function grantable (held: readonly Scope[], asked: readonly Scope[]): Scope[] | undefined {
  return asked.length > 0 && covers(held, asked) ? normalizeScopes(asked) : undefined
}

/** Scopes in SCOPES order, duplicates removed: the form tokens carry and the response cache keys by. */
export function normalizeScopes (scopes: Iterable<Scope>): Scope[] {
  const set = new Set(scopes)
  return SCOPES.filter((scope) => set.has(scope))
}

type Fields = Readonly<Record<string, Requirement>>

const same = (requirement: Requirement, ...fields: string[]): Fields =>
  Object.fromEntries(fields.map((field) => [field, requirement]))

/** Every field of every object type of the schema, by type, with what it needs. */
export const FIELD_SCOPES: Readonly<Record<string, Fields>> = {
  Query: same(CORE,
    'school', 'students', 'studentsPage', 'student', 'teachers', 'teachersPage', 'teacher',
    'classrooms', 'classroomsPage', 'classroom', 'contacts', 'contactsPage', 'contact', 'changes', 'latestChangeCursor'),
  Subscription: same(CORE, 'changes'),
  Mutation: {
    login: 'none',
    refreshToken: 'none',
    logout: 'user',
    ...same(WRITE_CORE, 'createStudent', 'changeStudent', 'placeStudent', 'removeStudentFromClassroom', 'createTeacher', 'changeTeacher',
      'assignTeacher', 'endTeacherAssignment', 'createClassroom', 'changeClassroom', 'upsertStudents'),
    ...same(DELETE, 'deleteStudent', 'deleteTeacher', 'deleteClassroom')
  },
  DeletedRecord: same(DELETE, 'recordType', 'id', 'sourcedId'),
  StudentUpsertResult: same(WRITE_CORE, 'items', 'created', 'changed', 'unchanged'),
  StudentUpsertItem: same(WRITE_CORE, 'sourcedId', 'id', 'version', 'outcome'),
  LoginPayload: same('none', 'accessToken', 'refreshToken'),
  RefreshTokenPayload: same('none', 'accessToken'),
  School: {
    ...same(CORE, 'id', 'name', 'timeZone'),
    ...same(FULL, 'addressLine1', 'addressLine2', 'city', 'region', 'postalCode', 'country', 'phone', 'website')
  },
  Student: {
    ...same(CORE, 'id', 'sourcedId', 'fullName', 'givenName', 'familyName', 'preferredName', 'gradeLevel', 'status',
      'enrollmentStartDate', 'enrollmentEndDate', 'classroomName', 'classroom', 'contacts', 'roles', 'version', 'createdAt', 'updatedAt'),
    ...same(FULL, 'studentNumber', 'email'),
    ...same(DEMOGRAPHICS, 'dateOfBirth')
  },
  Teacher: {
    ...same(CORE, 'id', 'sourcedId', 'fullName', 'givenName', 'familyName', 'preferredName', 'status',
      'classrooms', 'classroomAssignments', 'roles', 'version', 'createdAt', 'updatedAt'),
    ...same(FULL, 'email', 'title')
  },
  Classroom: same(CORE, 'id', 'sourcedId', 'name', 'gradeLevel', 'subject', 'students', 'teachers', 'teacherAssignments', 'version', 'createdAt', 'updatedAt'),
  ClassroomAssignment: same(CORE, 'role', 'teacher', 'classroom'),
  // A student's agents: the same columns need the same scopes as on REST's /users (COLUMN_SCOPES.Agent).
  Contact: {
    ...same(CORE, 'id', 'sourcedId', 'role', 'givenName', 'familyName', 'preferredName', 'status', 'students', 'roles', 'version', 'createdAt', 'updatedAt'),
    ...same(FULL, 'email', 'phone', 'sms')
  },
  UserRole: same(CORE, 'roleType', 'role', 'beginDate', 'endDate'),
  StudentPage: same(CORE, 'nodes', 'pageInfo'),
  TeacherPage: same(CORE, 'nodes', 'pageInfo'),
  ClassroomPage: same(CORE, 'nodes', 'pageInfo'),
  ContactPage: same(CORE, 'nodes', 'pageInfo'),
  PageInfo: same(CORE, 'endCursor', 'hasNextPage'),
  ChangeFeed: same(CORE, 'changes', 'nextCursor', 'hasMore'),
  Change: {
    ...same(CORE, 'cursor', 'type', 'recordType', 'id', 'sourcedId', 'at', 'student', 'teacher', 'classroom'),
    ...same(FULL, 'studentNumber')
  }
}

/**
 * A user's columns of OneRoster's users.csv that are contacts or identifiers, as email and the
 * student number: the username, the other identifiers (userIds), the SMS and phone numbers. The
 * names beside them (middle, preferred middle and last names, pronouns) are the core's.
 */
const USER_CONTACT_COLUMNS: Readonly<Record<string, Scope>> = { username: FULL, userIds: FULL, sms: FULL, phone: FULL }

/**
 * The database columns outside the core scope, by model, with the scope each needs: what wall 1
 * (src/db/reach.ts) refuses to read for a caller without it. Every other column needs the core
 * scope, which every caller holds. A test checks it against FIELD_SCOPES (a field and the column
 * of the same name need the same scope).
 */
export const COLUMN_SCOPES: Readonly<Record<string, Readonly<Record<string, Scope>>>> = {
  School: Object.fromEntries(['addressLine1', 'addressLine2', 'city', 'region', 'postalCode', 'country', 'phone', 'website'].map((column) => [column, FULL])),
  Student: { studentNumber: FULL, email: FULL, ...USER_CONTACT_COLUMNS, ...Object.fromEntries(DEMOGRAPHIC_COLUMNS.map((column) => [column, DEMOGRAPHICS])) },
  Teacher: { email: FULL, title: FULL, ...USER_CONTACT_COLUMNS, ...Object.fromEntries(DEMOGRAPHIC_COLUMNS.map((column) => [column, DEMOGRAPHICS])) },
  Agent: { email: FULL, ...USER_CONTACT_COLUMNS },
  Change: { studentNumber: FULL },
  TeacherChange: { studentNumber: FULL }
}

/**
 * The columns a write needs more than `roster-core.createput` for, by model: the fields outside the
 * core. A write that sets one needs `roster.createput` (src/graphql/resolvers/mutations.ts), and the
 * scope to read it as well (wall 1 refuses writing a column the caller may not read).
 */
export const WRITE_COLUMN_SCOPES: Readonly<Record<string, Readonly<Record<string, Scope>>>> = {
  Student: { studentNumber: WRITE_FULL, email: WRITE_FULL, dateOfBirth: WRITE_FULL },
  Teacher: { email: WRITE_FULL, title: WRITE_FULL }
}

/** The columns of `model` among `columns` that need a scope of `tables` (in order) that `access` lacks, each with the first such scope. */
function columnsNeeding (tables: ReadonlyArray<Readonly<Record<string, Readonly<Record<string, Scope>>>>>, access: Access, model: string, columns: Iterable<string>): Array<{ column: string, needs: Scope }> {
  const out: Array<{ column: string, needs: Scope }> = []
  for (const column of columns) {
    for (const table of tables) {
      const scope = table[model]?.[column]
      if (scope !== undefined && !holds(access, scope)) {
        out.push({ column, needs: scope })
        break
      }
    }
  }
  return out
}

/**
 * The columns of `model` among `written` that `access` may not write, each with a scope it lacks:
 * the write scope of WRITE_COLUMN_SCOPES, and the read scope of COLUMN_SCOPES (a client writes only
 * what it may read).
 */
export function unwritableColumns (access: Access, model: string, written: Iterable<string>): Array<{ column: string, needs: Scope }> {
  return columnsNeeding([WRITE_COLUMN_SCOPES, COLUMN_SCOPES], access, model, written)
}

/**
 * The columns of `model` among `keys` that `access` may not name a record by (a mutation's
 * `StudentRef.studentNumber`): a record found by a column is a read of it, which needs the column's
 * read scope of COLUMN_SCOPES.
 */
export function unreadableKeys (access: Access, model: string, keys: Iterable<string>): Array<{ column: string, needs: Scope }> {
  return columnsNeeding([COLUMN_SCOPES], access, model, keys)
}

/** One map per set of scopes held: wall 1 keys its clients by the map (src/db/reach.ts). */
const deniedBySet = new Map<string, DeniedColumns>()

/**
 * The columns of COLUMN_SCOPES a caller holding `scopes` may not read, each with the scope it
 * needs: what wall 1's reach step refuses and leaves unread (Reach.deniedColumns, src/db/reach.ts).
 */
export function deniedColumns (scopes: readonly Scope[]): DeniedColumns {
  const set = scopes.join(' ')
  let denied = deniedBySet.get(set)
  if (denied === undefined) {
    const access: Access = { scopes, user: false }
    const byModel = new Map<string, ReadonlyMap<string, Scope>>()
    for (const [model, columns] of Object.entries(COLUMN_SCOPES)) {
      const out = new Map(Object.entries(columns).filter(([, scope]) => !holds(access, scope)))
      if (out.size > 0) byModel.set(model, out)
    }
    denied = byModel
    deniedBySet.set(set, denied)
  }
  return denied
}

/** The scopes the fields and columns of the tables above need. */
const REQUIRED: readonly Scope[] = SCOPES.filter((scope) =>
  Object.values(FIELD_SCOPES).some((fields) => Object.values(fields).includes(scope)) ||
  Object.values(COLUMN_SCOPES).some((columns) => Object.values(columns).includes(scope)) ||
  Object.values(WRITE_COLUMN_SCOPES).some((columns) => Object.values(columns).includes(scope)))

/** What a scope lets its holder read: the requirements of the fields and columns it satisfies. */
function grantedBy (scope: Scope): Scope[] {
  const access: Access = { scopes: [scope], user: false }
  return REQUIRED.filter((requirement) => holds(access, requirement))
}

/**
 * What `Type.field` needs. A field missing from the table (impossible while the table test passes)
 * needs what nobody holds: denied by default.
 */
export function requirementOf (type: string, field: string): Requirement | undefined {
  return FIELD_SCOPES[type]?.[field]
}

const REQUIREMENT_LABEL: Readonly<Record<Requirement, string>> = {
  'roster-core.readonly': '`roster-core.readonly` (or `roster.readonly`)',
  'roster.readonly': '`roster.readonly`',
  'roster-demographics.readonly': '`roster-demographics.readonly`',
  'roster-core.createput': '`roster-core.createput` (or `roster.createput`)',
  'roster.createput': '`roster.createput`',
  'roster.delete': '`roster.delete`',
  none: 'nothing (takes credentials of its own)',
  user: 'a user (not a client)'
}

/** README's field-to-scope table (section "Access"), generated from FIELD_SCOPES. */
export function fieldScopeTable (): string {
  const lines = ['| Type | Fields | Needs |', '|---|---|---|']
  for (const [type, fields] of Object.entries(FIELD_SCOPES)) {
    const byRequirement = new Map<Requirement, string[]>()
    for (const [field, requirement] of Object.entries(fields)) {
      byRequirement.set(requirement, [...byRequirement.get(requirement) ?? [], field])
    }
    for (const [requirement, names] of byRequirement) {
      lines.push(`| \`${type}\` | ${names.map((name) => `\`${name}\``).join(', ')} | ${REQUIREMENT_LABEL[requirement]} |`)
    }
  }
  return lines.join('\n') + '\n'
}
