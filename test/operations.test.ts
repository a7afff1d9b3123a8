import t from 'tap'
import { buildApp } from '../src/app.js'
import { openDatabase } from '../src/db/client.js'
import { build, testConfig } from './helper.js'

t.test('GET /health answers 200', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/health' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: 'ok' })
})

t.test('GET /ready answers 200 while the database answers, 503 when it does not', async (t) => {
  const database = await openDatabase({ migrate: true })
  const app = await buildApp(testConfig(), { database, logger: false })
  t.teardown(() => app.close())
  t.equal((await app.inject({ method: 'GET', url: '/ready' })).statusCode, 200)
  await database.close()
  const down = await app.inject({ method: 'GET', url: '/ready' })
  t.equal(down.statusCode, 503)
  t.same(down.json(), { status: 'unavailable', reason: 'database' })
})

t.test('an unknown route is a 404, and every response carries a request id', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/nope' })
  t.equal(res.statusCode, 404)
  t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/)
})
