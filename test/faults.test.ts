// The database goes away for real (a TCP proxy between the service and PostgreSQL is cut), and
// comes back: requests fail fast with SERVICE_UNAVAILABLE, a 503 with Retry-After (a real bug
// still answers INTERNAL_SERVER_ERROR), /ready says 503, and the service recovers by itself: its
// pool drops the dead connections and the LISTEN connection reconnects.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import { assignUser } from '../src/admin/users.js'
import { buildApp } from '../src/app.js'
import { basic, seedClient, tokenRequest } from './fixtures/oauth.js'
import { metricsText } from './fixtures/shared-state.js'
import { TcpProxy } from './fixtures/tcp-proxy.js'
import { build, login, seedSchool, serverUrl, testConfig, testDatabase, testDatabaseUrl } from './helper.js'
import { INTERNALS } from './fixtures/internals.js'

const ROSTER = 'query Roster { students { id fullName } }'
const LOGIN = 'mutation Login($u: String!, $p: String!) { login(username: $u, password: $p) { accessToken } }'
const GRAPHQL_RESPONSE = 'application/graphql-response+json'
/** What src/db/unavailable.ts tells a caller to wait. */
const RETRY_AFTER = 5

async function until (what: string, check: () => Promise<boolean>, tries = 150): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`gave up waiting: ${what}`)
}

interface Answer { statusCode: number, headers: Record<string, unknown>, body: any, raw: string }
type Tap = Pick<typeof t, 'equal' | 'same' | 'notMatch' | 'match'>

/** The database out of reach: a 503 with Retry-After, SERVICE_UNAVAILABLE with retryAfter and the request id, nothing internal. */
function expectUnavailable (t: Tap, res: Answer, accept: string | undefined, what: string): void {
  t.equal(res.statusCode, 503, `${what}: 503`)
  t.equal(res.headers['retry-after'], String(RETRY_AFTER), `${what}: Retry-After`)
  t.match(res.headers['content-type'], accept === GRAPHQL_RESPONSE ? /^application\/graphql-response\+json/ : /^application\/json/, `${what}: in the media type asked for`)
  t.equal(res.body.data, null, `${what}: no data`)
  t.equal(res.body.errors?.length, 1)
  t.equal(res.body.errors?.[0]?.message, `The database is unavailable; retry in ${RETRY_AFTER} seconds`)
  t.same(res.body.errors?.[0]?.extensions, { code: 'SERVICE_UNAVAILABLE', retryAfter: RETRY_AFTER, requestId: res.headers['x-request-id'] }, `${what}: coded`)
  t.notMatch(res.raw, INTERNALS, `${what}: nothing internal in the answer`)
}

async function ask (app: FastifyInstance, query: string, { token, accept, variables }: { token?: string, accept?: string, variables?: Record<string, unknown> } = {}): Promise<Answer> {
  const res = await app.inject({
    method: 'POST',
    url: '/',
    headers: { ...(token !== undefined && { authorization: `Bearer ${token}` }), ...(accept !== undefined && { accept }) },
    payload: { query, variables }
  })
  return { statusCode: res.statusCode, headers: res.headers, body: res.json(), raw: res.body }
}

async function roster (app: FastifyInstance, token: string, accept?: string): Promise<Answer> {
  return await ask(app, ROSTER, { token, accept })
}

t.test('the database cut off and back', { skip: serverUrl === undefined ? 'needs PostgreSQL (the embedded database cannot be cut off over a network)' : false }, async (t) => {
  const db = await testDatabase()
  const url = (await testDatabaseUrl())!
  const target = new URL(url)
  const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) })
  await proxy.open()
  t.teardown(() => proxy.cut())

  const school = await seedSchool('Faulty School', [['Ada Lovelace'], ['Alan Turing']])
  const client = await seedClient(school.schoolId, ['roster-core.readonly'])
  const app = await buildApp(testConfig({ databaseUrl: proxy.url(url), databasePoolSize: 4, databaseConnectTimeoutMs: 1_000 }), { logger: false })
  t.teardown(() => app.close())
  // A bug of the service's own, and a statement that fails on a database that answers (asked
  // without a token: no scope grants fields the schema does not have).
  await app.graphql.extendSchema('extend type Query { buggy: Boolean, failing: Boolean }')
  app.graphql.defineResolvers({
    Query: {
      buggy: () => { throw new TypeError('Cannot read properties of undefined (reading \'id\')') },
      failing: async () => { await app.db.prisma.$queryRawUnsafe('SELECT 1/0 AS never'); return true }
    }
  })
  const { accessToken, refreshToken } = await login(app, school.username)
  t.equal((await roster(app, accessToken)).body.data?.students.length, 2)
  t.equal((await app.inject({ method: 'GET', url: '/ready' })).statusCode, 200)
  t.ok(app.db.poolStats()!.total >= 1, 'the pool holds connections')

  await t.test('a real failure, the database answering: INTERNAL_SERVER_ERROR, no Retry-After', async (t) => {
    for (const query of ['{ buggy }', '{ failing }']) {
      const res = await ask(app, query, { accept: GRAPHQL_RESPONSE })
      t.equal(res.statusCode, 200, query)
      t.same(res.body.errors?.map((e: { extensions: unknown }) => e.extensions), [{ code: 'INTERNAL_SERVER_ERROR', requestId: res.headers['x-request-id'] }], query)
      t.equal(res.headers['retry-after'], undefined, `${query}: nothing to retry`)
    }
  })

  await t.test('refused connections: requests fail at once with SERVICE_UNAVAILABLE, a 503 with Retry-After; /ready is 503', async (t) => {
    await proxy.cut()
    // Concurrently, more than the pool holds: none waits behind a dead connection. Both media types.
    const accepts = [GRAPHQL_RESPONSE, undefined]
    const answers = await Promise.all(Array.from({ length: 8 }, async (_, i) => await roster(app, accessToken, accepts[i % 2])))
    answers.forEach((res, i) => { expectUnavailable(t, res, accepts[i % 2], `a read ${i + 1}`) })
    expectUnavailable(t, await ask(app, 'mutation { createClassroom(input: { name: "Room 9" }) { id } }', { token: accessToken, accept: GRAPHQL_RESPONSE }), GRAPHQL_RESPONSE, 'a write')
    expectUnavailable(t, await ask(app, LOGIN, { variables: { u: school.username, p: 'correct horse battery staple' } }), undefined, 'a login')
    expectUnavailable(t, await ask(app, 'mutation R($r: String!) { refreshToken(refreshToken: $r) { accessToken } }', { variables: { r: refreshToken } }), undefined, 'a refresh')

    // A field that may be null: the answer has data, so it is a 200 (GraphQL over HTTP), still coded and with Retry-After.
    const partial = await ask(app, `query Partial { student(id: "${school.studentIds[0]!}") { id } }`, { token: accessToken, accept: GRAPHQL_RESPONSE })
    t.equal(partial.statusCode, 200, 'a partial answer: 200')
    t.same(partial.body.data, { student: null })
    t.equal(partial.body.errors?.[0]?.extensions?.code, 'SERVICE_UNAVAILABLE')
    t.equal(partial.headers['retry-after'], String(RETRY_AFTER))
    t.match(await metricsText(app), /^sds_graphql_request_duration_seconds_count\{operation="Partial",outcome="internal_error"\} 1$/m, 'counted as the service\'s failure, not the caller\'s')

    const bug = await ask(app, '{ buggy }', { accept: GRAPHQL_RESPONSE })
    t.equal(bug.body.errors?.[0]?.extensions?.code, 'INTERNAL_SERVER_ERROR', 'a bug is a bug, outage or not')
    t.equal(bug.statusCode, 200)

    const token = await tokenRequest(app, { grant_type: 'client_credentials' }, { authorization: basic(client.clientId, client.secret) })
    t.equal(token.statusCode, 503, 'the token endpoint: 503')
    t.equal(token.headers['retry-after'], String(RETRY_AFTER))
    t.same(token.body, { error: 'temporarily_unavailable', error_description: `The database is unavailable; retry in ${RETRY_AFTER} seconds` })

    const ready = await app.inject({ method: 'GET', url: '/ready' })
    t.equal(ready.statusCode, 503)
    t.same(ready.json(), { status: 'unavailable', reason: 'database' })
    t.equal(app.db.poolStats()!.total, 0, 'the broken connections left the pool')
  })

  await t.test('a network that swallows everything: requests end after the connection timeout, SERVICE_UNAVAILABLE', async (t) => {
    await proxy.open('blackhole')
    const answers = await Promise.all(Array.from({ length: 6 }, async () => await roster(app, accessToken, GRAPHQL_RESPONSE)))
    answers.forEach((res, i) => { expectUnavailable(t, res, GRAPHQL_RESPONSE, `a read ${i + 1}`) })
    t.equal((await app.inject({ method: 'GET', url: '/ready' })).statusCode, 503)
    await proxy.cut()
  })

  await t.test('the database back: the service recovers by itself', async (t) => {
    await proxy.open()
    await until('/ready answers 200', async () => (await app.inject({ method: 'GET', url: '/ready' })).statusCode === 200)
    t.ok(app.auth.accessChangesLive, 'the notification connection is back')
    // More requests at once than the pool has connections: every one succeeds on fresh connections.
    const answers = await Promise.all(Array.from({ length: 12 }, async () => await roster(app, accessToken)))
    for (const res of answers) t.equal(res.body.data?.students.length, 2)
    const again = await login(app, school.username)
    t.ok(again.accessToken)
    t.equal((await tokenRequest(app, { grant_type: 'client_credentials' }, { authorization: basic(client.clientId, client.secret) })).statusCode, 200, 'the token endpoint answers again')
    // Changes made while the service was cut off, and after, reach it: a moved user loses the old school.
    await assignUser(db, school.username, await createSchool(db, 'Elsewhere'))
    await until('the moved user is refused', async () => (await roster(app, accessToken)).body.errors?.[0]?.extensions?.code === 'UNAUTHENTICATED')
    t.pass('the move was heard')
  })
})

t.test('a network that stops carrying packets on open connections: answered 503 after the handler timeout', { skip: serverUrl === undefined ? 'needs PostgreSQL' : false }, async (t) => {
  const url = (await testDatabaseUrl())!
  const target = new URL(url)
  const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) })
  await proxy.open()
  t.teardown(() => proxy.cut())
  const school = await seedSchool('Stalled School', [['Grace Hopper']])
  const app = await buildApp(testConfig({ databaseUrl: proxy.url(url), databasePoolSize: 2, handlerTimeoutMs: 1_500 }), { logger: false })
  t.teardown(() => app.close())
  // Logged in through an app without the short timeout (same keys): hashing a password can take
  // longer than 1.5 s on a loaded machine, which is not what this test is about.
  const { accessToken } = await login(await build(t), school.username)
  t.equal((await roster(app, accessToken)).body.data?.students.length, 1)

  proxy.stall()
  const stuck = await Promise.all(Array.from({ length: 3 }, async () => await roster(app, accessToken)))
  for (const res of stuck) {
    t.equal(res.statusCode, 503, 'answered, not left hanging')
    t.notMatch(res.raw, INTERNALS)
  }
  proxy.resume()
  await until('reads succeed again', async () => (await roster(app, accessToken)).body.data?.students.length === 1)
  t.pass('recovered once the network carries again')
})
