// Delta sync of what is not a user (src/oneroster/record-deletions.ts, migration roster_tombstones):
// a filter that bounds dateLastModified from below answers the enrollments that ended since (a
// student moved, its classroom cleared, a student deleted, a teacher unassigned, a classroom
// deleted), the classes, academic sessions and courses deleted since, with status tobedeleted,
// ordered, paged and counted with the live records; a teacher's own (what left her reach); every
// answer valid against the service's OpenAPI description.
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import type { Database } from '../src/db/client.js'
import { createStudent } from '../src/records/students.js'
import { assignTeacher, createTeacher } from '../src/records/teachers.js'
import { calendarBundle, importCalendar } from './fixtures/calendar.js'
import { build, login, PASSWORD, testDatabase, unique } from './helper.js'
import { schoolCallers } from './oneroster/callers.js'
import { type Answer, BASE, checkedAnswers } from './oneroster/answers.js'

const SESSIONS = [
  ['y-2027', '', '', '2026-2027', 'schoolYear', '2026-08-20', '2027-06-18', '', '2027'],
  ['t-fall', '', '', 'Fall', 'term', '2026-08-20', '2027-01-15', 'y-2027', '2027'],
  ['gp-1', '', '', 'Fall 1', 'gradingPeriod', '2026-08-20', '2026-10-15', 't-fall', '2027']
]
const COURSES = [
  ['c-alg', '', '', 'y-2027', 'Algebra I', 'MATH-101', '09', 'org-1', 'Mathematics', '02052'],
  ['c-bio', '', '', 'y-2027', 'Biology', 'SCI-201', '10', 'org-1', 'Science', '03051'],
  ['c-geo', '', '', 'y-2027', 'Geology', 'SCI-301', '11', 'org-1', 'Science', '03052']
]

const answers = checkedAnswers()
const { get } = answers

async function databaseNow (db: Database): Promise<Date> {
  const [row] = await db.prisma.$queryRaw<Array<{ now: Date }>>`SELECT now() AS now`
  return row!.now
}

/** Gives a classroom a course and the fall term, as the import does: it becomes a class. */
async function makeClass (db: Database, schoolId: string, name: string, sourcedId: string, course: string): Promise<string> {
  const tenant = db.forSchool(schoolId)
  const { id: courseId } = await tenant.course.findFirstOrThrow({ where: { sourcedId: course }, select: { id: true } })
  const { id: termId } = await tenant.academicSession.findFirstOrThrow({ where: { sourcedId: 't-fall' }, select: { id: true } })
  await tenant.classroom.updateMany({ where: { name }, data: { sourcedId, courseId, termIds: [termId] } })
  return (await tenant.classroom.findFirstOrThrow({ where: { name }, select: { id: true } })).id
}

const filter = (text: string): string => 'filter=' + encodeURIComponent(text)
const pairs = (res: Answer, envelope: string): string[] =>
  (res.body[envelope] as Array<{ sourcedId: string, status: string }>).map((record) => `${record.sourcedId}:${record.status}`).sort()
const ref = (path: string, sourcedId: string, type: string): object => ({ href: `http://localhost${BASE}/${path}/${sourcedId}`, sourcedId, type })

interface Fixture { app: FastifyInstance, db: Database, schoolId: string, admin: string, teacher: string, core: string, aideLogin: string, s2: string, s3: string, aide: string, algebra: string, chem: string, bound: Date }

/**
 * k-alg (Ms Algebra, her login; Mr Aide; s-1 with enrollment e-s1, s-2), k-bio (Mr Biology, s-3),
 * k-chem (Mr Chem, no student). After the bound: s-2 moved to k-bio (its enrollment keeps its
 * sourcedId, the student's id), s-1's classroom cleared, s-3 deleted, Mr Aide unassigned, k-chem
 * deleted, course c-geo and grading period gp-1 deleted.
 */
async function fixture (t: Test): Promise<Fixture> {
  const app = await build(t)
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Delta Links School'))
  await importCalendar(db, schoolId, calendarBundle(SESSIONS, COURSES))
  const algebra = await createTeacher(db, { schoolId, fullName: 'Ms Algebra', sourcedId: 'tea-alg' })
  const aide = await createTeacher(db, { schoolId, fullName: 'Mr Aide', sourcedId: 'tea-aide' })
  const biology = await createTeacher(db, { schoolId, fullName: 'Mr Biology', sourcedId: 'tea-bio' })
  const chemist = await createTeacher(db, { schoolId, fullName: 'Mr Chem', sourcedId: 'tea-chem' })
  await assignTeacher(db, { schoolId, teacherId: algebra, classroom: 'Algebra I - P1' })
  await assignTeacher(db, { schoolId, teacherId: aide, classroom: 'Algebra I - P1', role: 'ASSISTANT' })
  await assignTeacher(db, { schoolId, teacherId: biology, classroom: 'Biology - P2' })
  await assignTeacher(db, { schoolId, teacherId: chemist, classroom: 'Chemistry - P3' })
  const s1 = await createStudent(db, { schoolId, fullName: 'Ada One', sourcedId: 's-1', classroom: 'Algebra I - P1' })
  const s2 = await createStudent(db, { schoolId, fullName: 'Ben Two', sourcedId: 's-2', classroom: 'Algebra I - P1' })
  const s3 = await createStudent(db, { schoolId, fullName: 'Cy Three', sourcedId: 's-3', classroom: 'Biology - P2' })
  await makeClass(db, schoolId, 'Algebra I - P1', 'k-alg', 'c-alg')
  const bio = await makeClass(db, schoolId, 'Biology - P2', 'k-bio', 'c-bio')
  const chemRoom = await makeClass(db, schoolId, 'Chemistry - P3', 'k-chem', 'c-bio')
  const tenant = db.forSchool(schoolId)
  await tenant.student.update({ where: { schoolId_id: { schoolId, id: s1 } }, data: { enrollmentSourcedId: 'e-s1' } })
  const link = async (teacherId: string): Promise<string> => (await tenant.teacherClassroom.findFirstOrThrow({ where: { teacherId }, select: { id: true } })).id
  const aideLink = await link(aide)
  const chemLink = await link(chemist)
  const callers = await schoolCallers(app, db, schoolId, algebra, 'links')
  const aideName = unique('links-aide')
  await createUser(db, { username: aideName, password: PASSWORD, schoolId, role: 'teacher', teacherId: aide })
  const aideLogin = (await login(app, aideName)).accessToken

  const bound = await databaseNow(db)
  await tenant.student.updateMany({ where: { id: s2 }, data: { classroomId: bio } })
  await tenant.student.updateMany({ where: { id: s1 }, data: { classroomId: null } })
  await tenant.student.deleteMany({ where: { id: s3 } })
  await tenant.teacherClassroom.deleteMany({ where: { teacherId: aide } })
  await tenant.classroom.deleteMany({ where: { id: chemRoom } })
  await tenant.course.deleteMany({ where: { sourcedId: 'c-geo' } })
  await tenant.academicSession.deleteMany({ where: { sourcedId: 'gp-1' } })
  return { app, db, schoolId, admin: callers.admin, teacher: callers.teacher, core: callers.core, aideLogin, s2, s3, aide: aideLink, algebra: await link(algebra), chem: chemLink, bound }
}

t.test('a delta answers the enrollments that ended, and the classes, sessions and courses deleted, with status tobedeleted', async (t) => {
  const f = await fixture(t)
  const since = filter(`dateLastModified>'${f.bound.toISOString()}'`)
  const org = { href: `http://localhost${BASE}/orgs/${f.schoolId}`, sourcedId: f.schoolId, type: 'org' }

  await t.test('enrollments: an administrator and a client', async (t) => {
    for (const token of [f.admin, f.core]) {
      const res = await get(f.app, `/enrollments?${since}`, token)
      t.equal(res.statusCode, 200)
      // s-2 moved: its enrollment (the student's id) is live, in k-bio; the others ended.
      t.same(pairs(res, 'enrollments'), [`${f.aide}:tobedeleted`, `${f.chem}:tobedeleted`, `${f.s2}:active`, 'e-s1:tobedeleted', `${f.s3}:tobedeleted`].sort())
      t.equal(res.headers['x-total-count'], '5', 'X-Total-Count counts the ended enrollments')
    }
    const res = await get(f.app, `/enrollments?${since}`, f.admin)
    const aide = (res.body.enrollments as Array<{ sourcedId: string, dateLastModified: string }>).find((record) => record.sourcedId === f.aide)
    t.same(aide, {
      sourcedId: f.aide,
      status: 'tobedeleted',
      dateLastModified: aide!.dateLastModified,
      user: ref('users', 'tea-aide', 'user'),
      class: ref('classes', 'k-alg', 'class'),
      school: org,
      role: 'teacher'
    }, 'what EnrollmentDType requires, as it was')
    t.ok(new Date(aide!.dateLastModified) > f.bound, 'dateLastModified: when it ended')
    const s3 = (res.body.enrollments as Array<{ sourcedId: string }>).find((record) => record.sourcedId === f.s3)
    t.match(s3, { user: ref('users', 's-3', 'user'), class: ref('classes', 'k-bio', 'class'), role: 'student' })

    const only = await get(f.app, `/enrollments?${filter(`dateLastModified>'${f.bound.toISOString()}' AND status='tobedeleted'`)}`, f.admin)
    t.same(pairs(only, 'enrollments'), [`${f.aide}:tobedeleted`, `${f.chem}:tobedeleted`, 'e-s1:tobedeleted', `${f.s3}:tobedeleted`].sort(), "status='tobedeleted' asks for the ended ones alone")
    const anded = await get(f.app, `/enrollments?${filter(`dateLastModified>='${f.bound.toISOString()}' AND role='student'`)}`, f.admin)
    t.same(pairs(anded, 'enrollments'), [`${f.s2}:active`, 'e-s1:tobedeleted', `${f.s3}:tobedeleted`].sort(), 'ANDed with another condition')
    const none = await get(f.app, `/enrollments?${filter('dateLastModified<\'2100-01-01T00:00:00Z\'')}`, f.admin)
    t.notOk(pairs(none, 'enrollments').some((pair) => pair.endsWith('tobedeleted')), 'no lower bound: no ended enrollment')
    const either = await get(f.app, `/enrollments?${filter(`dateLastModified>'${f.bound.toISOString()}' OR role='teacher'`)}`, f.admin)
    t.notOk(pairs(either, 'enrollments').some((pair) => pair.endsWith('tobedeleted')), 'the bound inside an OR: none')
    const later = await get(f.app, `/enrollments?${filter(`dateLastModified>'${new Date(Date.now() + 3_600_000).toISOString()}'`)}`, f.admin)
    t.same(pairs(later, 'enrollments'), [], 'a bound after the ends: none')

    // Paged and sorted with the live ones, in one order.
    const seen: string[] = []
    for (let offset = 0; offset < 5; offset += 2) {
      const page = await get(f.app, `/enrollments?${since}&sort=sourcedId&limit=2&offset=${offset}`, f.admin)
      t.equal(page.headers['x-total-count'], '5')
      seen.push(...(page.body.enrollments as Array<{ sourcedId: string }>).map((record) => record.sourcedId))
    }
    t.same(seen, [f.aide, f.chem, f.s2, 'e-s1', f.s3].sort(), 'the pages hold each once, in sourcedId order')
    const desc = await get(f.app, `/enrollments?${since}&sort=sourcedId&orderBy=desc`, f.admin)
    t.same((desc.body.enrollments as Array<{ sourcedId: string }>).map((record) => record.sourcedId), [...seen].reverse(), 'and in reverse')
  })

  await t.test("a class's enrollments: what left the class", async (t) => {
    const res = await get(f.app, `/schools/${f.schoolId}/classes/k-alg/enrollments?${since}`, f.admin)
    t.same(pairs(res, 'enrollments'), [`${f.aide}:tobedeleted`, `${f.s2}:tobedeleted`, 'e-s1:tobedeleted'].sort(), 's-2 moved out of k-alg: ended there')
    const school = await get(f.app, `/schools/${f.schoolId}/enrollments?${since}`, f.admin)
    t.equal(school.headers['x-total-count'], '5')
  })

  await t.test("a teacher's delta reads her own: what left her reach", async (t) => {
    const res = await get(f.app, `/enrollments?${since}`, f.teacher)
    t.same(pairs(res, 'enrollments'), [`${f.aide}:tobedeleted`, `${f.s2}:tobedeleted`, 'e-s1:tobedeleted'].sort(), "Ms Algebra: her class's ended enrollments, s-2 moved away; not k-bio's or k-chem's")
    const classes = await get(f.app, `/classes?${since}`, f.teacher)
    t.same(pairs(classes, 'classes'), [], 'k-chem was not hers')
    // Mr Aide, unassigned: k-alg and its enrollments left his reach.
    const aideClasses = await get(f.app, `/classes?${since}`, f.aideLogin)
    t.same(pairs(aideClasses, 'classes'), ['k-alg:tobedeleted'])
    const aideEnrollments = await get(f.app, `/enrollments?${since}`, f.aideLogin)
    t.same(pairs(aideEnrollments, 'enrollments'), [`${f.aide}:tobedeleted`, `${f.algebra}:tobedeleted`, `${f.s2}:tobedeleted`, 'e-s1:tobedeleted'].sort(),
      "k-alg's enrollments when he left it (his own, Ms Algebra's), and those that ended before while it was his")
  })

  await t.test('classes, sessions and courses', async (t) => {
    const classes = await get(f.app, `/classes?${since}`, f.admin)
    t.same(pairs(classes, 'classes'), ['k-chem:tobedeleted'])
    const chem = classes.body.classes[0]
    t.same(chem, {
      sourcedId: 'k-chem',
      status: 'tobedeleted',
      dateLastModified: chem.dateLastModified,
      title: 'Chemistry - P3',
      course: ref('courses', 'c-bio', 'course'),
      school: org,
      terms: [ref('academicSessions', 't-fall', 'academicSession')]
    }, 'what ClassDType requires, as it was')
    t.same(pairs(await get(f.app, `/terms/t-fall/classes?${since}`, f.admin), 'classes'), ['k-chem:tobedeleted'], "a term's")
    t.same(pairs(await get(f.app, `/courses/c-bio/classes?${since}`, f.admin), 'classes'), ['k-chem:tobedeleted'], "its course's")
    t.same(pairs(await get(f.app, `/courses/c-alg/classes?${since}`, f.admin), 'classes'), [], "not another course's")
    t.same(pairs(await get(f.app, `/schools/${f.schoolId}/classes?${since}`, f.admin), 'classes'), ['k-chem:tobedeleted'])
    const courses = await get(f.app, `/courses?${since}`, f.admin)
    t.same(courses.body.courses, [{ sourcedId: 'c-geo', status: 'tobedeleted', dateLastModified: courses.body.courses[0].dateLastModified, title: 'Geology', courseCode: 'SCI-301', org }])
    t.same(pairs(await get(f.app, `/courses?${since}`, f.teacher), 'courses'), ['c-geo:tobedeleted'], "a teacher reads the school's courses")
    const sessions = await get(f.app, `/academicSessions?${since}`, f.admin)
    t.same(sessions.body.academicSessions, [{
      sourcedId: 'gp-1',
      status: 'tobedeleted',
      dateLastModified: sessions.body.academicSessions[0].dateLastModified,
      title: 'Fall 1',
      startDate: '2026-08-20',
      endDate: '2026-10-15',
      type: 'gradingPeriod',
      schoolYear: '2027'
    }])
    t.same(pairs(await get(f.app, `/gradingPeriods?${since}`, f.admin), 'academicSessions'), ['gp-1:tobedeleted'])
    t.same(pairs(await get(f.app, `/terms?${since}`, f.admin), 'academicSessions'), [], 'a grading period is no term')
    t.same(pairs(await get(f.app, '/classes', f.admin), 'classes'), ['k-alg:active', 'k-bio:active'], 'no bound: no deletion')
  })
})
