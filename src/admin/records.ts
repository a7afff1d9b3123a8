// Administration: creating schools, users (with their roles) and records. Used by the CLI and by
// tests; tenant records are written through the client scoped to their school, like every other
// tenant write.
import { normalizeUsername } from '../auth/auth-service.js'
import { hashPassword } from '../auth/passwords.js'
import type { Database } from '../db/client.js'
import { comparable, insertStudents, studentsBySourcedId, updateStudents, type StudentWritten } from '../db/typed-writes.js'
import { Prisma } from '../generated/prisma/client.js'
import { GradeLevel, StudentStatus, TeacherRole, TeacherStatus, UserRole } from '../generated/prisma/enums.js'
import { v7 as uuidv7 } from 'uuid'
import { parseUuid } from '../validators.js'

/**
 * What an AdminError is about: bad input; a record (or link) that is not there; a conflict with what
 * is there (a natural key taken, a classroom with students); a record that moved on from the
 * version a change was based on.
 */
export type AdminErrorCode = 'BAD_USER_INPUT' | 'NOT_FOUND' | 'CONFLICT' | 'VERSION_CONFLICT'

/** One invalid field of a write: where it is in the input (e.g. `['input', 'email']`) and why. */
export interface InvalidField {
  path: Array<string | number>
  message: string
}

export interface AdminErrorDetails {
  /** BAD_USER_INPUT of a write: every invalid field, each with its path. */
  invalid?: InvalidField[]
  /** VERSION_CONFLICT: the record's version now. */
  currentVersion?: number
}

export class AdminError extends Error {
  override name = 'AdminError'
  constructor (message: string, readonly code: AdminErrorCode = 'BAD_USER_INPUT', readonly details: AdminErrorDetails = {}) {
    super(message)
  }
}

const USERNAME = /^[a-z0-9][a-z0-9._@+-]{0,63}$/

export function requireText (label: string, value: string, max = 200): string {
  const text = value.trim()
  if (text === '') throw new AdminError(`${label} must not be empty`)
  if (text.length > max) throw new AdminError(`${label} must have at most ${max} characters`)
  return text
}

/** An id an operator gave (`label`: School, Teacher...), in its one form (lower case). */
export function requireId (label: string, text: string): string {
  const id = parseUuid(text)
  if (id === undefined) throw new AdminError(`${label} id "${text}" is not a UUID`)
  return id
}

/** The id of an existing school, in its one form. */
export async function requireSchool (db: Database, schoolId: string): Promise<string> {
  const id = requireId('School', schoolId)
  const school = await db.prisma.school.findUnique({ where: { id }, select: { id: true } })
  if (school === null) throw new AdminError(`School ${id} does not exist`)
  return school.id
}

/** A school's optional details (see the School model). */
export interface SchoolDetails {
  timeZone?: string | undefined
  addressLine1?: string | undefined
  addressLine2?: string | undefined
  city?: string | undefined
  region?: string | undefined
  postalCode?: string | undefined
  country?: string | undefined
  phone?: string | undefined
  website?: string | undefined
}

function requireTimeZone (zone: string): string {
  try {
    // Intl knows the IANA names (and refuses others with a RangeError).
    return new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone
  } catch {
    throw new AdminError(`Time zone "${zone}" is not an IANA time zone name (e.g. America/Chicago)`)
  }
}

export async function createSchool (db: Database, name: string, details: SchoolDetails = {}): Promise<string> {
  const data: Prisma.SchoolCreateInput = { name: requireText('School name', name) }
  if (details.timeZone !== undefined) data.timeZone = requireTimeZone(details.timeZone)
  if (details.country !== undefined) {
    if (!/^[A-Za-z]{2}$/.test(details.country)) throw new AdminError(`Country must be an ISO 3166-1 alpha-2 code such as US (got "${details.country}")`)
    data.country = details.country.toUpperCase()
  }
  for (const key of ['addressLine1', 'addressLine2', 'city', 'region', 'postalCode', 'phone', 'website'] as const) {
    const value = details[key]
    if (value !== undefined) data[key] = requireText(key, value)
  }
  const school = await db.prisma.school.create({ data, select: { id: true } })
  return school.id
}

/** The roles an operator gives (`--role`): the database's UserRole, in lower case. */
export const USER_ROLES = Object.values(UserRole).map((role) => role.toLowerCase())

function requireRole (value: string): UserRole {
  const role = value.trim().toUpperCase()
  if (Object.hasOwn(UserRole, role)) return role as UserRole
  throw new AdminError(`Role must be one of ${USER_ROLES.join(', ')} (got "${value}")`)
}

/**
 * The teacher record a TEACHER user is: a teacher of `schoolId`. Checked here, because the database
 * cannot (users are global, teachers a tenant table: no foreign key).
 */
async function requireTeacherOf (db: Database, schoolId: string, teacherId: string): Promise<string> {
  const id = requireId('Teacher', teacherId)
  const teacher = await db.forSchool(schoolId).teacher.findFirst({ where: { id }, select: { id: true } })
  if (teacher === null) throw new AdminError(`Teacher ${id} is not a teacher of school ${schoolId}`)
  return teacher.id
}

/** What a user is allowed to be (docs/api/access.md): role and teacher record, checked together. */
export interface UserAccess {
  /** `admin` (default) or `teacher`, any case. */
  role?: string | undefined
  /** The teacher record of the user's school, for the role `teacher` only. */
  teacherId?: string | undefined
}

/**
 * The role and teacher record of a user of `schoolId`, validated: an admin has no teacher record,
 * a teacher has one of that school. Errors name the CLI's options; the database's CHECK
 * (users_teacher_check) is never what an operator sees.
 */
async function requireAccess (db: Database, schoolId: string | null, access: UserAccess): Promise<{ role: UserRole, teacherId: string | null }> {
  const role = access.role === undefined ? UserRole.ADMIN : requireRole(access.role)
  if (role !== UserRole.TEACHER) {
    if (access.teacherId !== undefined) throw new AdminError('--teacher is for the role teacher only (add --role teacher)')
    return { role, teacherId: null }
  }
  if (schoolId === null) throw new AdminError('A teacher belongs to a school: the user needs one first (--school with `user create`, or `user assign`)')
  if (access.teacherId === undefined) throw new AdminError(`A teacher user is one teacher record: give --teacher TEACHER_ID, a teacher of school ${schoolId}`)
  return { role, teacherId: await requireTeacherOf(db, schoolId, access.teacherId) }
}

/** A refusal of the users_teacher_check constraint, had the user changed between the check and the write. */
function teacherCheckViolation (err: unknown): boolean {
  return /users_teacher_check/.test(String((err as Error | undefined)?.message))
}

export interface UserInput extends UserAccess {
  username: string
  password: string
  schoolId?: string | undefined
}

/** Creates one user; see createUsers. */
export async function createUser (db: Database, input: UserInput): Promise<string> {
  const [id] = await createUsers(db, [input])
  return id!
}

/**
 * Creates users, all of them or none (one transaction): each with a username, a password, an
 * optional school and a role (admin by default; a teacher needs a teacher record of the school).
 */
export async function createUsers (db: Database, inputs: readonly UserInput[]): Promise<string[]> {
  const rows: Prisma.UserUncheckedCreateInput[] = []
  for (const { username, password, schoolId, ...access } of inputs) {
    const name = normalizeUsername(username)
    if (!USERNAME.test(name)) {
      throw new AdminError('Username must be 1 to 64 characters: letters, digits and . _ @ + - (not starting with a symbol)')
    }
    const school = schoolId === undefined ? null : await requireSchool(db, schoolId)
    const { role, teacherId } = await requireAccess(db, school, access)
    rows.push({ username: name, passwordHash: await hashPassword(password), schoolId: school, role, teacherId })
  }
  try {
    const users = await db.prisma.$transaction(rows.map((data) => db.prisma.user.create({ data, select: { id: true } })))
    return users.map((user) => user.id)
  } catch (err) {
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') {
      const taken = await db.prisma.user.findFirst({ where: { username: { in: rows.map((r) => r.username) } }, select: { username: true } })
      throw new AdminError(`Username "${taken?.username ?? rows.map((r) => r.username).join('", "')}" is taken`)
    }
    throw err
  }
}

/**
 * Assigns a user to a school. A move from one school to another revokes the user's refresh tokens
 * and ends their access to the former school on every API node (trigger users_access_changed).
 * A teacher is a teacher record of their school: moving one takes `teacherId`, a teacher of the new
 * school (or make the user an admin first).
 */
export async function assignUser (db: Database, username: string, schoolId: string, { teacherId }: { teacherId?: string | undefined } = {}): Promise<string> {
  const school = await requireSchool(db, schoolId)
  const user = await requireUser(db, username)
  if (user.role !== UserRole.TEACHER) {
    if (teacherId !== undefined) throw new AdminError(`User "${user.username}" is not a teacher: --teacher is for teacher users (change the role with \`user role\`)`)
    return await updateUser(db, user, { schoolId: school })
  }
  if (teacherId === undefined) {
    if (user.schoolId === school) return user.id
    throw new AdminError(`User "${user.username}" is a teacher of school ${user.schoolId ?? 'none'}: give --teacher TEACHER_ID, a teacher of school ${school}, ` +
      `or make the user an admin first (\`user role --username ${user.username} --role admin\`)`)
  }
  return await updateUser(db, user, { schoolId: school, teacherId: await requireTeacherOf(db, school, teacherId) })
}

/**
 * Gives a user a role: `admin`, or `teacher` with a teacher record of the user's school. A change is
 * an access change: every API node refuses the user's access tokens issued before (trigger
 * users_access_changed); the next refresh issues one of the new role.
 */
export async function setUserRole (db: Database, username: string, access: UserAccess & { role: string }): Promise<{ id: string, changed: boolean }> {
  const user = await requireUser(db, username)
  const wanted = await requireAccess(db, user.schoolId, access)
  if (wanted.role === user.role && wanted.teacherId === user.teacherId) return { id: user.id, changed: false }
  return { id: await updateUser(db, user, wanted), changed: true }
}

export interface UserSummary {
  id: string
  username: string
  schoolId: string | null
  role: UserRole
  teacherId: string | null
  /** The teacher record's full name; null for an admin, or when the record is gone. */
  teacherName: string | null
  disabledAt: Date | null
  createdAt: Date
}

/** Users (never a password hash), by username; only those of `schoolId` when given. */
export async function listUsers (db: Database, { schoolId }: { schoolId?: string | undefined } = {}): Promise<UserSummary[]> {
  const users = await db.prisma.user.findMany({
    where: schoolId === undefined ? {} : { schoolId: requireId('School', schoolId) },
    orderBy: { username: 'asc' },
    select: { id: true, username: true, schoolId: true, role: true, teacherId: true, disabledAt: true, createdAt: true }
  })
  // Teachers' names, read school by school through the school's client as every tenant read is.
  const names = new Map<string, string>()
  const bySchool = new Map<string, string[]>()
  for (const u of users) {
    if (u.teacherId !== null && u.schoolId !== null) bySchool.set(u.schoolId, [...(bySchool.get(u.schoolId) ?? []), u.teacherId])
  }
  for (const [school, ids] of bySchool) {
    const teachers = await db.forSchool(school).teacher.findMany({ where: { id: { in: ids } }, select: { id: true, fullName: true } })
    for (const teacher of teachers) names.set(`${school}/${teacher.id}`, teacher.fullName)
  }
  return users.map((u) => ({ ...u, teacherName: names.get(`${u.schoolId ?? ''}/${u.teacherId ?? ''}`) ?? null }))
}

/** Disables a user: no login or refresh, refresh tokens revoked, access tokens refused at once. */
export async function disableUser (db: Database, username: string): Promise<string> {
  const user = await requireUser(db, username)
  return await updateUser(db, user, user.disabledAt !== null ? {} : { disabledAt: new Date() })
}

/** Enables a disabled user again; they log in anew (their former tokens stay revoked). */
export async function enableUser (db: Database, username: string): Promise<string> {
  return await updateUser(db, await requireUser(db, username), { disabledAt: null })
}

interface UserRow { id: string, username: string, schoolId: string | null, role: UserRole, teacherId: string | null, disabledAt: Date | null }

async function requireUser (db: Database, username: string): Promise<UserRow> {
  const name = normalizeUsername(username)
  const user = await db.prisma.user.findUnique({
    where: { username: name },
    select: { id: true, username: true, schoolId: true, role: true, teacherId: true, disabledAt: true }
  })
  if (user === null) throw new AdminError(`User "${name}" does not exist`)
  return user
}

/**
 * Writes `data` to the user as `user` read them: a user whose school, role or teacher changed
 * since (another operator's command) is left alone, so that a check made on the row read (a
 * teacher record of the school) still holds for the row written.
 */
async function updateUser (
  db: Database,
  user: UserRow,
  data: { schoolId?: string, disabledAt?: Date | null, role?: UserRole, teacherId?: string | null }
): Promise<string> {
  if (Object.keys(data).length === 0) return user.id
  const changedMeanwhile = new AdminError(`User "${user.username}" changed meanwhile (school, role or teacher): nothing was changed, run the command again`)
  let count: number
  try {
    ({ count } = await db.prisma.user.updateMany({ where: { id: user.id, schoolId: user.schoolId, role: user.role, teacherId: user.teacherId }, data }))
  } catch (err) {
    if (teacherCheckViolation(err)) throw changedMeanwhile
    throw err
  }
  if (count === 0) throw changedMeanwhile
  return user.id
}

/** OneRoster/CEDS grade codes accepted beside the enum names (PK, KG, 01..13, Other). */
const GRADE_CODES: Record<string, GradeLevel> = {
  PK: 'PRE_KINDERGARTEN',
  KG: 'KINDERGARTEN',
  OTHER: 'UNGRADED',
  ...Object.fromEntries(Array.from({ length: 13 }, (_, i) => [String(i + 1).padStart(2, '0'), `GRADE_${i + 1}` as GradeLevel]))
}

function requireEnum<T extends string> (label: string, value: string, values: Record<string, T>): T {
  const name = value.trim().toUpperCase()
  if (name in values) return name as T
  throw new AdminError(`${label} must be one of ${Object.keys(values).join(', ')} (got "${value}")`)
}

export function requireGradeLevel (value: string): GradeLevel {
  const code = GRADE_CODES[value.trim().toUpperCase()]
  if (code !== undefined) return code
  try {
    return requireEnum('Grade level', value, GradeLevel)
  } catch {
    throw new AdminError(`Grade level must be one of ${Object.keys(GradeLevel).join(', ')} or a OneRoster code (PK, KG, 01 to 13, Other) (got "${value}")`)
  }
}

function requireDay (label: string, value: string): Date {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value.trim())
  const date = match === null ? null : new Date(`${value.trim()}T00:00:00.000Z`)
  if (date === null || Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value.trim()) {
    throw new AdminError(`${label} must be a day as YYYY-MM-DD (got "${value}")`)
  }
  return date
}

function requireEmail (value: string): string {
  const email = requireText('Email', value, 254)
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new AdminError(`Email "${email}" is not an email address`)
  return email
}

// ---- Records written: the command line and the API's mutations (docs/api/mutations.md) ----------

/** A school's client, as the records' operations take it. */
type Tenant = ReturnType<Database['forSchool']>

/**
 * Where a record operation writes: the school, through a client of that school. In the API it is
 * the caller's (both walls and the caller's reach); for an operator, the school's (schoolTarget).
 */
export interface SchoolTarget {
  readonly schoolId: string
  readonly tenant: Tenant
  /**
   * How the operation's one transaction runs `work`; by default the school client's own. The API's
   * idempotent mutations pass one that keeps the key and the answer in the same transaction
   * (src/graphql/resolvers/mutations.ts).
   */
  readonly transaction?: TransactionRunner
}

/** Runs a record operation's work in one transaction of the school's client (SchoolTarget.transaction). */
export type TransactionRunner = <T>(work: (tx: Tx) => Promise<T>) => Promise<T>

/** The target of an operator's command: an existing school, through its client. */
export async function schoolTarget (db: Database, schoolId: string): Promise<SchoolTarget> {
  const school = await requireSchool(db, schoolId)
  return { schoolId: school, tenant: db.forSchool(school) }
}

/** The models a transaction of the school's client writes, and its typed statements (the bulk upsert's). */
export type Tx = Pick<Tenant, 'student' | 'teacher' | 'classroom' | 'teacherClassroom' | '$queryRawUnsafe'>

/** Runs `work` in one transaction of the school's client (or the target's runner): all of it is written, or nothing. */
async function inTransaction<T> (target: SchoolTarget, work: (tx: Tx) => Promise<T>): Promise<T> {
  if (target.transaction !== undefined) return await target.transaction(work)
  return await target.tenant.$transaction(work) as T
}

type Path = Array<string | number>

/** The invalid fields of one write, collected so that all of them are reported together. */
class Fields {
  readonly invalid: InvalidField[] = []

  /** `check()`'s value, or undefined with the field recorded when it refuses the input. */
  check<T> (path: Path, check: () => T): T | undefined {
    try {
      return check()
    } catch (err) {
      if (!(err instanceof AdminError) || err.code !== 'BAD_USER_INPUT') throw err
      this.invalid.push(...(err.details.invalid ?? [{ path, message: err.message }]))
      return undefined
    }
  }

  fail (path: Path, message: string): void {
    this.invalid.push({ path, message })
  }

  /** Throws BAD_USER_INPUT with every invalid field, if there is one. */
  done (): void {
    const [first] = this.invalid
    if (first === undefined) return
    const message = this.invalid.length === 1
      ? first.message
      : `${this.invalid.length} invalid fields: ${this.invalid.map((f) => `${f.path.join('.')}: ${f.message}`).join('; ')}`
    throw new AdminError(message, 'BAD_USER_INPUT', { invalid: this.invalid })
  }
}

/** A day as YYYY-MM-DD (the CLI), or the Date the GraphQL Date scalar makes of one. */
export type Day = string | Date

interface Rule {
  label: string
  /** May be cleared (`null`). */
  nullable: boolean
  parse: (label: string, value: never) => unknown
}

const text = (max = 200) => (label: string, value: string): string => requireText(label, value, max)
const day = (label: string, value: Day): Date => value instanceof Date ? value : requireDay(label, value)

/** A record's written fields, by name, each with its label, whether it may be cleared and its check. */
const STUDENT_RULES = {
  sourcedId: { label: 'Sourced id', nullable: true, parse: text(255) },
  fullName: { label: 'Full name', nullable: false, parse: text() },
  givenName: { label: 'Given name', nullable: false, parse: text() },
  familyName: { label: 'Family name', nullable: false, parse: text() },
  preferredName: { label: 'Preferred name', nullable: true, parse: text() },
  studentNumber: { label: 'Student number', nullable: true, parse: text(64) },
  email: { label: 'Email', nullable: true, parse: (_label: string, value: string) => requireEmail(value) },
  dateOfBirth: { label: 'Date of birth', nullable: true, parse: day },
  gradeLevel: { label: 'Grade level', nullable: true, parse: (_label: string, value: string) => requireGradeLevel(value) },
  status: { label: 'Status', nullable: false, parse: (label: string, value: string) => requireEnum(label, value, StudentStatus) },
  enrollmentStartDate: { label: 'Enrollment start date', nullable: true, parse: day },
  enrollmentEndDate: { label: 'Enrollment end date', nullable: true, parse: day }
} as const satisfies Record<string, Rule>

const TEACHER_RULES = {
  sourcedId: STUDENT_RULES.sourcedId,
  fullName: STUDENT_RULES.fullName,
  givenName: STUDENT_RULES.givenName,
  familyName: STUDENT_RULES.familyName,
  preferredName: STUDENT_RULES.preferredName,
  email: STUDENT_RULES.email,
  title: { label: 'Title', nullable: true, parse: text() },
  status: { label: 'Status', nullable: false, parse: (label: string, value: string) => requireEnum(label, value, TeacherStatus) }
} as const satisfies Record<string, Rule>

const CLASSROOM_RULES = {
  name: { label: 'Classroom name', nullable: false, parse: text() },
  sourcedId: STUDENT_RULES.sourcedId,
  gradeLevel: STUDENT_RULES.gradeLevel,
  subject: { label: 'Subject', nullable: true, parse: text() }
} as const satisfies Record<string, Rule>

/** The fields of a record as a write gives them: left out (undefined), cleared (null) or set. */
type Given<R extends Record<string, Rule>> = { [K in keyof R]?: Parameters<R[K]['parse']>[1] | null | undefined }

export type StudentFields = Given<typeof STUDENT_RULES>
export type TeacherFields = Given<typeof TEACHER_RULES>
export type ClassroomFields = Given<typeof CLASSROOM_RULES>

/** The columns a write sets: the fields given, checked; the invalid ones recorded under `base`. */
function written (rules: Record<string, Rule>, input: object, fields: Fields, base: Path): Record<string, unknown> {
  const data: Record<string, unknown> = {}
  for (const [key, rule] of Object.entries(rules)) {
    const value = (input as Record<string, unknown>)[key]
    if (value === undefined) continue
    if (value === null) {
      if (rule.nullable) data[key] = null
      else fields.fail([...base, key], `${rule.label} must not be null`)
      continue
    }
    const parsed = fields.check([...base, key], () => rule.parse(rule.label, value as never))
    if (parsed !== undefined) data[key] = parsed
  }
  return data
}

/** A new person's checks beyond their fields: a name to go by, enrollment dates in order. */
function checkNewPerson (data: Record<string, unknown>, fields: Fields, base: Path): void {
  if (data.fullName === undefined && data.givenName === undefined && data.familyName === undefined &&
    !fields.invalid.some((f) => ['fullName', 'givenName', 'familyName'].includes(String(f.path.at(-1))))) {
    fields.fail(base, 'A full name, or a given or family name, is required')
  }
  checkEnrollment(data, fields, base)
}

function checkEnrollment (data: Record<string, unknown>, fields: Fields, base: Path): void {
  const { enrollmentStartDate: start, enrollmentEndDate: end } = data
  if (start instanceof Date && end instanceof Date && end < start) {
    fields.fail([...base, 'enrollmentEndDate'], 'Enrollment end date must not be before the start date')
  }
}

/** A record named by one of its keys (GraphQL's StudentRef, TeacherRef, ClassroomRef; the CLI's options). */
export interface RecordRef {
  id?: string | null | undefined
  sourcedId?: string | null | undefined
  studentNumber?: string | null | undefined
  name?: string | null | undefined
}

export type Kind = 'Student' | 'Teacher' | 'Classroom'

const REF_KEYS: Readonly<Record<Kind, ReadonlyArray<keyof RecordRef>>> = {
  Student: ['id', 'sourcedId', 'studentNumber'],
  Teacher: ['id', 'sourcedId'],
  Classroom: ['id', 'sourcedId', 'name']
}

/** The filter of the one key `ref` gives; BAD_USER_INPUT at `path` unless it gives exactly one, well formed. */
function keyOf (kind: 'Student', ref: RecordRef, path: Path): { id: string } | { sourcedId: string } | { studentNumber: string }
function keyOf (kind: 'Teacher', ref: RecordRef, path: Path): { id: string } | { sourcedId: string }
function keyOf (kind: 'Classroom', ref: RecordRef, path: Path): { id: string } | { sourcedId: string } | { name: string }
function keyOf (kind: Kind, ref: RecordRef, path: Path): Record<string, string>
function keyOf (kind: Kind, ref: RecordRef, path: Path): Record<string, string> {
  const keys = REF_KEYS[kind]
  const given = keys.filter((key) => ref[key] !== undefined && ref[key] !== null)
  const [key] = given
  if (given.length !== 1 || key === undefined) {
    throw new AdminError(`${kind}: give exactly one of ${keys.join(', ')}`, 'BAD_USER_INPUT', { invalid: [{ path, message: `Give exactly one of ${keys.join(', ')}` }] })
  }
  const value = ref[key]!
  if (key === 'id') {
    const id = parseUuid(value)
    if (id === undefined) {
      const message = `${kind} id "${value.slice(0, 64)}" is not a UUID`
      throw new AdminError(message, 'BAD_USER_INPUT', { invalid: [{ path: [...path, 'id'], message }] })
    }
    return { id }
  }
  const label = key === 'name' ? 'Classroom name' : key === 'sourcedId' ? 'Sourced id' : 'Student number'
  try {
    return { [key]: requireText(label, value, key === 'sourcedId' ? 255 : key === 'studentNumber' ? 64 : 200) }
  } catch (err) {
    throw new AdminError((err as Error).message, 'BAD_USER_INPUT', { invalid: [{ path: [...path, key], message: (err as Error).message }] })
  }
}

/** `ref` in words, as a refusal names it. */
function describe (key: Record<string, string>): string {
  const [[name, value] = ['', '']] = Object.entries(key)
  return name === 'id' ? value : `with ${name} "${value}"`
}

/**
 * Refusal of a record that is not there. Another school's record is refused the same way: the
 * school's client cannot see it, and the message names only what was asked.
 */
function notFound (kind: Kind, key: Record<string, string>, schoolId: string): AdminError {
  return new AdminError(`${kind} ${describe(key)} is not a ${kind.toLowerCase()} of school ${schoolId}`, 'NOT_FOUND')
}

interface Versioned { id: string, version: number }

function versionConflict (kind: Kind, row: Versioned, expected: number): AdminError {
  return new AdminError(`${kind} ${row.id} is at version ${row.version}, not ${expected}: it changed meanwhile, nothing was written (read it again and retry)`,
    'VERSION_CONFLICT', { currentVersion: row.version })
}

/** The model delegate of a kind, as the operations below use it (the three share these calls). */
interface Delegate {
  findFirst: (args: { where: Record<string, unknown>, select: Record<string, boolean> }) => Promise<Record<string, unknown> | null>
  findMany: (args: { where: Record<string, unknown>, select: Record<string, boolean> }) => Promise<Array<Record<string, unknown>>>
  createManyAndReturn: (args: { data: Array<Record<string, unknown>>, select: Record<string, boolean> }) => Promise<Array<Record<string, unknown>>>
  updateManyAndReturn: (args: { where: Record<string, unknown>, data: Record<string, unknown>, select: Record<string, boolean> }) => Promise<Array<Record<string, unknown>>>
  deleteMany: (args: { where: Record<string, unknown> }) => Promise<{ count: number }>
}

function delegate (tx: Tx, kind: Kind): Delegate {
  switch (kind) {
    case 'Student': return tx.student as unknown as Delegate
    case 'Teacher': return tx.teacher as unknown as Delegate
    case 'Classroom': return tx.classroom as unknown as Delegate
  }
}

const VERSIONED = { id: true, version: true, sourcedId: true } as const

/** The record `ref` names, with its id, version and sourcedId; NOT_FOUND when the school has none. */
async function requireRecord (tx: Tx, schoolId: string, kind: Kind, ref: RecordRef, path: Path): Promise<Versioned & { sourcedId: string | null }> {
  const key = keyOf(kind, ref, path)
  const row = await delegate(tx, kind).findFirst({ where: key, select: VERSIONED })
  if (row === null) throw notFound(kind, key, schoolId)
  return row as unknown as Versioned & { sourcedId: string | null }
}

/** The natural keys of each kind, which a write may find taken. */
const NATURAL_KEYS: Readonly<Record<Kind, readonly string[]>> = {
  Student: ['sourcedId', 'studentNumber'],
  Teacher: ['sourcedId'],
  Classroom: ['name', 'sourcedId']
}

/**
 * Whether `err` is a unique violation: a model operation's P2002, or a typed statement's (a raw
 * query's P2010, with PostgreSQL's code 23505 inside).
 */
function uniqueViolation (err: unknown): boolean {
  if (!(err instanceof Prisma.PrismaClientKnownRequestError)) return false
  if (err.code === 'P2002') return true
  if (err.code !== 'P2010') return false
  // Through a driver adapter (pg, PGlite), the raw query's error carries the adapter's: its kind,
  // and PostgreSQL's SQLSTATE as its original code.
  const cause = (err.meta as { driverAdapterError?: { cause?: { kind?: unknown, originalCode?: unknown } } } | undefined)?.driverAdapterError?.cause
  return cause?.kind === 'UniqueConstraintViolation' || cause?.originalCode === '23505'
}

/**
 * A unique violation of a write, as the CONFLICT it is: which natural key is taken (read after the
 * transaction rolled back); anything else is passed on.
 */
async function conflictOf (err: unknown, target: SchoolTarget, kind: Kind, rows: ReadonlyArray<{ data: Record<string, unknown>, path: Path, id?: string }>): Promise<unknown> {
  if (!uniqueViolation(err)) return err
  const invalid: InvalidField[] = []
  for (const { data, path, id } of rows) {
    for (const key of NATURAL_KEYS[kind]) {
      const value = data[key]
      if (typeof value !== 'string') continue
      const other = await delegate(target.tenant, kind).findFirst({ where: { [key]: value, ...(id === undefined ? {} : { NOT: { id } }) }, select: { id: true } })
      if (other !== null) invalid.push({ path: [...path, key], message: `${STUDENT_RULES[key as 'sourcedId']?.label ?? CLASSROOM_RULES.name.label} "${value}" is taken in this school (${kind.toLowerCase()} ${String(other.id)})` })
    }
  }
  const [first] = invalid
  // Taken meanwhile and freed again: still a conflict of this write.
  return new AdminError(first?.message ?? `A natural key of this ${kind.toLowerCase()} is taken in this school`, 'CONFLICT', invalid.length === 0 ? {} : { invalid })
}

/** Runs a write of `kind` in one transaction, a unique violation turned into a CONFLICT naming the key. */
async function writing<T> (target: SchoolTarget, kind: Kind, rows: ReadonlyArray<{ data: Record<string, unknown>, path: Path, id?: string }>, work: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return await inTransaction(target, work)
  } catch (err) {
    throw await conflictOf(err, target, kind, rows)
  }
}

/** The classroom `ref` names, in the school; NOT_FOUND otherwise. */
async function requireClassroomRef (tx: Tx, schoolId: string, ref: RecordRef, path: Path): Promise<{ id: string }> {
  return await requireRecord(tx, schoolId, 'Classroom', ref, path)
}

export interface WriteOptions {
  /** The version the write is based on: refused with VERSION_CONFLICT when the record has another. */
  expectedVersion?: number | null | undefined
}

/** Creates a student; `classroom`: an existing classroom by key, or (the CLI) one by name, created on first use. */
export async function addStudent (
  target: SchoolTarget,
  input: StudentFields,
  { classroom, classroomNamed: named, path = ['input'] }: { classroom?: RecordRef | null | undefined, classroomNamed?: string | undefined, path?: Path } = {}
): Promise<Versioned> {
  const fields = new Fields()
  const data = written(STUDENT_RULES, input, fields, path)
  checkNewPerson(data, fields, path)
  const roomKey = classroom === undefined || classroom === null ? undefined : fields.check([...path, 'classroom'], () => keyOf('Classroom', classroom, [...path, 'classroom']))
  const roomName = named === undefined ? undefined : fields.check([...path, 'classroom'], () => requireText('Classroom name', named))
  fields.done()
  const { schoolId } = target
  return await writing(target, 'Student', [{ data, path }], async (tx) => {
    let classroomId: string | undefined
    if (roomKey !== undefined) {
      const room = await tx.classroom.findFirst({ where: roomKey, select: { id: true } })
      if (room === null) throw notFound('Classroom', roomKey, schoolId)
      classroomId = room.id
    }
    if (roomName !== undefined) classroomId = (await classroomNamed(tx, schoolId, roomName)).id
    const [row] = await tx.student.createManyAndReturn({
      data: [{ ...data, schoolId, ...(classroomId === undefined ? {} : { classroomId }) }],
      select: { id: true, version: true }
    })
    return row!
  })
}

/** Creates a teacher. */
export async function addTeacher (target: SchoolTarget, input: TeacherFields, { path = ['input'] }: { path?: Path } = {}): Promise<Versioned> {
  const fields = new Fields()
  const data = written(TEACHER_RULES, input, fields, path)
  checkNewPerson(data, fields, path)
  fields.done()
  return await writing(target, 'Teacher', [{ data, path }], async (tx) => {
    const [row] = await tx.teacher.createManyAndReturn({ data: [{ ...data, schoolId: target.schoolId }], select: { id: true, version: true } })
    return row!
  })
}

/** Creates a classroom; its name is unique in the school. */
export async function addClassroom (target: SchoolTarget, input: ClassroomFields, { path = ['input'] }: { path?: Path } = {}): Promise<Versioned> {
  const fields = new Fields()
  const data = written(CLASSROOM_RULES, input, fields, path)
  if (data.name === undefined && !fields.invalid.some((f) => f.path.at(-1) === 'name')) fields.fail([...path, 'name'], 'A classroom needs a name')
  fields.done()
  return await writing(target, 'Classroom', [{ data, path }], async (tx) => {
    const [row] = await tx.classroom.createManyAndReturn({ data: [{ ...data, schoolId: target.schoolId } as Prisma.ClassroomCreateManyInput], select: { id: true, version: true } })
    return row!
  })
}

const RULES_OF: Readonly<Record<Kind, Record<string, Rule>>> = { Student: STUDENT_RULES, Teacher: TEACHER_RULES, Classroom: CLASSROOM_RULES }

/**
 * Changes the fields given of the record `ref` names (partial: a field left out stays; null clears
 * it), in one transaction; with `expectedVersion`, only if the record is still at that version.
 */
export async function changeRecord (
  target: SchoolTarget,
  kind: Kind,
  ref: RecordRef,
  changes: StudentFields | TeacherFields | ClassroomFields,
  { expectedVersion, paths = { ref: [kind.toLowerCase()], input: ['input'] } }: WriteOptions & { paths?: { ref: Path, input: Path } } = {}
): Promise<Versioned> {
  const fields = new Fields()
  const key = fields.check(paths.ref, () => keyOf(kind, ref, paths.ref))
  const data = written(RULES_OF[kind], changes, fields, paths.input)
  checkEnrollment(data, fields, paths.input)
  fields.done()
  const { schoolId } = target
  return await writing(target, kind, [{ data, path: paths.input }], async (tx) => {
    const model = delegate(tx, kind)
    const row = await model.findFirst({ where: key!, select: VERSIONED }) as Versioned | null
    if (row === null) throw notFound(kind, key!, schoolId)
    if (expectedVersion != null && row.version !== expectedVersion) throw versionConflict(kind, row, expectedVersion)
    if (Object.keys(data).length === 0) return { id: row.id, version: row.version }
    // With the version read in the filter: a writer that committed since (its lock awaited) leaves
    // nothing to update, and the change is refused rather than written over theirs.
    const where = expectedVersion == null ? { id: row.id } : { id: row.id, version: expectedVersion }
    const [changed] = await model.updateManyAndReturn({ where, data, select: { id: true, version: true } }) as unknown as Versioned[]
    if (changed !== undefined) return changed
    const now = await model.findFirst({ where: { id: row.id }, select: VERSIONED }) as Versioned | null
    if (now === null) throw notFound(kind, key!, schoolId)
    throw versionConflict(kind, now, expectedVersion!)
  })
}

/** A record deleted: its keys, as its tombstone keeps them. */
export interface Deleted {
  recordType: 'STUDENT' | 'TEACHER' | 'CLASSROOM'
  id: string
  sourcedId: string | null
}

/**
 * Deletes the record `ref` names (a teacher's or classroom's assignments go with it; a classroom
 * with students is refused), with `expectedVersion` only if it is still at that version.
 */
export async function deleteRecord (target: SchoolTarget, kind: Kind, ref: RecordRef, { expectedVersion, path = [kind.toLowerCase()] }: WriteOptions & { path?: Path } = {}): Promise<Deleted> {
  const key = keyOf(kind, ref, path)
  const { schoolId } = target
  return await inTransaction(target, async (tx) => {
    const model = delegate(tx, kind)
    const row = await model.findFirst({ where: key, select: VERSIONED }) as (Versioned & { sourcedId: string | null }) | null
    if (row === null) throw notFound(kind, key, schoolId)
    if (expectedVersion != null && row.version !== expectedVersion) throw versionConflict(kind, row, expectedVersion)
    if (kind === 'Classroom') {
      const students = await tx.student.count({ where: { classroomId: row.id } })
      if (students > 0) throw new AdminError(`Classroom ${row.id} has ${students} student(s): move them to another classroom (or out of it) first; nothing was deleted`, 'CONFLICT')
    }
    const { count } = await model.deleteMany({ where: expectedVersion == null ? { id: row.id } : { id: row.id, version: expectedVersion } })
    if (count === 0) {
      const now = await model.findFirst({ where: { id: row.id }, select: VERSIONED }) as Versioned | null
      if (now === null) throw notFound(kind, key, schoolId)
      throw versionConflict(kind, now, expectedVersion!)
    }
    return { recordType: kind.toUpperCase() as Deleted['recordType'], id: row.id, sourcedId: row.sourcedId }
  })
}

/** Puts the student `student` names in the classroom `classroom` names, in place of the one they were in. */
export async function placeStudent (target: SchoolTarget, student: RecordRef, classroom: RecordRef): Promise<Versioned & { moved: boolean }> {
  const fields = new Fields()
  const studentKey = fields.check(['student'], () => keyOf('Student', student, ['student']))
  const roomKey = fields.check(['classroom'], () => keyOf('Classroom', classroom, ['classroom']))
  fields.done()
  const { schoolId } = target
  return await inTransaction(target, async (tx) => {
    const row = await tx.student.findFirst({ where: studentKey!, select: { id: true, version: true, classroomId: true } })
    if (row === null) throw notFound('Student', studentKey!, schoolId)
    const room = await tx.classroom.findFirst({ where: roomKey!, select: { id: true } })
    if (room === null) throw notFound('Classroom', roomKey!, schoolId)
    if (row.classroomId === room.id) return { id: row.id, version: row.version, moved: false }
    const [moved] = await tx.student.updateManyAndReturn({ where: { id: row.id }, data: { classroomId: room.id }, select: { id: true, version: true } })
    return { ...moved!, moved: true }
  })
}

/** Takes a student out of their classroom; with `classroom`, only out of that one (else NOT_FOUND). */
export async function removeStudentFromClassroom (target: SchoolTarget, student: RecordRef, classroom?: RecordRef | null): Promise<Versioned> {
  const fields = new Fields()
  const studentKey = fields.check(['student'], () => keyOf('Student', student, ['student']))
  const roomKey = classroom == null ? undefined : fields.check(['classroom'], () => keyOf('Classroom', classroom, ['classroom']))
  fields.done()
  const { schoolId } = target
  return await inTransaction(target, async (tx) => {
    const row = await tx.student.findFirst({ where: studentKey!, select: { id: true, classroomId: true } })
    if (row === null) throw notFound('Student', studentKey!, schoolId)
    const room = roomKey === undefined ? undefined : await tx.classroom.findFirst({ where: roomKey, select: { id: true } })
    if (room === null) throw notFound('Classroom', roomKey!, schoolId)
    if (row.classroomId === null || (room !== undefined && room.id !== row.classroomId)) {
      throw new AdminError(`Student ${row.id} is not in ${room === undefined ? 'a classroom' : `classroom ${room.id}`}: nothing was changed`, 'NOT_FOUND')
    }
    const [out] = await tx.student.updateManyAndReturn({ where: { id: row.id, classroomId: row.classroomId }, data: { classroomId: null }, select: { id: true, version: true } })
    if (out === undefined) throw new AdminError(`Student ${row.id} changed classroom meanwhile: nothing was changed, retry`, 'CONFLICT')
    return out
  })
}

/**
 * Assigns a teacher to a classroom in `role`: inserts the assignment, or else updates its role. Not
 * an upsert, whose DO UPDATE SET with a parameter (the role) Citus refuses on a distributed table.
 */
async function setAssignment (tx: Tx, key: { schoolId: string, teacherId: string, classroomId: string }, role: TeacherRole): Promise<void> {
  const created = await tx.teacherClassroom.createMany({ data: [{ ...key, role }], skipDuplicates: true })
  if (created.count === 0) await tx.teacherClassroom.updateMany({ where: key, data: { role } })
}

/** The role of the teacher's assignment to the classroom; NOT_FOUND when there is none. */
async function requireAssignment (tx: Tx, teacherId: string, classroomId: string): Promise<TeacherRole> {
  const found = await tx.teacherClassroom.findFirst({ where: { teacherId, classroomId }, select: { role: true } })
  if (found === null) throw new AdminError(`Teacher ${teacherId} is not assigned to classroom ${classroomId}: nothing was changed`, 'NOT_FOUND')
  return found.role
}

/** Assigns the teacher `teacher` names to the classroom `classroom` names in `role`; an assignment that exists takes the role. */
export async function assignTeacherTo (target: SchoolTarget, teacher: RecordRef, classroom: RecordRef, role?: string | null): Promise<{ teacherId: string, classroomId: string, role: TeacherRole }> {
  const fields = new Fields()
  fields.check(['teacher'], () => keyOf('Teacher', teacher, ['teacher']))
  fields.check(['classroom'], () => keyOf('Classroom', classroom, ['classroom']))
  const assignment = role == null ? TeacherRole.PRIMARY : fields.check(['role'], () => requireEnum('Classroom role', role, TeacherRole))
  fields.done()
  const { schoolId } = target
  return await inTransaction(target, async (tx) => {
    const found = await requireRecord(tx, schoolId, 'Teacher', teacher, ['teacher'])
    const room = await requireClassroomRef(tx, schoolId, classroom, ['classroom'])
    await setAssignment(tx, { schoolId, teacherId: found.id, classroomId: room.id }, assignment!)
    return { teacherId: found.id, classroomId: room.id, role: assignment! }
  })
}

/** Ends the assignment of the teacher `teacher` names to the classroom `classroom` names (NOT_FOUND when there is none). */
export async function endAssignment (target: SchoolTarget, teacher: RecordRef, classroom: RecordRef): Promise<{ teacherId: string, classroomId: string, role: TeacherRole }> {
  const fields = new Fields()
  fields.check(['teacher'], () => keyOf('Teacher', teacher, ['teacher']))
  fields.check(['classroom'], () => keyOf('Classroom', classroom, ['classroom']))
  fields.done()
  const { schoolId } = target
  return await inTransaction(target, async (tx) => {
    const found = await requireRecord(tx, schoolId, 'Teacher', teacher, ['teacher'])
    const room = await requireClassroomRef(tx, schoolId, classroom, ['classroom'])
    const role = await requireAssignment(tx, found.id, room.id)
    await tx.teacherClassroom.deleteMany({ where: { teacherId: found.id, classroomId: room.id } })
    return { teacherId: found.id, classroomId: room.id, role }
  })
}

/** The bound of a bulk upsert: a page's. */
export const UPSERT_MAX = 1000

export type UpsertOutcome = 'CREATED' | 'CHANGED' | 'UNCHANGED'

export interface UpsertedStudent { sourcedId: string, id: string, version: number, outcome: UpsertOutcome }

function same (a: unknown, b: unknown): boolean {
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime()
  return a === b
}

/**
 * Creates or changes students by sourcedId, all or nothing (one transaction), set-based: one read
 * of the school's students with these sourcedIds, one INSERT of the new ones, and one UPDATE per
 * set of changes (students whose fields differ the same way are written together; a student
 * already as given is not written: UNCHANGED).
 */
export async function upsertStudents (target: SchoolTarget, items: ReadonlyArray<StudentFields & { sourcedId: string }>, { path = ['items'] }: { path?: Path } = {}): Promise<UpsertedStudent[]> {
  const fields = new Fields()
  if (items.length === 0 || items.length > UPSERT_MAX) fields.fail(path, `Give 1 to ${UPSERT_MAX} items (got ${items.length})`)
  const rows = items.map((item, i) => ({ data: written(STUDENT_RULES, item, fields, [...path, i]), path: [...path, i] }))
  const seen = new Map<string, number>()
  rows.forEach(({ data }, i) => {
    checkEnrollment(data, fields, [...path, i])
    const sourcedId = data.sourcedId
    if (sourcedId === null) fields.fail([...path, i, 'sourcedId'], 'Sourced id must not be null')
    if (typeof sourcedId !== 'string') return
    const first = seen.get(sourcedId)
    if (first !== undefined) fields.fail([...path, i, 'sourcedId'], `Sourced id "${sourcedId}" is given twice (items ${first} and ${i})`)
    else seen.set(sourcedId, i)
  })
  fields.done()
  if (target.tenant.$typedWrites()) return await writing(target, 'Student', rows, async (tx) => await upsertByStatements(tx, rows, [...seen.keys()], path))
  // The decision reads the fields the batch gives, the only ones it compares: all of them a caller
  // may read, since it writes only what it may read (unwritableColumns, src/auth/scopes.ts), while
  // the student's other fields may be outside its scopes (wall 1 refuses reading those).
  const compared = Object.fromEntries(rows.flatMap(({ data }) => Object.keys(data)).map((key) => [key, true]))
  const { schoolId } = target
  return await writing(target, 'Student', rows, async (tx) => {
    const existing = await tx.student.findMany({ where: { sourcedId: { in: [...seen.keys()] } }, select: { ...compared, sourcedId: true, id: true, version: true } })
    const bySourced = new Map(existing.map((row) => [row.sourcedId!, row as unknown as Record<string, unknown> & Versioned]))
    const out: UpsertedStudent[] = []
    const fresh: Array<{ index: number, data: Record<string, unknown> }> = []
    const changing = new Map<string, { changes: Record<string, unknown>, items: number[] }>()
    const invalid = new Fields()
    for (const [index, { data }] of rows.entries()) {
      const sourcedId = data.sourcedId as string
      const row = bySourced.get(sourcedId)
      if (row === undefined) {
        checkNewPerson(data, invalid, [...path, index])
        fresh.push({ index, data })
        out.push({ sourcedId, id: '', version: 1, outcome: 'CREATED' })
        continue
      }
      const changes = Object.fromEntries(Object.entries(data).filter(([key, value]) => !same(row[key], value)))
      if (Object.keys(changes).length === 0) {
        out.push({ sourcedId, id: row.id, version: row.version, outcome: 'UNCHANGED' })
        continue
      }
      // Students with the same changes are written by one UPDATE.
      const key = JSON.stringify(Object.entries(changes).sort(([a], [b]) => a < b ? -1 : 1))
      const group = changing.get(key)
      if (group === undefined) changing.set(key, { changes, items: [index] })
      else group.items.push(index)
      out.push({ sourcedId, id: row.id, version: row.version, outcome: 'CHANGED' })
    }
    invalid.done()
    for (const { changes, items } of changing.values()) {
      const written = await tx.student.updateManyAndReturn({ where: { id: { in: items.map((i) => out[i]!.id) } }, data: changes, select: { id: true, version: true } })
      const versions = new Map(written.map((row) => [row.id, row.version]))
      for (const i of items) out[i]!.version = versions.get(out[i]!.id) ?? out[i]!.version + 1
    }
    if (fresh.length > 0) {
      const created = await tx.student.createManyAndReturn({
        data: fresh.map(({ data }) => ({ ...data, schoolId })),
        select: { id: true, sourcedId: true, version: true }
      })
      const ids = new Map(created.map((row) => [row.sourcedId!, row]))
      for (const { index, data } of fresh) {
        const row = ids.get(data.sourcedId as string)!
        out[index] = { sourcedId: data.sourcedId as string, id: row.id, version: row.version, outcome: 'CREATED' }
      }
    }
    return out
  })
}

/** Rows grouped by the set of fields each gives (in the rules' order): one statement per group. */
function byFields<T> (rows: readonly T[], fieldsOf: (row: T) => Record<string, unknown>): Map<string, { fields: string[], rows: T[] }> {
  const groups = new Map<string, { fields: string[], rows: T[] }>()
  for (const row of rows) {
    const fields = Object.keys(fieldsOf(row))
    const key = fields.join(',')
    const group = groups.get(key)
    if (group === undefined) groups.set(key, { fields, rows: [row] })
    else group.rows.push(row)
  }
  return groups
}

/**
 * upsertStudents on a client that writes through typed statements (typed-writes.ts), as the
 * OneRoster import writes: one read of the batch's students by sourcedId, one INSERT of the new ones
 * per set of fields given, and one UPDATE of the changed ones per set of fields changed, each of
 * arrays unnested by PostgreSQL. The same outcomes, checks and refusals as
 * the model operations.
 */
async function upsertByStatements (tx: Tx, rows: ReadonlyArray<{ data: Record<string, unknown>, path: Path }>, sourcedIds: string[], path: Path): Promise<UpsertedStudent[]> {
  const lookup = studentsBySourcedId(sourcedIds)
  const existing = await tx.$queryRawUnsafe<Array<Record<string, unknown> & Versioned>>(lookup.statement.sql, ...lookup.values)
  const bySourced = new Map(existing.map((row) => [row.sourcedId as string, row]))
  const out: UpsertedStudent[] = []
  const fresh: Array<{ index: number, id: string, data: Record<string, unknown> }> = []
  const changing: Array<{ index: number, id: string, changes: Record<string, unknown> }> = []
  const invalid = new Fields()
  for (const [index, { data }] of rows.entries()) {
    const sourcedId = data.sourcedId as string
    const row = bySourced.get(sourcedId)
    if (row === undefined) {
      checkNewPerson(data, invalid, [...path, index])
      // The id as a model create makes it (Prisma's uuid(7)): the students' key orders by creation.
      const id = uuidv7()
      fresh.push({ index, id, data })
      out.push({ sourcedId, id, version: 1, outcome: 'CREATED' })
      continue
    }
    const changes = Object.fromEntries(Object.entries(data).filter(([key, value]) => row[key] !== comparable(key as StudentWritten, value)))
    out.push({ sourcedId, id: row.id, version: row.version, outcome: Object.keys(changes).length === 0 ? 'UNCHANGED' : 'CHANGED' })
    if (Object.keys(changes).length > 0) changing.push({ index, id: row.id, changes })
  }
  invalid.done()
  for (const group of byFields(changing, (row) => row.changes).values()) {
    // One statement for the whole group: the teacher feed's trigger costs PostgreSQL in proportion
    // to its rows (migration teacher_feed_join_plans), and fewer statements cost less (BENCHMARKS.md).
    const update = updateStudents(group.fields, group.rows)
    const written = await tx.$queryRawUnsafe<Versioned[]>(update.statement.sql, ...update.values)
    const versions = new Map(written.map((row) => [row.id, row.version]))
    for (const { index } of group.rows) out[index]!.version = versions.get(out[index]!.id) ?? out[index]!.version + 1
  }
  for (const group of byFields(fresh, (row) => row.data).values()) {
    const insert = insertStudents(group.fields, group.rows)
    const created = await tx.$queryRawUnsafe<Versioned[]>(insert.statement.sql, ...insert.values)
    const versions = new Map(created.map((row) => [row.id, row.version]))
    for (const { index, id } of group.rows) out[index]!.version = versions.get(id) ?? 1
  }
  return out
}

/** Creates a student (the CLI's and the tests' form: the school by id, the classroom by name, created on first use). */
export interface StudentInput extends StudentFields {
  schoolId: string
  classroom?: string | undefined
}

export async function createStudent (db: Database, input: StudentInput): Promise<string> {
  const { schoolId, classroom, ...fields } = input
  const target = await schoolTarget(db, schoolId)
  return (await addStudent(target, fields, { classroomNamed: classroom, path: [] })).id
}

export interface TeacherInput extends TeacherFields {
  schoolId: string
}

export async function createTeacher (db: Database, input: TeacherInput): Promise<string> {
  const { schoolId, ...fields } = input
  return (await addTeacher(await schoolTarget(db, schoolId), fields, { path: [] })).id
}

/**
 * Assigns a teacher to a classroom of their school (created on first use of its name, as for a
 * student), in a role (PRIMARY by default, or ASSISTANT); an assignment that exists takes the role.
 * What a teacher login reads follows its teacher's assignments (docs/api/access.md#roles).
 */
export async function assignTeacher (
  db: Database,
  { schoolId, teacherId, classroom, role }: { schoolId: string, teacherId: string, classroom: string, role?: string | undefined }
): Promise<{ classroomId: string, role: TeacherRole }> {
  const school = await requireSchool(db, schoolId)
  const teacher = await requireTeacherOf(db, school, teacherId)
  const assignment = role === undefined ? TeacherRole.PRIMARY : requireEnum('Classroom role', role, TeacherRole)
  const tenant = db.forSchool(school)
  const room = await classroomNamed(tenant, school, classroom)
  await setAssignment(tenant, { schoolId: school, teacherId: teacher, classroomId: room.id }, assignment)
  return { classroomId: room.id, role: assignment }
}

/** The classroom of the school with this name, created on first use of it. */
async function classroomNamed (tenant: Tx, schoolId: string, name: string): Promise<{ id: string, name: string }> {
  const className = requireText('Classroom name', name)
  return await tenant.classroom.upsert({
    where: { schoolId_name: { schoolId, name: className } },
    create: { schoolId, name: className },
    update: {},
    select: { id: true, name: true }
  })
}

/**
 * A classroom of the school, by id or else by name. Another school's is as absent as one that does
 * not exist: the school's client cannot see it.
 */
async function requireClassroomOf (tenant: Tenant, schoolId: string, classroom: string): Promise<{ id: string, name: string }> {
  const text = requireText('Classroom', classroom)
  const select = { id: true, name: true } as const
  const id = parseUuid(text)
  const room = (id !== undefined ? await tenant.classroom.findFirst({ where: { id }, select }) : null) ??
    await tenant.classroom.findFirst({ where: { name: text }, select })
  if (room === null) throw new AdminError(`Classroom "${text}" is not a classroom of school ${schoolId}`, 'NOT_FOUND')
  return room
}

/**
 * Ends a teacher's assignment to a classroom (given by id or name): the teacher's login no longer
 * reads it, on every API node (the write's notification drops the node's kept classrooms and
 * cached answers). An assignment that does not exist is refused, nothing written.
 */
export async function unassignTeacher (
  db: Database,
  { schoolId, teacherId, classroom }: { schoolId: string, teacherId: string, classroom: string }
): Promise<{ classroomId: string, classroomName: string }> {
  const school = await requireSchool(db, schoolId)
  const teacher = await requireTeacherOf(db, school, teacherId)
  const tenant = db.forSchool(school)
  const room = await requireClassroomOf(tenant, school, classroom)
  const { count } = await tenant.teacherClassroom.deleteMany({ where: { teacherId: teacher, classroomId: room.id } })
  if (count === 0) throw new AdminError(`Teacher ${teacher} is not assigned to classroom "${room.name}" (${room.id}): nothing was changed`, 'NOT_FOUND')
  return { classroomId: room.id, classroomName: room.name }
}

async function requireStudentOf (tenant: Tenant, schoolId: string, studentId: string): Promise<{ id: string, classroomId: string | null, classroom: { name: string } | null }> {
  const id = requireId('Student', studentId)
  const student = await tenant.student.findFirst({ where: { id }, select: { id: true, classroomId: true, classroom: { select: { name: true } } } })
  if (student === null) throw new AdminError(`Student ${id} is not a student of school ${schoolId}`, 'NOT_FOUND')
  return student
}

/** Writes a student's classroom if they are still in the one read (another writer may have moved them since). */
async function moveStudent (tenant: Tenant, student: { id: string, classroomId: string | null }, to: string | null): Promise<void> {
  const { count } = await tenant.student.updateMany({ where: { id: student.id, classroomId: student.classroomId }, data: { classroomId: to } })
  if (count === 0) throw new AdminError(`Student ${student.id} changed classroom meanwhile: nothing was changed, run the command again`)
}

/**
 * Puts a student in a classroom of their school (created on first use of its name), in place of the
 * one they were in: a student is in one classroom at most.
 */
export async function assignStudent (
  db: Database,
  { schoolId, studentId, classroom }: { schoolId: string, studentId: string, classroom: string }
): Promise<{ classroomId: string, moved: boolean }> {
  const school = await requireSchool(db, schoolId)
  const tenant = db.forSchool(school)
  const student = await requireStudentOf(tenant, school, studentId)
  const room = await classroomNamed(tenant, school, classroom)
  if (student.classroomId === room.id) return { classroomId: room.id, moved: false }
  await moveStudent(tenant, student, room.id)
  return { classroomId: room.id, moved: true }
}

/**
 * Takes a student out of their classroom; with `classroom` (an id or name), only out of that one.
 * A student in no classroom, or in another, is refused, nothing written. The student stays, in no
 * classroom; their enrollment dates (at the school) stay as they are.
 */
export async function unassignStudent (
  db: Database,
  { schoolId, studentId, classroom }: { schoolId: string, studentId: string, classroom?: string | undefined }
): Promise<{ classroomId: string, classroomName: string }> {
  const school = await requireSchool(db, schoolId)
  const tenant = db.forSchool(school)
  const student = await requireStudentOf(tenant, school, studentId)
  const room = classroom === undefined ? undefined : await requireClassroomOf(tenant, school, classroom)
  if (student.classroomId === null) {
    throw new AdminError(`Student ${student.id} is in no classroom${room === undefined ? '' : ` (not in "${room.name}")`}: nothing was changed`, 'NOT_FOUND')
  }
  if (room !== undefined && room.id !== student.classroomId) {
    throw new AdminError(`Student ${student.id} is not in classroom "${room.name}" (${room.id}): nothing was changed`, 'NOT_FOUND')
  }
  await moveStudent(tenant, student, null)
  return { classroomId: student.classroomId, classroomName: student.classroom?.name ?? '' }
}

/**
 * Moves a teacher's assignment from one classroom to another, in the same role, in one transaction
 * (the CLI's `teacher move`): NOT_FOUND when there is no assignment to move.
 */
export async function moveTeacher (target: SchoolTarget, teacher: RecordRef, from: RecordRef, to: RecordRef): Promise<{ teacherId: string, from: string, to: string, role: TeacherRole }> {
  const fields = new Fields()
  fields.check(['teacher'], () => keyOf('Teacher', teacher, ['teacher']))
  fields.check(['from'], () => keyOf('Classroom', from, ['from']))
  fields.check(['to'], () => keyOf('Classroom', to, ['to']))
  fields.done()
  const { schoolId } = target
  return await inTransaction(target, async (tx) => {
    const found = await requireRecord(tx, schoolId, 'Teacher', teacher, ['teacher'])
    const source = await requireClassroomRef(tx, schoolId, from, ['from'])
    const destination = await requireClassroomRef(tx, schoolId, to, ['to'])
    const role = await requireAssignment(tx, found.id, source.id)
    if (source.id !== destination.id) {
      await tx.teacherClassroom.deleteMany({ where: { teacherId: found.id, classroomId: source.id } })
      await setAssignment(tx, { schoolId, teacherId: found.id, classroomId: destination.id }, role)
    }
    return { teacherId: found.id, from: source.id, to: destination.id, role }
  })
}

/**
 * A record as an operator names it on the command line: a UUID is an id; `number:VALUE` a
 * student's number; other text a classroom's name, or a student's or teacher's sourcedId.
 */
export function cliRef (kind: Kind, text: string): RecordRef {
  const value = text.trim()
  if (parseUuid(value) !== undefined) return { id: value }
  if (kind === 'Student' && value.startsWith('number:')) return { studentNumber: value.slice('number:'.length) }
  return kind === 'Classroom' ? { name: value } : { sourcedId: value }
}
