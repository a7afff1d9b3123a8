// Administration of users: creating them (with their roles), assigning them to a school, changing
// a role, listing, disabling and enabling. Used by the CLI, the demo seed and tests. A teacher user
// is a teacher record of their school (requireTeacherOf, src/records/teachers.ts).
import { normalizeUsername } from '../auth/auth-service.js'
import { hashPassword } from '../auth/passwords.js'
import type { Database } from '../db/client.js'
import { Prisma } from '../generated/prisma/client.js'
import { UserRole } from '../generated/prisma/enums.js'
import { AdminError, requireId } from '../records/errors.js'
import { requireTeacherOf } from '../records/teachers.js'
import { requireSchool } from '../records/writes.js'

const USERNAME = /^[a-z0-9][a-z0-9._@+-]{0,63}$/

/** The roles an operator gives (`--role`): the database's UserRole, in lower case. */
export const USER_ROLES = Object.values(UserRole).map((role) => role.toLowerCase())

function requireRole (value: string): UserRole {
  const role = value.trim().toUpperCase()
  if (Object.hasOwn(UserRole, role)) return role as UserRole
  throw new AdminError(`Role must be one of ${USER_ROLES.join(', ')} (got "${value}")`)
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
