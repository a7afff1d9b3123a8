// Administration: creating schools, users (with their roles) and records. Used by the CLI and by
// tests; tenant records are written through the client scoped to their school, like every other
// tenant write.
import { normalizeUsername } from '../auth/auth-service.js'
import { hashPassword } from '../auth/passwords.js'
import type { Database } from '../db/client.js'
import { Prisma } from '../generated/prisma/client.js'
import { GradeLevel, StudentStatus, TeacherRole, TeacherStatus, UserRole } from '../generated/prisma/enums.js'
import { parseUuid } from '../validators.js'

/** What an AdminError is about: bad input, or a record (or link) that is not there. */
export type AdminErrorCode = 'BAD_USER_INPUT' | 'NOT_FOUND'

export class AdminError extends Error {
  override name = 'AdminError'
  constructor (message: string, readonly code: AdminErrorCode = 'BAD_USER_INPUT') {
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

/** Optional names: a record needs a full name or a given or family name (the database derives the rest). */
interface Names {
  fullName?: string | undefined
  givenName?: string | undefined
  familyName?: string | undefined
  preferredName?: string | undefined
}

function names (input: Names): { fullName?: string, givenName?: string, familyName?: string, preferredName?: string } {
  const out: { fullName?: string, givenName?: string, familyName?: string, preferredName?: string } = {}
  if (input.fullName !== undefined) out.fullName = requireText('Full name', input.fullName)
  if (input.givenName !== undefined) out.givenName = requireText('Given name', input.givenName)
  if (input.familyName !== undefined) out.familyName = requireText('Family name', input.familyName)
  if (input.preferredName !== undefined) out.preferredName = requireText('Preferred name', input.preferredName)
  if (out.fullName === undefined && out.givenName === undefined && out.familyName === undefined) {
    throw new AdminError('A full name, or a given or family name, is required')
  }
  return out
}

function uniqueViolation (err: unknown, what: string): never {
  if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') {
    throw new AdminError(`${what} is taken in this school`)
  }
  throw err
}

export interface StudentInput extends Names {
  schoolId: string
  classroom?: string | undefined
  sourcedId?: string | undefined
  studentNumber?: string | undefined
  email?: string | undefined
  /** YYYY-MM-DD. */
  dateOfBirth?: string | undefined
  /** A GradeLevel name or a OneRoster code (PK, KG, 01..13, Other). */
  gradeLevel?: string | undefined
  status?: string | undefined
  enrollmentStartDate?: string | undefined
  enrollmentEndDate?: string | undefined
}

export async function createStudent (db: Database, input: StudentInput): Promise<string> {
  const schoolId = await requireSchool(db, input.schoolId)
  const tenant = db.forSchool(schoolId)
  const data: Prisma.StudentUncheckedCreateInput = { schoolId, ...names(input) }
  if (input.sourcedId !== undefined) data.sourcedId = requireText('Sourced id', input.sourcedId, 255)
  if (input.studentNumber !== undefined) data.studentNumber = requireText('Student number', input.studentNumber, 64)
  if (input.email !== undefined) data.email = requireEmail(input.email)
  if (input.dateOfBirth !== undefined) data.dateOfBirth = requireDay('Date of birth', input.dateOfBirth)
  if (input.gradeLevel !== undefined) data.gradeLevel = requireGradeLevel(input.gradeLevel)
  if (input.status !== undefined) data.status = requireEnum('Status', input.status, StudentStatus)
  if (input.enrollmentStartDate !== undefined) data.enrollmentStartDate = requireDay('Enrollment start date', input.enrollmentStartDate)
  if (input.enrollmentEndDate !== undefined) data.enrollmentEndDate = requireDay('Enrollment end date', input.enrollmentEndDate)
  if (data.enrollmentStartDate instanceof Date && data.enrollmentEndDate instanceof Date && data.enrollmentEndDate < data.enrollmentStartDate) {
    throw new AdminError('Enrollment end date must not be before the start date')
  }
  if (input.classroom !== undefined) data.classroomId = (await classroomNamed(tenant, schoolId, input.classroom)).id
  try {
    const student = await tenant.student.create({ data, select: { id: true } })
    return student.id
  } catch (err) {
    return uniqueViolation(err, `Student number "${String(input.studentNumber)}" or sourced id "${String(input.sourcedId)}"`)
  }
}

export interface TeacherInput extends Names {
  schoolId: string
  sourcedId?: string | undefined
  email?: string | undefined
  title?: string | undefined
  status?: string | undefined
}

export async function createTeacher (db: Database, input: TeacherInput): Promise<string> {
  const schoolId = await requireSchool(db, input.schoolId)
  const tenant = db.forSchool(schoolId)
  const data: Prisma.TeacherUncheckedCreateInput = { schoolId, ...names(input) }
  if (input.sourcedId !== undefined) data.sourcedId = requireText('Sourced id', input.sourcedId, 255)
  if (input.email !== undefined) data.email = requireEmail(input.email)
  if (input.title !== undefined) data.title = requireText('Title', input.title)
  if (input.status !== undefined) data.status = requireEnum('Status', input.status, TeacherStatus)
  try {
    const teacher = await tenant.teacher.create({ data, select: { id: true } })
    return teacher.id
  } catch (err) {
    return uniqueViolation(err, `Sourced id "${String(input.sourcedId)}"`)
  }
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
  // Insert, or else update the role: not an upsert, whose DO UPDATE SET with a parameter (the
  // role) Citus refuses on a distributed table.
  const key = { schoolId: school, teacherId: teacher, classroomId: room.id }
  const created = await tenant.teacherClassroom.createMany({ data: [{ ...key, role: assignment }], skipDuplicates: true })
  if (created.count === 0) await tenant.teacherClassroom.updateMany({ where: key, data: { role: assignment } })
  return { classroomId: room.id, role: assignment }
}

/** A school's client, as the records' operations take it. */
type Tenant = ReturnType<Database['forSchool']>

/** The classroom of the school with this name, created on first use of it. */
async function classroomNamed (tenant: Tenant, schoolId: string, name: string): Promise<{ id: string, name: string }> {
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
