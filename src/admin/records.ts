// Administration: creating schools, users and records. Used by the CLI and by tests; tenant
// records are written through the client scoped to their school, like every other tenant write.
import { normalizeUsername } from '../auth/auth-service.js'
import { hashPassword } from '../auth/passwords.js'
import type { Database } from '../db/client.js'
import { Prisma } from '../generated/prisma/client.js'

export class AdminError extends Error {
  override name = 'AdminError'
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const USERNAME = /^[a-z0-9][a-z0-9._@+-]{0,63}$/

function requireText (label: string, value: string, max = 200): string {
  const text = value.trim()
  if (text === '') throw new AdminError(`${label} must not be empty`)
  if (text.length > max) throw new AdminError(`${label} must have at most ${max} characters`)
  return text
}

async function requireSchool (db: Database, schoolId: string): Promise<string> {
  if (!UUID.test(schoolId)) throw new AdminError(`School id "${schoolId}" is not a UUID`)
  const school = await db.prisma.school.findUnique({ where: { id: schoolId }, select: { id: true } })
  if (school === null) throw new AdminError(`School ${schoolId} does not exist`)
  return school.id
}

export async function createSchool (db: Database, name: string): Promise<string> {
  const school = await db.prisma.school.create({ data: { name: requireText('School name', name) }, select: { id: true } })
  return school.id
}

export async function createUser (
  db: Database,
  { username, password, schoolId }: { username: string, password: string, schoolId?: string | undefined }
): Promise<string> {
  const name = normalizeUsername(username)
  if (!USERNAME.test(name)) {
    throw new AdminError('Username must be 1 to 64 characters: letters, digits and . _ @ + - (not starting with a symbol)')
  }
  const passwordHash = await hashPassword(password)
  const school = schoolId === undefined ? null : await requireSchool(db, schoolId)
  try {
    const user = await db.prisma.user.create({ data: { username: name, passwordHash, schoolId: school }, select: { id: true } })
    return user.id
  } catch (err) {
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') {
      throw new AdminError(`Username "${name}" is taken`)
    }
    throw err
  }
}

/**
 * Assigns a user to a school. A move from one school to another revokes the user's refresh tokens
 * and ends their access to the former school on every API node (trigger users_access_changed).
 */
export async function assignUser (db: Database, username: string, schoolId: string): Promise<string> {
  const school = await requireSchool(db, schoolId)
  return await updateUser(db, username, { schoolId: school })
}

/** Disables a user: no login or refresh, refresh tokens revoked, access tokens refused at once. */
export async function disableUser (db: Database, username: string): Promise<string> {
  const name = normalizeUsername(username)
  const user = await db.prisma.user.findUnique({ where: { username: name }, select: { disabledAt: true } })
  if (user?.disabledAt != null) return await updateUser(db, username, {})
  return await updateUser(db, username, { disabledAt: new Date() })
}

/** Enables a disabled user again; they log in anew (their former tokens stay revoked). */
export async function enableUser (db: Database, username: string): Promise<string> {
  return await updateUser(db, username, { disabledAt: null })
}

async function updateUser (
  db: Database,
  username: string,
  data: { schoolId?: string, disabledAt?: Date | null }
): Promise<string> {
  const name = normalizeUsername(username)
  const user = await db.prisma.user.findUnique({ where: { username: name }, select: { id: true } })
  if (user === null) throw new AdminError(`User "${name}" does not exist`)
  if (Object.keys(data).length > 0) await db.prisma.user.update({ where: { id: user.id }, data })
  return user.id
}

export async function createStudent (
  db: Database,
  { schoolId, fullName, classroom }: { schoolId: string, fullName: string, classroom?: string | undefined }
): Promise<string> {
  const tenant = db.forSchool(await requireSchool(db, schoolId))
  const name = requireText('Full name', fullName)
  let classroomId: string | null = null
  if (classroom !== undefined) {
    const className = requireText('Classroom name', classroom)
    const room = await tenant.classroom.upsert({
      where: { schoolId_name: { schoolId, name: className } },
      create: { schoolId, name: className },
      update: {},
      select: { id: true }
    })
    classroomId = room.id
  }
  const student = await tenant.student.create({ data: { schoolId, fullName: name, classroomId }, select: { id: true } })
  return student.id
}

export async function createTeacher (
  db: Database,
  { schoolId, fullName }: { schoolId: string, fullName: string }
): Promise<string> {
  const tenant = db.forSchool(await requireSchool(db, schoolId))
  const teacher = await tenant.teacher.create({ data: { schoolId, fullName: requireText('Full name', fullName) }, select: { id: true } })
  return teacher.id
}
