// HTTP and database bounds (issue 5, point 5), each caused for real: a body over the limit, a
// request that never finishes arriving (on a real socket), a handler that takes too long, a
// statement that outlasts statement_timeout and a full pool on PostgreSQL, and an overloaded process.
import { connect, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.js'
import type { Config } from '../src/config.js'
import { openDatabase, type Database } from '../src/db/client.js'
import { build, gql, login, seedSchool, serverUrl, serviceConnection, testConfig, testDatabase, testDatabaseUrl } from './helper.js'

const ONLY_POSTGRES = serverUrl === undefined ? 'PostgreSQL only: the embedded database has no statement_timeout nor pool' : false

/** An app whose schema has a test-only field that runs `sql` through the service's database. */
async function appWithSlowField (t: Test, config: Partial<Config>, database: Database, sql: string): Promise<FastifyInstance> {
  const app = await buildApp(testConfig(config), { database, logger: false })
  t.teardown(() => app.close())
  await app.graphql.extendSchema('extend type Query { slow: Boolean }')
  app.graphql.defineResolvers({
    Query: {
      slow: async () => {
        await database.prisma.$queryRawUnsafe(sql)
        return true
      }
    }
  })
  return app
}

function blockEventLoop (ms: number): void {
  const end = Date.now() + ms
  while (Date.now() < end) { /* busy: this is the overload */ }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

t.test('a body over BODY_LIMIT_BYTES is refused with 413 and a clear JSON error', async (t) => {
  const app = await build(t, { bodyLimitBytes: 2048 })
  const big = { query: '{ school { id } }', variables: { padding: 'x'.repeat(4096) } }
  const res = await app.inject({ method: 'POST', url: '/', payload: big })
  t.equal(res.statusCode, 413)
  t.match(res.headers['content-type'], /application\/json/)
  t.same(res.json(), { errors: [{ message: 'Request body is too large: at most 2048 bytes', extensions: { code: 'PAYLOAD_TOO_LARGE' } }] })
  // In the media type the client asks for.
  const asked = await app.inject({ method: 'POST', url: '/', headers: { accept: 'application/graphql-response+json' }, payload: big })
  t.equal(asked.statusCode, 413)
  t.match(asked.headers['content-type'], /^application\/graphql-response\+json/)
  t.equal(asked.json().errors[0].extensions.code, 'PAYLOAD_TOO_LARGE')

  const small = await app.inject({ method: 'POST', url: '/', payload: { query: '{ __typename }' } })
  t.equal(small.statusCode, 200)
})

t.test('the default body limit is 100 KiB', async (t) => {
  const app = await build(t)
  const over = await app.inject({ method: 'POST', url: '/', payload: { query: '{ __typename }', variables: { p: 'x'.repeat(102_400) } } })
  t.equal(over.statusCode, 413)
  const under = await app.inject({ method: 'POST', url: '/', payload: { query: '{ __typename }', variables: { p: 'x'.repeat(100_000) } } })
  t.equal(under.statusCode, 200)
})

t.test('a request that never finishes arriving is answered 408 and closed (REQUEST_TIMEOUT_MS)', async (t) => {
  const app = await buildApp(testConfig({ requestTimeoutMs: 300 }), { database: await testDatabase(), logger: false })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let received = ''
    socket.on('data', (chunk) => { received += chunk.toString() })
    socket.on('close', () => { resolve(received) })
    socket.on('error', reject)
    // Headers announce 100 bytes; only one arrives (a slow-loris client).
    socket.write('POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{')
    // A bound on the test itself, far above the setting.
    setTimeout(() => { socket.destroy(); reject(new Error('the server kept the connection open')) }, 20_000).unref()
  })
  t.match(answer, /^HTTP\/1\.1 408 /)
})

t.test('a handler slower than HANDLER_TIMEOUT_MS is answered 503 with a clear error', async (t) => {
  const database = await testDatabase()
  const app = await buildApp(testConfig({ handlerTimeoutMs: 200 }), { database, logger: false })
  t.teardown(() => app.close())
  let release = (): void => {}
  await app.graphql.extendSchema('extend type Query { stuck: Boolean }')
  app.graphql.defineResolvers({ Query: { stuck: async () => await new Promise<boolean>((resolve) => { release = () => { resolve(true) } }) } })
  t.teardown(() => { release() })
  const res = await app.inject({ method: 'POST', url: '/', headers: { accept: 'application/graphql-response+json' }, payload: { query: '{ stuck }' } })
  release()
  t.equal(res.statusCode, 503)
  t.match(res.headers['content-type'], /^application\/graphql-response\+json/)
  t.same(res.json(), {
    errors: [{ message: 'The request took too long and was stopped; retry later', extensions: { code: 'TIMEOUT' } }]
  })
  const fast = await app.inject({ method: 'POST', url: '/', payload: { query: '{ __typename }' } })
  t.equal(fast.statusCode, 200)
})

/** A stuck test-only field, and a way to let every stuck call go. */
function stuckField (t: Test, app: FastifyInstance): void {
  const waiting: Array<() => void> = []
  // A promise only in Mercurius's gateway mode, not here.
  void app.graphql.extendSchema('extend type Query { stuck: Boolean }')
  app.graphql.defineResolvers({ Query: { stuck: async () => await new Promise<boolean>((resolve) => { waiting.push(() => { resolve(true) }) }) } })
  t.teardown(() => { for (const release of waiting) release() })
}

async function waitFor (what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return
    await sleep(10)
  }
  throw new Error(`gave up waiting: ${what}`)
}

/**
 * A listening app with a stuck field, and a client on a real socket that has sent `{ stuck }` and
 * waits for the request to arrive: destroying the socket abandons the request.
 */
async function abandonedRequest (t: Test, handlerTimeoutMs: number): Promise<{ app: FastifyInstance, socket: Socket }> {
  const database = await testDatabase()
  const app = await buildApp(testConfig({ handlerTimeoutMs }), { database, logger: false })
  t.teardown(() => app.close())
  stuckField(t, app)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  for (let i = 0; i < 20; i++) t.equal((await gql(app, '{ __typename }')).statusCode, 200)
  t.equal(app.requestsInFlight(), 0, 'answered requests are forgotten')
  const socket = connect(port, '127.0.0.1')
  await new Promise<void>((resolve) => socket.once('connect', resolve))
  const body = JSON.stringify({ query: '{ stuck }' })
  socket.write(`POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
  await waitFor('the request to arrive', () => app.requestsInFlight() === 1)
  return { app, socket }
}

t.test('requests in flight: counted while they run, forgotten once answered, timed out or abandoned by their client', async (t) => {
  const { app, socket } = await abandonedRequest(t, 300)
  const metrics = await app.inject({ method: 'GET', url: '/metrics' })
  t.match(metrics.body, /^sds_http_requests_in_flight 2$/m, 'the gauge counts it (and the scrape itself)')
  socket.destroy()
  await waitFor('the abandoned request to be dropped', () => app.requestsInFlight() === 0)
  t.pass('the abandoned request is dropped at the bound')

  // A request over the bound is answered 503 and forgotten too.
  const timedOut = await gql(app, '{ stuck }')
  t.equal(timedOut.statusCode, 503)
  t.equal(app.requestsInFlight(), 0)
})

t.test('without a handler bound (HANDLER_TIMEOUT_MS=0), an abandoned request is still forgotten', async (t) => {
  const { app, socket } = await abandonedRequest(t, 0)
  socket.destroy()
  // The clean-up sweep runs every second.
  await waitFor('the abandoned request to be dropped', () => app.requestsInFlight() === 0)
  t.pass('dropped')
})

t.test('a statement past DATABASE_STATEMENT_TIMEOUT_MS is cancelled by PostgreSQL: a generic error, no hang', { skip: ONLY_POSTGRES }, async (t) => {
  const database = await openDatabase({ url: await testDatabaseUrl(), statementTimeoutMs: 200 })
  t.teardown(() => database.close())
  const app = await appWithSlowField(t, {}, database, 'SELECT 1 AS done FROM pg_sleep(30)')
  const res = await gql(app, '{ slow }')
  t.equal(res.statusCode, 200)
  t.same(res.body.errors!.map((e) => e.extensions?.code), ['INTERNAL_SERVER_ERROR'])
  t.equal(res.body.errors![0]!.message, 'Internal server error')
  t.notMatch(JSON.stringify(res.body), /statement|timeout|cancel|pg_sleep/i, 'no SQL or driver text')
  // The pool's connection is usable again.
  const [row] = await database.prisma.$queryRawUnsafe<Array<{ ok: number }>>('SELECT 1 AS ok')
  t.equal(row!.ok, 1)
  const [setting] = await database.prisma.$queryRawUnsafe<Array<{ statement_timeout: string }>>('SHOW statement_timeout')
  t.equal(setting!.statement_timeout, '200ms')
})

t.test('with every pooled connection busy, a request fails after DATABASE_CONNECT_TIMEOUT_MS instead of queueing', { skip: ONLY_POSTGRES }, async (t) => {
  const database = await openDatabase({ url: await testDatabaseUrl(), poolSize: 1, connectTimeoutMs: 200, statementTimeoutMs: 0 })
  t.teardown(() => database.close())
  // The slow statement waits for a lock the test holds: it keeps the only connection until released.
  const holder = await serviceConnection(t)
  await holder.query('SELECT pg_advisory_lock(4711)')
  const app = await appWithSlowField(t, {}, database, 'SELECT 1 AS done FROM pg_advisory_xact_lock(4711)')
  const busy = gql(app, '{ slow }')
  await waitFor('the slow statement to hold the only connection', async () => (await holder.query(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM pg_advisory_xact_lock(4711)%'")).rows[0].n === 1)
  const waiting = await database.prisma.$queryRawUnsafe('SELECT 1').then(() => 'answered', (err: Error) => err.message)
  t.match(waiting, /timeout/i, 'the second caller is refused, not queued behind the first')
  await holder.query('SELECT pg_advisory_unlock(4711)')
  const first = await busy
  t.same(first.body, { data: { slow: true } }, 'the first request finishes normally')
})

t.test('an overloaded process answers 503 with Retry-After; /health still answers', async (t) => {
  const app = await build(t, { pressureMaxEventLoopDelayMs: 1, pressureRetryAfter: 7 })
  await app.ready()
  // The event loop is blocked far beyond the threshold; the next sample (every second) sees it,
  // and the request goes out at once, before a later sample of an idle loop.
  blockEventLoop(1_500)
  for (let i = 0; i < 250 && !app.isUnderPressure(); i++) await sleep(20)
  const res = await app.inject({ method: 'POST', url: '/', headers: { accept: 'application/graphql-response+json' }, payload: { query: '{ __typename }' } })
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '7')
  t.match(res.headers['content-type'], /^application\/graphql-response\+json/)
  t.same(res.json(), { errors: [{ message: 'The service is overloaded; retry in 7 seconds', extensions: { code: 'SERVICE_UNAVAILABLE' } }] })
  const health = await app.inject({ method: 'GET', url: '/health' })
  t.equal(health.statusCode, 200)
})

t.test('a heap over PRESSURE_MAX_HEAP_MB also sheds load', async (t) => {
  // A 1 MB threshold: every heap is over it once sampled.
  const app = await build(t, { pressureMaxHeapMb: 1 })
  await app.ready()
  await sleep(1_200)
  const res = await app.inject({ method: 'POST', url: '/', payload: { query: '{ __typename }' } })
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '10')
  const ready = await app.inject({ method: 'GET', url: '/ready' })
  t.equal(ready.statusCode, 503, 'a load balancer takes the node out')
  t.equal(ready.json().error, 'Service Unavailable')
})

t.test('by default (limits off in the test config) requests are served', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Bounds School', [['Ada Lovelace']])
  const { accessToken } = await login(app, school.username)
  const res = await gql(app, '{ students(limit: 5) { fullName } }', { token: accessToken })
  t.same(res.body.data, { students: [{ fullName: 'Ada Lovelace' }] })
})
