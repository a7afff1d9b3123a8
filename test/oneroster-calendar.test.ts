// OneRoster 1.2's academic sessions, terms, grading periods and courses over REST (src/oneroster/):
// every endpoint for an administrator, a teacher and roster-core.readonly / roster.readonly
// clients, on a calendar made by the OneRoster import (test/fixtures/calendar.ts); the filter
// grammar on their fields, sort, fields, paging by offset, a delta by dateLastModified, every
// refusal in imsx_StatusInfo; every answer validated against the served OpenAPI description.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import { createTeacher } from '../src/records/teachers.js'
import { calendarBundle, importCalendar } from './fixtures/calendar.js'
import { build, testDatabase, unique } from './helper.js'
import { schoolCallers } from './oneroster/callers.js'
import { type Answer, answeredByScope, BASE, checkedAnswers, type Endpoint, refused } from './oneroster/answers.js'
import { validateAnswer } from './oneroster/validate.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** A school year, two terms, three grading periods and a semester: what a SIS exports. */
const SESSIONS = [
  ['y-2027', '', '', '2026-2027', 'schoolYear', '2026-08-20', '2027-06-18', '', '2027'],
  ['t-fall', '', '', 'Fall', 'term', '2026-08-20', '2027-01-15', 'y-2027', '2027'],
  ['t-spring', '', '', 'Spring', 'term', '2027-01-19', '2027-06-18', 'y-2027', '2027'],
  ['gp-1', '', '', 'Quarter 1', 'gradingPeriod', '2026-08-20', '2026-10-23', 't-fall', '2027'],
  ['gp-2', '', '', 'Quarter 2', 'gradingPeriod', '2026-10-26', '2027-01-15', 't-fall', '2027'],
  ['gp-3', '', '', 'Quarter 3', 'gradingPeriod', '2027-01-19', '2027-03-26', 't-spring', '2027'],
  ['sem-1', '', '', 'Semester 1', 'semester', '2026-08-20', '2027-01-15', 'y-2027', '2027']
]
const COURSES = [
  ['c-alg', '', '', 'y-2027', 'Algebra I', 'MATH-101', '09,10', 'org-1', 'Mathematics', '02052'],
  ['c-art', '', '', '', 'Studio Art, "Drawing"', 'ART-1', '', 'org-1', '', ''],
  ['c-bio', '', '', 'y-2027', 'Biology', 'SCI-201', '10', 'org-1', 'Science,Biology', '03051,03052']
]

interface Calendar {
  schoolId: string
  admin: string
  teacher: string
  core: string
  full: string
  demographics: string
}

/** A school with the calendar above, an administrator, a teacher login (of no classroom) and clients of each read scope. */
async function calendar (app: FastifyInstance, courses = COURSES): Promise<Calendar> {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Calendar School'))
  await importCalendar(db, schoolId, calendarBundle(SESSIONS, courses))
  const teacherId = await createTeacher(db, { schoolId, fullName: 'Ms Calendar', sourcedId: 'tea-cal' })
  return { schoolId, ...await schoolCallers(app, db, schoolId, teacherId, 'cal') }
}

/** Every answer of this file is validated against the service's OpenAPI description. */
const answers = checkedAnswers()
const { get, invalid } = answers

/** The sourcedIds of a collection's records, in order. */
const ids = (res: Answer, envelope = 'academicSessions'): string[] => (res.body[envelope] as Array<{ sourcedId: string }>).map((record) => record.sourcedId)

const sessionRef = (sourcedId: string): object => ({ href: `http://localhost${BASE}/academicSessions/${sourcedId}`, sourcedId, type: 'academicSession' })

t.test('an administrator reads every calendar endpoint in the binding\'s envelopes and fields', async (t) => {
  const app = await build(t)
  const c = await calendar(app)

  const all = await get(app, '/academicSessions', c.admin)
  t.equal(all.statusCode, 200)
  t.equal(all.headers['x-total-count'], '7')
  t.same(ids(all).sort(), SESSIONS.map(([id]) => id!).sort())

  const fall = (await get(app, '/academicSessions/t-fall', c.admin)).body.academicSession
  t.same(fall, {
    sourcedId: 't-fall',
    status: 'active',
    dateLastModified: fall.dateLastModified,
    title: 'Fall',
    startDate: '2026-08-20',
    endDate: '2027-01-15',
    type: 'term',
    parent: sessionRef('y-2027'),
    children: [sessionRef('gp-1'), sessionRef('gp-2')],
    schoolYear: '2027'
  }, 'a term: its parent and children by sourcedId, days as YYYY-MM-DD, the school year as text')
  t.match(fall.dateLastModified, ISO_MS, 'dateLastModified: ISO 8601 with milliseconds, UTC')
  const year = (await get(app, '/academicSessions/y-2027', c.admin)).body.academicSession
  t.notOk('parent' in year, 'a school year has no parent: left out')
  t.same(year.children, [sessionRef('sem-1'), sessionRef('t-fall'), sessionRef('t-spring')])
  t.same((await get(app, '/academicSessions/gp-3', c.admin)).body.academicSession.children, [], 'a grading period has no children')

  t.same(ids(await get(app, '/terms', c.admin)).sort(), ['t-fall', 't-spring'], '/terms: the sessions of type term')
  t.equal((await get(app, '/terms/t-spring', c.admin)).body.academicSession.title, 'Spring')
  t.same(ids(await get(app, '/gradingPeriods', c.admin)).sort(), ['gp-1', 'gp-2', 'gp-3'])
  t.equal((await get(app, '/gradingPeriods/gp-2', c.admin)).body.academicSession.parent.sourcedId, 't-fall')
  t.same(ids(await get(app, '/terms/t-fall/gradingPeriods', c.admin)).sort(), ['gp-1', 'gp-2'], 'a term\'s grading periods')
  t.same(ids(await get(app, '/terms/t-spring/gradingPeriods', c.admin)), ['gp-3'])
  t.same(ids(await get(app, `/schools/${c.schoolId}/terms`, c.admin)).sort(), ['t-fall', 't-spring'], 'a school\'s terms')

  const courses = await get(app, '/courses', c.admin)
  t.equal(courses.headers['x-total-count'], '3')
  t.same(ids(courses, 'courses').sort(), ['c-alg', 'c-art', 'c-bio'])
  const algebra = (await get(app, '/courses/c-alg', c.admin)).body.course
  t.same(algebra, {
    sourcedId: 'c-alg',
    status: 'active',
    dateLastModified: algebra.dateLastModified,
    title: 'Algebra I',
    schoolYear: sessionRef('y-2027'),
    courseCode: 'MATH-101',
    grades: ['09', '10'],
    subjects: ['Mathematics'],
    org: { href: `http://localhost${BASE}/orgs/${c.schoolId}`, sourcedId: c.schoolId, type: 'org' },
    subjectCodes: ['02052']
  }, 'a course: its school year by sourcedId, its school as org, lists as given')
  const art = (await get(app, '/courses/c-art', c.admin)).body.course
  t.notOk('schoolYear' in art, 'a course without a school year: left out')
  t.same([art.title, art.grades, art.subjects], ['Studio Art, "Drawing"', [], []])
  t.same(ids(await get(app, `/schools/${c.schoolId}/courses`, c.admin), 'courses').sort(), ['c-alg', 'c-art', 'c-bio'], 'a school\'s courses')

  refused(t, await get(app, '/academicSessions/nobody', c.admin), 404, 'unknownobject', 'an unknown session')
  refused(t, await get(app, '/terms/gp-1', c.admin), 404, 'unknownobject', 'a grading period is not a term')
  refused(t, await get(app, '/terms/y-2027', c.admin), 404, 'unknownobject', 'nor is a school year')
  refused(t, await get(app, '/gradingPeriods/t-fall', c.admin), 404, 'unknownobject', 'a term is not a grading period')
  refused(t, await get(app, '/terms/nobody/gradingPeriods', c.admin), 404, 'unknownobject', 'the grading periods of an unknown term')
  refused(t, await get(app, '/terms/gp-1/gradingPeriods', c.admin), 404, 'unknownobject', 'the grading periods of a session that is not a term')
  refused(t, await get(app, '/courses/nobody', c.admin), 404, 'unknownobject', 'an unknown course')
  refused(t, await get(app, '/schools/another/courses', c.admin), 404, 'unknownobject', 'another school\'s courses')
  refused(t, await get(app, '/schools/another/terms', c.admin), 404, 'unknownobject', 'another school\'s terms')
})

t.test('a teacher reads the school\'s whole calendar and courses (no one\'s personal data), whatever her classrooms', async (t) => {
  const app = await build(t)
  const c = await calendar(app)
  t.equal((await get(app, '/academicSessions', c.teacher)).headers['x-total-count'], '7')
  t.equal((await get(app, '/courses', c.teacher)).headers['x-total-count'], '3')
  t.same((await get(app, '/terms/t-fall', c.teacher)).body.academicSession.children, [sessionRef('gp-1'), sessionRef('gp-2')], 'references read through her reach too')
  t.equal((await get(app, '/courses/c-bio', c.teacher)).body.course.schoolYear.sourcedId, 'y-2027')
  t.same(ids(await get(app, '/terms/t-fall/gradingPeriods', c.teacher)).sort(), ['gp-1', 'gp-2'])
  t.equal((await get(app, `/schools/${c.schoolId}/courses`, c.teacher)).body.courses.length, 3)
})

t.test('every calendar endpoint answers each caller with its scope (1EdTech\'s: the nested ones need roster.readonly), and no other', async (t) => {
  const app = await build(t)
  const c = await calendar(app)
  const endpoints: Endpoint[] = [
    ['/academicSessions', 'academicSessions', false], ['/academicSessions/gp-1', 'academicSession', false],
    ['/terms', 'academicSessions', false], ['/terms/t-fall', 'academicSession', false],
    ['/gradingPeriods', 'academicSessions', false], ['/gradingPeriods/gp-1', 'academicSession', false],
    ['/courses', 'courses', false], ['/courses/c-alg', 'course', false],
    [`/schools/${c.schoolId}/courses`, 'courses', true], [`/schools/${c.schoolId}/terms`, 'academicSessions', true],
    ['/terms/t-fall/gradingPeriods', 'academicSessions', true]
  ]
  await answeredByScope(t, answers, app, endpoints, c)
  for (const [path] of endpoints) refused(t, await get(app, path, c.demographics), 403, 'forbidden', `roster-demographics.readonly alone: ${path}`)
  for (const path of ['/academicSessions', '/courses/c-alg', '/terms/t-fall/gradingPeriods']) {
    refused(t, await get(app, path), 401, 'unauthorisedrequest', `no token: ${path}`)
  }
})

t.test('the filter grammar on sessions\' and courses\' fields', async (t) => {
  const app = await build(t)
  const c = await calendar(app)
  const find = async (path: string, filter: string, envelope = 'academicSessions'): Promise<string[]> => {
    const res = await get(app, `${path}?filter=${encodeURIComponent(filter)}`, c.admin)
    t.equal(res.statusCode, 200, `${path} ${filter}`)
    return ids(res, envelope).sort()
  }
  t.same(await find('/academicSessions', "type='term'"), ['t-fall', 't-spring'], 'type')
  t.same(await find('/academicSessions', "startDate>='2027-01-01'"), ['gp-3', 't-spring'], 'a day compared as a day')
  t.same(await find('/academicSessions', "endDate<'2026-12-01' OR title='Spring'"), ['gp-1', 't-spring'], '< and OR')
  t.same(await find('/academicSessions', "parent.sourcedId='t-fall'"), ['gp-1', 'gp-2'], 'a dotted path: parent.sourcedId')
  t.same(await find('/academicSessions', "title~'quarter' AND parent.sourcedId!='t-fall'"), ['gp-3'], '~ and != (AND)')
  t.same((await find('/academicSessions', "schoolYear='2027'")).length, 7, 'schoolYear')
  t.same(await find('/academicSessions', "schoolYear>'2027'"), [])
  t.same(await find('/terms', "sourcedId='gp-1' OR sourcedId='t-fall'"), ['t-fall'], 'a filter within /terms stays within the terms')
  t.same(await find('/terms/t-fall/gradingPeriods', "title='Quarter 2'"), ['gp-2'], 'and within a term\'s grading periods')
  t.same(await find('/academicSessions', "status='active' AND sourcedId>='t'"), ['t-fall', 't-spring', 'y-2027'], 'status and sourcedId')
  t.same((await find('/academicSessions', "dateLastModified>'2000-01-01T00:00:00Z'")).length, 7, 'a delta from long ago: everything')

  t.same(await find('/courses', "grades='10'", 'courses'), ['c-alg', 'c-bio'], 'a list holds a value')
  t.same(await find('/courses', "grades!='10'", 'courses'), ['c-art'], 'or does not')
  t.same(await find('/courses', "subjects='Biology' OR subjectCodes='02052'", 'courses'), ['c-alg', 'c-bio'])
  t.same(await find('/courses', "schoolYear.sourcedId='y-2027'", 'courses'), ['c-alg', 'c-bio'], 'schoolYear.sourcedId')
  t.same(await find('/courses', "courseCode~'math'", 'courses'), ['c-alg'], '~ ignores case')
  t.same((await find('/courses', `org.sourcedId='${c.schoolId}'`, 'courses')).length, 3, 'org.sourcedId: the school')
  t.same(await find('/courses', "org.sourcedId='another'", 'courses'), [])
  t.same(await find(`/schools/${c.schoolId}/courses`, "title='Biology'", 'courses'), ['c-bio'])

  for (const [path, filter] of [
    ['/academicSessions', "shoeSize='42'"],
    ['/academicSessions', "startDate>'last week'"],
    ['/academicSessions', "schoolYear='2026-2027'"],
    ['/academicSessions', "children.sourcedId='gp-1'"],
    ['/academicSessions', "children='gp-1'"],
    ['/academicSessions', "org.sourcedId='x'"],
    ['/courses', "grades~'1'"],
    ['/courses', "dateLastModified>'tomorrow'"],
    ['/courses', "courseCode='a' XOR title='b'"]
  ] as const) {
    refused(t, await get(app, `${path}?filter=${encodeURIComponent(filter)}`, c.admin), 400, 'invalid_filter_field', `${path} filter ${filter}`)
  }
})

t.test('sort, orderBy, fields and paging by offset', async (t) => {
  const app = await build(t)
  const c = await calendar(app)
  t.same(ids(await get(app, '/academicSessions?sort=startDate&orderBy=desc&limit=3', c.admin)), ['gp-3', 't-spring', 'gp-2'], 'by startDate, descending')
  t.same(ids(await get(app, '/terms?sort=title', c.admin)), ['t-fall', 't-spring'])
  t.same(ids(await get(app, '/courses?sort=courseCode&orderBy=desc', c.admin), 'courses'), ['c-bio', 'c-alg', 'c-art'])
  t.same(ids(await get(app, '/academicSessions?sort=sourcedId&limit=2', c.admin)), ['gp-1', 'gp-2'])
  t.same(ids(await get(app, '/academicSessions?sort=parent&filter=' + encodeURIComponent("type='gradingPeriod'") + '&orderBy=desc', c.admin)), ['gp-3', 'gp-2', 'gp-1'], 'by the parent\'s sourcedId, then (descending too) by creation')
  t.same(Object.keys((await get(app, '/academicSessions?fields=sourcedId,parent&sort=sourcedId&limit=1', c.admin)).body.academicSessions[0]), ['sourcedId', 'parent'], 'fields: only those asked')
  t.same((await get(app, '/courses/c-alg?fields=title,org', c.admin)).body.course, { title: 'Algebra I', org: { href: `http://localhost${BASE}/orgs/${c.schoolId}`, sourcedId: c.schoolId, type: 'org' } })
  refused(t, await get(app, '/academicSessions?fields=sourcedId,org', c.admin), 400, 'invalid_selection_field', 'AcademicSessionDType has no org')
  refused(t, await get(app, '/courses/c-alg?fields=resources', c.admin), 400, 'invalid_selection_field', 'resources are not kept')
  refused(t, await get(app, '/courses?sort=shoeSize', c.admin), 400, 'invalid_filter_field', 'sort on an unknown field')
  refused(t, await get(app, '/terms?orderBy=sideways', c.admin), 400, 'invaliddata', 'a bad orderBy')
  refused(t, await get(app, '/terms/t-fall/gradingPeriods?limit=0', c.admin), 400, 'invaliddata', 'a bad limit on a nested path, before the term is looked up')

  const seen: string[] = []
  let url: string | undefined = '/academicSessions?limit=2&sort=startDate'
  while (url !== undefined) {
    const res = await get(app, url, c.admin)
    t.equal(res.headers['x-total-count'], '7')
    seen.push(...ids(res))
    const next = /<([^>]+)>; rel="next"/.exec(String(res.headers.link))?.[1]
    url = next === undefined ? undefined : new URL(next).pathname.slice(BASE.length) + new URL(next).search
  }
  t.same(seen.sort(), SESSIONS.map(([id]) => id!).sort(), 'a walk by Link: every session once')
  const past = await get(app, '/courses?offset=10', c.admin)
  t.same(past.body, { courses: [] }, 'an offset past the end: an empty page')
  t.equal(past.headers['x-total-count'], '3')
  t.same((await get(app, '/terms/t-fall/gradingPeriods?offset=5', c.admin)).body, { academicSessions: [] })
})

t.test('a delta by dateLastModified: what a later import changed', async (t) => {
  const app = await build(t)
  const c = await calendar(app)
  const courses = (await get(app, '/courses', c.admin)).body.courses as Array<{ dateLastModified: string }>
  const sessions = (await get(app, '/academicSessions', c.admin)).body.academicSessions as Array<{ dateLastModified: string }>
  const since = [...courses, ...sessions].map((record) => record.dateLastModified).sort().at(-1)!
  const filter = 'filter=' + encodeURIComponent(`dateLastModified>'${since}'`)
  t.same((await get(app, `/courses?${filter}`, c.admin)).body.courses, [], 'nothing changed since the last record\'s time')
  // The same bundle with one course's title changed: that course alone is written again.
  await importCalendar(await testDatabase(), c.schoolId, calendarBundle(SESSIONS, COURSES.map((row) => row[0] === 'c-bio' ? row.with(4, 'Biology II') : row)))
  const delta = await get(app, `/courses?${filter}`, c.admin)
  t.same(delta.body.courses.map((course: { sourcedId: string, title: string }) => [course.sourcedId, course.title]), [['c-bio', 'Biology II']], 'the course the import changed')
  t.same((await get(app, `/academicSessions?${filter}`, c.admin)).body.academicSessions, [], 'no session changed')
})

t.test('a course without a code is sent without courseCode, the one field 1EdTech\'s schema requires that the export may lack', async (t) => {
  const app = await build(t)
  const c = await calendar(app, [['c-none', '', '', '', 'Homeroom', '', '', 'org-1', '', '']])
  const res = await app.inject({ method: 'GET', url: `${BASE}/courses/c-none`, headers: { authorization: `Bearer ${c.admin}` } })
  t.same(res.json().course.title, 'Homeroom')
  t.notOk('courseCode' in res.json().course, 'no code invented')
  t.same(validateAnswer({ method: 'GET', path: `${BASE}/courses/c-none`, status: res.statusCode, headers: res.headers, body: res.json() }),
    [`GET ${BASE}/courses/c-none 200: /course lacks the required property "courseCode"`], 'the departure docs/api/oneroster.md names, and no other')
})

t.test('the rate limits apply to these routes too: 429 server_busy with Retry-After', async (t) => {
  const app = await build(t, { rateLimitUserPerMinute: 2 })
  const c = await calendar(app)
  t.equal((await get(app, '/terms', c.admin)).statusCode, 200)
  t.equal((await get(app, '/courses/c-alg', c.admin)).statusCode, 200)
  const res = await get(app, '/terms/t-fall/gradingPeriods', c.admin)
  refused(t, res, 429, 'server_busy', 'over the limit')
  t.ok(Number(res.headers['retry-after']) >= 1, 'Retry-After')
})

t.test('every answer of this file validates against the OpenAPI description (src/oneroster/openapi.ts)', async (t) => {
  t.ok(answers.count() > 100, `${answers.count()} answers`)
  t.same(invalid, [], 'collections, single records, nested paths and refusals')
})
