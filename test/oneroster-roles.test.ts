// A user's roles in the school (issue 37: "users' roles"), as OneRoster 1.2's roles.csv gives them and
// the REST binding answers them (RoleDType): the primary role with its begin and end dates, the
// secondary roles in the school with theirs, rows of other orgs left out (`--org` says which org the
// school is; a file naming several is refused without it); a delta adds, changes and takes away
// roles by their sourcedId and moves the user's dateLastModified, for users the delta's users.csv
// does not hold too (students, teachers, agents); filters on roles.role and roles.roleType; bad rows
// refused with their line. Every answer validated against the served OpenAPI description. The same
// roles in GraphQL (`roles` of Student, Teacher and Contact).
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import type { Files } from './fixtures/csv-bundle.js'
import { importRoster } from './fixtures/roster-import.js'
import { build, gql, testDatabase, unique } from './helper.js'
import { schoolCallers, type SchoolCallers } from './oneroster/callers.js'
import { type Answer, checkedAnswers, refused } from './oneroster/answers.js'

const USERS = ['sourcedId', 'status', 'dateLastModified', 'enabledUser', 'username', 'givenName', 'familyName', 'agentSourcedIds', 'grades', 'primaryOrgSourcedId']
const ROLES = ['sourcedId', 'status', 'dateLastModified', 'userSourcedId', 'roleType', 'role', 'beginDate', 'endDate', 'orgSourcedId', 'userProfileSourcedId']

/** A student s-1 (and her guardian g-1), a teacher t-1 who is also the school's counselor and site administrator, and t-1's role at another school. */
function bundle (roles = ROLE_ROWS): Files {
  return {
    manifest: [['propertyName', 'value'], ['manifest.version', '1.0'], ['oneroster.version', '1.2'],
      ['file.users', 'bulk'], ['file.roles', 'bulk'], ['file.classes', 'absent'], ['file.enrollments', 'absent'], ['file.orgs', 'absent']],
    users: [USERS,
      ['s-1', '', '', 'true', 'ada', 'Ada', 'Lovelace', 'g-1', '03', 'org-1'],
      ['t-1', '', '', 'true', 'grace', 'Grace', 'Hopper', '', '', 'org-1'],
      ['g-1', '', '', 'true', 'pat', 'Pat', 'Lovelace', 's-1', '', 'org-1']],
    roles: [ROLES, ...roles]
  }
}

const ROLE_ROWS = [
  ['r-s1', '', '', 's-1', 'primary', 'student', '2026-09-01', '2027-06-30', 'org-1', ''],
  ['r-t1', '', '', 't-1', 'primary', 'teacher', '2020-08-15', '', 'org-1', ''],
  ['r-t1-c', '', '', 't-1', 'secondary', 'counselor', '2026-09-01', '2027-06-30', 'org-1', ''],
  ['r-t1-a', '', '', 't-1', 'secondary', 'SiteAdministrator', '', '', 'org-1', ''],
  // Grace teaches at another school of the district too: not a role in this school.
  ['r-t1-x', '', '', 't-1', 'secondary', 'teacher', '2026-09-01', '', 'org-2', ''],
  ['r-g1', '', '', 'g-1', 'primary', 'guardian', '', '', 'org-1', '']
]

/** A delta of roles.csv only (users.csv absent): what the SIS changed. */
function rolesDelta (rows: string[][]): Files {
  return {
    manifest: [['propertyName', 'value'], ['manifest.version', '1.0'], ['oneroster.version', '1.2'],
      ['file.users', 'absent'], ['file.roles', 'delta'], ['file.classes', 'absent'], ['file.enrollments', 'absent'], ['file.orgs', 'absent']],
    roles: [ROLES, ...rows]
  }
}

interface School extends SchoolCallers { schoolId: string }

async function school (app: FastifyInstance): Promise<School> {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Roles School'))
  await importRoster(db, schoolId, bundle(), { org: 'org-1' })
  const teacher = await db.forSchool(schoolId).teacher.findFirstOrThrow({ where: { sourcedId: 't-1' }, select: { id: true } })
  return { schoolId, ...await schoolCallers(app, db, schoolId, teacher.id, 'roles') }
}

const answers = checkedAnswers()
const { get, invalid } = answers

const ids = (res: Answer): string[] => (res.body.users as Array<{ sourcedId: string }>).map((user) => user.sourcedId)
const filter = (text: string): string => `filter=${encodeURIComponent(text)}`

t.test("the import keeps each user's roles in the school; /users answers them, primary first", async (t) => {
  const app = await build(t)
  const s = await school(app)
  const org = { href: `http://localhost/ims/oneroster/rostering/v1p2/orgs/${s.schoolId}`, sourcedId: s.schoolId, type: 'org' }

  t.same((await get(app, '/users/t-1?fields=roles', s.admin)).body.user.roles, [
    { roleType: 'primary', role: 'teacher', org, beginDate: '2020-08-15' },
    { roleType: 'secondary', role: 'counselor', org, beginDate: '2026-09-01', endDate: '2027-06-30' },
    { roleType: 'secondary', role: 'siteAdministrator', org }
  ], "the teacher's roles in the school, in the file's order, 1EdTech's spelling; not her role at org-2")
  t.same((await get(app, '/users/s-1?fields=roles', s.admin)).body.user.roles,
    [{ roleType: 'primary', role: 'student', org, beginDate: '2026-09-01', endDate: '2027-06-30' }], "the student's primary role with its dates")
  t.same((await get(app, '/users/g-1?fields=roles', s.admin)).body.user.roles, [{ roleType: 'primary', role: 'guardian', org }], 'an agent: its own role, no dates')

  t.same(ids(await get(app, `/users?sort=sourcedId&${filter("roles.role='counselor'")}`, s.admin)), ['t-1'], 'roles.role holds a secondary role')
  t.same(ids(await get(app, `/users?sort=sourcedId&${filter("roles.role='teacher'")}`, s.admin)), ['t-1'], 'and the primary one')
  t.same(ids(await get(app, `/users?sort=sourcedId&${filter("roles.role!='siteAdministrator'")}`, s.admin)), ['g-1', 's-1'], '!= : none of its roles is')
  t.same(ids(await get(app, `/users?sort=sourcedId&${filter("roles.roleType='secondary'")}`, s.admin)), ['t-1'], 'roles.roleType: a user with a secondary role')
  t.same(ids(await get(app, `/users?sort=sourcedId&${filter("roles.roleType='primary'")}`, s.admin)), ['g-1', 's-1', 't-1'], 'every user has a primary role')
  t.same(ids(await get(app, `/teachers?${filter("roles.role='counselor' AND roles.roleType='secondary'")}`, s.admin)), ['t-1'], 'on /teachers too')
  refused(t, await get(app, `/users?${filter("roles.roleType~'sec'")}`, s.admin), 400, 'invalid_filter_field', 'roles.roleType compared with ~')
  t.same(invalid, [], 'every answer validates')
})

t.test('a delta of roles.csv changes the roles it names, and the users it changes are in a delta by dateLastModified', async (t) => {
  const app = await build(t)
  const s = await school(app)
  const db = await testDatabase()
  const modified = async (): Promise<Map<string, string>> =>
    new Map(((await get(app, '/users?fields=sourcedId,dateLastModified', s.admin)).body.users as Array<{ sourcedId: string, dateLastModified: string }>).map((u) => [u.sourcedId, u.dateLastModified]))
  const before = await modified()
  const since = [...before.values()].sort().at(-1)!

  // The same bulk bundle again changes nothing.
  const again = await importRoster(db, s.schoolId, bundle(), { org: 'org-1' })
  t.same([again.students.updated, again.teachers.updated, again.agents.updated], [0, 0, 0], 'the same roles again: no user written')

  const delta = await importRoster(db, s.schoolId, rolesDelta([
    ['r-t1-c', 'tobedeleted', '2026-11-29T08:00:00Z', 't-1', 'secondary', 'counselor', '', '', 'org-1', ''],
    ['r-t1-a', 'active', '2026-11-29T08:00:00Z', 't-1', 'secondary', 'siteAdministrator', '2026-11-01', '', 'org-1', ''],
    ['r-g1-t', 'active', '2026-11-29T08:00:00Z', 'g-1', 'secondary', 'ext:volunteer', '', '', 'org-1', '']
  ]), { org: 'org-1' })
  t.same([delta.students.updated, delta.teachers.updated, delta.agents.updated], [0, 1, 1], 'the teacher and the agent changed, users.csv absent')

  const org = { href: `http://localhost/ims/oneroster/rostering/v1p2/orgs/${s.schoolId}`, sourcedId: s.schoolId, type: 'org' }
  t.same((await get(app, '/users/t-1?fields=roles', s.admin)).body.user.roles, [
    { roleType: 'primary', role: 'teacher', org, beginDate: '2020-08-15' },
    { roleType: 'secondary', role: 'siteAdministrator', org, beginDate: '2026-11-01' }
  ], 'counselor taken away, the site administrator role given its date in place')
  t.same((await get(app, '/users/g-1?fields=roles', s.admin)).body.user.roles.at(-1), { roleType: 'secondary', role: 'ext:volunteer', org }, 'an extension role added to the agent')

  const after = await modified()
  t.equal(after.get('s-1'), before.get('s-1'), 'the student, untouched, keeps her dateLastModified')
  t.not(after.get('t-1'), before.get('t-1'), "the teacher's moved")
  t.same(ids(await get(app, `/users?sort=sourcedId&${filter(`dateLastModified>'${since}'`)}`, s.admin)), ['g-1', 't-1'], 'a delta by dateLastModified: the users whose roles changed')

  // A bulk roles.csv is the whole truth: a user without a row in the school keeps no secondary role.
  const bulk = await importRoster(db, s.schoolId, bundle(ROLE_ROWS.filter((row) => row[0] !== 'r-t1-c' && row[0] !== 'r-t1-a')), { org: 'org-1' })
  t.same(bulk.teachers.updated, 1)
  t.same((await get(app, '/users/t-1?fields=roles', s.admin)).body.user.roles, [{ roleType: 'primary', role: 'teacher', org, beginDate: '2020-08-15' }], 'bulk: her secondary roles gone')
  t.same(invalid, [], 'every answer validates')
})

t.test('bad roles are refused with their line, and several orgs without --org', async (t) => {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Roles Refusals'))
  const refusal = async (files: Files, message: RegExp, what: string, options: { org?: string } = { org: 'org-1' }): Promise<void> => {
    await t.rejects(importRoster(db, schoolId, files, options), { name: 'ImportError', message }, what)
  }
  await refusal(bundle(), /roles\.csv names 2 orgs \("org-1", "org-2"\): say which one is this school with --org/, 'two orgs, no --org', {})
  await refusal(bundle(), /--org "org-9" is not an org of roles\.csv \(it names "org-1", "org-2"\)/, 'an --org roles.csv does not name', { org: 'org-9' })
  const row = (changes: Record<number, string>): string[][] => ROLE_ROWS.map((r) => r[0] === 'r-t1-c' ? r.map((v, i) => changes[i] ?? v) : r)
  await refusal(bundle(row({ 5: 'pupil' })), /roles\.csv:4: role "pupil" is not a OneRoster 1\.2 role \(aide, counselor, .*or ext:name\)/, 'a role outside RoleEnum')
  await refusal(bundle(row({ 4: 'tertiary' })), /roles\.csv:4: roleType "tertiary" is not primary or secondary/, 'an unknown roleType')
  await refusal(bundle(row({ 6: '2027-07-01' })), /roles\.csv:4: endDate 2027-06-30 is before beginDate 2027-07-01/, 'an end before the begin')
  await refusal(bundle(row({ 0: '' })), /roles\.csv:4: sourcedId is empty: a secondary role is kept by it/, 'a secondary role without its sourcedId')
  await refusal(bundle(row({ 0: 'r-s1' })), /roles\.csv:4: sourcedId "r-s1" is already the role on line 2/, 'a sourcedId twice')
  t.equal(await db.forSchool(schoolId).teacher.count(), 0, 'nothing written')
})

t.test('GraphQL answers the same roles: Student, Teacher and Contact `roles`, primary first', async (t) => {
  const app = await build(t)
  const s = await school(app)
  const roles = '{ roleType role beginDate endDate }'
  const res = await gql(app, `{ students { sourcedId roles ${roles} } teachers { sourcedId roles ${roles} } contacts { sourcedId roles ${roles} } }`, { token: s.admin })
  t.same(res.body.errors, undefined)
  t.same(res.body.data, {
    students: [{ sourcedId: 's-1', roles: [{ roleType: 'PRIMARY', role: 'student', beginDate: '2026-09-01', endDate: '2027-06-30' }] }],
    teachers: [{
      sourcedId: 't-1',
      roles: [
        { roleType: 'PRIMARY', role: 'teacher', beginDate: '2020-08-15', endDate: null },
        { roleType: 'SECONDARY', role: 'counselor', beginDate: '2026-09-01', endDate: '2027-06-30' },
        { roleType: 'SECONDARY', role: 'siteAdministrator', beginDate: null, endDate: null }
      ]
    }],
    contacts: [{ sourcedId: 'g-1', roles: [{ roleType: 'PRIMARY', role: 'guardian', beginDate: null, endDate: null }] }]
  }, 'as /users answers them, in GraphQL\'s types')
  const teacher = await gql(app, '{ teachers { roles { role } } }', { token: s.teacher })
  t.same(teacher.body.data, { teachers: [{ roles: [{ role: 'teacher' }, { role: 'counselor' }, { role: 'siteAdministrator' }] }] }, 'a teacher reads her own roles (the core scope)')
})
