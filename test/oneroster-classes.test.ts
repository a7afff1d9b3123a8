// OneRoster 1.2's classes over REST (src/oneroster/classes.ts): every class endpoint for an
// administrator, a teacher (her own classes, their students and teachers only) and
// roster-core.readonly / roster.readonly clients; the filter grammar on a class's fields and
// references, sort, fields, paging; every refusal in imsx_StatusInfo (404 unknownobject for an
// unknown parent); every answer validated against the served OpenAPI description. The calendar is
// the import's (test/fixtures/calendar.ts); the classes are classrooms given a course and terms as
// the import writes them (test/import-classes.test.ts tests the import's side).
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
  ['t-fall', '', '', 'Fall', 'term', '2026-08-20', '2027-01-15', 'y-2027', '2027'],
  ['t-spring', '', '', 'Spring', 'term', '2027-01-19', '2027-06-18', 'y-2027', '2027']
]
const COURSES = [
  ['c-alg', '', '', 'y-2027', 'Algebra I', 'MATH-101', '09,10', 'org-1', 'Mathematics', '02052'],
  ['c-bio', '', '', 'y-2027', 'Biology', 'SCI-201', '10', 'org-1', 'Science', '03051']
]

/** A classroom's OneRoster fields as the import writes them (by the sessions' and courses' sourcedIds). */
async function makeClass (db: Database, schoolId: string, name: string, fields: { sourcedId: string, course: string, terms: string[], classType?: string, classCode?: string, location?: string, periods?: string[], grades?: string[], subjects?: string[], subjectCodes?: string[] }): Promise<void> {
  const tenant = db.forSchool(schoolId)
  const course = await tenant.course.findFirstOrThrow({ where: { sourcedId: fields.course }, select: { id: true } })
  const terms = await tenant.academicSession.findMany({ where: { sourcedId: { in: fields.terms } }, select: { id: true, sourcedId: true } })
  const termIds = fields.terms.map((key) => terms.find((term) => term.sourcedId === key)!.id)
  await tenant.classroom.updateMany({
    where: { name },
    data: {
      sourcedId: fields.sourcedId,
      courseId: course.id,
      termIds,
      classType: fields.classType ?? 'scheduled',
      classCode: fields.classCode ?? null,
      location: fields.location ?? null,
      periods: fields.periods ?? [],
      grades: fields.grades ?? [],
      subjects: fields.subjects ?? [],
      subjectCodes: fields.subjectCodes ?? []
    }
  })
}

interface School {
  schoolId: string
  admin: string
  teacher: string
  core: string
  full: string
  demographics: string
  /** The id of the classroom made by hand (no course, no terms). */
  handMade: string
}

/**
 * A school with the calendar above and two classes: k-alg (Algebra, both terms; Ms Algebra, students
 * s-1 and s-2) and k-bio (Biology, spring; Mr Biology, s-3); and a classroom made by hand, Art (s-4),
 * which is no class. The teacher's login is Ms Algebra's.
 */
async function school (app: FastifyInstance): Promise<School> {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Classes School'))
  await importCalendar(db, schoolId, calendarBundle(SESSIONS, COURSES))
  const algebra = await createTeacher(db, { schoolId, fullName: 'Ms Algebra', sourcedId: 'tea-alg' })
  const biology = await createTeacher(db, { schoolId, fullName: 'Mr Biology', sourcedId: 'tea-bio' })
  await assignTeacher(db, { schoolId, teacherId: algebra, classroom: 'Algebra I - P1' })
  await assignTeacher(db, { schoolId, teacherId: biology, classroom: 'Biology - P2' })
  await createStudent(db, { schoolId, fullName: 'Ada One', sourcedId: 's-1', classroom: 'Algebra I - P1' })
  await createStudent(db, { schoolId, fullName: 'Ben Two', sourcedId: 's-2', classroom: 'Algebra I - P1' })
  await createStudent(db, { schoolId, fullName: 'Cy Three', sourcedId: 's-3', classroom: 'Biology - P2' })
  await createStudent(db, { schoolId, fullName: 'Di Four', sourcedId: 's-4', classroom: 'Art' })
  await makeClass(db, schoolId, 'Algebra I - P1', {
    sourcedId: 'k-alg', course: 'c-alg', terms: ['t-fall', 't-spring'], classCode: 'ALG-1', location: 'Room 19', periods: ['1', '3'], grades: ['09', '10'], subjects: ['Mathematics'], subjectCodes: ['02052']
  })
  await makeClass(db, schoolId, 'Biology - P2', { sourcedId: 'k-bio', course: 'c-bio', terms: ['t-spring'], classType: 'homeroom' })
  const handMade = (await db.forSchool(schoolId).classroom.findFirstOrThrow({ where: { name: 'Art' }, select: { id: true } })).id
  return { schoolId, handMade, ...await schoolCallers(app, db, schoolId, algebra, 'class') }
}

/** Every answer of this file is validated against the service's OpenAPI description. */
const answers = checkedAnswers()
const { get, invalid } = answers

const ids = (res: Answer, envelope = 'classes'): string[] => (res.body[envelope] as Array<{ sourcedId: string }>).map((record) => record.sourcedId)

const ref = (path: string, sourcedId: string, type: string): object => ({ href: `http://localhost${BASE}/${path}/${sourcedId}`, sourcedId, type })

t.test('an administrator reads every class endpoint; a classroom without a course and terms is no class', async (t) => {
  const app = await build(t)
  const s = await school(app)

  const all = await get(app, '/classes', s.admin)
  t.equal(all.statusCode, 200)
  t.equal(all.headers['x-total-count'], '2', 'the classroom made by hand is left out')
  t.same(ids(all).sort(), ['k-alg', 'k-bio'])
  const algebra = (await get(app, '/classes/k-alg', s.admin)).body.class
  t.same(algebra, {
    sourcedId: 'k-alg',
    status: 'active',
    dateLastModified: algebra.dateLastModified,
    title: 'Algebra I - P1',
    classCode: 'ALG-1',
    classType: 'scheduled',
    location: 'Room 19',
    grades: ['09', '10'],
    subjects: ['Mathematics'],
    course: ref('courses', 'c-alg', 'course'),
    school: { href: `http://localhost${BASE}/orgs/${s.schoolId}`, sourcedId: s.schoolId, type: 'org' },
    terms: [ref('academicSessions', 't-fall', 'academicSession'), ref('academicSessions', 't-spring', 'academicSession')],
    subjectCodes: ['02052'],
    periods: ['1', '3']
  }, 'every field the import keeps; the terms in their order')
  const biology = (await get(app, '/classes/k-bio', s.admin)).body.class
  t.notOk('classCode' in biology || 'location' in biology, 'a field without a value is left out')
  t.same(biology.periods, [])
  refused(t, await get(app, `/classes/${s.handMade}`, s.admin), 404, 'unknownobject', 'a classroom made by hand')

  t.same(ids(await get(app, `/schools/${s.schoolId}/classes`, s.admin)).sort(), ['k-alg', 'k-bio'], "a school's classes")
  t.same(ids(await get(app, '/terms/t-fall/classes', s.admin)), ['k-alg'], "a term's classes")
  t.same(ids(await get(app, '/terms/t-spring/classes', s.admin)).sort(), ['k-alg', 'k-bio'])
  t.same(ids(await get(app, '/courses/c-bio/classes', s.admin)), ['k-bio'], "a course's classes")
  t.same(ids(await get(app, '/students/s-3/classes', s.admin)), ['k-bio'], "a student's class")
  t.same(ids(await get(app, '/students/s-4/classes', s.admin)), [], 'a student of a classroom that is no class: none')
  t.same(ids(await get(app, '/teachers/tea-alg/classes', s.admin)), ['k-alg'], "a teacher's classes")
  t.same(ids(await get(app, '/users/s-1/classes', s.admin)), ['k-alg'], "a user's: a student's")
  t.same(ids(await get(app, '/users/tea-bio/classes', s.admin)), ['k-bio'], "a user's: a teacher's")
  t.same(ids(await get(app, '/classes/k-alg/students', s.admin), 'users').sort(), ['s-1', 's-2'], "a class's students")
  t.same(ids(await get(app, '/classes/k-alg/teachers', s.admin), 'users'), ['tea-alg'], "a class's teachers")
  t.same(ids(await get(app, `/schools/${s.schoolId}/classes/k-bio/students`, s.admin), 'users'), ['s-3'])
  t.same(ids(await get(app, `/schools/${s.schoolId}/classes/k-bio/teachers`, s.admin), 'users'), ['tea-bio'])
  const student = (await get(app, '/classes/k-bio/students', s.admin)).body.users[0]
  t.match(student, { sourcedId: 's-3', roles: [{ role: 'student', roleType: 'primary' }] }, 'students as users')

  for (const [path, what] of [
    ['/classes/k-none', 'class'], ['/terms/t-none/classes', 'term'], ['/terms/y-2027/classes', 'term'], ['/courses/c-none/classes', 'course'],
    ['/students/s-none/classes', 'student'], ['/students/tea-alg/classes', 'student'], ['/teachers/s-1/classes', 'teacher'], ['/users/u-none/classes', 'user'],
    ['/classes/k-none/students', 'class'], ['/classes/k-none/teachers', 'class'], [`/classes/${s.handMade}/students`, 'class'],
    ['/schools/no-school/classes', 'school'], ['/schools/no-school/classes/k-alg/students', 'school'], [`/schools/${s.schoolId}/classes/k-none/teachers`, 'class']
  ] as const) {
    const res = await get(app, path, s.admin)
    refused(t, res, 404, 'unknownobject', path)
    t.match(res.body.imsx_description, new RegExp(`no ${what} with sourcedId`), `${path}: names the unknown ${what}`)
  }
})

t.test('the filter grammar, sort, fields and paging on classes', async (t) => {
  const app = await build(t)
  const s = await school(app)
  const list = async (query: string): Promise<string[]> => ids(await get(app, `/classes?${query}`, s.admin))
  t.same(await list(`filter=${encodeURIComponent("course.sourcedId='c-bio'")}`), ['k-bio'])
  t.same(await list(`filter=${encodeURIComponent("terms.sourcedId='t-fall'")}`), ['k-alg'])
  t.same((await list(`filter=${encodeURIComponent("terms.sourcedId!='t-fall'")}`)), ['k-bio'])
  t.same((await list(`filter=${encodeURIComponent(`school.sourcedId='${s.schoolId}'`)}`)).sort(), ['k-alg', 'k-bio'])
  t.same(await list(`filter=${encodeURIComponent("school.sourcedId='other'")}`), [])
  t.same(await list(`filter=${encodeURIComponent("classType='homeroom'")}`), ['k-bio'])
  t.same(await list(`filter=${encodeURIComponent("title~'algebra'")}`), ['k-alg'])
  t.same(await list(`filter=${encodeURIComponent("periods='3' AND grades='10'")}`), ['k-alg'])
  t.same(await list('sort=title&orderBy=desc'), ['k-bio', 'k-alg'])
  t.same(await list('sort=course.sourcedId'), ['k-alg', 'k-bio'])
  t.same(await list('limit=1&offset=1&sort=title'), ['k-bio'])
  const past = await get(app, '/classes?offset=5', s.admin)
  t.same([past.body.classes, past.headers['x-total-count']], [[], '2'], 'an offset past the end: none, and the total')
  t.same((await get(app, '/classes/k-alg?fields=sourcedId,course', s.admin)).body.class, { sourcedId: 'k-alg', course: ref('courses', 'c-alg', 'course') })
  t.same(ids(await get(app, `/courses/c-alg/classes?filter=${encodeURIComponent("classType='homeroom'")}`, s.admin)), [], "a nested path's filter adds to its own")
  refused(t, await get(app, `/classes?filter=${encodeURIComponent("terms='t-fall'")}`, s.admin), 400, 'invalid_filter_field', 'terms itself')
  refused(t, await get(app, `/classes?filter=${encodeURIComponent("teacher='x'")}`, s.admin), 400, 'invalid_filter_field', 'an unknown field')
  refused(t, await get(app, '/classes?fields=resources', s.admin), 400, 'invalid_selection_field', 'a field not answered')
  refused(t, await get(app, '/classes?sort=nothing', s.admin), 400, 'invalid_filter_field', 'sort by an unknown field')
})

t.test("a teacher reads her own classes and their students and teachers, and no other class's", async (t) => {
  const app = await build(t)
  const s = await school(app)
  t.same(ids(await get(app, '/classes', s.teacher)), ['k-alg'])
  t.equal((await get(app, '/classes', s.teacher)).headers['x-total-count'], '1')
  t.equal((await get(app, '/classes/k-alg', s.teacher)).body.class.terms.length, 2, 'terms read through her reach too')
  t.same(ids(await get(app, '/classes/k-alg/students', s.teacher), 'users').sort(), ['s-1', 's-2'])
  t.same(ids(await get(app, '/classes/k-alg/teachers', s.teacher), 'users'), ['tea-alg'])
  t.same(ids(await get(app, '/terms/t-spring/classes', s.teacher)), ['k-alg'])
  t.same(ids(await get(app, '/courses/c-bio/classes', s.teacher)), [])
  t.same(ids(await get(app, '/teachers/tea-alg/classes', s.teacher)), ['k-alg'])
  for (const path of ['/classes/k-bio', '/classes/k-bio/students', '/classes/k-bio/teachers', `/schools/${s.schoolId}/classes/k-bio/students`, '/students/s-3/classes', '/teachers/tea-bio/classes', '/users/s-3/classes']) {
    refused(t, await get(app, path, s.teacher), 404, 'unknownobject', `a teacher: ${path}`)
  }
})

t.test("every class endpoint answers each caller with 1EdTech's scopes (the nested ones need roster.readonly), and no other", async (t) => {
  const app = await build(t)
  const s = await school(app)
  const endpoints: Endpoint[] = [
    ['/classes', 'classes', false], ['/classes/k-alg', 'class', false],
    [`/schools/${s.schoolId}/classes`, 'classes', true], ['/terms/t-fall/classes', 'classes', true], ['/courses/c-alg/classes', 'classes', true],
    ['/students/s-1/classes', 'classes', true], ['/teachers/tea-alg/classes', 'classes', true], ['/users/tea-alg/classes', 'classes', true],
    ['/classes/k-alg/students', 'users', true], ['/classes/k-alg/teachers', 'users', true],
    [`/schools/${s.schoolId}/classes/k-alg/students`, 'users', true], [`/schools/${s.schoolId}/classes/k-alg/teachers`, 'users', true]
  ]
  await answeredByScope(t, answers, app, endpoints, s)
  for (const [path] of endpoints) refused(t, await get(app, path, s.demographics), 403, 'forbidden', `roster-demographics.readonly alone: ${path}`)
  for (const path of ['/classes', '/classes/k-alg', '/classes/k-alg/students']) refused(t, await get(app, path), 401, 'unauthorisedrequest', `no token: ${path}`)
})

t.test('every answer of this file validates against the OpenAPI description (src/oneroster/openapi.ts)', async (t) => {
  t.ok(answers.count() > 100, `${answers.count()} answers checked`)
  t.same(invalid, [], 'none invalid')
})
