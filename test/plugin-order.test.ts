// The orders between plugins that matter, as the app runs them (src/app.ts, each plugin's
// `dependencies`): CORS's hook, then the shutdown's refusal, before anything else a request passes;
// and on close, the access audit's queue written before the database the app opened closes.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { buildApp } from '../src/app.js'
import { openDatabase } from '../src/db/client.js'
import { routeHooks } from './fixtures/route-hooks.js'
import { build, login, PASSWORD, serverUrl, testConfig, testDatabase, testDatabaseUrl, unique } from './helper.js'

t.test('every route runs CORS\'s hook, then the shutdown\'s refusal, then the rest', async (t) => {
  const app = await build(t, { corsOrigins: ['https://app.example'], pressureMaxEventLoopDelayMs: 1000, rateLimitAddressPerMinute: 100 })
  await app.ready()
  const routes = routeHooks(app)
  t.ok(routes.size > 5, `${routes.size} routes`)
  for (const [route, hooks] of routes) {
    t.same(hooks.get('onRequest')?.slice(0, 3), ['handleCors', 'refuseWhenClosing', 'trackInFlight'],
      `${route}: CORS, the shutdown's refusal, the handler timeout's tracking`)
  }
})

t.test('closing the app writes the audit\'s queue before the database it opened closes', async (t) => {
  // The app opens (and closes) its own database: on PostgreSQL this file's, as the service role; on
  // PGlite a new one in a folder of its own, migrated as it opens.
  const dataDir = mkdtempSync(join(tmpdir(), 'sds-close-order-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const url = await testDatabaseUrl()
  const app = await buildApp(testConfig({ databaseUrl: url, dataDir, auditFlushMs: 60_000 }), { logger: false })
  let closed = false
  t.teardown(async () => { if (!closed) await app.close() })
  const schoolId = await createSchool(app.db, unique('Close Order School'))
  await createStudent(app.db, { schoolId, fullName: 'Vi Closing' })
  const username = unique('user')
  await createUser(app.db, { username, password: PASSWORD, schoolId })
  const { accessToken } = await login(app, username)
  const res = await app.inject({ method: 'POST', url: '/', headers: { authorization: `Bearer ${accessToken}`, 'x-request-id': 'close-order-1' }, payload: { query: '{ students { id } }' } })
  t.equal(res.statusCode, 200)
  t.equal(app.audit.stats().queued, 1, 'one audit row waits in the queue')
  closed = true
  await app.close()

  const sql = 'SELECT request_id, record_count FROM access_audit WHERE school_id = $1'
  let rows: Array<{ request_id: string, record_count: number }>
  if (serverUrl !== undefined) {
    const owner = new pg.Client({ connectionString: (await testDatabase()).ownerUrl })
    await owner.connect()
    rows = (await owner.query(sql, [schoolId]).finally(() => owner.end())).rows
  } else {
    const db = await openDatabase({ dataDir, serviceRole: false })
    rows = await db.prisma.$queryRawUnsafe<typeof rows>(sql, schoolId).finally(() => db.close())
  }
  t.same(rows, [{ request_id: 'close-order-1', record_count: 1 }], 'the row was written: the audit closed first')
})
