// OneRoster 1.2's rostering REST binding (src/oneroster/): every endpoint of the slice for an
// administrator, a teacher and roster-core.readonly / roster.readonly clients; the filter grammar;
// sort, fields and paging by offset with X-Total-Count and Link; every refusal in imsx_StatusInfo;
// the rate limits and the access audit of the GraphQL endpoint on these routes too.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { createClassroomAssignment } from './fixtures.js'
import { clientToken, seedClient } from './fixtures/oauth.js'
import { build, login, PASSWORD, testDatabase, unique } from './helper.js'
import { type Answer, answeredByScope, BASE, checkedAnswers, type Endpoint, refused } from './oneroster/answers.js'
import { DESCRIPTION_PATH, oneRosterDescription } from '../src/oneroster/openapi.js'
import { auditRows } from './fixtures/audit.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

interface Roster {
  schoolId: string
  admin: string
  teacher: string
  core: string
  full: string
  demographics: string
  /** Student ids by sourcedId ('' for the one entered by hand, whose sourcedId is its id). */
  students: Record<string, string>
  teachers: Record<string, string>
}

/**
 * A school: five students (one without a sourcedId, one whose sourcedId has a quote), two teachers;
 * the teacher login (tea-001) teaches Rooms 1 and 2, so reaches stu-001..003 and herself.
 */
async function roster (app: FastifyInstance): Promise<Roster> {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('OneRoster School'))
  const students: Record<string, string> = {}
  const add = async (sourcedId: string, fullName: string, fields: Record<string, string>, classroom: string): Promise<void> => {
    students[sourcedId] = await createStudent(db, { schoolId, fullName, classroom, ...(sourcedId === '' ? {} : { sourcedId }), ...fields })
  }
  await add('stu-001', 'Ada Lovelace', { givenName: 'Ada', familyName: 'Lovelace', gradeLevel: '03', email: 'ada@example.org', studentNumber: 'N1', preferredName: 'Countess' }, 'Room 1')
  await add('stu-002', 'Alan Turing', { givenName: 'Alan', familyName: 'Turing', gradeLevel: '04', studentNumber: 'N2', status: 'INACTIVE' }, 'Room 1')
  await add('stu-003', 'Grace Hopper', { givenName: 'Grace', familyName: 'Hopper', gradeLevel: 'KG', email: 'grace@example.org' }, 'Room 2')
  await add('', 'Edsger Dijkstra', { givenName: 'Edsger', familyName: 'Dijkstra' }, 'Room 3')
  await add("stu-o'brien", "Conan O'Brien", { givenName: 'Conan', familyName: "O'Brien" }, 'Room 3')
  const teachers: Record<string, string> = {}
  teachers['tea-001'] = await createTeacher(db, { schoolId, fullName: 'Ms Same', givenName: 'Mary', familyName: 'Same', sourcedId: 'tea-001', email: 'mary@example.org' })
  teachers['tea-002'] = await createTeacher(db, { schoolId, fullName: 'Mr Other', givenName: 'Otto', familyName: 'Other', sourcedId: 'tea-002' })
  await createClassroomAssignment(db, schoolId, teachers['tea-001'], 'Room 1')
  await createClassroomAssignment(db, schoolId, teachers['tea-001'], 'Room 2')
  await createClassroomAssignment(db, schoolId, teachers['tea-002'], 'Room 3')
  const adminName = unique('or-admin')
  await createUser(db, { username: adminName, password: PASSWORD, schoolId })
  const teacherName = unique('or-teacher')
  await createUser(db, { username: teacherName, password: PASSWORD, schoolId })
  await db.prisma.user.update({ where: { username: teacherName }, data: { role: 'TEACHER', teacherId: teachers['tea-001'] } })
  return {
    schoolId,
    admin: (await login(app, adminName)).accessToken,
    teacher: (await login(app, teacherName)).accessToken,
    core: await clientToken(app, await seedClient(schoolId, ['roster-core.readonly'])),
    full: await clientToken(app, await seedClient(schoolId, ['roster.readonly'])),
    demographics: await clientToken(app, await seedClient(schoolId, ['roster-demographics.readonly'])),
    students,
    teachers
  }
}

/** Every answer of this file is validated against the service's OpenAPI description. */
const answers = checkedAnswers((path) => path.startsWith('/lineItems'))
const { get, invalid } = answers

/** The sourcedIds of a collection's users, in order. */
const ids = (res: Answer): string[] => (res.body.users as Array<{ sourcedId: string }>).map((user) => user.sourcedId)

t.test('an administrator reads every endpoint of the slice in the binding\'s envelopes and fields', async (t) => {
  const app = await build(t)
  const r = await roster(app)
  const handEntered = r.students['']!

  const users = await get(app, '/users', r.admin)
  t.equal(users.statusCode, 200)
  t.equal(users.headers['x-total-count'], '7', 'X-Total-Count: five students and two teachers')
  t.same(ids(users).sort(), [...Object.keys(r.students).filter((k) => k !== ''), handEntered, 'tea-001', 'tea-002'].sort(), 'a record without a sourcedId answers its id')

  const ada = (await get(app, '/students/stu-001', r.admin)).body.user
  t.same(ada, {
    sourcedId: 'stu-001',
    status: 'active',
    dateLastModified: ada.dateLastModified,
    enabledUser: 'true',
    givenName: 'Ada',
    familyName: 'Lovelace',
    preferredFirstName: 'Countess',
    roles: [{ roleType: 'primary', role: 'student', org: { href: `http://localhost${BASE}/orgs/${r.schoolId}`, sourcedId: r.schoolId, type: 'org' } }],
    primaryOrg: { href: `http://localhost${BASE}/orgs/${r.schoolId}`, sourcedId: r.schoolId, type: 'org' },
    identifier: 'N1',
    email: 'ada@example.org',
    grades: ['03']
  }, 'a student: the fields the model holds, nothing else')
  t.match(ada.dateLastModified, ISO_MS, 'dateLastModified: ISO 8601 with milliseconds, UTC')
  t.equal((await get(app, '/students/stu-002', r.admin)).body.user.enabledUser, 'false', 'an INACTIVE student is not enabled')
  t.same((await get(app, '/users/stu-003', r.admin)).body.user.grades, ['KG'], 'grades as CEDS codes')

  const mary = (await get(app, '/teachers/tea-001', r.admin)).body.user
  t.match(mary, { sourcedId: 'tea-001', roles: [{ role: 'teacher', roleType: 'primary' }], email: 'mary@example.org', enabledUser: 'true' })
  t.notOk('grades' in mary || 'identifier' in mary, 'a teacher has no grades or identifier in the model: left out')
  t.equal((await get(app, '/users/tea-002', r.admin)).body.user.familyName, 'Other', '/users/{sourcedId} finds a teacher')
  t.equal((await get(app, `/users/${handEntered}`, r.admin)).body.user.givenName, 'Edsger', 'and a record without a sourcedId by its id')
  t.equal((await get(app, `/users/${encodeURIComponent("stu-o'brien")}`, r.admin)).body.user.familyName, "O'Brien")

  t.equal((await get(app, '/students', r.admin)).headers['x-total-count'], '5')
  t.equal((await get(app, '/teachers', r.admin)).headers['x-total-count'], '2')
  t.equal((await get(app, `/schools/${r.schoolId}/students`, r.admin)).body.users.length, 5)
  t.same(ids(await get(app, `/schools/${r.schoolId}/teachers`, r.admin)), ['tea-001', 'tea-002'])

  for (const path of ['/orgs', '/schools']) {
    const orgs = await get(app, path, r.admin)
    t.equal(orgs.headers['x-total-count'], '1')
    t.match(orgs.body, { orgs: [{ sourcedId: r.schoolId, status: 'active', type: 'school', identifier: r.schoolId, name: /OneRoster School/ }] }, `${path}: the school as an org`)
    t.match(orgs.body.orgs[0].dateLastModified, ISO_MS)
  }
  t.equal((await get(app, `/orgs/${r.schoolId}`, r.admin)).body.org.type, 'school')
  t.equal((await get(app, `/schools/${r.schoolId}`, r.admin)).body.org.sourcedId, r.schoolId)

  refused(t, await get(app, '/users/nobody', r.admin), 404, 'unknownobject', 'an unknown user')
  refused(t, await get(app, '/students/tea-001', r.admin), 404, 'unknownobject', 'a teacher is not a student')
  refused(t, await get(app, '/teachers/stu-001', r.admin), 404, 'unknownobject', 'a student is not a teacher')
  refused(t, await get(app, '/orgs/another', r.admin), 404, 'unknownobject', 'another org')
  refused(t, await get(app, '/schools/another/students', r.admin), 404, 'unknownobject', 'another school\'s students')
  refused(t, await get(app, '/lineItems', r.admin), 404, 'unknownobject', 'an endpoint of another service (gradebook)')
})

t.test('a teacher reads what the GraphQL API lets her read: her classrooms\' students, herself', async (t) => {
  const app = await build(t)
  const r = await roster(app)
  const users = await get(app, '/users', r.teacher)
  t.same(ids(users).sort(), ['stu-001', 'stu-002', 'stu-003', 'tea-001'])
  t.equal(users.headers['x-total-count'], '4', 'the total counts her reach only')
  t.same(ids(await get(app, '/students?filter=' + encodeURIComponent("familyName~'o'"), r.teacher)).sort(), ['stu-001', 'stu-003'], 'a filter inside her reach')
  refused(t, await get(app, "/students/stu-o'brien", r.teacher), 404, 'unknownobject', 'a student outside her reach')
  refused(t, await get(app, '/teachers/tea-002', r.teacher), 404, 'unknownobject', 'a teacher outside her reach')
  t.equal((await get(app, '/orgs', r.teacher)).body.orgs.length, 1, 'her school')
  t.equal((await get(app, '/students/stu-001', r.teacher)).body.user.email, 'ada@example.org', 'a teacher holds roster.readonly')
})

t.test('clients: roster-core.readonly never sees a field outside its scope; roster.readonly does; another scope is refused', async (t) => {
  const app = await build(t)
  const r = await roster(app)
  const core = (await get(app, '/students/stu-001', r.core)).body.user
  t.notOk('email' in core || 'identifier' in core, 'core: no email or identifier (student number)')
  t.equal(core.givenName, 'Ada')
  t.equal((await get(app, '/users', r.core)).body.users.length, 7)
  t.ok((await get(app, '/users', r.core)).body.users.every((user: Record<string, unknown>) => !('email' in user)), 'no email in a collection either')
  refused(t, await get(app, '/users?fields=sourcedId,email', r.core), 403, 'forbidden', 'core: fields naming email')
  refused(t, await get(app, '/users?filter=' + encodeURIComponent("email~'example'"), r.core), 403, 'forbidden', 'core: a filter on email')
  refused(t, await get(app, '/students?sort=identifier', r.core), 403, 'forbidden', 'core: a sort on identifier')
  const full = (await get(app, '/students/stu-001', r.full)).body.user
  t.equal(full.email, 'ada@example.org')
  t.equal(full.identifier, 'N1')
  t.equal((await get(app, '/orgs', r.full)).statusCode, 200)
  for (const path of ['/users', '/students/stu-001', '/orgs', `/schools/${r.schoolId}/teachers`]) {
    refused(t, await get(app, path, r.demographics), 403, 'forbidden', `roster-demographics.readonly alone: ${path}`)
  }
})

t.test("users.csv's fields beyond the names: middle and preferred names and pronouns (core), username, userIds, sms and phone (roster.readonly)", async (t) => {
  const app = await build(t)
  const r = await roster(app)
  const db = await testDatabase()
  const details = { middleName: 'Augusta', preferredMiddleName: 'Gus', preferredLastName: 'King', pronouns: 'she/her', username: 'ada', userIds: ['Fed:1234', 'State:NY:1'], sms: '+15550001', phone: '555-0001' }
  await db.forSchool(r.schoolId).student.updateMany({ where: { sourcedId: 'stu-001' }, data: details })
  await db.forSchool(r.schoolId).teacher.updateMany({ where: { sourcedId: 'tea-001' }, data: { username: 'mary', phone: '555-0101' } })

  const full = (await get(app, '/users/stu-001', r.full)).body.user
  t.same(Object.keys(full), ['sourcedId', 'status', 'dateLastModified', 'username', 'userIds', 'enabledUser', 'givenName', 'familyName', 'middleName', 'preferredFirstName',
    'preferredMiddleName', 'preferredLastName', 'pronouns', 'roles', 'primaryOrg', 'identifier', 'email', 'sms', 'phone', 'grades'], "in UserDType's order")
  t.match(full, { ...details, userIds: [{ type: 'Fed', identifier: '1234' }, { type: 'State', identifier: 'NY:1' }] }, 'each as kept; an identifier keeps its colons')
  t.match((await get(app, '/teachers/tea-001', r.full)).body.user, { username: 'mary', phone: '555-0101' })
  const teacher = (await get(app, '/teachers/tea-001', r.full)).body.user
  t.notOk('userIds' in teacher || 'sms' in teacher || 'middleName' in teacher, 'a field without a value is left out, never filled in')

  const core = (await get(app, '/users/stu-001', r.core)).body.user
  t.match(core, { middleName: 'Augusta', preferredMiddleName: 'Gus', preferredLastName: 'King', pronouns: 'she/her' }, 'the names are the core')
  t.notOk(['username', 'userIds', 'sms', 'phone'].some((field) => field in core), 'core: no username, userIds, sms or phone')
  for (const field of ['username', 'userIds', 'sms', 'phone']) {
    refused(t, await get(app, `/users?fields=sourcedId,${field}`, r.core), 403, 'forbidden', `core: fields naming ${field}`)
  }
  refused(t, await get(app, '/users?filter=' + encodeURIComponent("phone='555-0001'"), r.core), 403, 'forbidden', 'core: a filter on phone')
  t.same(ids(await get(app, '/users?filter=' + encodeURIComponent("phone~'555'") + '&sort=sourcedId', r.full)), ['stu-001', 'tea-001'], 'a filter on phone')
  t.same(ids(await get(app, '/users?filter=' + encodeURIComponent("middleName='Augusta'"), r.core)), ['stu-001'], 'a filter on middleName')
  refused(t, await get(app, '/users?filter=' + encodeURIComponent("userIds='Fed:1234'"), r.full), 400, 'invalid_filter_field', 'userIds is not filtered by')
})

t.test('every endpoint answers every caller with its scope (1EdTech\'s: a school\'s students and teachers need roster.readonly), and no other', async (t) => {
  const app = await build(t)
  const r = await roster(app)
  const endpoints: Endpoint[] = [
    ['/orgs', 'orgs', false], ['/schools', 'orgs', false], [`/orgs/${r.schoolId}`, 'org', false], [`/schools/${r.schoolId}`, 'org', false],
    ['/users', 'users', false], ['/students', 'users', false], ['/teachers', 'users', false],
    ['/users/stu-001', 'user', false], ['/students/stu-002', 'user', false], ['/teachers/tea-001', 'user', false],
    [`/schools/${r.schoolId}/students`, 'users', true], [`/schools/${r.schoolId}/teachers`, 'users', true]
  ]
  await answeredByScope(t, answers, app, endpoints, r)
})

t.test('the OpenAPI description is served beside the binding, without a token', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: DESCRIPTION_PATH })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.same(res.json(), JSON.parse(JSON.stringify(oneRosterDescription)), 'the description of src/oneroster/openapi.ts')
})

t.test('without a valid access token: 401 unauthorisedrequest, WWW-Authenticate Bearer', async (t) => {
  const app = await build(t)
  for (const token of [undefined, 'not-a-token']) {
    const res = await get(app, '/users', token)
    refused(t, res, 401, 'unauthorisedrequest', token === undefined ? 'no token' : 'a bad token')
    t.equal(res.headers['www-authenticate'], 'Bearer')
  }
  refused(t, await get(app, '/orgs/x'), 401, 'unauthorisedrequest', 'a single record')
})

t.test('the filter grammar: every operator, AND and OR, quoting, dotted paths, dates', async (t) => {
  const app = await build(t)
  const r = await roster(app)
  const students = async (filter: string): Promise<string[]> => {
    const res = await get(app, '/users?filter=' + encodeURIComponent(filter), r.admin)
    t.equal(res.statusCode, 200, filter)
    return ids(res).sort()
  }
  t.same(await students("familyName='Lovelace'"), ['stu-001'], '=')
  t.same((await students("roles.role='student' AND familyName!='Lovelace'")).length, 4, '!= and AND')
  t.same(await students("sourcedId>'stu-002' AND sourcedId<='stu-o'"), ['stu-003'], '> and <=')
  t.same(await students("sourcedId>='tea-002'"), ['tea-002'], '>=')
  t.same(await students("sourcedId<'stu-002' AND sourcedId>'s'"), ['stu-001'], '<')
  t.same(await students("familyName~'O'"), ['stu-001', 'stu-003', "stu-o'brien", 'tea-002'], '~ contains, ignoring case')
  t.same(await students("familyName='Lovelace' OR familyName='Other'"), ['stu-001', 'tea-002'], 'OR')
  t.same(await students("familyName='Hopper' OR familyName='Turing' AND enabledUser='true'"), ['stu-003'], 'AND binds tighter than OR')
  t.same(await students("familyName='O''Brien'"), ["stu-o'brien"], 'a quote doubled in a value')
  t.same(await students("roles.role='teacher'"), ['tea-001', 'tea-002'], 'a dotted path: roles.role')
  t.same((await students(`roles.org.sourcedId='${r.schoolId}'`)).length, 7, 'roles.org.sourcedId')
  t.same(await students("enabledUser='false'"), ['stu-002'], 'enabledUser')
  t.same(await students("grades='KG'"), ['stu-003'], 'grades by CEDS code')
  t.same(await students("identifier='N2'"), ['stu-002'], 'identifier: the student number')
  t.same(await students("status='tobedeleted'"), [], 'status: every record held is active')
  t.same((await students("dateLastModified>'2000-01-01T00:00:00Z'")).length, 7, 'a delta from long ago: everything')
  t.same(await students(`dateLastModified>'${new Date(Date.now() + 3_600_000).toISOString()}'`), [], 'a delta from the future: nothing')
  t.same(await students("givenName~'x' OR sourcedId='stu-001'"), ['stu-001'], '~ that holds for none, OR one that holds')

  for (const [filter, code] of [
    ["shoeSize='42'", 'invalid_filter_field'],
    ["familyName='unclosed", 'invalid_filter_field'],
    ['familyName=Lovelace', 'invalid_filter_field'],
    ["familyName='a' XOR givenName='b'", 'invalid_filter_field'],
    ["dateLastModified>'yesterday'", 'invalid_filter_field'],
    ["enabledUser>'true'", 'invalid_filter_field']
  ] as const) {
    refused(t, await get(app, '/users?filter=' + encodeURIComponent(filter), r.admin), 400, code, `filter ${filter}`)
  }
  refused(t, await get(app, '/orgs?filter=' + encodeURIComponent("colour='blue'"), r.admin), 400, 'invalid_filter_field', 'an org filter on an unknown field')
  t.equal((await get(app, '/orgs?filter=' + encodeURIComponent("type='school' AND name~'oneroster'"), r.admin)).body.orgs.length, 1, 'an org filter that holds')
  t.equal((await get(app, '/orgs?filter=' + encodeURIComponent("type='district'"), r.admin)).body.orgs.length, 0, 'and one that does not')
})

t.test('sort, orderBy and fields', async (t) => {
  const app = await build(t)
  const r = await roster(app)
  const byFamily = await get(app, '/users?sort=familyName&orderBy=desc', r.admin)
  t.same(byFamily.body.users.map((u: { familyName: string }) => u.familyName), ['Turing', 'Same', 'Other', "O'Brien", 'Lovelace', 'Hopper', 'Dijkstra'], 'students and teachers merged in one order')
  t.same(ids(await get(app, '/students?sort=sourcedId&limit=2', r.admin)), [r.students['']!, 'stu-001'], 'a sourcedId that is an id sorts as its text')
  const fields = await get(app, '/users?fields=sourcedId,givenName&limit=1', r.admin)
  t.same(Object.keys(fields.body.users[0]), ['sourcedId', 'givenName'], 'fields: only those asked')
  t.same(Object.keys((await get(app, '/orgs?fields=name', r.admin)).body.orgs[0]), ['name'])
  t.same(Object.keys((await get(app, '/teachers/tea-001?fields=email', r.admin)).body.user), ['email'])
  refused(t, await get(app, '/users?fields=sourcedId,shoeSize', r.admin), 400, 'invalid_selection_field', 'fields naming an unknown field')
  refused(t, await get(app, '/users/stu-001?fields=birthDate', r.admin), 400, 'invalid_selection_field', 'a field the service does not answer')
  refused(t, await get(app, '/users?sort=shoeSize', r.admin), 400, 'invalid_filter_field', 'sort on an unknown field')
  refused(t, await get(app, '/users?orderBy=sideways', r.admin), 400, 'invaliddata', 'a bad orderBy')
})

t.test('paging by offset: X-Total-Count, Link first/prev/next/last, a walk by Link, bad limits', async (t) => {
  const app = await build(t)
  const r = await roster(app)
  const first = await get(app, '/users?limit=3&sort=familyName', r.admin)
  const links = String(first.headers.link)
  t.match(links, /<http:\/\/localhost\/ims\/oneroster\/rostering\/v1p2\/users\?limit=3&sort=familyName&offset=0>; rel="first"/)
  t.match(links, /offset=3>; rel="next"/)
  t.match(links, /offset=6>; rel="last"/)
  t.notMatch(links, /rel="prev"/, 'the first page has no prev')
  const middle = String((await get(app, '/users?limit=3&offset=3', r.admin)).headers.link)
  t.match(middle, /offset=0>; rel="prev"/)
  t.notMatch(String((await get(app, '/users?limit=3&offset=6', r.admin)).headers.link), /rel="next"/, 'the last page has no next')

  for (const path of ['/users?limit=2&sort=givenName', '/students?limit=2', '/users?limit=3&sort=dateLastModified&orderBy=desc']) {
    const seen: string[] = []
    let url: string | undefined = path
    while (url !== undefined) {
      const res = await get(app, url, r.admin)
      seen.push(...ids(res))
      const next = /<([^>]+)>; rel="next"/.exec(String(res.headers.link))?.[1]
      url = next === undefined ? undefined : new URL(next).pathname.slice(BASE.length) + new URL(next).search
    }
    t.equal(new Set(seen).size, seen.length, `${path}: no record twice`)
    t.equal(seen.length, path.startsWith('/students') ? 5 : 7, `${path}: every record`)
  }
  const past = await get(app, '/users?offset=100', r.admin)
  t.same(past.body, { users: [] }, 'an offset past the end: an empty page')
  t.equal(past.headers['x-total-count'], '7')
  for (const query of ['limit=0', 'limit=1001', 'limit=ten', 'offset=-1', 'offset=1.5', 'limit=1&limit=2']) {
    refused(t, await get(app, `/users?${query}`, r.admin), 400, 'invaliddata', query)
  }
  t.equal((await get(app, '/users?limit=1000', r.admin)).statusCode, 200, 'the maximum limit')
})

t.test('the rate limits of the GraphQL endpoint: 429 server_busy with Retry-After', async (t) => {
  const app = await build(t, { rateLimitUserPerMinute: 2 })
  const r = await roster(app)
  // roster() logged in twice (GraphQL requests of no user): the limit counts this user's requests only.
  t.equal((await get(app, '/orgs', r.admin)).statusCode, 200)
  t.equal((await get(app, '/users', r.admin)).statusCode, 200)
  const res = await get(app, '/users', r.admin)
  refused(t, res, 429, 'server_busy', 'over the limit')
  t.ok(Number(res.headers['retry-after']) >= 1, 'Retry-After')
})

t.test('the access audit records what these routes hand over, by operation', async (t) => {
  const app = await build(t)
  const r = await roster(app)
  t.equal((await get(app, '/users?limit=100', r.core)).statusCode, 200)
  t.equal((await get(app, '/students/stu-001', r.admin)).statusCode, 200)
  await app.audit.flush()
  // The two tables of /users are read at once: their rows in either order.
  const rows = (await auditRows(await testDatabase(), r.schoolId)).sort((a, b) => `${String(a.operation)} ${String(a.record_type)}`.localeCompare(`${String(b.operation)} ${String(b.record_type)}`))
  t.match(rows, [
    { operation: 'getAllUsers', record_type: 'Student', record_count: 5, action: 'read', user_id: null },
    { operation: 'getAllUsers', record_type: 'Teacher', record_count: 2, action: 'read', user_id: null },
    { operation: 'getStudent', record_type: 'Student', record_count: 1, action: 'read', client_id: null }
  ], 'the rows read, not the counts (X-Total-Count hands over no record)')
  t.equal(rows.length, 3)
})

t.test('every answer of this file validates against the OpenAPI description (src/oneroster/openapi.ts)', async (t) => {
  t.ok(answers.count() > 100, `${answers.count()} answers`)
  t.same(invalid, [], 'collections, single records, nested paths and refusals')
})
