import { randomUUID } from 'node:crypto'
import t from 'tap'
import { buildApp } from '../src/app.js'
import { openDatabase, SCHOOL_SETTING_PROBE } from '../src/db/client.js'
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

t.test('GET /ready answers 503 when a school\'s statement cannot see its school where the rows are', async (t) => {
  const database = await openDatabase({ migrate: true })
  t.teardown(() => database.close())
  await t.resolves(database.checkSchoolSetting(), 'the school set by the data path is seen: the check passes')
  // The check's read, without the school set (as on Citus workers the school was not passed on
  // to): it fails, though the school has no rows, where a plain read would find nothing.
  await t.rejects(database.prisma.$queryRawUnsafe(SCHOOL_SETTING_PROBE, randomUUID()), /uuid/, 'its read fails without the school')
  const notPassedOn = { ...database, checkSchoolSetting: async () => { await database.prisma.$queryRawUnsafe(SCHOOL_SETTING_PROBE, randomUUID()) } }
  const app = await buildApp(testConfig(), { database: notPassedOn, logger: false })
  t.teardown(() => app.close())
  const ready = await app.inject({ method: 'GET', url: '/ready' })
  t.equal(ready.statusCode, 503)
  t.same(ready.json(), { status: 'unavailable', reason: 'school setting' })
})

t.test('an unknown route is a 404, and every response carries a request id', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/nope' })
  t.equal(res.statusCode, 404)
  t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/)
})
