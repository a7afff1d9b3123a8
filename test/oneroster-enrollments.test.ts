// OneRoster 1.2's enrollments over REST (src/oneroster/enrollments.ts): a student's classroom and a
// teacher's assignment as EnrollmentDType records, when the classroom is a class; every endpoint
// for an administrator, a teacher (her classrooms' enrollments only) and roster-core.readonly /
// roster.readonly clients; the imported sourcedId or the link's own id; role and primary; dates;
// the filter, sort, fields and paging across both tables; a move, an assignment and an
// unassignment through the model's operations seen at once; every refusal in imsx_StatusInfo; every
// answer validated against the served OpenAPI description.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import type { Database } from '../src/db/client.js'
import { createStudent } from '../src/records/students.js'
import { assignTeacher, createTeacher } from '../src/records/teachers.js'
import { calendarBundle, importCalendar } from './fixtures/calendar.js'
import { build, testDatabase, unique } from './helper.js'
import { schoolCallers } from './oneroster/callers.js'
import { type Answer, answeredByScope, BASE, checkedAnswers, type Endpoint, refused } from './oneroster/answers.js'

const SESSIONS = [
  ['y-2027', '', '', '2026-2027', 'schoolYear', '2026-08-20', '2027-06-18', '', '2027'],
  ['t-fall', '', '', 'Fall', 'term', '2026-08-20', '2027-01-15', 'y-2027', '2027']
]
const COURSES = [
  ['c-alg', '', '', 'y-2027', 'Algebra I', 'MATH-101', '09', 'org-1', 'Mathematics', '02052'],
  ['c-bio', '', '', 'y-2027', 'Biology', 'SCI-201', '10', 'org-1', 'Science', '03051']
]

/** Gives a classroom a course and a term, as the import does: it becomes a class. */
async function makeClass (db: Database, schoolId: string, name: string, sourcedId: string, course: string): Promise<void> {
  const tenant = db.forSchool(schoolId)
  const { id: courseId } = await tenant.course.findFirstOrThrow({ where: { sourcedId: course }, select: { id: true } })
  const { id: termId } = await tenant.academicSession.findFirstOrThrow({ where: { sourcedId: 't-fall' }, select: { id: true } })
  await tenant.classroom.updateMany({ where: { name }, data: { sourcedId, courseId, termIds: [termId] } })
}

interface School {
  db: Database
  schoolId: string
  admin: string
  teacher: string
  core: string
  full: string
  demographics: string
  /** The ids of the links without a sourcedId of their own: s-2's and s-3's (students), the aide's and Mr Biology's assignments. */
  s2: string
  s3: string
  aide: string
  bio: string
}

/**
 * A school with two classes: k-alg (Ms Algebra, primary, her enrollment e-alg; Mr Aide, assistant;
 * students s-1, enrollment e-s1 from 2026-09-01 to 2027-01-15, and s-2) and k-bio (Mr Biology, s-3);
 * and Art, a classroom made by hand (s-4), which is no class: no enrollment. The teacher's login is
 * Ms Algebra's.
 */
async function school (app: FastifyInstance): Promise<School> {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Enrollments School'))
  await importCalendar(db, schoolId, calendarBundle(SESSIONS, COURSES))
  const algebra = await createTeacher(db, { schoolId, fullName: 'Ms Algebra', sourcedId: 'tea-alg' })
  const aide = await createTeacher(db, { schoolId, fullName: 'Mr Aide', sourcedId: 'tea-aide' })
  const biology = await createTeacher(db, { schoolId, fullName: 'Mr Biology', sourcedId: 'tea-bio' })
  await assignTeacher(db, { schoolId, teacherId: algebra, classroom: 'Algebra I - P1' })
  await assignTeacher(db, { schoolId, teacherId: aide, classroom: 'Algebra I - P1', role: 'ASSISTANT' })
  await assignTeacher(db, { schoolId, teacherId: biology, classroom: 'Biology - P2' })
  const s1 = await createStudent(db, { schoolId, fullName: 'Ada One', sourcedId: 's-1', classroom: 'Algebra I - P1' })
  const s2 = await createStudent(db, { schoolId, fullName: 'Ben Two', sourcedId: 's-2', classroom: 'Algebra I - P1' })
  const s3 = await createStudent(db, { schoolId, fullName: 'Cy Three', sourcedId: 's-3', classroom: 'Biology - P2' })
  await createStudent(db, { schoolId, fullName: 'Di Four', sourcedId: 's-4', classroom: 'Art' })
  await makeClass(db, schoolId, 'Algebra I - P1', 'k-alg', 'c-alg')
  await makeClass(db, schoolId, 'Biology - P2', 'k-bio', 'c-bio')
  const tenant = db.forSchool(schoolId)
  // What the import keeps of enrollments.csv (test/import.test.ts tests the import's side).
  await tenant.student.update({ where: { schoolId_id: { schoolId, id: s1 } }, data: { enrollmentSourcedId: 'e-s1', enrollmentStartDate: new Date('2026-09-01'), enrollmentEndDate: new Date('2027-01-15') } })
  await tenant.teacherClassroom.updateMany({ where: { teacherId: algebra }, data: { sourcedId: 'e-alg', beginDate: new Date('2026-08-20') } })
  const link = async (teacherId: string): Promise<string> => (await tenant.teacherClassroom.findFirstOrThrow({ where: { teacherId }, select: { id: true } })).id
  return { db, schoolId, s2, s3, aide: await link(aide), bio: await link(biology), ...await schoolCallers(app, db, schoolId, algebra, 'enrol') }
}

/** Every answer of this file is validated against the service's OpenAPI description. */
const answers = checkedAnswers()
const { get, invalid } = answers

const ids = (res: Answer): string[] => (res.body.enrollments as Array<{ sourcedId: string }>).map((record) => record.sourcedId)

const ref = (path: string, sourcedId: string, type: string): object => ({ href: `http://localhost${BASE}/${path}/${sourcedId}`, sourcedId, type })

t.test('an administrator reads every enrollment endpoint; a classroom that is no class has none', async (t) => {
  const app = await build(t)
  const s = await school(app)
  const org = { href: `http://localhost${BASE}/orgs/${s.schoolId}`, sourcedId: s.schoolId, type: 'org' }

  const all = await get(app, '/enrollments', s.admin)
  t.equal(all.statusCode, 200)
  t.equal(all.headers['x-total-count'], '6', "Art's student is in no class")
  t.same(ids(all).sort(), ['e-alg', 'e-s1', s.aide, s.bio, s.s2, s.s3].sort())
  const student = (await get(app, '/enrollments/e-s1', s.admin)).body.enrollment
  t.same(student, {
    sourcedId: 'e-s1',
    status: 'active',
    dateLastModified: student.dateLastModified,
    user: ref('users', 's-1', 'user'),
    class: ref('classes', 'k-alg', 'class'),
    school: org,
    role: 'student',
    beginDate: '2026-09-01',
    endDate: '2027-01-15'
  }, "a student's enrollment: the import's sourcedId and dates; no primary (a teacher's only)")
  t.match(student.dateLastModified, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
  const teacher = (await get(app, '/enrollments/e-alg', s.admin)).body.enrollment
  t.same(teacher, {
    sourcedId: 'e-alg',
    status: 'active',
    dateLastModified: teacher.dateLastModified,
    user: ref('users', 'tea-alg', 'user'),
    class: ref('classes', 'k-alg', 'class'),
    school: org,
    role: 'teacher',
    primary: 'true',
    beginDate: '2026-08-20'
  }, "a teacher's enrollment: PRIMARY is primary")
  t.match((await get(app, `/enrollments/${s.aide}`, s.admin)).body.enrollment, { sourcedId: s.aide, role: 'teacher', primary: 'false', user: ref('users', 'tea-aide', 'user') },
    'an assistant is a teacher, not primary; a link made by hand answers its own id')
  t.match((await get(app, `/enrollments/${s.s2}`, s.admin)).body.enrollment, { sourcedId: s.s2, role: 'student', user: ref('users', 's-2', 'user') },
    "a student placed by hand: the student's id")

  t.same(ids(await get(app, `/schools/${s.schoolId}/enrollments`, s.admin)).sort(), ids(all).sort(), "a school's enrollments")
  t.same(ids(await get(app, `/schools/${s.schoolId}/classes/k-bio/enrollments`, s.admin)).sort(), [s.bio, s.s3].sort(), "a class's enrollments")

  for (const [path, what] of [
    ['/enrollments/e-none', 'enrollment'], ['/enrollments/s-1', 'enrollment'],
    ['/schools/no-school/enrollments', 'school'], ['/schools/no-school/classes/k-alg/enrollments', 'school'],
    [`/schools/${s.schoolId}/classes/k-none/enrollments`, 'class']
  ] as const) {
    const res = await get(app, path, s.admin)
    refused(t, res, 404, 'unknownobject', path)
    t.match(res.body.imsx_description, new RegExp(`no ${what} with sourcedId`), `${path}: names the unknown ${what}`)
  }
  const art = (await s.db.forSchool(s.schoolId).classroom.findFirstOrThrow({ where: { name: 'Art' }, select: { id: true } })).id
  refused(t, await get(app, `/schools/${s.schoolId}/classes/${art}/enrollments`, s.admin), 404, 'unknownobject', 'a classroom that is no class')
})

t.test('the filter grammar, sort, fields and paging across both tables', async (t) => {
  const app = await build(t)
  const s = await school(app)
  const list = async (query: string): Promise<string[]> => ids(await get(app, `/enrollments?${query}`, s.admin))
  const filter = (text: string): string => `filter=${encodeURIComponent(text)}`
  t.same((await list(filter("role='teacher'"))).sort(), ['e-alg', s.aide, s.bio].sort())
  t.same(await list(filter("primary='false'")), [s.aide], 'primary: a teacher assistant (a student has none)')
  t.same((await list(filter("primary!='true'"))).sort(), [s.aide, 'e-s1', s.s2, s.s3].sort(), '!= holds where there is no value')
  t.same((await list(filter("class.sourcedId='k-bio'"))).sort(), [s.bio, s.s3].sort())
  t.same(await list(filter("user.sourcedId='s-1'")), ['e-s1'])
  t.same(await list(filter("user.sourcedId='tea-aide'")), [s.aide])
  t.same(await list(filter("beginDate>='2026-09-01'")), ['e-s1'])
  t.same(await list(filter("sourcedId='e-alg' OR sourcedId='e-s1'")).then((list) => list.sort()), ['e-alg', 'e-s1'])
  t.same(await list(filter(`school.sourcedId='${s.schoolId}' AND role='student' AND class.sourcedId='k-alg'`)).then((list) => list.sort()), ['e-s1', s.s2].sort())
  t.same(await list(filter("dateLastModified>'2999-01-01T00:00:00Z'")), [])
  const bySourced = [...ids(await get(app, '/enrollments', s.admin))].sort()
  t.same(await list('sort=sourcedId'), bySourced, 'sorted by sourcedId across students and teachers')
  t.same(await list('sort=sourcedId&orderBy=desc'), [...bySourced].reverse())
  const pages: string[] = []
  for (let offset = 0; offset < 6; offset += 4) {
    const page = await get(app, `/enrollments?sort=sourcedId&limit=4&offset=${offset}`, s.admin)
    t.equal(page.headers['x-total-count'], '6')
    pages.push(...ids(page))
  }
  t.same(pages, bySourced, 'pages of the merge neither overlap nor skip')
  const first = await get(app, '/enrollments?limit=2', s.admin)
  t.match(String(first.headers.link), /offset=2>; rel="next".*offset=4>; rel="last"/)
  t.same((await get(app, '/enrollments/e-alg?fields=sourcedId,primary', s.admin)).body.enrollment, { sourcedId: 'e-alg', primary: 'true' })
  t.same((await get(app, `/enrollments?${filter("user.sourcedId='s-1'")}&fields=role`, s.admin)).body.enrollments, [{ role: 'student' }])
  refused(t, await get(app, `/enrollments?${filter("user='s-1'")}`, s.admin), 400, 'invalid_filter_field', 'a reference itself')
  refused(t, await get(app, `/enrollments?${filter("primary='yes'")}`, s.admin), 400, 'invalid_filter_field', 'primary is true or false')
  refused(t, await get(app, `/enrollments?${filter("grade='x'")}`, s.admin), 400, 'invalid_filter_field', 'an unknown field')
  refused(t, await get(app, '/enrollments?fields=metadata', s.admin), 400, 'invalid_selection_field', 'a field not answered')
  refused(t, await get(app, '/enrollments?sort=nothing', s.admin), 400, 'invalid_filter_field', 'sort by an unknown field')
})

t.test("a teacher reads her classrooms' enrollments only", async (t) => {
  const app = await build(t)
  const s = await school(app)
  const mine = await get(app, '/enrollments', s.teacher)
  t.same(ids(mine).sort(), ['e-alg', 'e-s1', s.aide, s.s2].sort(), "hers, her co-teacher's and her students'")
  t.equal(mine.headers['x-total-count'], '4')
  t.same(ids(await get(app, `/schools/${s.schoolId}/classes/k-alg/enrollments`, s.teacher)).sort(), ['e-alg', 'e-s1', s.aide, s.s2].sort())
  for (const path of [`/enrollments/${s.bio}`, `/enrollments/${s.s3}`, `/schools/${s.schoolId}/classes/k-bio/enrollments`]) {
    refused(t, await get(app, path, s.teacher), 404, 'unknownobject', `a teacher: ${path}`)
  }
})

t.test("a move, an assignment and an unassignment through the model are the enrollments' change at once", async (t) => {
  const app = await build(t)
  const s = await school(app)
  const tenant = s.db.forSchool(s.schoolId)
  const bio = await tenant.classroom.findFirstOrThrow({ where: { name: 'Biology - P2' }, select: { id: true } })
  await tenant.student.updateMany({ where: { sourcedId: 's-2' }, data: { classroomId: bio.id } })
  t.match((await get(app, `/enrollments/${s.s2}`, s.admin)).body.enrollment, { class: ref('classes', 'k-bio', 'class') }, 'a move: the same enrollment, in its new class')
  await tenant.teacherClassroom.deleteMany({ where: { id: s.aide } })
  refused(t, await get(app, `/enrollments/${s.aide}`, s.admin), 404, 'unknownobject', 'an unassignment removes the enrollment')
  const aide = await tenant.teacher.findFirstOrThrow({ where: { sourcedId: 'tea-aide' }, select: { id: true } })
  await assignTeacher(s.db, { schoolId: s.schoolId, teacherId: aide.id, classroom: 'Biology - P2' })
  t.same(ids(await get(app, `/enrollments?filter=${encodeURIComponent("user.sourcedId='tea-aide'")}`, s.admin)).length, 1, 'an assignment is an enrollment')
  t.equal((await get(app, '/enrollments', s.admin)).headers['x-total-count'], '6')
})

t.test("every enrollment endpoint answers each caller with 1EdTech's scopes (the nested ones need roster.readonly), and no other", async (t) => {
  const app = await build(t)
  const s = await school(app)
  const endpoints: Endpoint[] = [
    ['/enrollments', 'enrollments', false], ['/enrollments/e-s1', 'enrollment', false],
    [`/schools/${s.schoolId}/enrollments`, 'enrollments', true], [`/schools/${s.schoolId}/classes/k-alg/enrollments`, 'enrollments', true]
  ]
  await answeredByScope(t, answers, app, endpoints, s)
  for (const [path] of endpoints) refused(t, await get(app, path, s.demographics), 403, 'forbidden', `roster-demographics.readonly alone: ${path}`)
  for (const [path] of endpoints) refused(t, await get(app, path), 401, 'unauthorisedrequest', `no token: ${path}`)
})

t.test('every answer of this file validates against the OpenAPI description (src/oneroster/openapi.ts)', async (t) => {
  t.ok(answers.count() > 60, `${answers.count()} answers checked`)
  t.same(invalid, [], 'none invalid')
})
