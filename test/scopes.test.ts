// Scopes after OneRoster 1.2: every field of the schema needs one (the table in src/auth/scopes.ts,
// the same in README), and an operation that selects a field outside the caller's scopes is refused
// before it runs, with FORBIDDEN naming each such field and the scope it needs: through aliases,
// fragments, nested lists and the change feed. The response cache never hands a narrower caller an
// answer kept for a wider one.
import { readFileSync } from 'node:fs'
import { isIntrospectionType, isObjectType } from 'graphql'
import t from 'tap'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { FIELD_SCOPES, fieldScopeTable, SCOPES } from '../src/auth/scopes.js'
import { buildSdlSchema } from '../src/graphql/schema.js'
import { build, gql, login, seedSchool, testDatabase, unique } from './helper.js'
import { clientToken, seedClient } from './fixtures/oauth.js'

t.test('the field table lists exactly the fields of the schema', async (t) => {
  const schema = buildSdlSchema()
  const inSchema: string[] = []
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || isIntrospectionType(type)) continue
    for (const field of Object.keys(type.getFields())) inSchema.push(`${type.name}.${field}`)
  }
  const inTable = Object.entries(FIELD_SCOPES).flatMap(([type, fields]) => Object.keys(fields).map((field) => `${type}.${field}`))
  t.same(inSchema.filter((f) => !inTable.includes(f)), [], 'every field of the schema has a scope in FIELD_SCOPES')
  t.same(inTable.filter((f) => !inSchema.includes(f)), [], 'FIELD_SCOPES names no field the schema lacks')
  // Sanity: the demographic and contact fields are where the README says.
  t.equal(FIELD_SCOPES.Student!.dateOfBirth, 'roster-demographics.readonly')
  t.equal(FIELD_SCOPES.Student!.email, 'roster.readonly')
  t.equal(FIELD_SCOPES.Student!.fullName, 'roster-core.readonly')
})

t.test('the field table of docs/api/access.md is the one of src/auth/scopes.ts', async (t) => {
  const doc = readFileSync(new URL('../docs/api/access.md', import.meta.url), 'utf8')
  const match = /<!-- field-scopes:begin -->\n([\s\S]*?)<!-- field-scopes:end -->/.exec(doc)
  t.ok(match, 'docs/api/access.md has the field-scopes markers')
  t.equal(match?.[1], fieldScopeTable(), 'paste fieldScopeTable() of src/auth/scopes.ts between the markers')
})

async function school (t: { teardown: (fn: () => unknown) => void }) {
  const app = await build(t)
  const seeded = await seedSchool(unique('Scoped School'))
  const db = await testDatabase()
  await createStudent(db, { schoolId: seeded.schoolId, fullName: 'Ada Lovelace', classroom: 'Room 1', email: 'ada@example.org', studentNumber: 'S-1', dateOfBirth: '2015-12-10' })
  await createTeacher(db, { schoolId: seeded.schoolId, fullName: 'Grace Hopper', email: 'grace@example.org', title: 'Teacher' })
  const admin = (await login(app, seeded.username)).accessToken
  const core = await clientToken(app, await seedClient(seeded.schoolId, ['roster-core.readonly']))
  const full = await clientToken(app, await seedClient(seeded.schoolId, ['roster.readonly']))
  const demographics = await clientToken(app, await seedClient(seeded.schoolId, ['roster-core.readonly', 'roster-demographics.readonly']))
  return { app, admin, core, full, demographics }
}

/** The refused fields of an answer, or the data when it was not refused. */
function refusedFields (body: { data?: unknown, errors?: Array<{ extensions?: Record<string, unknown> }> }): unknown {
  if (body.errors === undefined) return { data: body.data }
  return body.errors.map((e) => [e.extensions?.code, e.extensions?.fields])
}

t.test('a field outside the scopes refuses the operation before it runs, naming each field and its scope', async (t) => {
  const { app, core, full, demographics, admin } = await school(t)
  const res = await gql(app, '{ students { fullName email dateOfBirth } }', { token: core })
  t.equal(res.statusCode, 200, 'a request error: 200 under application/json')
  t.notOk('data' in res.body, 'no data: nothing ran')
  t.equal(res.body.errors?.length, 1)
  t.same(res.body.errors?.[0], {
    message: 'Not allowed for this access token: Student.email needs the scope roster.readonly; Student.dateOfBirth needs the scope roster-demographics.readonly',
    extensions: {
      code: 'FORBIDDEN',
      fields: [{ field: 'Student.email', needs: 'roster.readonly' }, { field: 'Student.dateOfBirth', needs: 'roster-demographics.readonly' }]
    }
  })
  const strict = await gql(app, '{ students { dateOfBirth } }', { token: core, accept: 'application/graphql-response+json' })
  t.equal(strict.statusCode, 400, 'a request error: 400 under application/graphql-response+json')

  t.same((await gql(app, '{ students { fullName classroomName gradeLevel status } }', { token: core })).body,
    { data: { students: [{ fullName: 'Ada Lovelace', classroomName: 'Room 1', gradeLevel: null, status: 'ACTIVE' }] } }, 'core fields')
  t.same((await gql(app, '{ students { fullName email studentNumber } }', { token: full })).body,
    { data: { students: [{ fullName: 'Ada Lovelace', email: 'ada@example.org', studentNumber: 'S-1' }] } }, 'roster.readonly includes the core')
  t.same(refusedFields((await gql(app, '{ students { dateOfBirth } }', { token: full })).body),
    [['FORBIDDEN', [{ field: 'Student.dateOfBirth', needs: 'roster-demographics.readonly' }]]], 'but not the demographics')
  t.same((await gql(app, '{ students { fullName dateOfBirth } }', { token: demographics })).body,
    { data: { students: [{ fullName: 'Ada Lovelace', dateOfBirth: '2015-12-10' }] } })
  t.same((await gql(app, '{ students { email dateOfBirth } school { phone } }', { token: admin })).body,
    { data: { students: [{ email: 'ada@example.org', dateOfBirth: '2015-12-10' }], school: { phone: null } } }, 'a user (school administrator) holds every scope')
})

t.test('aliases, fragments, inline fragments, nested lists and the change feed are all checked', async (t) => {
  const { app, core } = await school(t)
  const cases: Array<[string, string[]]> = [
    ['{ students { name: fullName born: dateOfBirth } }', ['Student.dateOfBirth']],
    ['query { ...Roster } fragment Roster on Query { students { ...Person } } fragment Person on Student { id email }', ['Student.email']],
    ['{ studentsPage { nodes { ... on Student { studentNumber } } } }', ['Student.studentNumber']],
    ['{ classrooms { students { dateOfBirth } teachers { title } } }', ['Student.dateOfBirth', 'Teacher.title']],
    ['{ teachers { classroomAssignments { classroom { students { email } } } } }', ['Student.email']],
    ['{ changes { changes { id studentNumber student { dateOfBirth } teacher { email } } } }', ['Change.studentNumber', 'Student.dateOfBirth', 'Teacher.email']],
    ['{ school { name city website } }', ['School.city', 'School.website']],
    ['query ($skip: Boolean = true) { students { fullName dateOfBirth @skip(if: $skip) } }', ['Student.dateOfBirth']]
  ]
  for (const [query, fields] of cases) {
    const res = await gql(app, query, { token: core })
    t.same(res.body.errors?.map((e) => e.extensions?.code), ['FORBIDDEN'], query)
    t.same((res.body.errors?.[0]?.extensions?.fields as Array<{ field: string }> | undefined)?.map((f) => f.field), fields, query)
    t.notOk('data' in res.body, `${query}: nothing ran`)
  }
  // Controls: the same shapes within the core scope run.
  for (const query of [
    'query { ...Roster } fragment Roster on Query { students { ...Person } } fragment Person on Student { id fullName }',
    '{ changes { changes { id sourcedId student { fullName } } } latestChangeCursor }',
    '{ classrooms { name students { fullName } teacherAssignments { role teacher { fullName } } } __typename }'
  ]) {
    const res = await gql(app, query, { token: core })
    t.notOk(res.body.errors, `${query}: ${JSON.stringify(res.body.errors)}`)
  }
  // Only the executed operation counts.
  const two = await gql(app, 'query Wide { students { dateOfBirth } } query Narrow { students { fullName } }', { token: core })
  t.match(two.body, { errors: [{ extensions: { code: 'FORBIDDEN' } }] }, 'no operationName: the first, which is out of scope')
  const res = await app.inject({ method: 'POST', url: '/', headers: { authorization: `Bearer ${core}` }, payload: { query: 'query Wide { students { dateOfBirth } } query Narrow { students { fullName } }', operationName: 'Narrow' } })
  t.same(res.json(), { data: { students: [{ fullName: 'Ada Lovelace' }] } }, 'operationName: Narrow runs')
})

t.test("login, refreshToken and logout stay users' only", async (t) => {
  const { app, core } = await school(t)
  const logout = await gql(app, 'mutation { logout(refreshToken: "x") }', { token: core })
  t.match(logout.body, { errors: [{ message: 'Not allowed for this access token: Mutation.logout needs a user (clients may not)', extensions: { code: 'FORBIDDEN', fields: [{ field: 'Mutation.logout', needs: 'user' }] } }] })
  const refresh = await gql(app, 'mutation ($t: String!) { refreshToken(refreshToken: $t) { accessToken } }', { variables: { t: core }, token: core })
  t.equal(refresh.body.errors?.[0]?.extensions?.code, 'INVALID_REFRESH_TOKEN', "a client's access token is no refresh token")
  t.equal(refresh.body.errors?.[0]?.message, 'Invalid or expired refresh token')
})

t.test("a client's id and secret are no username and password", async (t) => {
  const app = await build(t)
  const seeded = await seedSchool(unique('Login School'))
  const client = await seedClient(seeded.schoolId, ['roster-core.readonly'])
  const res = await gql(app, 'mutation ($u: String!, $p: String!) { login(username: $u, password: $p) { accessToken } }', { variables: { u: client.clientId, p: client.secret } })
  t.equal(res.body.errors?.[0]?.extensions?.code, 'INVALID_CREDENTIALS')
  t.equal(res.body.errors?.[0]?.message, 'Invalid credentials')
})

t.test('the response cache never serves a narrower caller an answer kept for a wider one', async (t) => {
  const app = await build(t, { responseCacheTtl: 60 })
  const seeded = await seedSchool(unique('Cached Scopes'))
  await createStudent(await testDatabase(), { schoolId: seeded.schoolId, fullName: 'Ada Lovelace', dateOfBirth: '2015-12-10' })
  const admin = (await login(app, seeded.username)).accessToken
  const core = await clientToken(app, await seedClient(seeded.schoolId, ['roster-core.readonly']))
  const all = await clientToken(app, await seedClient(seeded.schoolId, SCOPES))
  const post = async (query: string, token: string) => {
    const res = await app.inject({ method: 'POST', url: '/', headers: { authorization: `Bearer ${token}` }, payload: { query } })
    return { cache: res.headers['x-cache'], text: res.body, body: res.json() }
  }
  const WIDE = '{ students { fullName dateOfBirth } }'
  t.equal((await post(WIDE, admin)).cache, 'miss')
  const kept = await post(WIDE, admin)
  t.equal(kept.cache, 'hit', 'control: the admin answer is kept')
  t.ok(kept.text.includes('2015-12-10'))

  const narrow = await post(WIDE, core)
  t.notOk(narrow.text.includes('2015-12-10'), 'no date of birth for the core-only client')
  t.equal(narrow.body.errors?.[0]?.extensions?.code, 'FORBIDDEN')
  t.not(narrow.cache, 'hit')
  t.equal((await post(WIDE, core)).body.errors?.[0]?.extensions?.code, 'FORBIDDEN', 'and again: refusals are not kept')

  t.equal((await post(WIDE, all)).cache, 'hit', 'a client with every read scope shares the answers of its school with the same scopes')
  const NARROW = '{ students { fullName } }'
  t.equal((await post(NARROW, admin)).cache, 'miss')
  t.equal((await post(NARROW, core)).cache, 'miss', 'other scopes, another key')
  t.equal((await post(NARROW, core)).cache, 'hit')
})
