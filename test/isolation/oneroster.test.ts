// The OneRoster REST routes (src/oneroster/) behind the same two walls, each alone enough: two
// mirrored schools whose students and teachers have the same sourcedIds (one student of each
// without one, answered by its id), and whose academic sessions and courses (imported) and classes
// (their classrooms given a course and a term, one without a sourcedId) and enrollments (the
// students' classrooms and the teachers' assignments: one student's without a sourcedId, answered
// by the student's id) have the same sourcedIds too, and whose students and teachers all have demographics,
// two agents (a guardian without a sourcedId, answered by its id, and a parent ag-1, both marked
// and each linked to the school's students: a student's `agents`, an agent's),
// probed by sourcedId, by filter, by nested path and by offset past the end, by an administrator, a
// teacher, a roster-core.readonly and a roster-demographics.readonly client of each school;
// with both walls, with wall 1 alone (a role that bypasses row-level security), with wall 2 alone
// (the school and reach conditions taken out of the statements) and, as the control that shows the
// probes can fail, with neither.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import type { Database } from '../../src/db/client.js'
import { createClient } from '../../src/admin/clients.js'
import { calendarBundle, importCalendar } from '../fixtures/calendar.js'
import { clientToken } from '../fixtures/oauth.js'
import { createTestDatabase, type TestDatabaseOptions } from '../helper.js'
import { idsIn, mirror, type MirrorSchool } from './mirror.js'

const BASE = '/ims/oneroster/rostering/v1p2'
/** Every record's preferred name is `mark:<its id>`, so that an answer names the records it holds whatever fields it shows. */
const MARK = /mark:([0-9a-f-]{36})/g

/**
 * The same calendar in both schools, each record's title marked with its school (`mark:<school id>`):
 * a school year, two terms, a grading period, two courses.
 */
const SESSIONS = (mark: string): string[][] => [
  ['y-1', '', '', mark, 'schoolYear', '2026-08-20', '2027-06-18', '', '2027'],
  ['t-1', '', '', mark, 'term', '2026-08-20', '2027-01-15', 'y-1', '2027'],
  ['t-2', '', '', mark, 'term', '2027-01-19', '2027-06-18', 'y-1', '2027'],
  ['gp-1', '', '', mark, 'gradingPeriod', '2026-08-20', '2026-10-23', 't-1', '2027']
]
const COURSES = (mark: string): string[][] => [
  ['c-1', '', '', 'y-1', mark, 'C-1', '09', 'org-1', 'Mathematics', ''],
  ['c-2', '', '', '', mark, 'C-2', '', 'org-1', '', '']
]
const SESSION_COUNT = 4
const COURSE_COUNT = 2

/** Gives both schools' records the same sourcedIds (but one student each) and marks every record. */
async function collide (db: Database, school: MirrorSchool): Promise<void> {
  const mark = `mark:${school.schoolId}`
  await importCalendar(db, school.schoolId, calendarBundle(SESSIONS(mark), COURSES(mark)))
  const tenant = db.forSchool(school.schoolId)
  for (const [i, id] of school.studentIds.entries()) {
    // The demographics marked too (their city of birth): a demographics record names no other field of the student's.
    await tenant.student.updateMany({ where: { id }, data: { preferredName: `mark:${id}`, cityOfBirth: `mark:${id}`, sex: 'other', sourcedId: i === 0 ? null : `stu-${i}` } })
  }
  for (const [i, id] of school.teacherIds.entries()) {
    await tenant.teacher.updateMany({ where: { id }, data: { preferredName: `mark:${id}`, cityOfBirth: `mark:${id}`, sex: 'other', sourcedId: `tea-${i}` } })
  }
  // Every classroom a class (course c-1, term t-1), named with its mark: a class's title is its classroom's name.
  // The school named: with a wall taken out, the client's own condition may be gone.
  const course = await tenant.course.findFirstOrThrow({ where: { schoolId: school.schoolId, sourcedId: 'c-1' }, select: { id: true } })
  const term = await tenant.academicSession.findFirstOrThrow({ where: { schoolId: school.schoolId, sourcedId: 't-1' }, select: { id: true } })
  for (const [i, id] of school.classroomIds.entries()) {
    await tenant.classroom.updateMany({ where: { schoolId: school.schoolId, id }, data: { name: `mark:${id}`, sourcedId: i === 0 ? null : `k-${i}`, courseId: course.id, termIds: [term.id], classType: 'scheduled' } })
  }
  // Enrollments: the same sourcedIds in both schools (but the first student's: its id).
  for (const [i, id] of school.studentIds.entries()) {
    await tenant.student.updateMany({ where: { schoolId: school.schoolId, id }, data: { enrollmentSourcedId: i === 0 ? null : `en-s-${i}` } })
  }
  const links = await tenant.teacherClassroom.findMany({ where: { schoolId: school.schoolId }, select: { teacherId: true, classroomId: true } })
  for (const link of links) {
    const key = `en-t-${school.teacherIds.indexOf(link.teacherId)}-${school.classroomIds.indexOf(link.classroomId)}`
    await tenant.teacherClassroom.updateMany({ where: { schoolId: school.schoolId, teacherId: link.teacherId, classroomId: link.classroomId }, data: { sourcedId: key } })
  }
  // Two agents: a guardian without a sourcedId (its key, in a student's agents, is its id), a parent ag-1.
  const agents: string[] = []
  for (const [i, role] of (['guardian', 'parent'] as const).entries()) {
    const agent = await tenant.agent.create({
      data: { schoolId: school.schoolId, sourcedId: i === 0 ? null : `ag-${i}`, role, givenName: 'Agent', familyName: `${i}`, studentIds: school.studentIds },
      select: { id: true }
    })
    await tenant.agent.updateMany({ where: { schoolId: school.schoolId, id: agent.id }, data: { preferredName: `mark:${agent.id}` } })
    agents.push(agent.id)
    school.ids.add(agent.id)
  }
  agentIds.set(school.schoolId, agents)
  enrollmentKeys.set(school.schoolId, [...school.studentIds.slice(1).map((_, i) => `en-s-${i + 1}`), ...links.map((l) => `en-t-${school.teacherIds.indexOf(l.teacherId)}-${school.classroomIds.indexOf(l.classroomId)}`)])
  const placed = await tenant.student.count({ where: { schoolId: school.schoolId, classroomId: { not: null } } })
  enrollmentCounts.set(school.schoolId, placed + links.length)
}

/** Each school's agents' ids (the first has no sourcedId; the second is ag-1). */
const agentIds = new Map<string, string[]>()
/** Each school's enrollments: their colliding sourcedIds, and how many there are. */
const enrollmentKeys = new Map<string, string[]>()
const enrollmentCounts = new Map<string, number>()

/** The records an answer holds: the marked ones, and any id it names whole (a sourcedId that is an id, an org's). */
function recordsIn (body: unknown): string[] {
  const text = JSON.stringify(body)
  return [...[...text.matchAll(MARK)].map((m) => m[1]!), ...idsIn(body)]
}

interface Caller { token: string, allowed: ReadonlySet<string>, name: string }

/** The probes of `caller` of school `own`, naming the other school's keys: those whose answers hold a record the caller may not read (or count one). */
async function leaks (app: FastifyInstance, caller: Caller, own: MirrorSchool, other: MirrorSchool): Promise<string[]> {
  const sourcedIds = [...other.studentIds.map((_, i) => `stu-${i}`), ...other.teacherIds.map((_, i) => `tea-${i}`), other.studentIds[0]!]
  const filter = (text: string): string => 'filter=' + encodeURIComponent(text)
  const classKeys = [other.classroomIds[0]!, ...other.classroomIds.slice(1).map((_, i) => `k-${i + 1}`)]
  const demographicsCount = own.studentIds.length + own.teacherIds.length
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
    // The agents: by the colliding sourcedId, by the other school's agent's id, by role, and a student's and an agent's references.
    '/users/ag-1', `/users/${agentIds.get(other.schoolId)![0]!}`, `/users?${filter("roles.role='guardian' OR roles.role='parent'")}&sort=familyName`,
    `/users?${filter(`sourcedId='ag-1' OR sourcedId='${agentIds.get(other.schoolId)![0]!}'`)}`, '/users?fields=sourcedId,agents&limit=1000', '/students/stu-1?fields=agents',
    // By offset past the end of the caller's own records, and pages of one.
    '/users?offset=6&limit=1000', '/users?offset=9&limit=1000', '/users?offset=20', '/students?offset=6', '/teachers?offset=3',
    ...Array.from({ length: 10 }, (_, i) => `/users?limit=1&offset=${i}&sort=sourcedId`),
    // The calendar and courses: every collection, by the colliding sourcedIds, by nested path, by filter, by offset.
    '/academicSessions?limit=1000', '/terms', '/gradingPeriods', '/courses',
    `/schools/${own.schoolId}/courses`, `/schools/${own.schoolId}/terms`, `/schools/${other.schoolId}/courses`, `/schools/${other.schoolId}/terms`,
    '/academicSessions/y-1', '/academicSessions/t-1', '/terms/t-2', '/gradingPeriods/gp-1', '/courses/c-1', '/courses/c-2',
    '/terms/t-1/gradingPeriods', '/terms/t-2/gradingPeriods?offset=1',
    `/academicSessions?${filter("sourcedId='t-1' OR title~'mark'")}`, `/academicSessions?${filter("parent.sourcedId='t-1'")}`,
    `/academicSessions?${filter(`title='mark:${other.schoolId}'`)}`, `/courses?${filter(`title~'${other.schoolId}' OR grades='09'`)}`,
    `/courses?${filter("schoolYear.sourcedId='y-1'")}`, `/courses?${filter("dateLastModified>'2000-01-01T00:00:00Z'")}&sort=title&orderBy=desc`,
    `/academicSessions?offset=${SESSION_COUNT}&limit=1000`, `/academicSessions?offset=${SESSION_COUNT + 2}`, `/courses?offset=${COURSE_COUNT}`, '/terms?offset=2',
    ...Array.from({ length: 2 * SESSION_COUNT }, (_, i) => `/academicSessions?limit=1&offset=${i}&sort=sourcedId`),
    ...Array.from({ length: 2 * COURSE_COUNT }, (_, i) => `/courses?limit=1&offset=${i}&sort=title`),
    // The classes: every collection, by the colliding sourcedIds (and the other school's ids), by nested path, by filter, by offset.
    '/classes?limit=1000', `/schools/${own.schoolId}/classes`, `/schools/${other.schoolId}/classes`, '/terms/t-1/classes', '/courses/c-1/classes',
    ...classKeys.flatMap((key) => [`/classes/${key}`, `/classes/${key}/students`, `/classes/${key}/teachers`,
      `/schools/${own.schoolId}/classes/${key}/students`, `/schools/${other.schoolId}/classes/${key}/teachers`]),
    ...sourcedIds.flatMap((id) => [`/students/${id}/classes`, `/teachers/${id}/classes`, `/users/${id}/classes`]),
    `/classes?${filter("course.sourcedId='c-1' OR title~'mark'")}`, `/classes?${filter("terms.sourcedId='t-1'")}`,
    `/classes?${filter(`school.sourcedId='${other.schoolId}'`)}`, `/classes?${filter(`sourcedId='${other.classroomIds[0]!}'`)}`,
    `/classes?${filter("dateLastModified>'2000-01-01T00:00:00Z'")}&sort=title&orderBy=desc`,
    `/classes?offset=${own.classroomIds.length}&limit=1000`, `/classes?offset=${own.classroomIds.length + 2}`, `/classes/${classKeys[1]!}/students?offset=50`,
    ...Array.from({ length: 2 * own.classroomIds.length }, (_, i) => `/classes?limit=1&offset=${i}&sort=sourcedId`),
    // The enrollments: every collection, by the colliding sourcedIds (and the other school's student's id), by nested path, by filter, by offset.
    '/enrollments?limit=1000', `/schools/${own.schoolId}/enrollments`, `/schools/${other.schoolId}/enrollments`,
    ...[...enrollmentKeys.get(other.schoolId)!, other.studentIds[0]!].map((key) => `/enrollments/${key}`),
    ...classKeys.flatMap((key) => [`/schools/${own.schoolId}/classes/${key}/enrollments`, `/schools/${other.schoolId}/classes/${key}/enrollments?limit=1000`]),
    `/enrollments?${filter(`user.sourcedId='${other.studentIds[0]!}' OR class.sourcedId='${other.classroomIds[0]!}'`)}`,
    `/enrollments?${filter(`school.sourcedId='${other.schoolId}'`)}`, `/enrollments?${filter("sourcedId='en-s-1' OR role='teacher'")}`,
    // The live enrollments of a delta (the ended ones, answered tobedeleted under their former keys,
    // are probed by isolation/oneroster-delta.test.ts, whose tombstones carry their school's mark).
    `/enrollments?${filter("dateLastModified>'2000-01-01T00:00:00Z' AND status='active'")}&sort=user.sourcedId&orderBy=desc`,
    `/enrollments?offset=${enrollmentCounts.get(own.schoolId)!}&limit=1000`, `/enrollments?offset=${enrollmentCounts.get(own.schoolId)! + 3}`,
    ...Array.from({ length: 2 * enrollmentCounts.get(own.schoolId)! }, (_, i) => `/enrollments?limit=1&offset=${i}&sort=sourcedId`),
    // The demographics: the collection, by the colliding sourcedIds (and the other school's ids), by filter, by offset.
    '/demographics?limit=1000', ...sourcedIds.map((id) => `/demographics/${id}`),
    `/demographics?${filter(`sourcedId='${other.studentIds[0]!}' OR cityOfBirth~'${other.studentIds[1]!}' OR cityOfBirth~'${other.teacherIds[0]!}'`)}`,
    `/demographics?${filter("sex='other'")}&sort=cityOfBirth&orderBy=desc`, `/demographics?${filter("birthDate!='2000-01-01'")}&sort=sourcedId&orderBy=desc`,
    `/demographics?${filter("dateLastModified>'2000-01-01T00:00:00Z'")}`, `/demographics?offset=${demographicsCount}&limit=1000`,
    ...Array.from({ length: 2 * demographicsCount }, (_, i) => `/demographics?limit=1&offset=${i}&sort=sourcedId`)
  ]
  /** The most records of each collection the caller's school has: X-Total-Count above it counts another school's. */
  const most: Array<[RegExp, number]> = [[/^\/academicSessions\?/, SESSION_COUNT], [/^\/courses\?/, COURSE_COUNT], [/^\/terms\?/, 2], [/^\/classes\?/, own.classroomIds.length],
    [/^\/enrollments\?/, enrollmentCounts.get(own.schoolId)!], [/^\/demographics\?/, demographicsCount]]
  const leaked = new Set<string>()
  for (const probe of probes) {
    const res = await app.inject({ method: 'GET', url: BASE + probe, headers: { authorization: `Bearer ${caller.token}` } })
    if (res.statusCode >= 500) throw new Error(`${caller.name} ${probe}: ${res.statusCode} ${res.body}`)
    if (recordsIn(res.json()).some((id) => !caller.allowed.has(id))) leaked.add(probe)
    // X-Total-Count counts what the caller reaches only.
    const total = Number(res.headers['x-total-count'] ?? 0)
    if (probe.startsWith('/users?offset') && total > caller.allowed.size) leaked.add(probe)
    if (most.some(([path, n]) => path.test(probe) && total > n)) leaked.add(probe)
  }
  return [...leaked]
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
    const found: string[] = []
    const demographicsToken = async (school: MirrorSchool): Promise<string> =>
      await clientToken(m.app, await createClient(db, { schoolId: school.schoolId, name: 'Demographics client', scopes: ['roster-demographics.readonly'] }))
    const demographics = new Map([[m.a, await demographicsToken(m.a)], [m.b, await demographicsToken(m.b)]])
    for (const [own, other] of [[m.a, m.b], [m.b, m.a]] as const) {
      const callers: Caller[] = [
        { name: 'administrator', token: own.token, allowed: own.ids },
        { name: 'teacher', token: own.teacherToken, allowed: own.teacherReach },
        { name: 'roster-core.readonly client', token: own.coreClientToken, allowed: own.ids },
        { name: 'roster-demographics.readonly client', token: demographics.get(own)!, allowed: own.ids }
      ]
      for (const caller of callers) {
        const leaked = await leaks(m.app, caller, own, other)
        if (!config.leaks) t.same(leaked, [], `${caller.name}: no answer holds a record outside its reach`)
        found.push(...leaked)
      }
    }
    if (config.leaks) {
      t.ok(found.length > 0, `without either wall, the probes find the other school's records (${found.length} answers)`)
      t.ok(found.some((probe) => probe.includes('ag-1') || probe.includes('roles.role')), 'and the probes of the agents find them too')
      for (const path of ['/academicSessions', '/terms', '/gradingPeriods', '/courses', '/classes', '/enrollments', '/demographics']) {
        t.ok(found.some((probe) => probe.startsWith(path)), `and the probes of ${path} find them too`)
      }
      t.ok(found.some((probe) => probe.startsWith('/demographics/tea-')), "and those of a teacher's demographics by sourcedId")
    }
    if (!config.leaks) {
      // Positive controls: each caller reads all of its own, by sourcedId too.
      const users = await m.app.inject({ url: `${BASE}/users?limit=1000`, headers: { authorization: `Bearer ${m.a.token}` } })
      t.equal(users.json().users.length, m.a.studentIds.length + m.a.teacherIds.length + 2, 'A\'s administrator reads every user of A, its two agents too')
      const agent = await m.app.inject({ url: `${BASE}/users/ag-1`, headers: { authorization: `Bearer ${m.b.token}` } })
      t.equal(agent.json().user.preferredFirstName, `mark:${agentIds.get(m.b.schoolId)![1]!}`, 'a colliding sourcedId finds the caller\'s own agent')
      t.equal(agent.json().user.agents.length, m.b.studentIds.length, 'with its own students')
      const student = await m.app.inject({ url: `${BASE}/users/stu-1`, headers: { authorization: `Bearer ${m.a.token}` } })
      t.same(student.json().user.agents.map((ref: { sourcedId: string }) => ref.sourcedId).sort(), [agentIds.get(m.a.schoolId)![0]!, 'ag-1'].sort(), 'a student\'s agents are her school\'s')
      const mine = await m.app.inject({ url: `${BASE}/students/stu-1`, headers: { authorization: `Bearer ${m.a.token}` } })
      t.equal(mine.json().user.preferredFirstName, `mark:${m.a.studentIds[1]}`, 'a colliding sourcedId finds the caller\'s own record')
      const reach = await m.app.inject({ url: `${BASE}/users?limit=1000`, headers: { authorization: `Bearer ${m.a.teacherToken}` } })
      t.equal(reach.json().users.length, m.a.teacherReach.size - 1 - m.a.classroomIds.filter((id) => m.a.teacherReach.has(id)).length, 'the teacher reads every user of her reach')
      for (const token of [m.a.token, m.a.teacherToken, m.a.coreClientToken]) {
        const sessions = await m.app.inject({ url: `${BASE}/academicSessions`, headers: { authorization: `Bearer ${token}` } })
        t.same(sessions.json().academicSessions.map((s: { title: string }) => s.title), Array(SESSION_COUNT).fill(`mark:${m.a.schoolId}`), 'every caller of A reads A\'s whole calendar')
      }
      const term = await m.app.inject({ url: `${BASE}/terms/t-1`, headers: { authorization: `Bearer ${m.a.teacherToken}` } })
      t.same([term.json().academicSession.title, term.json().academicSession.children.map((c: { sourcedId: string }) => c.sourcedId)], [`mark:${m.a.schoolId}`, ['gp-1']], 'a colliding sourcedId finds the caller\'s own term, with its own children')
      const periods = await m.app.inject({ url: `${BASE}/terms/t-1/gradingPeriods`, headers: { authorization: `Bearer ${m.b.token}` } })
      t.same(periods.json().academicSessions.map((s: { title: string }) => s.title), [`mark:${m.b.schoolId}`], 'B\'s term\'s grading periods are B\'s')
      const classes = await m.app.inject({ url: `${BASE}/classes?limit=1000`, headers: { authorization: `Bearer ${m.a.token}` } })
      t.same(classes.json().classes.map((c: { title: string }) => c.title).sort(), m.a.classroomIds.map((id) => `mark:${id}`).sort(), 'A\'s administrator reads every class of A')
      const own = await m.app.inject({ url: `${BASE}/classes/k-1`, headers: { authorization: `Bearer ${m.b.token}` } })
      t.equal(own.json().class.title, `mark:${m.b.classroomIds[1]}`, 'a colliding sourcedId finds the caller\'s own class')
      const demographicsOfA = await m.app.inject({ url: `${BASE}/demographics?limit=1000`, headers: { authorization: `Bearer ${demographics.get(m.a)!}` } })
      t.same(demographicsOfA.json().demographics.map((d: { cityOfBirth: string }) => d.cityOfBirth).sort(), [...m.a.studentIds, ...m.a.teacherIds].map((id) => `mark:${id}`).sort(),
        'A\'s demographics client reads every demographics record of A, its students\' and its teachers\'')
      const mineToo = await m.app.inject({ url: `${BASE}/demographics/stu-1`, headers: { authorization: `Bearer ${demographics.get(m.b)!}` } })
      t.equal(mineToo.json().demographics.cityOfBirth, `mark:${m.b.studentIds[1]}`, 'a colliding sourcedId finds the caller\'s own demographics')
      const teachersToo = await m.app.inject({ url: `${BASE}/demographics/tea-0`, headers: { authorization: `Bearer ${demographics.get(m.b)!}` } })
      t.equal(teachersToo.json().demographics.cityOfBirth, `mark:${m.b.teacherIds[0]}`, 'a colliding teacher\'s sourcedId finds the caller\'s own teacher\'s demographics')
      const taught = await m.app.inject({ url: `${BASE}/classes?limit=1000`, headers: { authorization: `Bearer ${m.a.teacherToken}` } })
      t.same(taught.json().classes.map((c: { title: string }) => c.title).sort(), m.a.classroomIds.filter((id) => m.a.teacherReach.has(id)).map((id) => `mark:${id}`).sort(), 'the teacher reads her own classes')
      const enrollments = await m.app.inject({ url: `${BASE}/enrollments?limit=1000`, headers: { authorization: `Bearer ${m.a.token}` } })
      t.equal(enrollments.json().enrollments.length, enrollmentCounts.get(m.a.schoolId), 'A\'s administrator reads every enrollment of A')
      const enrolled = await m.app.inject({ url: `${BASE}/enrollments/en-s-1`, headers: { authorization: `Bearer ${m.b.token}` } })
      t.same(enrolled.json().enrollment.user.sourcedId, 'stu-1', 'a colliding sourcedId finds the caller\'s own enrollment')
      const first = await m.app.inject({ url: `${BASE}/enrollments/${m.b.studentIds[0]!}`, headers: { authorization: `Bearer ${m.b.token}` } })
      t.same(first.json().enrollment.user.sourcedId, m.b.studentIds[0], 'an enrollment without a sourcedId answers by the student\'s id')
      const hers = await m.app.inject({ url: `${BASE}/enrollments?limit=1000`, headers: { authorization: `Bearer ${m.a.teacherToken}` } })
      const classesOfHers = new Set(hers.json().enrollments.map((e: { class: { sourcedId: string } }) => e.class.sourcedId))
      const mineKeys = new Set(m.a.classroomIds.flatMap((id, i) => m.a.teacherReach.has(id) ? [i === 0 ? id : `k-${i}`] : []))
      t.ok(hers.json().enrollments.length > 0 && [...classesOfHers].every((key) => mineKeys.has(key as string)), 'the teacher reads the enrollments of her own classes only')
    }
  })
}
