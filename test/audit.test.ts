// The access audit: who read or wrote which student and teacher records, written in batches after
// the answer, kept in PostgreSQL, append-only for the service, read with `school-data audit`.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import pg from 'pg'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { RequestAccess } from '../src/audit/access.js'
import { buildApp } from '../src/app.js'
import type { Config } from '../src/config.js'
import { openDatabase, type Database } from '../src/db/client.js'
import { operationObserver } from '../src/db/operation-observer.js'
import { PASSWORD, engineIndependentSkip, login, seedSchool, serverUrl, testConfig, testDatabase, testDatabaseUrl, unique } from './helper.js'
import { runCli, type CliRun } from './fixtures/cli.js'
import { clientToken, seedClient } from './fixtures/oauth.js'
import { auditRows } from './fixtures/audit.js'

// The CLI test opens an embedded database several times: slow on a busy machine.
t.setTimeout(300_000)

interface AuditRow {
  at: Date
  school_id: string
  user_id: string | null
  client_id: string | null
  request_id: string
  operation: string
  record_type: string
  record_count: number
  action: string
  /** The inserting transaction: rows of one INSERT share it. */
  batch: string
}

const AUDIT_COLUMNS = 'at, school_id, user_id, client_id, request_id, operation, record_type, record_count, action, xmin::text AS batch'

async function appWith (t: { teardown: (fn: () => unknown) => void }, overrides: Partial<Config> = {}, database?: Database): Promise<FastifyInstance> {
  const app = await buildApp(testConfig({ auditFlushMs: 60_000, ...overrides }), { database: database ?? await testDatabase(), logger: false })
  t.teardown(() => app.close())
  return app
}

async function query (app: FastifyInstance, token: string, body: Record<string, unknown>, requestId?: string) {
  const res = await app.inject({
    method: 'POST',
    url: '/',
    headers: { authorization: `Bearer ${token}`, ...(requestId !== undefined && { 'x-request-id': requestId }) },
    payload: body
  })
  return { statusCode: res.statusCode, headers: res.headers, body: res.json<{ data?: any, errors?: unknown[] }>() }
}

const ROSTER = { query: 'query Roster { students { id fullName } }' }

async function userIdOf (app: FastifyInstance, token: string): Promise<string> {
  const identity = app.auth.identify(`Bearer ${token}`)
  if (identity.kind !== 'user') throw new Error('not a user token')
  return identity.userId
}

t.test('reading students writes one audit row: user, school, operation, count and request id, after the flush', async (t) => {
  const db = await testDatabase()
  const app = await appWith(t)
  const school = await seedSchool(unique('Audit School'), [['Ada One', 'Room 1'], ['Bo Two', 'Room 1'], ['Cy Three']])
  const { accessToken } = await login(app, school.username)
  const userId = await userIdOf(app, accessToken)

  const res = await query(app, accessToken, ROSTER, 'audit-read-1')
  t.equal(res.statusCode, 200)
  t.equal(res.body.data.students.length, 3)
  t.same(await auditRows<AuditRow>(db, school.schoolId, AUDIT_COLUMNS), [], 'nothing is written on the request path')

  await app.audit.flush()
  const rows = await auditRows<AuditRow>(db, school.schoolId, AUDIT_COLUMNS)
  t.equal(rows.length, 1)
  t.match(rows[0], {
    school_id: school.schoolId,
    user_id: userId,
    request_id: 'audit-read-1',
    operation: 'Roster',
    record_type: 'Student',
    record_count: 3,
    action: 'read'
  })
  t.ok(rows[0]!.at instanceof Date && Date.now() - rows[0]!.at.getTime() < 60_000, 'the time of the request')
})

t.test("a client's reads are recorded with its client id and no user, from the response cache too", async (t) => {
  const db = await testDatabase()
  const app = await appWith(t, { responseCacheTtl: 60 })
  const school = await seedSchool(unique('Client Audit School'), [['Ada One'], ['Bo Two']])
  const client = await seedClient(school.schoolId, ['roster-core.readonly'])
  const token = await clientToken(app, client)
  t.equal((await query(app, token, ROSTER, 'client-read-1')).headers['x-cache'], 'miss')
  t.equal((await query(app, token, ROSTER, 'client-read-2')).headers['x-cache'], 'hit')
  await app.audit.flush()
  const rows = await auditRows<AuditRow>(db, school.schoolId, AUDIT_COLUMNS)
  t.match(rows, [
    { request_id: 'client-read-1', user_id: null, client_id: client.clientId, record_type: 'Student', record_count: 2, operation: 'Roster' },
    { request_id: 'client-read-2', user_id: null, client_id: client.clientId, record_type: 'Student', record_count: 2, operation: 'Roster' }
  ])
  t.equal(rows.length, 2)
})

t.test('a request that touches no student or teacher record writes nothing', async (t) => {
  const db = await testDatabase()
  const app = await appWith(t)
  const school = await seedSchool(unique('Quiet School'), [['Dee Four']])
  const { accessToken } = await login(app, school.username)
  const before = app.audit.stats().written

  t.equal((await query(app, accessToken, { query: '{ school { name } }' })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/', payload: { query: '{ students { id } }' } })).statusCode, 200, 'no token: refused')
  await app.audit.flush()
  t.same(await auditRows<AuditRow>(db, school.schoolId, AUDIT_COLUMNS), [])
  t.equal(app.audit.stats().written, before)
})

t.test('students and teachers nested in a relation read are counted, per record type', async (t) => {
  const db = await testDatabase()
  const app = await appWith(t)
  const school = await seedSchool(unique('Nested School'), [['Eve Five', 'Room A'], ['Fay Six', 'Room A']])
  await createTeacher(db, { schoolId: school.schoolId, fullName: 'Gus Teacher' })
  const access = new RequestAccess()
  // The counting client the app hands to resolvers, in a request's context.
  await operationObserver.run(access, async () => {
    const scoped = app.db.forSchool(school.schoolId)
    await scoped.classroom.findMany({ select: { name: true, students: { select: { id: true } } } })
    await scoped.teacher.findMany({ select: { id: true } })
    await scoped.student.count()
  })
  t.same(access.counts.map(({ recordType, action, count }) => ({ recordType, action, count })).sort((a, b) => a.recordType.localeCompare(b.recordType)), [
    { recordType: 'Student', action: 'read', count: 2 },
    { recordType: 'Teacher', action: 'read', count: 1 }
  ], 'count() hands over no record and is not counted')
})

t.test('change feed entries of students and teachers count as reads of those records', async (t) => {
  const db = await testDatabase()
  const app = await appWith(t)
  const school = await seedSchool(unique('Feed School'), [['Ray Twenty', 'Room F']])
  await createTeacher(db, { schoolId: school.schoolId, fullName: 'Sol TwentyOne' })
  const access = new RequestAccess()
  await operationObserver.run(access, async () => {
    await app.db.forSchool(school.schoolId).change.findMany({})
  })
  const counts = Object.fromEntries(access.counts.map((c) => [`${c.recordType} ${c.action}`, c.count]))
  t.same(counts, { 'Student read': 1, 'Teacher read': 1 }, 'the classroom\'s entry names no student or teacher')
})

t.test('writes are counted, inside interactive transactions too, once each', async (t) => {
  const app = await appWith(t)
  const school = await seedSchool(unique('Write School'))
  const access = new RequestAccess()
  await operationObserver.run(access, async () => {
    const scoped = app.db.forSchool(school.schoolId)
    const created = await scoped.student.create({ data: { schoolId: school.schoolId, fullName: 'Hal Seven' }, select: { id: true } })
    await scoped.student.updateMany({ where: { id: created.id }, data: { fullName: 'Hal Eight' } })
    await scoped.$transaction(async (tx: typeof scoped) => {
      await tx.teacher.create({ data: { schoolId: school.schoolId, fullName: 'Ida Nine' } })
      await tx.student.findMany({ select: { id: true } })
    })
  })
  const counts = Object.fromEntries(access.counts.map((c) => [`${c.recordType} ${c.action}`, c.count]))
  t.same(counts, { 'Student write': 2, 'Teacher write': 1, 'Student read': 1 })
  t.ok(access.counts.every((c) => c.schoolId === school.schoolId))
})

t.test('many requests go out in few INSERTs: a batch per AUDIT_BATCH_SIZE rows', async (t) => {
  const db = await testDatabase()
  const school = await seedSchool(unique('Batch School'), [['Jo Ten']])

  const bulk = await appWith(t, { auditBatchSize: 500 })
  const { accessToken } = await login(bulk, school.username)
  for (let i = 0; i < 20; i++) t.equal((await query(bulk, accessToken, ROSTER)).statusCode, 200)
  await bulk.audit.flush()
  let rows = await auditRows<AuditRow>(db, school.schoolId, AUDIT_COLUMNS)
  t.equal(rows.length, 20)
  t.equal(new Set(rows.map((r) => r.batch)).size, 1, '20 requests, one INSERT')

  // Small batches: a full one goes out by itself, without waiting for the timer (60 s here, from
  // the app's start: waiting up to 50 s cannot reach it, however slow the machine).
  const started = Date.now()
  const small = await appWith(t, { auditBatchSize: 5 })
  for (let i = 0; i < 20; i++) t.equal((await query(small, accessToken, ROSTER)).statusCode, 200)
  while (small.audit.stats().written < 15 && Date.now() - started < 50_000) await new Promise((resolve) => setTimeout(resolve, 20))
  t.ok(small.audit.stats().written >= 15, 'full batches were written without a flush call')
  await small.audit.flush()
  rows = (await auditRows<AuditRow>(db, school.schoolId, AUDIT_COLUMNS)).slice(20)
  t.equal(rows.length, 20)
  const batches = new Map<string, number>()
  for (const row of rows) batches.set(row.batch, (batches.get(row.batch) ?? 0) + 1)
  t.ok(batches.size >= 4 && batches.size < 20, `20 rows in ${batches.size} INSERTs`)
  t.ok([...batches.values()].every((n) => n <= 5), 'no INSERT holds more than a batch')
})

t.test('closing the app writes what is queued', async (t) => {
  const db = await testDatabase()
  const school = await seedSchool(unique('Close School'), [['Kim Eleven'], ['Lu Twelve']])
  const app = await buildApp(testConfig({ auditFlushMs: 60_000 }), { database: db, logger: false })
  const { accessToken } = await login(app, school.username)
  t.equal((await query(app, accessToken, ROSTER, 'audit-close-1')).statusCode, 200)
  t.equal(app.audit.stats().queued, 1)
  await app.close()
  t.match(await auditRows<AuditRow>(db, school.schoolId, AUDIT_COLUMNS), [{ request_id: 'audit-close-1', record_count: 2 }])
})

t.test('a full queue drops new rows, counts them and says so in the error log', async (t) => {
  const db = await testDatabase()
  const school = await seedSchool(unique('Overflow School'), [['Mo Thirteen']])
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _enc, done) { lines.push(String(chunk)); done() } })
  // No timer tick during the test (60 s): the queue fills.
  const app = await buildApp(testConfig({ auditFlushMs: 60_000, auditMaxQueue: 3, auditBatchSize: 500, logLevel: 'error' }), {
    database: db,
    logger: { level: 'error', stream }
  })
  t.teardown(() => app.close())
  const { accessToken } = await login(app, school.username)
  for (let i = 0; i < 5; i++) t.equal((await query(app, accessToken, ROSTER)).statusCode, 200, 'requests are answered')
  t.same(app.audit.stats(), { queued: 3, written: 0, dropped: 2, failedBatches: 0 })
  await app.audit.flush()
  t.equal(lines.filter((l) => /queue full \(3 rows\), 2 row\(s\) dropped \(2 in all\)/.test(l)).length, 1, 'one error line with the number dropped')
  t.equal((await auditRows<AuditRow>(db, school.schoolId, AUDIT_COLUMNS)).length, 3)
})

t.test('an answer from the response cache is audited for the user it serves', async (t) => {
  const db = await testDatabase()
  const app = await appWith(t, { responseCacheTtl: 60 })
  const school = await seedSchool(unique('Cache School'), [['Ned Fourteen'], ['Oz Fifteen']])
  const other = unique('user')
  await createUser(db, { username: other, password: PASSWORD, schoolId: school.schoolId })
  const first = await login(app, school.username)
  const second = await login(app, other)

  const miss = await query(app, first.accessToken, ROSTER, 'audit-miss')
  t.equal(miss.headers['x-cache'], 'miss')
  const hit = await query(app, second.accessToken, ROSTER, 'audit-hit')
  t.equal(hit.headers['x-cache'], 'hit', 'served from the cache, no query run')
  await app.audit.flush()
  t.match(await auditRows<AuditRow>(db, school.schoolId, AUDIT_COLUMNS), [
    { request_id: 'audit-miss', user_id: await userIdOf(app, first.accessToken), record_count: 2 },
    { request_id: 'audit-hit', user_id: await userIdOf(app, second.accessToken), record_count: 2, operation: 'Roster' }
  ])
})

t.test('the service role may add to the audit but not read, change or remove it', async (t) => {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Locked School'))
  const insert = `INSERT INTO access_audit (school_id, user_id, request_id, operation, record_type, record_count, action)
    VALUES ('${schoolId}', '${schoolId}', 'r', 'Op', 'Student', 1, 'read')`
  t.equal(await db.prisma.$executeRawUnsafe(insert), 1, 'INSERT is allowed')
  for (const sql of [
    'SELECT count(*) FROM access_audit',
    `UPDATE access_audit SET record_count = 2 WHERE school_id = '${schoolId}'`,
    `DELETE FROM access_audit WHERE school_id = '${schoolId}'`,
    'TRUNCATE access_audit'
  ]) {
    await t.rejects(db.prisma.$executeRawUnsafe(sql), /permission denied/, sql.slice(0, sql.indexOf(' ')))
  }
  t.equal((await auditRows<AuditRow>(db, schoolId, AUDIT_COLUMNS)).length, 1, 'the row stays')
})

t.test('a service role that may read, change or delete the audit is named at start-up: the REVOKE of "Database roles" was left out', { skip: serverUrl === undefined ? 'needs PostgreSQL: the embedded database makes its own role' : false }, async (t) => {
  const db = await testDatabase()
  t.equal(db.auditAppendOnly, true, 'the test role, granted as the README says, may only add')
  const owner = new pg.Client({ connectionString: db.ownerUrl })
  await owner.connect()
  t.teardown(() => owner.end())
  const url = new URL((await testDatabaseUrl())!)
  await owner.query(`GRANT SELECT, UPDATE, DELETE ON access_audit TO "${url.username}"`)
  t.teardown(() => owner.query(`REVOKE SELECT, UPDATE, DELETE ON access_audit FROM "${url.username}"`))
  const lines: Array<{ level: number, msg: string }> = []
  const app = await buildApp(testConfig({ databaseUrl: url.toString() }), {
    logger: { level: 'warn', stream: { write (line: string) { lines.push(JSON.parse(line)) } } }
  })
  t.teardown(() => app.close())
  t.equal(app.db.auditAppendOnly, false)
  t.match(lines.filter((line) => line.level === 40).map((line) => line.msg), [/access audit is not append-only.*REVOKE SELECT, UPDATE, DELETE ON access_audit/],
    'one warning, with the statement that mends it')
})

const cli = async (args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> => await runCli(args, { PATH: process.env.PATH, ...env })

t.test('school-data audit prints a school\'s audit, newest first, as lines or JSON lines', { skip: engineIndependentSkip }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sds-audit-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  // On PostgreSQL: this file's database, read as the owner. On PGlite: an embedded database in a
  // folder of its own, which the CLI opens once the app has closed (and written its queue).
  const onServer = serverUrl !== undefined
  // (Opened before the app: creating an embedded database may outlast a plugin's start-up time.)
  const embedded = onServer ? undefined : await openDatabase({ dataDir, migrate: true })
  const app = await buildApp(testConfig({ auditFlushMs: 60_000 }), { database: embedded ?? await testDatabase(), logger: false })
  let closed = false
  t.teardown(async () => {
    if (closed) return
    await app.close()
    await embedded?.close()
  })
  const schoolId = await createSchool(app.db, unique('CLI Audit School'))
  await createStudent(app.db, { schoolId, fullName: 'Pia Sixteen' })
  await createTeacher(app.db, { schoolId, fullName: 'Quin Seventeen' })
  const username = unique('user')
  await createUser(app.db, { username, password: PASSWORD, schoolId })
  const { accessToken } = await login(app, username)
  const userId = await userIdOf(app, accessToken)
  t.equal((await query(app, accessToken, ROSTER, 'cli-1')).statusCode, 200)
  const since = new Date().toISOString()
  t.equal((await query(app, accessToken, { query: 'query Staff { teachers { id } }' }, 'cli-2')).statusCode, 200)
  closed = true
  await app.close()
  await embedded?.close()

  const env = onServer ? { DATABASE_URL: (await testDatabase()).ownerUrl } : { DATA_DIR: dataDir }
  const lines = await cli(['audit', '--school', schoolId], env)
  t.equal(lines.code, 0, lines.stderr)
  const printed = lines.stdout.trimEnd().split('\n')
  t.equal(printed.length, 2)
  t.match(printed[0], new RegExp(`^\\d{4}-\\d{2}-\\d{2}T\\S+Z user=${userId} read Teacher count=1 operation=Staff request=cli-2$`))
  t.match(printed[1], new RegExp(`user=${userId} read Student count=1 operation=Roster request=cli-1$`))

  const json = await cli(['audit', '--school', schoolId, '--user', userId, '--since', since, '--json'], env)
  t.equal(json.code, 0, json.stderr)
  t.same(json.stdout.trimEnd().split('\n').map((line) => JSON.parse(line)).map(({ at, ...rest }: { at: string }) => rest), [
    { schoolId, userId, requestId: 'cli-2', operation: 'Staff', recordType: 'Teacher', action: 'read', recordCount: 1 }
  ])
  t.equal((await cli(['audit', '--school', schoolId, '--limit', '1'], env)).stdout.trimEnd().split('\n').length, 1)
  t.equal((await cli(['audit', '--school', schoolId, '--user', schoolId], env)).stdout, '', 'another user: nothing')

  const bad = await cli(['audit', '--school', schoolId, '--since', 'yesterday'], env)
  t.not(bad.code, 0)
  t.match(bad.stderr, /--since "yesterday" is not an ISO 8601 time/)
  t.match((await cli(['audit'], env)).stderr, /required option '--school <schoolId>'/)

  if (onServer) {
    const target = (await testDatabase()).migrationTarget
    const asService = await cli(['audit', '--school', schoolId], { DATABASE_URL: 'url' in target ? target.url : '' })
    t.not(asService.code, 0)
    t.match(asService.stderr, /may not read the access audit/)
  }
})

t.test('a batch that fails is tried again, in order, and counted', async (t) => {
  const { AuditWriter } = await import('../src/audit/writer.js')
  const written: string[] = []
  let failures = 1
  const errors: string[] = []
  const writer = new AuditWriter({
    insert: async (rows) => {
      if (failures-- > 0) throw new Error('database gone')
      written.push(...rows.map((r) => r.requestId))
    },
    flushMs: 60_000,
    batchSize: 2,
    maxQueue: 10,
    onError: (message) => { errors.push(message) }
  })
  t.teardown(() => writer.close())
  const row = (requestId: string) => ({
    at: new Date(), schoolId: 's', userId: 'u', clientId: null, requestId, operation: 'Op', recordType: 'Student' as const, recordCount: 1, action: 'read' as const
  })
  for (const id of ['a', 'b', 'c']) t.ok(writer.push(row(id)))
  await writer.flush()
  t.same(written, [], 'the first batch failed: flush stops there')
  t.match(errors, [/writing 2 row\(s\) failed; they will be tried again/])
  await writer.flush()
  t.same(written, ['a', 'b', 'c'])
  t.same(writer.stats(), { queued: 0, written: 3, dropped: 0, failedBatches: 1 })
})
