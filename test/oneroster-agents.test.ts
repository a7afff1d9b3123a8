// A student's agents (guardians, parents, relatives: the data model's agents, kept by the
// OneRoster import) over REST: /users lists them with their role and finds them by sourcedId; a
// student's `agents` are her agents' references, an agent's her students'; their contact fields
// need roster.readonly as every user's; filter, sort and paging merge them with the students and
// teachers; a teacher reads none of them (docs/decisions.md "A student's agents"); every answer
// validated against the served OpenAPI description.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { createClassroomAssignment } from './fixtures.js'
import { build, testDatabase, unique } from './helper.js'
import { schoolCallers, type SchoolCallers } from './oneroster/callers.js'
import { type Answer, checkedAnswers, refused } from './oneroster/answers.js'
import { auditRows } from './fixtures/audit.js'

interface School extends SchoolCallers { schoolId: string, students: Record<string, string> }

/**
 * A school of two students (s-1 in Room 1, s-2 in Room 2), a teacher tea-1 of Room 1, a guardian
 * g-1 of both students and an inactive parent p-1 of s-1.
 */
async function school (app: FastifyInstance): Promise<School> {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Agents School'))
  const students: Record<string, string> = {}
  students['s-1'] = await createStudent(db, { schoolId, fullName: 'Ada One', givenName: 'Ada', familyName: 'One', sourcedId: 's-1', classroom: 'Room 1' })
  students['s-2'] = await createStudent(db, { schoolId, fullName: 'Ben Two', givenName: 'Ben', familyName: 'Two', sourcedId: 's-2', classroom: 'Room 2' })
  const teacherId = await createTeacher(db, { schoolId, fullName: 'Mary Teach', givenName: 'Mary', familyName: 'Teach', sourcedId: 'tea-1' })
  await createClassroomAssignment(db, schoolId, teacherId, 'Room 1')
  const tenant = db.forSchool(schoolId)
  await tenant.agent.create({
    data: {
      schoolId,
      sourcedId: 'g-1',
      role: 'guardian',
      givenName: 'Gia',
      familyName: 'Guard',
      email: 'gia@example.org',
      phone: '555-0100',
      userIds: ['Family:F-1'],
      studentIds: [students['s-1'], students['s-2']]
    }
  })
  await tenant.agent.create({ data: { schoolId, sourcedId: 'p-1', role: 'parent', givenName: 'Pia', familyName: 'Parent', status: 'INACTIVE', studentIds: [students['s-1']] } })
  return { schoolId, students, ...await schoolCallers(app, db, schoolId, teacherId, 'agents') }
}

/** Every answer of this file is validated against the service's OpenAPI description. */
const answers = checkedAnswers()
const { get, invalid } = answers

const ids = (res: Answer): string[] => (res.body.users as Array<{ sourcedId: string }>).map((user) => user.sourcedId)
const refs = (user: { agents?: Array<{ sourcedId: string, type: string, href: string }> }): string[] | undefined => user.agents?.map((ref) => `${ref.type} ${ref.sourcedId}`)
const filter = (text: string): string => `filter=${encodeURIComponent(text)}`

t.test('an administrator reads the agents among the users, with their role and their students', async (t) => {
  const app = await build(t)
  const s = await school(app)

  const all = await get(app, '/users?sort=sourcedId', s.admin)
  t.equal(all.statusCode, 200)
  t.same(ids(all), ['g-1', 'p-1', 's-1', 's-2', 'tea-1'], 'students, teachers and agents')
  t.equal(all.headers['x-total-count'], '5')

  const guardian = (await get(app, '/users/g-1', s.admin)).body.user
  t.same(guardian, {
    sourcedId: 'g-1',
    status: 'active',
    dateLastModified: guardian.dateLastModified,
    userIds: [{ type: 'Family', identifier: 'F-1' }],
    enabledUser: 'true',
    givenName: 'Gia',
    familyName: 'Guard',
    roles: [{ roleType: 'primary', role: 'guardian', org: guardian.roles[0].org }],
    primaryOrg: guardian.primaryOrg,
    email: 'gia@example.org',
    phone: '555-0100',
    agents: guardian.agents
  }, "an agent as UserDType: its role is the file's, no identifier nor grades")
  t.same(refs(guardian), ['user s-1', 'user s-2'], "a guardian's agents are her students")
  t.match(guardian.agents[0].href, /\/ims\/oneroster\/rostering\/v1p2\/users\/s-1$/)
  t.equal(guardian.roles[0].org.sourcedId, s.schoolId)
  t.equal((await get(app, '/users/p-1', s.admin)).body.user.enabledUser, 'false')

  t.same(refs((await get(app, '/users/s-1', s.admin)).body.user), ['user g-1', 'user p-1'], "a student's agents are her guardian and parent")
  t.same(refs((await get(app, '/students/s-2', s.admin)).body.user), ['user g-1'])
  t.equal((await get(app, '/teachers/tea-1', s.admin)).body.user.agents, undefined, 'a teacher has none')

  t.same(ids(await get(app, '/students?sort=sourcedId', s.admin)), ['s-1', 's-2'], 'the students are not the agents')
  refused(t, await get(app, '/students/g-1', s.admin), 404, 'unknownobject', 'an agent is no student')
  refused(t, await get(app, '/teachers/g-1', s.admin), 404, 'unknownobject', 'an agent is no teacher')

  // A student deleted (GraphQL, the command line) leaves her id in her agents' lists: no answer names her.
  const db = await testDatabase()
  await db.forSchool(s.schoolId).student.deleteMany({ where: { schoolId: s.schoolId, id: s.students['s-2']! } })
  t.same(refs((await get(app, '/users/g-1', s.admin)).body.user), ['user s-1'], 'the guardian\'s students are those the school holds')
})

t.test('filter, sort, fields and paging merge the agents with the other users', async (t) => {
  const app = await build(t)
  const s = await school(app)

  t.same(ids(await get(app, `/users?${filter("roles.role='guardian'")}`, s.admin)), ['g-1'])
  t.same(ids(await get(app, `/users?${filter("roles.role='parent' OR roles.role='teacher'")}&sort=sourcedId`, s.admin)), ['p-1', 'tea-1'])
  t.same(ids(await get(app, `/users?${filter("enabledUser='false'")}`, s.admin)), ['p-1'])
  t.same(ids(await get(app, `/users?${filter("familyName~'par'")}`, s.admin)), ['p-1'])
  t.same(ids(await get(app, '/users?sort=familyName', s.admin)), ['g-1', 's-1', 'p-1', 'tea-1', 's-2'], 'Guard, One, Parent, Teach, Two')

  const first = await get(app, '/users?sort=givenName&limit=2', s.admin)
  t.same(ids(first), ['s-1', 's-2'], 'Ada, Ben')
  t.equal(first.headers['x-total-count'], '5')
  const second = await get(app, '/users?sort=givenName&limit=2&offset=2', s.admin)
  t.same(ids(second), ['g-1', 'tea-1'], 'Gia, Mary')
  t.same(ids(await get(app, '/users?sort=givenName&limit=2&offset=4', s.admin)), ['p-1'], 'Pia')

  const selected = (await get(app, '/users/g-1?fields=sourcedId,agents', s.admin)).body.user
  t.same(Object.keys(selected), ['sourcedId', 'agents'], 'fields selects agents')
  t.match(selected.agents, [{ href: /\/users\/s-1$/, sourcedId: 's-1', type: 'user' }, { href: /\/users\/s-2$/, sourcedId: 's-2', type: 'user' }])
  refused(t, await get(app, `/users?${filter("agents='s-1'")}`, s.admin), 400, 'invalid_filter_field', 'agents is not filtered by')
})

t.test('scopes: roster-core.readonly reads the agents without their contacts; roster.readonly with them', async (t) => {
  const app = await build(t)
  const s = await school(app)

  const core = (await get(app, '/users/g-1', s.core)).body.user
  t.equal(core.givenName, 'Gia')
  t.same(refs(core), ['user s-1', 'user s-2'], 'the references are core')
  t.equal(core.email, undefined)
  t.equal(core.phone, undefined)
  t.equal(core.userIds, undefined)
  refused(t, await get(app, '/users/g-1?fields=email', s.core), 403, 'forbidden', 'core: email')
  refused(t, await get(app, `/users?${filter("email='gia@example.org'")}`, s.core), 403, 'forbidden', 'core: a filter on email')

  const full = (await get(app, '/users/g-1', s.full)).body.user
  t.same([full.email, full.phone], ['gia@example.org', '555-0100'])
  t.same(ids(await get(app, `/users?${filter("email='gia@example.org'")}`, s.full)), ['g-1'])
})

t.test("a teacher reads no agent: not listed, not found, not among her students' fields", async (t) => {
  const app = await build(t)
  const s = await school(app)

  t.same(ids(await get(app, '/users?sort=sourcedId', s.teacher)), ['s-1', 'tea-1'], 'her classroom\'s student and herself')
  t.equal((await get(app, '/users', s.teacher)).headers['x-total-count'], '2')
  refused(t, await get(app, '/users/g-1', s.teacher), 404, 'unknownobject', 'an agent of her own student')
  t.same(ids(await get(app, `/users?${filter("roles.role='guardian'")}`, s.teacher)), [])
  const student = (await get(app, '/users/s-1', s.teacher)).body.user
  t.equal(student.givenName, 'Ada')
  t.equal(student.agents, undefined, "her student's agents are not hers to read")
})

t.test("an agent deleted is tobedeleted in /users' deltas (its role and names as they were), not a teacher's; imported again, live", async (t) => {
  const app = await build(t)
  const s = await school(app)
  const tenant = (await testDatabase()).forSchool(s.schoolId)
  const before = (await get(app, '/users/g-1', s.admin)).body.user.dateLastModified as string
  await tenant.agent.delete({ where: { schoolId_sourcedId: { schoolId: s.schoolId, sourcedId: 'g-1' } } })

  const since = filter(`dateLastModified>='${before}'`)
  const delta = await get(app, `/users?${since}&sort=sourcedId`, s.admin)
  const deleted = (delta.body.users as Array<Record<string, unknown>>).find((user) => user.sourcedId === 'g-1')
  t.same(deleted, {
    sourcedId: 'g-1',
    status: 'tobedeleted',
    dateLastModified: deleted?.dateLastModified,
    enabledUser: 'true',
    givenName: 'Gia',
    familyName: 'Guard',
    roles: [{ roleType: 'primary', role: 'guardian', org: (deleted?.roles as Array<{ org: unknown }> | undefined)?.[0]?.org }],
    primaryOrg: deleted?.primaryOrg
  }, 'what UserDType requires, as it was; no contact, no agents')
  t.ok(Date.parse(deleted?.dateLastModified as string) >= Date.parse(before), 'dated by its deletion')
  t.equal(delta.headers['x-total-count'], String(delta.body.users.length), 'counted with the live records')
  t.same(ids(await get(app, `/users?${since} AND ${filter("roles.role='guardian'").slice('filter='.length)}`, s.admin)), ['g-1'], 'a filter on its role')
  t.same(ids(await get(app, `/users?${since} AND ${filter("status='tobedeleted'").slice('filter='.length)}`, s.admin)), ['g-1'], 'the deletions alone')
  t.same(ids(await get(app, `/users?${filter("status='tobedeleted'")}`, s.admin)), [], 'no deletion without a lower bound of dateLastModified')
  t.notOk(ids(await get(app, `/students?${since}`, s.admin)).includes('g-1'), 'not a student')
  t.notOk(ids(await get(app, `/users?${since}`, s.teacher)).includes('g-1'), 'a teacher reads no agent, deleted or not')
  t.same(ids(await get(app, `/users?${since} AND ${filter("status='tobedeleted'").slice('filter='.length)}`, s.core)), ['g-1'], 'a core client too')

  await tenant.agent.create({ data: { schoolId: s.schoolId, sourcedId: 'g-1', role: 'guardian', givenName: 'Gia', familyName: 'Guard', studentIds: [s.students['s-1']!] } })
  const again = (await get(app, `/users?${since}`, s.admin)).body.users as Array<Record<string, unknown>>
  t.same(again.filter((user) => user.sourcedId === 'g-1').map((user) => user.status), ['active'], 'imported again: live, no deletion')
})

t.test('reads of agents are written to the access audit (record type Agent)', async (t) => {
  const app = await build(t)
  const s = await school(app)
  t.equal((await get(app, `/users?${filter("roles.role='guardian' OR roles.role='parent'")}`, s.admin)).statusCode, 200)
  await app.audit.flush()
  t.match(await auditRows(await testDatabase(), s.schoolId), [{ operation: 'getAllUsers', record_type: 'Agent', record_count: 2, action: 'read' }], 'the two agents handed over')
})

t.test('every answer of this file validates against the OpenAPI description (src/oneroster/openapi.ts)', async (t) => {
  t.ok(answers.count() > 20, `${answers.count()} answers`)
  t.same(invalid, [], 'collections, single records and refusals')
})
