// Two mirrored schools for the isolation suite: the same school name, classrooms, teachers,
// students and assignments in both, so that only ids tell them apart. The oracle: every object
// in a response (anything with an `id`) must belong to the caller's school. Each school also has a
// teacher login (Ms Same: Rooms 1 and 2, which she shares with Mr Same), whose oracle is narrower:
// every object must be in her reach (her classrooms, their students, her colleagues, the school).
// seedContacts gives both schools contacts (agents) with colliding sourcedIds, which no teacher reads.
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { createSchool } from '../../src/admin/schools.js'
import { createUser } from '../../src/admin/users.js'
import { createStudent } from '../../src/records/students.js'
import { createTeacher } from '../../src/records/teachers.js'
import type { Database } from '../../src/db/client.js'
import { createClient } from '../../src/admin/clients.js'
import { createClassroomAssignment } from '../fixtures.js'
import { clientToken } from '../fixtures/oauth.js'
import { gql, login, PASSWORD, testConfig, unique, type GraphQLResponse } from '../helper.js'

export interface MirrorSchool {
  schoolId: string
  /** An administrator's access token. */
  token: string
  /** The access token of the teacher login (Ms Same). */
  teacherToken: string
  /** What the teacher login may see: the school, Rooms 1 and 2, their students, Ms and Mr Same. */
  teacherReach: Set<string>
  /** The access token of a client of the school holding roster-core.readonly only. */
  coreClientToken: string
  studentIds: string[]
  teacherIds: string[]
  classroomIds: string[]
  /** The school's contacts (agents), once seedContacts has made them; none in a teacher's reach. */
  contactIds: string[]
  /** Every id of this school's records, the school's own included. */
  ids: Set<string>
}

export interface Mirror {
  app: FastifyInstance
  a: MirrorSchool
  b: MirrorSchool
}

const STUDENTS: Array<[string, string]> = [
  ['Ada Lovelace', 'Room 1'], ['Alan Turing', 'Room 1'], ['Grace Hopper', 'Room 2'],
  ['Edsger Dijkstra', 'Room 2'], ['Barbara Liskov', 'Room 3'], ['Donald Knuth', 'Room 3']
]
const TEACHERS: Array<[string, string[]]> = [['Ms Same', ['Room 1', 'Room 2']], ['Mr Same', ['Room 3', 'Room 2']], ['Dr Same', []]]

async function seed (db: Database, app: FastifyInstance): Promise<MirrorSchool> {
  const schoolId = await createSchool(db, 'Mirror Academy')
  const username = unique('mirror')
  await createUser(db, { username, password: PASSWORD, schoolId })
  const studentIds: string[] = []
  for (const [fullName, classroom] of STUDENTS) studentIds.push(await createStudent(db, { schoolId, fullName, classroom }))
  const teacherIds: string[] = []
  for (const [fullName, rooms] of TEACHERS) {
    const id = await createTeacher(db, { schoolId, fullName })
    teacherIds.push(id)
    for (const room of rooms) await createClassroomAssignment(db, schoolId, id, room)
  }
  const classrooms = await db.forSchool(schoolId).classroom.findMany({ select: { id: true, name: true } })
  const classroomIds = classrooms.map((c) => c.id)
  const { accessToken } = await login(app, username)
  // The teacher login: Ms Same.
  const teacherUsername = unique('mirror-teacher')
  await createUser(db, { username: teacherUsername, password: PASSWORD, schoolId })
  await db.prisma.user.update({ where: { username: teacherUsername }, data: { role: 'TEACHER', teacherId: teacherIds[0]! } })
  const teacherToken = (await login(app, teacherUsername)).accessToken
  const rooms = new Set(TEACHERS[0]![1])
  const teacherReach = new Set([
    schoolId,
    ...classrooms.filter((c) => rooms.has(c.name)).map((c) => c.id),
    ...STUDENTS.flatMap(([, room], i) => (rooms.has(room) ? [studentIds[i]!] : [])),
    ...TEACHERS.flatMap(([, taught], i) => (taught.some((room) => rooms.has(room)) ? [teacherIds[i]!] : []))
  ])
  // A client with the core scope only.
  const client = await createClient(db, { schoolId, name: 'Mirror core client', scopes: ['roster-core.readonly'] })
  const coreClientToken = await clientToken(app, client)
  return {
    schoolId,
    token: accessToken,
    teacherToken,
    teacherReach,
    coreClientToken,
    studentIds,
    teacherIds,
    classroomIds,
    contactIds: [],
    ids: new Set([schoolId, ...studentIds, ...teacherIds, ...classroomIds])
  }
}

/** An app on `db` with two mirrored schools; closed when the test ends. */
export async function mirror (test: { teardown: (fn: () => unknown) => void }, db: Database): Promise<Mirror> {
  // Generated probes alias and nest freely; the query limits have tests of their own (query-limits).
  const app = await buildApp(testConfig({ queryMaxAliases: 10_000, queryMaxCost: 100_000_000 }), { database: db, logger: false })
  test.teardown(() => app.close())
  const a = await seed(db, app)
  const b = await seed(db, app)
  return { app, a, b }
}

/**
 * Two contacts in each school, with the same sourcedIds in both: a guardian ag-1 of the school's
 * first two students, and a relative ag-2 of its third student whose student_ids also hold the other
 * school's first student (the column is a list of ids, which the database does not check against
 * students: the walls must not follow it across schools).
 */
export async function seedContacts (db: Database, m: Mirror): Promise<void> {
  for (const [school, other] of [[m.a, m.b], [m.b, m.a]] as const) {
    const tenant = db.forSchool(school.schoolId)
    const contacts = [
      { sourcedId: 'ag-1', role: 'guardian', givenName: 'Gia', familyName: 'Same', email: 'same@example.org', studentIds: school.studentIds.slice(0, 2) },
      { sourcedId: 'ag-2', role: 'relative', givenName: 'Rex', familyName: 'Same', studentIds: [school.studentIds[2]!, other.studentIds[0]!] }
    ]
    for (const data of contacts) {
      const { id } = await tenant.agent.create({ data: { schoolId: school.schoolId, ...data }, select: { id: true } })
      school.contactIds.push(id)
      school.ids.add(id)
    }
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Every id (any UUID-shaped string, whatever its key or alias) found in a value, at any depth. */
export function idsIn (value: unknown, found: string[] = []): string[] {
  if (typeof value === 'string') {
    if (UUID.test(value)) found.push(value)
  } else if (Array.isArray(value)) {
    for (const item of value) idsIn(item, found)
  } else if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) idsIn(inner, found)
  }
  return found
}

/** Ids in a response that do not belong to `school`: a leak when not empty. */
export function foreignIds (res: GraphQLResponse, school: MirrorSchool): string[] {
  return idsIn(res.body.data).filter((id) => !school.ids.has(id))
}

/** Ids in a teacher's response that are outside the teacher's reach: a leak when not empty. */
export function outOfReachIds (res: GraphQLResponse, school: MirrorSchool): string[] {
  return idsIn(res.body.data).filter((id) => !school.teacherReach.has(id))
}

export { gql }
