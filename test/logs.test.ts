import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { buildApp } from '../src/app.js'
import type { Database } from '../src/db/client.js'
import { INTERNALS } from './fixtures/internals.js'
import { createTestDatabase, LOGIN, PASSWORD, seedSchool, testConfig, testDatabase, unique } from './helper.js'

type Line = Record<string, any>

async function appWithLog (test: { teardown: (fn: () => unknown) => void }, database: Database, level = 'info'): Promise<{ app: FastifyInstance, lines: () => Line[], text: () => string }> {
  const raw: string[] = []
  const app = await buildApp(testConfig(), {
    database,
    logger: { level, stream: { write (line: string) { raw.push(line) } } }
  })
  test.teardown(() => app.close())
  return { app, lines: () => raw.map((l) => JSON.parse(l) as Line), text: () => raw.join('') }
}

async function post (app: FastifyInstance, body: object, headers: Record<string, string> = {}) {
  return await app.inject({ method: 'POST', url: '/', payload: body, headers })
}

t.test('one line per request: request id, user, school, operation, status and duration', async (t) => {
  const school = await seedSchool('Logged School', [['Ada Lovelace']])
  const raw: string[] = []
  const app = await buildApp(testConfig(), { database: await testDatabase(), logger: { level: 'info', stream: { write (line: string) { raw.push(line) } } } })
  t.teardown(() => app.close())
  const loginRes = await post(app, { query: LOGIN, variables: { username: school.username, password: PASSWORD } })
  const { accessToken } = loginRes.json().data.login
  const res = await post(app, { query: 'query Roster { students { id } }' }, { authorization: `Bearer ${accessToken}` })
  t.equal(res.statusCode, 200)
  const lines = raw.map((l) => JSON.parse(l) as Line)
  const mine = lines.filter((l) => l.reqId === res.headers['x-request-id'])
  t.equal(mine.length, 1, 'one line for the request')
  const line = mine[0]!
  t.equal(line.level, 30)
  t.equal(line.msg, 'request completed')
  t.equal(line.operation, 'Roster')
  t.equal(line.outcome, 'ok')
  t.equal(line.statusCode, 200)
  t.equal(line.schoolId, school.schoolId)
  t.match(line.userId, /^[0-9a-f-]{36}$/)
  t.type(line.responseTime, 'number')
  t.equal(line.url, '/')
  const loginLine = lines.find((l) => l.reqId === loginRes.headers['x-request-id'])
  t.equal(loginLine?.operation, 'Login')
  t.equal(loginLine?.userId, undefined, 'login is made without a token')
})

t.test('tokens, passwords and the Authorization header never reach the log', async (t) => {
  const school = await seedSchool('Secret School')
  const { app, text } = await appWithLog(t, await testDatabase(), 'debug')
  const loginRes = await post(app, { query: LOGIN, variables: { username: school.username, password: PASSWORD } })
  const { accessToken, refreshToken } = loginRes.json().data.login
  await post(app, {
    query: 'mutation Refresh($refreshToken: String!) { refreshToken(refreshToken: $refreshToken) { accessToken } }',
    variables: { refreshToken }
  }, { authorization: `Bearer ${accessToken}`, cookie: 'session=cookie-secret-value' })
  // A GET with variables in the query string.
  await app.inject({ method: 'GET', url: `/?query=${encodeURIComponent('query Q($password: String) { __typename }')}&variables=${encodeURIComponent(JSON.stringify({ password: PASSWORD }))}` })
  const log = text()
  t.match(log, /"msg":"graphql request"/, 'variables are logged at debug')
  t.match(log, /\[Redacted\]/)
  t.notOk(log.includes(PASSWORD), 'no password')
  t.notOk(log.includes(refreshToken), 'no refresh token')
  t.notOk(log.includes(accessToken), 'no access token')
  t.notOk(log.includes(accessToken.split('.')[2]), 'not even the signature')
  t.notOk(log.includes('cookie-secret-value'), 'no cookie')
})

t.test('database errors: the client sees a generic error with the request id, the log has the detail', async (t) => {
  // A database of this test's own, as its owner, so that the test can make inserts fail.
  const database = await createTestDatabase({ role: 'owner' })
  const schoolId = await createSchool(database, 'Failing School')
  const twice = unique('twice')
  const refused = unique('refused')
  await createUser(database, { username: twice, password: PASSWORD, schoolId })
  await createUser(database, { username: refused, password: PASSWORD, schoolId })
  // A real unique violation on the second login of `twice`; a raised error full of internal words for `refused`.
  await database.prisma.$executeRawUnsafe('CREATE UNIQUE INDEX refresh_tokens_one_per_user ON refresh_tokens (user_id)')
  await database.prisma.$executeRawUnsafe(`
    CREATE FUNCTION refuse_login() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.user_id = (SELECT id FROM users WHERE username = '${refused}') THEN
        RAISE EXCEPTION 'SELECT password_hash FROM users at postgresql://postgres@127.0.0.1:5432';
      END IF;
      RETURN NEW;
    END $$`)
  await database.prisma.$executeRawUnsafe('CREATE TRIGGER refuse_login BEFORE INSERT ON refresh_tokens FOR EACH ROW EXECUTE FUNCTION refuse_login()')
  const { app, lines } = await appWithLog(t, database)

  t.equal((await post(app, { query: LOGIN, variables: { username: twice, password: PASSWORD } })).statusCode, 200)
  for (const username of [twice, refused]) {
    const res = await post(app, { query: LOGIN, variables: { username, password: PASSWORD } })
    const requestId = res.headers['x-request-id']
    const body = res.json()
    t.equal(body.data, null)
    t.equal(body.errors.length, 1)
    t.same(body.errors[0].extensions, { code: 'INTERNAL_SERVER_ERROR', requestId })
    t.equal(body.errors[0].message, 'Internal server error')
    t.notMatch(res.body, INTERNALS, 'no internal detail in the response')
    const errorLine = lines().find((l) => l.reqId === requestId && l.level === 50)
    t.ok(errorLine, 'the error is logged with the request id')
    t.ok(errorLine?.err?.message, 'with the detail')
    t.ok(lines().some((l) => l.reqId === requestId && l.msg === 'request completed' && l.outcome === 'internal_error'))
  }
  const errorLines = lines().filter((l) => l.level >= 50)
  t.ok(errorLines.length >= 2)
  t.ok(errorLines.every((l) => typeof l.reqId === 'string'), 'every error line carries a request id')
})

t.test('errors outside GraphQL are logged with the request id and answered without detail', async (t) => {
  const { app, lines } = await appWithLog(t, await testDatabase())
  const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload: '{"query": ' })
  t.equal(res.statusCode, 400)
  t.notMatch(res.body, INTERNALS)
  const line = lines().find((l) => l.reqId === res.headers['x-request-id'])
  t.equal(line?.statusCode, 400)
})
