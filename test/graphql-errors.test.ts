import t from 'tap'
import { buildApp } from '../src/app.js'
import { openDatabase } from '../src/db/client.js'
import { build, gql, login, seedSchool, testConfig } from './helper.js'

t.test('selecting a field that does not exist is a validation error naming field and type', async (t) => {
  const app = await build(t)
  const res = await gql(app, '{ students(limit: 1) { id nickname } }', { accept: 'application/graphql-response+json' })
  t.equal(res.statusCode, 400)
  t.notOk('data' in res.body, 'a request error: nothing ran, no data')
  t.equal(res.body.errors!.length, 1)
  const [error] = res.body.errors!
  t.match(error!.message, /^Cannot query field "nickname" on type "Student"\./)
  t.same(error!.locations, [{ line: 1, column: 27 }])
  t.notOk('extensions' in error!, 'no extensions.code on validation errors')
})

t.test('a syntax error has a message and locations, and no extensions.code', async (t) => {
  const app = await build(t)
  const res = await gql(app, '{ students(limit: 1) { id ', { accept: 'application/graphql-response+json' })
  t.equal(res.statusCode, 400)
  t.notOk('data' in res.body)
  const [error] = res.body.errors!
  t.match(error!.message, /^Syntax Error/)
  t.same(error!.locations, [{ line: 1, column: 27 }])
  t.notOk('extensions' in error!)
})

t.test('a variable of the wrong type is a request error without extensions.code', async (t) => {
  const app = await build(t)
  const res = await gql(app, 'query($limit: Int) { students(limit: $limit) { id } }', { variables: { limit: 'ten' }, accept: 'application/graphql-response+json' })
  t.equal(res.statusCode, 400)
  t.notOk('data' in res.body)
  t.match(res.body.errors![0]!.message, /Variable "\$limit" got invalid value "ten"/)
  t.notOk('extensions' in res.body.errors![0]!)
})

t.test('a request without a query, or with a body that is not JSON, gets a clear, coded 400', async (t) => {
  const app = await build(t)
  const empty = await app.inject({ method: 'POST', url: '/', payload: {} })
  t.equal(empty.statusCode, 400)
  t.same(empty.json(), { errors: [{ message: 'Missing query: send a JSON body {"query": "...", "variables": {...}}', extensions: { code: 'BAD_REQUEST' } }] })
  const broken = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload: '{"query": ' })
  t.equal(broken.statusCode, 400)
  t.match(broken.json().errors[0].message, /not valid JSON/)
  t.equal(broken.json().errors[0].extensions.code, 'BAD_REQUEST')
  const wrongType = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'text/csv' }, payload: 'a,b' })
  t.equal(wrongType.statusCode, 415)
  t.match(wrongType.json().errors[0].message, /^Unsupported Content-Type/)
  t.equal(wrongType.json().errors[0].extensions.code, 'UNSUPPORTED_MEDIA_TYPE')
})

t.test('an unexpected failure is reported generically, with a code and the request id, and no internals', async (t) => {
  // A database of this test's own, closed under the running app: every query now fails inside Prisma.
  const database = await openDatabase({ migrate: true })
  const app = await buildApp(testConfig(), { database, logger: false })
  t.teardown(() => app.close())
  const school = await (async () => {
    const { createSchool } = await import('../src/admin/schools.js')
    const { createUser } = await import('../src/admin/users.js')
    const schoolId = await createSchool(database, 'Doomed School')
    await createUser(database, { username: 'doomed-user', password: 'password-for-doom', schoolId })
    return schoolId
  })()
  t.ok(school)
  const { accessToken } = await login(app, 'doomed-user', 'password-for-doom')
  await database.close()

  const res = await app.inject({
    method: 'POST',
    url: '/',
    headers: { authorization: `Bearer ${accessToken}`, 'x-request-id': 'req-test-123' },
    payload: { query: '{ students(limit: 1) { id } }' }
  })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['x-request-id'], 'req-test-123')
  const body = res.json()
  t.same(body.errors, [{
    message: 'Internal server error',
    locations: [{ line: 1, column: 3 }],
    path: ['students'],
    extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: 'req-test-123' }
  }])
  t.notMatch(res.payload, /prisma|select|pglite|stack|at /i, 'no internal detail')
})

t.test('login with an access token of another kind still works (login needs no header)', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Header School')
  const res = await app.inject({
    method: 'POST',
    url: '/',
    headers: { authorization: 'Bearer junk' },
    payload: { query: 'mutation { login(username: "' + school.username + '", password: "correct horse battery staple") { accessToken } }' }
  })
  t.type(res.json().data.login.accessToken, 'string')
})
