// The OneRoster REST routes (src/oneroster/) behind the same two walls, each alone enough: two
// mirrored schools whose students and teachers have the same sourcedIds (one student of each
// without one, answered by its id), probed by sourcedId, by filter, by nested path and by offset
// past the end, by an administrator, a teacher and a roster-core.readonly client of each school;
// with both walls, with wall 1 alone (a role that bypasses row-level security), with wall 2 alone
// (the school and reach conditions taken out of the statements) and, as the control that shows the
// probes can fail, with neither.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import type { Database } from '../../src/db/client.js'
import { createTestDatabase, type TestDatabaseOptions } from '../helper.js'
import { idsIn, mirror, type MirrorSchool } from './mirror.js'

const BASE = '/ims/oneroster/rostering/v1p2'
/** Every record's preferred name is `mark:<its id>`, so that an answer names the records it holds whatever fields it shows. */
const MARK = /mark:([0-9a-f-]{36})/g

/** Gives both schools' records the same sourcedIds (but one student each) and marks every record. */
async function collide (db: Database, school: MirrorSchool): Promise<void> {
  const tenant = db.forSchool(school.schoolId)
  for (const [i, id] of school.studentIds.entries()) {
    await tenant.student.updateMany({ where: { id }, data: { preferredName: `mark:${id}`, sourcedId: i === 0 ? null : `stu-${i}` } })
  }
  for (const [i, id] of school.teacherIds.entries()) {
    await tenant.teacher.updateMany({ where: { id }, data: { preferredName: `mark:${id}`, sourcedId: `tea-${i}` } })
  }
}

/** The records an answer holds: the marked ones, and any id it names whole (a sourcedId that is an id, an org's). */
function recordsIn (body: unknown): string[] {
  const text = JSON.stringify(body)
  return [...[...text.matchAll(MARK)].map((m) => m[1]!), ...idsIn(body)]
}

interface Caller { token: string, allowed: ReadonlySet<string>, name: string }

/** The probes of `caller` of school `own`, naming the other school's keys: how many answers hold a record the caller may not read. */
async function leaks (app: FastifyInstance, caller: Caller, own: MirrorSchool, other: MirrorSchool): Promise<number> {
  const sourcedIds = [...other.studentIds.map((_, i) => `stu-${i}`), ...other.teacherIds.map((_, i) => `tea-${i}`), other.studentIds[0]!]
  const filter = (text: string): string => 'filter=' + encodeURIComponent(text)
  const probes = [
    '/users?limit=1000', '/students?limit=1000', '/teachers?limit=1000', '/orgs', '/schools',
    `/schools/${own.schoolId}/students`, `/schools/${own.schoolId}/teachers`,
    // By nested path and by the other school's sourcedId.
    `/schools/${other.schoolId}/students`, `/schools/${other.schoolId}/teachers`, `/orgs/${other.schoolId}`, `/schools/${other.schoolId}`,
    `/orgs?${filter(`sourcedId='${other.schoolId}'`)}`,
    ...sourcedIds.flatMap((id) => [`/users/${id}`, `/students/${id}`, `/teachers/${id}`]),
    // By filter: the other school's keys, its ids, its school as the users' org, and filters that hold for every record.
    ...sourcedIds.map((id) => `/users?${filter(`sourcedId='${id}'`)}`),
    ...other.studentIds.map((id) => `/users?${filter(`sourcedId='${id}' OR givenName~'${id}'`)}`),
    `/users?${filter(`roles.org.sourcedId='${other.schoolId}'`)}`,
    `/users?${filter("sourcedId!='none' OR familyName~''")}&sort=familyName&orderBy=desc`,
    `/users?${filter("dateLastModified>'2000-01-01T00:00:00Z'")}`,
    // By offset past the end of the caller's own records, and pages of one.
    '/users?offset=6&limit=1000', '/users?offset=9&limit=1000', '/users?offset=20', '/students?offset=6', '/teachers?offset=3',
    ...Array.from({ length: 10 }, (_, i) => `/users?limit=1&offset=${i}&sort=sourcedId`)
  ]
  let leaked = 0
  for (const probe of probes) {
    const res = await app.inject({ method: 'GET', url: BASE + probe, headers: { authorization: `Bearer ${caller.token}` } })
    if (res.statusCode >= 500) throw new Error(`${caller.name} ${probe}: ${res.statusCode} ${res.body}`)
    if (recordsIn(res.json()).some((id) => !caller.allowed.has(id))) leaked += 1
    // X-Total-Count counts what the caller reaches only.
    const total = Number(res.headers['x-total-count'] ?? 0)
    if (probe.startsWith('/users?offset') && total > caller.allowed.size) leaked += 1
  }
  return leaked
}

const CONFIGURATIONS: Array<{ name: string, options: TestDatabaseOptions, leaks: boolean }> = [
  { name: 'both walls', options: {}, leaks: false },
  { name: 'wall 1 alone (role bypasses row-level security)', options: { role: 'owner' }, leaks: false },
  { name: 'wall 2 alone (the school and reach conditions taken out)', options: { tenantFilter: false }, leaks: false },
  { name: 'no wall (control: the probes detect a leak)', options: { role: 'owner', tenantFilter: false }, leaks: true }
]

for (const config of CONFIGURATIONS) {
  t.test(`OneRoster routes, ${config.name}`, async (t) => {
    const db = await createTestDatabase(config.options)
    const m = await mirror(t, db)
    await collide(db, m.a)
    await collide(db, m.b)
    let found = 0
    for (const [own, other] of [[m.a, m.b], [m.b, m.a]] as const) {
      const callers: Caller[] = [
        { name: 'administrator', token: own.token, allowed: own.ids },
        { name: 'teacher', token: own.teacherToken, allowed: own.teacherReach },
        { name: 'roster-core.readonly client', token: own.coreClientToken, allowed: own.ids }
      ]
      for (const caller of callers) {
        const n = await leaks(m.app, caller, own, other)
        if (!config.leaks) t.equal(n, 0, `${caller.name}: no answer holds a record outside its reach`)
        found += n
      }
    }
    if (config.leaks) t.ok(found > 0, `without either wall, the probes find the other school's records (${found} answers)`)
    if (!config.leaks) {
      // Positive controls: each caller reads all of its own, by sourcedId too.
      const users = await m.app.inject({ url: `${BASE}/users?limit=1000`, headers: { authorization: `Bearer ${m.a.token}` } })
      t.equal(users.json().users.length, m.a.studentIds.length + m.a.teacherIds.length, 'A\'s administrator reads every user of A')
      const mine = await m.app.inject({ url: `${BASE}/students/stu-1`, headers: { authorization: `Bearer ${m.a.token}` } })
      t.equal(mine.json().user.preferredFirstName, `mark:${m.a.studentIds[1]}`, 'a colliding sourcedId finds the caller\'s own record')
      const reach = await m.app.inject({ url: `${BASE}/users?limit=1000`, headers: { authorization: `Bearer ${m.a.teacherToken}` } })
      t.equal(reach.json().users.length, m.a.teacherReach.size - 1 - m.a.classroomIds.filter((id) => m.a.teacherReach.has(id)).length, 'the teacher reads every user of her reach')
    }
  })
}
