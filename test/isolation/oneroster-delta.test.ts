// OneRoster's delta sync behind the same two walls, each alone enough (src/oneroster/deletions.ts):
// two mirrored schools each delete a student and a teacher with the same sourcedIds (stu-1, tea-2),
// whose tombstones keep their names, each marked with the record's id; an administrator, a teacher
// (whose own feed holds the student, of her classroom) and a roster-core.readonly client of each school probe the deltas of users, students and teachers
// (alone, ANDed with the colliding sourcedIds or the mark, by offset past the end, a page at a
// time) and never see the other school's tombstones, nor count them; each school's deleted guardian
// (agent-gone, marked with its id) likewise, which no teacher reads; with both walls, with wall 1
// alone, with wall 2 alone, and, as the control that shows the probes can fail, with neither.
// Likewise the deltas of enrollments, classes, sessions and courses (src/oneroster/record-deletions.ts):
// each school ends enrollments, deletes a class, a course and a grading period with the same
// sourcedIds (enr-0, tenr-1, tenr-x, class-x, course-gone, gp-gone), their tombstones marked with
// the school's own ids (a class's title, a class's or user's sourcedId that a reference names).
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

/**
 * Makes Rooms 1 and 2 classes (class-1, and Room 2 by its mark), then ends their enrollments and
 * deletes records with colliding sourcedIds, each tombstone carrying a mark of the school's ids;
 * answers the ids the marks and the ended links name (the school's own, to allow).
 */
async function endColliding (db: Database, school: MirrorSchool): Promise<string[]> {
  const { schoolId } = school
  const tenant = db.forSchool(schoolId)
  const term = await tenant.academicSession.create({ data: { schoolId, sourcedId: 'term-x', title: 'Term', type: 'TERM', startDate: new Date('2026-09-01'), endDate: new Date('2027-01-31'), schoolYear: 2027 } })
  const gone = await tenant.academicSession.create({ data: { schoolId, sourcedId: 'gp-gone', title: 'Period', type: 'GRADING_PERIOD', startDate: new Date('2026-09-01'), endDate: new Date('2026-10-31'), schoolYear: 2027 } })
  await tenant.academicSession.updateMany({ where: { id: gone.id }, data: { title: `mark:${gone.id}` } })
  const course = await tenant.course.create({ data: { schoolId, sourcedId: 'course-x', title: 'Course' } })
  const goneCourse = await tenant.course.create({ data: { schoolId, sourcedId: 'course-gone', title: 'Gone' } })
  await tenant.course.updateMany({ where: { id: goneCourse.id }, data: { title: `mark:${goneCourse.id}` } })
  // The school named in each set-up read: the control runs it with neither wall, where an unnamed
  // school reads both mirrored schools' rooms and links.
  const rooms = await tenant.classroom.findMany({ where: { schoolId, name: { in: ['Room 1', 'Room 2'] } }, select: { id: true, name: true } })
  const roomOf = (name: string): string => rooms.find((room) => room.name === name)!.id
  // The links' sourcedIds first, while no room is a class (a changed sourcedId ends a class's enrollment).
  const first = school.studentIds[0]!
  await tenant.student.updateMany({ where: { id: first }, data: { sourcedId: `mark:${first}`, enrollmentSourcedId: 'enr-0' } })
  await tenant.teacherClassroom.updateMany({ where: { teacherId: school.teacherIds[1]!, classroomId: roomOf('Room 2') }, data: { sourcedId: 'tenr-1' } })
  const asClass = { courseId: course.id, termIds: [term.id] }
  await tenant.classroom.updateMany({ where: { id: roomOf('Room 1') }, data: { sourcedId: 'class-1', ...asClass } })
  await tenant.classroom.updateMany({ where: { id: roomOf('Room 2') }, data: { sourcedId: `mark:${roomOf('Room 2')}`, ...asClass } })
  // Room X: Ms Same's, a class with no student, deleted below.
  const roomX = await tenant.classroom.create({ data: { schoolId, name: 'Room X', sourcedId: 'class-x', ...asClass } })
  await tenant.classroom.updateMany({ where: { id: roomX.id }, data: { name: `mark:${roomX.id}` } })
  await tenant.teacherClassroom.create({ data: { schoolId, teacherId: school.teacherIds[0]!, classroomId: roomX.id, sourcedId: 'tenr-x' } })
  const links = (await tenant.teacherClassroom.findMany({ where: { schoolId }, select: { id: true } })).map((link) => link.id)

  // The ends: Ada's classroom cleared (enr-0), Mr Same unassigned from Room 2 (tenr-1), Room X deleted (class-x, tenr-x), gp-gone and course-gone deleted.
  await tenant.student.updateMany({ where: { id: first }, data: { classroomId: null } })
  await tenant.teacherClassroom.deleteMany({ where: { teacherId: school.teacherIds[1]!, classroomId: roomOf('Room 2') } })
  await tenant.classroom.deleteMany({ where: { id: roomX.id } })
  await tenant.academicSession.deleteMany({ where: { id: gone.id } })
  await tenant.course.deleteMany({ where: { id: goneCourse.id } })
  return [roomX.id, gone.id, goneCourse.id, term.id, course.id, ...links]
}

/** A guardian with a colliding sourcedId (agent-gone), marked with its id, deleted: its tombstone in roster_tombstones (kind AGENT). Answers its id (the school's own, for an administrator and a client; no teacher reads an agent). */
async function deleteAgent (db: Database, school: MirrorSchool): Promise<string> {
  const { schoolId } = school
  const tenant = db.forSchool(schoolId)
  const agent = await tenant.agent.create({ data: { schoolId, sourcedId: 'agent-gone', role: 'guardian', givenName: 'Gia', familyName: 'Guard', studentIds: [school.studentIds[0]!] } })
  await tenant.agent.updateMany({ where: { id: agent.id }, data: { givenName: `mark:${agent.id}` } })
  await tenant.agent.deleteMany({ where: { id: agent.id } })
  return agent.id
}

/** The tombstones of the other kinds each school's callers read: all but the teacher's (Ms Same: not Mr Same's Room 2 link, hers). */
const ENDED = ['enr-0:tobedeleted', 'tenr-1:tobedeleted', 'tenr-x:tobedeleted']

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
    `/users?${filter(`${SINCE} AND roles.role='guardian'`)}`, `/users?${filter(`${SINCE} AND sourcedId='agent-gone'`)}`,
    `/users?${filter(SINCE)}&sort=givenName&orderBy=desc`, `/users?${filter(SINCE)}&sort=dateLastModified`,
    `/users?${filter(SINCE)}&offset=7`, `/users?${filter(SINCE)}&offset=9`, `/students?${filter(SINCE)}&offset=5`,
    ...Array.from({ length: 12 }, (_, i) => `/users?${filter(SINCE)}&limit=1&offset=${i}&sort=sourcedId`),
    // Enrollments, classes, sessions and courses.
    `/enrollments?${filter(SINCE)}`, `/schools/${own.schoolId}/enrollments?${filter(SINCE)}`, `/schools/${own.schoolId}/classes/class-1/enrollments?${filter(SINCE)}`,
    `/enrollments?${filter(`${SINCE} AND status='tobedeleted'`)}`, `/enrollments?${filter(`${SINCE} AND sourcedId='enr-0'`)}`,
    `/enrollments?${filter(`${SINCE} AND sourcedId='tenr-1'`)}`, `/enrollments?${filter(`${SINCE} AND class.sourcedId='class-x'`)}`,
    `/enrollments?${filter(`${SINCE} AND user.sourcedId~'mark'`)}`, `/enrollments?${filter(`${SINCE} AND class.sourcedId~'mark'`)}`,
    `/enrollments?${filter(SINCE)}&sort=sourcedId&orderBy=desc`, `/enrollments?${filter(SINCE)}&offset=6`,
    ...Array.from({ length: 10 }, (_, i) => `/enrollments?${filter(SINCE)}&limit=1&offset=${i}&sort=sourcedId`),
    `/classes?${filter(SINCE)}`, `/schools/${own.schoolId}/classes?${filter(SINCE)}`, `/classes?${filter(`${SINCE} AND title~'mark'`)}`,
    `/classes?${filter(`${SINCE} AND sourcedId='class-x'`)}`, `/terms/term-x/classes?${filter(SINCE)}`, `/courses/course-x/classes?${filter(SINCE)}`,
    `/classes?${filter(`status='tobedeleted' AND ${SINCE} AND school.sourcedId='${other.schoolId}'`)}`,
    `/courses?${filter(SINCE)}`, `/courses?${filter(`${SINCE} AND title~'mark'`)}`, `/schools/${own.schoolId}/courses?${filter(SINCE)}`,
    `/academicSessions?${filter(SINCE)}`, `/gradingPeriods?${filter(`${SINCE} AND title~'mark'`)}`, `/academicSessions?${filter(SINCE)}&sort=title`
  ]
  const leaked = new Set<string>()
  for (const probe of probes) {
    const res = await app.inject({ method: 'GET', url: BASE + probe, headers: { authorization: `Bearer ${caller.token}` } })
    // (A school's students and teachers need roster.readonly: the core client's 403 holds no record.)
    if (res.statusCode >= 500) throw new Error(`${caller.name} ${probe}: ${res.statusCode} ${res.body}`)
    if (res.statusCode === 404) continue
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
    for (const school of [m.a, m.b]) {
      for (const id of await endColliding(db, school)) {
        school.ids.add(id)
        school.teacherReach.add(id)
      }
      // Not the teacher's: she reads no agent, deleted or not.
      school.ids.add(await deleteAgent(db, school))
    }
    // Its live users, and the deleted student, teacher and guardian.
    const users = m.a.studentIds.length + m.a.teacherIds.length + 1
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
      t.ok(found.some((probe) => probe.includes(encodeURIComponent("roles.role='guardian'"))), 'and the other school\'s deleted guardian')
      for (const collection of ['/enrollments?', '/classes?', '/courses?', '/gradingPeriods?']) {
        t.ok(found.some((probe) => probe.startsWith(collection)), `and the other school's tombstones on ${collection.slice(0, -1)}`)
      }
    } else {
      // Positive control: each school's administrator reads its own deletions, by the colliding sourcedIds.
      for (const school of [m.a, m.b]) {
        const res = await m.app.inject({
          url: `${BASE}/users?filter=${encodeURIComponent(`${SINCE} AND status='tobedeleted'`)}&sort=sourcedId`,
          headers: { authorization: `Bearer ${school.token}` }
        })
        t.same(res.json().users.map((user: { sourcedId: string, givenName: string }) => [user.sourcedId, user.givenName]),
          [['agent-gone', `mark:${[...school.ids].find((id) => res.json().users[0]?.givenName === `mark:${id}`) ?? 'none'}`], ['stu-1', `mark:${school.studentIds[1]!}`], ['tea-2', `mark:${school.teacherIds[2]!}`]],
          'the school\'s own deletions (its guardian too), and only they')
        // Its teacher (Ms Same, Rooms 1 and 2) reads her own: the student of Room 1; Dr Same was no colleague.
        const mine = await m.app.inject({
          url: `${BASE}/users?filter=${encodeURIComponent(`${SINCE} AND status='tobedeleted'`)}`,
          headers: { authorization: `Bearer ${school.teacherToken}` }
        })
        // And Ada, whose classroom was cleared, and Mr Same, unassigned from Room 2 (endColliding): they left her reach.
        t.same(mine.json().users.map((user: { sourcedId: string, givenName: string }) => [user.sourcedId, user.givenName]).sort(),
          [[`mark:${school.studentIds[0]!}`, 'Ada'], ['stu-1', `mark:${school.studentIds[1]!}`], ['tea-1', 'Mr']], 'the teacher\'s own deletions, and only they')
        // The other kinds' tombstones, each naming the school's own records.
        const ended = await m.app.inject({ url: `${BASE}/enrollments?filter=${encodeURIComponent(`${SINCE} AND status='tobedeleted'`)}&sort=sourcedId`, headers: { authorization: `Bearer ${school.token}` } })
        t.same(ended.json().enrollments.map((e: { sourcedId: string, status: string }) => `${e.sourcedId}:${e.status}`), ENDED, 'the school\'s ended enrollments')
        t.same(ended.json().enrollments.map((e: { user: { sourcedId: string } }) => e.user.sourcedId)[0], `mark:${school.studentIds[0]!}`, 'named as the school\'s')
        const classes = await m.app.inject({ url: `${BASE}/classes?filter=${encodeURIComponent(`${SINCE} AND status='tobedeleted'`)}`, headers: { authorization: `Bearer ${school.teacherToken}` } })
        t.same(classes.json().classes.map((c: { sourcedId: string, title: string }) => [c.sourcedId, c.title]), [['class-x', `mark:${[...school.ids].find((id) => classes.json().classes[0]?.title === `mark:${id}`) ?? 'none'}`]], 'her deleted class, the school\'s')
        const courses = await m.app.inject({ url: `${BASE}/courses?filter=${encodeURIComponent(SINCE)}`, headers: { authorization: `Bearer ${school.token}` } })
        t.ok(courses.json().courses.some((c: { sourcedId: string, title: string, status: string }) => c.sourcedId === 'course-gone' && c.status === 'tobedeleted' && recordsIn(c).every((id) => school.ids.has(id))), 'its deleted course, the school\'s')
      }
    }
  })
}
