// OneRoster's delta sync behind the same two walls, each alone enough (src/oneroster/deletions.ts):
// two mirrored schools each delete a student and a teacher with the same sourcedIds (stu-1, tea-2),
// whose tombstones keep their names, each marked with the record's id; an administrator, a teacher
// (whose own feed holds the student, of her classroom) and a roster-core.readonly client of each school probe the deltas of users, students and teachers
// (alone, ANDed with the colliding sourcedIds or the mark, by offset past the end, a page at a
// time) and never see the other school's tombstones, nor count them; with both walls, with wall 1
// alone, with wall 2 alone, and, as the control that shows the probes can fail, with neither.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import type { Database } from '../../src/db/client.js'
import { createTestDatabase, type TestDatabaseOptions } from '../helper.js'
import { idsIn, mirror, type MirrorSchool } from './mirror.js'

const BASE = '/ims/oneroster/rostering/v1p2'
const MARK = /mark:([0-9a-f-]{36})/g
const SINCE = "dateLastModified>'2000-01-01T00:00:00Z'"

/** Gives both schools' records the same sourcedIds, marks the student and teacher to delete with their ids, and deletes them. */
async function deleteColliding (db: Database, school: MirrorSchool): Promise<void> {
  const tenant = db.forSchool(school.schoolId)
  for (const [i, id] of school.studentIds.entries()) await tenant.student.updateMany({ where: { id }, data: { sourcedId: `stu-${i}` } })
  for (const [i, id] of school.teacherIds.entries()) await tenant.teacher.updateMany({ where: { id }, data: { sourcedId: `tea-${i}` } })
  const student = school.studentIds[1]!
  const teacher = school.teacherIds[2]!
  await tenant.student.updateMany({ where: { id: student }, data: { givenName: `mark:${student}` } })
  await tenant.teacher.updateMany({ where: { id: teacher }, data: { givenName: `mark:${teacher}` } })
  await tenant.student.deleteMany({ where: { id: student } })
  await tenant.teacher.deleteMany({ where: { id: teacher } })
}

function recordsIn (body: unknown): string[] {
  const text = JSON.stringify(body)
  return [...[...text.matchAll(MARK)].map((m) => m[1]!), ...idsIn(body)]
}

interface Caller { token: string, allowed: ReadonlySet<string>, name: string, /** The users of its own delta: its live users and its school's two deletions; undefined for a teacher. */ users?: number }

async function leaks (app: FastifyInstance, caller: Caller, own: MirrorSchool, other: MirrorSchool): Promise<string[]> {
  const filter = (text: string): string => 'filter=' + encodeURIComponent(text)
  const probes = [
    `/users?${filter(SINCE)}&limit=1000`, `/students?${filter(SINCE)}`, `/teachers?${filter(SINCE)}`,
    `/schools/${own.schoolId}/students?${filter(SINCE)}`, `/schools/${own.schoolId}/teachers?${filter(SINCE)}`,
    `/users?${filter(`${SINCE} AND sourcedId='stu-1'`)}`, `/users?${filter(`${SINCE} AND sourcedId='tea-2'`)}`,
    `/users?${filter(`${SINCE} AND givenName~'mark'`)}`, `/users?${filter(`${SINCE} AND status='tobedeleted'`)}`,
    `/users?${filter(`status='tobedeleted' AND ${SINCE} AND roles.org.sourcedId='${other.schoolId}'`)}`,
    `/users?${filter(`${SINCE} AND givenName='mark:${other.studentIds[1]!}'`)}`,
    `/users?${filter(SINCE)}&sort=givenName&orderBy=desc`, `/users?${filter(SINCE)}&sort=dateLastModified`,
    `/users?${filter(SINCE)}&offset=7`, `/users?${filter(SINCE)}&offset=9`, `/students?${filter(SINCE)}&offset=5`,
    ...Array.from({ length: 12 }, (_, i) => `/users?${filter(SINCE)}&limit=1&offset=${i}&sort=sourcedId`)
  ]
  const leaked = new Set<string>()
  for (const probe of probes) {
    const res = await app.inject({ method: 'GET', url: BASE + probe, headers: { authorization: `Bearer ${caller.token}` } })
    // (A school's students and teachers need roster.readonly: the core client's 403 holds no record.)
    if (res.statusCode >= 500) throw new Error(`${caller.name} ${probe}: ${res.statusCode} ${res.body}`)
    if (recordsIn(res.json()).some((id) => !caller.allowed.has(id))) leaked.add(probe)
    // X-Total-Count counts the caller's own deletions only.
    if (caller.users !== undefined && probe.startsWith('/users?') && Number(res.headers['x-total-count']) > caller.users) leaked.add(probe)
  }
  return [...leaked]
}

const CONFIGURATIONS: Array<{ name: string, options: TestDatabaseOptions, leaks: boolean }> = [
  { name: 'both walls', options: {}, leaks: false },
  { name: 'wall 1 alone (role bypasses row-level security)', options: { role: 'owner' }, leaks: false },
  { name: 'wall 2 alone (the school conditions taken out)', options: { tenantFilter: false }, leaks: false },
  { name: 'no wall (control: the probes detect a leak)', options: { role: 'owner', tenantFilter: false }, leaks: true }
]

for (const config of CONFIGURATIONS) {
  t.test(`OneRoster delta sync, ${config.name}`, async (t) => {
    const db = await createTestDatabase(config.options)
    const m = await mirror(t, db)
    await deleteColliding(db, m.a)
    await deleteColliding(db, m.b)
    const users = m.a.studentIds.length + m.a.teacherIds.length
    const found: string[] = []
    for (const [own, other] of [[m.a, m.b], [m.b, m.a]] as const) {
      const callers: Caller[] = [
        { name: 'administrator', token: own.token, allowed: own.ids, users },
        { name: 'teacher', token: own.teacherToken, allowed: own.teacherReach },
        { name: 'roster-core.readonly client', token: own.coreClientToken, allowed: own.ids, users }
      ]
      for (const caller of callers) {
        const leaked = await leaks(m.app, caller, own, other)
        if (!config.leaks) t.same(leaked, [], `${caller.name}: no delta holds or counts another school's deletion`)
        found.push(...leaked)
      }
    }
    if (config.leaks) {
      // A filter on status tobedeleted answers deletions only: its leak is a tombstone's.
      t.ok(found.some((probe) => probe.includes(encodeURIComponent("status='tobedeleted'"))), `without either wall, the probes find the other school's deletions (${found.length} answers)`)
    } else {
      // Positive control: each school's administrator reads its own deletions, by the colliding sourcedIds.
      for (const school of [m.a, m.b]) {
        const res = await m.app.inject({
          url: `${BASE}/users?filter=${encodeURIComponent(`${SINCE} AND status='tobedeleted'`)}&sort=sourcedId`,
          headers: { authorization: `Bearer ${school.token}` }
        })
        t.same(res.json().users.map((user: { sourcedId: string, givenName: string }) => [user.sourcedId, user.givenName]),
          [['stu-1', `mark:${school.studentIds[1]!}`], ['tea-2', `mark:${school.teacherIds[2]!}`]], 'the school\'s own deletions, and only they')
        // Its teacher (Ms Same, Rooms 1 and 2) reads her own: the student of Room 1; Dr Same was no colleague.
        const mine = await m.app.inject({
          url: `${BASE}/users?filter=${encodeURIComponent(`${SINCE} AND status='tobedeleted'`)}`,
          headers: { authorization: `Bearer ${school.teacherToken}` }
        })
        t.same(mine.json().users.map((user: { sourcedId: string, givenName: string }) => [user.sourcedId, user.givenName]),
          [['stu-1', `mark:${school.studentIds[1]!}`]], 'the teacher\'s own deletion, and only it')
      }
    }
  })
}
