import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.js'
import { openDatabase } from '../src/db/client.js'
import { MAX_OPERATION_LABELS } from '../src/plugins/metrics.js'
import { build, gql, login, seedSchool, testConfig, testDatabase } from './helper.js'

async function scrape (app: FastifyInstance, headers: Record<string, string> = {}): Promise<string> {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers })
  if (res.statusCode !== 200) throw new Error(`GET /metrics answered ${res.statusCode}`)
  return res.body
}

/** The value of one sample, e.g. `sds_http_requests_total{route="/",status="200"}`. */
function sample (text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue
    const match = /^([^{ ]+)(?:\{([^}]*)\})? (\S+)$/.exec(line)
    if (match === null || match[1] !== name) continue
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]))
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3])
  }
  return undefined
}

t.test('GET /metrics answers in the Prometheus text format with the default process metrics', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/metrics' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  t.match(res.body, /^# HELP process_cpu_user_seconds_total /m)
  t.match(res.body, /^nodejs_eventloop_lag_seconds /m)
  t.match(res.body, /^# TYPE sds_graphql_request_duration_seconds histogram$/m)
})

t.test('GraphQL requests are counted and timed by operation and outcome', async (t) => {
  const school = await seedSchool('Metrics School', [['Ada Lovelace']])
  const app = await build(t)
  const { accessToken } = await login(app, school.username)
  for (let i = 0; i < 3; i++) {
    t.equal((await gql(app, 'query Roster { students { id } }', { token: accessToken })).statusCode, 200)
  }
  // A field error (no token) and a validation error (unknown field).
  t.equal((await gql(app, 'query Roster { students { id } }')).statusCode, 200)
  t.equal((await gql(app, '{ students { nickname } }', { token: accessToken, accept: 'application/graphql-response+json' })).statusCode, 400)
  // The same request error under application/json is a 200 (GraphQL over HTTP), still rejected.
  t.equal((await gql(app, '{ students { nickname } }', { token: accessToken })).statusCode, 200)
  const text = await scrape(app)
  t.equal(sample(text, 'sds_graphql_request_duration_seconds_count', { operation: 'Roster', outcome: 'ok' }), 3)
  t.equal(sample(text, 'sds_graphql_request_duration_seconds_count', { operation: 'Roster', outcome: 'error' }), 1)
  t.equal(sample(text, 'sds_graphql_request_duration_seconds_count', { operation: 'Login', outcome: 'ok' }), 1)
  t.equal(sample(text, 'sds_graphql_request_duration_seconds_count', { operation: 'anonymous', outcome: 'rejected' }), 2)
  t.equal(sample(text, 'sds_graphql_request_duration_seconds_bucket', { operation: 'Roster', outcome: 'ok', le: '+Inf' }), 3)
  t.equal(sample(text, 'sds_http_requests_total', { route: '/', status: '200' }), 6)
  t.equal(sample(text, 'sds_http_requests_total', { route: '/', status: '400' }), 1)
})

t.test('an unexpected failure counts as internal_error', async (t) => {
  // A database of its own, closed under the app: every query fails.
  const database = await openDatabase({ migrate: true })
  const app = await buildApp(testConfig(), { database, logger: false })
  t.teardown(() => app.close())
  await database.close()
  const res = await gql(app, 'mutation Login { login(username: "someone", password: "long enough password") { accessToken } }')
  t.equal(res.body.errors?.[0]?.extensions?.code, 'INTERNAL_SERVER_ERROR')
  const text = await scrape(app)
  t.equal(sample(text, 'sds_graphql_request_duration_seconds_count', { operation: 'Login', outcome: 'internal_error' }), 1)
})

t.test('unmatched routes share one label, and operation names are capped', async (t) => {
  const app = await build(t)
  await app.inject({ method: 'GET', url: '/no/such/path/1' })
  await app.inject({ method: 'GET', url: '/no/such/path/2' })
  for (let i = 0; i < MAX_OPERATION_LABELS + 20; i++) {
    await app.inject({ method: 'POST', url: '/', payload: { query: `query Op${i} { __typename }` } })
  }
  const text = await scrape(app)
  t.equal(sample(text, 'sds_http_requests_total', { route: 'unmatched', status: '404' }), 2)
  const operations = new Set([...text.matchAll(/^sds_graphql_request_duration_seconds_count\{[^}]*operation="([^"]+)"/gm)].map((m) => m[1]))
  t.equal(operations.size, MAX_OPERATION_LABELS + 1, 'at most the cap, plus "other"')
  t.equal(sample(text, 'sds_graphql_request_duration_seconds_count', { operation: 'other', outcome: 'ok' }), 20)
})

t.test('the PostgreSQL pool is reported', { skip: (process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL) ? false : 'the embedded database has no connection pool' }, async (t) => {
  const db = await testDatabase()
  const app = await build(t, { databasePoolSize: 10 })
  await app.inject({ method: 'GET', url: '/ready' })
  const text = await scrape(app)
  const stats = db.poolStats()!
  t.equal(sample(text, 'sds_db_pool_max_connections', {}), 10)
  t.ok((sample(text, 'sds_db_pool_connections', {}) ?? 0) >= 1, 'the readiness check opened a connection')
  t.equal(sample(text, 'sds_db_pool_waiting_requests', {}), 0)
  t.ok(sample(text, 'sds_db_pool_idle_connections', {}) !== undefined)
  t.equal(stats.max, 10)
})

t.test('METRICS_TOKEN protects /metrics; production serves it only with a token', async (t) => {
  const token = 'metrics-token-0123456789abcdef'
  const guarded = await build(t, { metricsToken: token })
  t.equal((await guarded.inject({ method: 'GET', url: '/metrics' })).statusCode, 401)
  t.equal((await guarded.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer wrong-token-0123456789' } })).statusCode, 401)
  t.match(await scrape(guarded, { authorization: `Bearer ${token}` }), /sds_http_requests_total/)

  const production = await build(t, { env: 'production' })
  t.equal((await production.inject({ method: 'GET', url: '/metrics' })).statusCode, 404)
  const productionWithToken = await build(t, { env: 'production', metricsToken: token })
  t.match(await scrape(productionWithToken, { authorization: `Bearer ${token}` }), /sds_http_requests_total/)
})
