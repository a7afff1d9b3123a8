// Contract test of src/db/unavailable.ts: each way the database is out of reach, made for real
// under the service's own stack (openPostgresClient: pg-pool, the session pool, @prisma/adapter-pg,
// Prisma's client), reaches the caller as an error that databaseUnavailable recognises; an
// ordinary failure (a bad statement, a statement timeout, a pool closed by the service itself)
// does not. It fails the day pg, pg-pool, the adapter or Prisma hands one of them over in another
// form: read the failure, then teach unavailable.ts the new form.
//
// Servers that are not PostgreSQL stand in where a real one cannot be made to fail on cue: a port
// with nothing listening, a server that never answers, and a small fake that speaks just enough of
// the protocol to close a connection or answer FATAL 57P03 (starting up) or 57P01 (shut down).
import { createServer, type Server, type Socket } from 'node:net'
import pg from 'pg'
import t from 'tap'
import { openPostgresClient } from '../../src/db/open.js'
import { schoolSession } from '../../src/db/school-session.js'
import { databaseUnavailable } from '../../src/db/unavailable.js'
import type { PrismaClient } from '../../src/generated/prisma/client.js'
import { serverUrl, testDatabase, testDatabaseUrl } from '../helper.js'

const SCHOOL = '0198a000-0000-7000-8000-000000000001'

/** The operations the service sends, each way it sends them: model, raw, transaction, a school's. */
const OPERATIONS: Array<[string, (prisma: PrismaClient) => Promise<unknown>]> = [
  ['a model operation', async (prisma) => await prisma.school.findMany()],
  ['a raw statement', async (prisma) => await prisma.$queryRawUnsafe('SELECT 1 AS one')],
  ['a transaction', async (prisma) => await prisma.$transaction(async (tx) => await tx.school.findMany())],
  ['a school\'s statement', async (prisma) => await schoolSession.run({ schoolId: SCHOOL }, async () => await prisma.school.findMany())]
]

async function failure (run: () => Promise<unknown>): Promise<unknown> {
  return await run().then(() => { throw new Error('the operation succeeded') }, (err: unknown) => err)
}

/** The form of an error, for the test's messages: what would need teaching. */
function form (err: unknown): string {
  const { name, code, message, meta } = err as { name?: string, code?: unknown, message?: string, meta?: unknown }
  return JSON.stringify({ name, code, message: message?.split('\n').at(-1), meta })
}

type Mode = 'silent' | 'close' | { fatal: string } | { ready: true, then: 'close' | { fatal: string } }

function errorResponse (code: string): Buffer {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C${code}\0Mthe fake server says ${code}\0\0`)
  const head = Buffer.alloc(5)
  head.write('E')
  head.writeInt32BE(fields.length + 4, 1)
  return Buffer.concat([head, fields])
}

/** AuthenticationOk, then ReadyForQuery (idle): a connection pg takes for established. */
const READY = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0, 0x5a, 0, 0, 0, 5, 0x49])

/** A TCP server on a free port that answers pg's startup message as `mode` says. */
async function fakeServer (t: Tap, mode: Mode): Promise<string> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    let started = false
    socket.on('data', () => {
      const step = !started ? mode : typeof mode === 'object' && 'ready' in mode ? mode.then : 'close'
      const first = !started
      started = true
      if (step === 'silent') return
      if (step === 'close') { socket.destroy(); return }
      if ('ready' in step) { if (first) socket.write(READY); return }
      socket.end(errorResponse(step.fatal))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => server.close(() => { resolve() }))
  })
  return `postgresql://nobody@127.0.0.1:${(server.address() as { port: number }).port}/nothing`
}
type Tap = Pick<typeof t, 'teardown'>

/** A port of 127.0.0.1 with nothing listening: connections are refused. */
async function closedPort (): Promise<string> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => { resolve() }))
  return `postgresql://nobody@127.0.0.1:${port}/nothing`
}

function client (t: Tap, url: string, options: { poolSize?: number, connectTimeoutMs?: number, statementTimeoutMs?: number } = {}) {
  const opened = openPostgresClient({ url, poolSize: options.poolSize ?? 2, connectTimeoutMs: options.connectTimeoutMs ?? 5_000, statementTimeoutMs: options.statementTimeoutMs })
  // A connection lost while idle in the pool is the pool's to drop; it must not end the test.
  opened.pool.pool.on('error', () => {})
  t.teardown(() => opened.prisma.$disconnect())
  return opened
}

const UNREACHABLE: Array<[string, (t: Tap) => Promise<{ url: string, connectTimeoutMs?: number }>]> = [
  ['connections refused (nothing listens)', async () => ({ url: await closedPort() })],
  ['a connect timeout (a server that never answers)', async (t) => ({ url: await fakeServer(t, 'silent'), connectTimeoutMs: 300 })],
  ['a connection closed at once', async (t) => ({ url: await fakeServer(t, 'close') })],
  ['FATAL 57P03 cannot_connect_now (starting up, shutting down)', async (t) => ({ url: await fakeServer(t, { fatal: '57P03' }) })],
  ['FATAL 08006 connection_failure', async (t) => ({ url: await fakeServer(t, { fatal: '08006' }) })],
  ['FATAL 53300 too_many_connections', async (t) => ({ url: await fakeServer(t, { fatal: '53300' }) })],
  ['an established connection lost', async (t) => ({ url: await fakeServer(t, { ready: true, then: 'close' }) })],
  ['an established connection ended by FATAL 57P01 admin_shutdown', async (t) => ({ url: await fakeServer(t, { ready: true, then: { fatal: '57P01' } }) })]
]

for (const [what, made] of UNREACHABLE) {
  t.test(`out of reach: ${what}`, async (t) => {
    const { url, connectTimeoutMs } = await made(t)
    for (const [operation, run] of OPERATIONS) {
      // A client per operation: each meets the failure on a connection of its own.
      const { prisma } = client(t, url, { connectTimeoutMs })
      const err = await failure(async () => await run(prisma))
      t.ok(databaseUnavailable(err), `${operation}: recognised, ${form(err)}`)
    }
  })
}

t.test('out of reach: every connection of a full pool busy past the connect timeout', async (t) => {
  const { prisma, pool } = client(t, await fakeServer(t, { ready: true, then: 'close' }), { poolSize: 1, connectTimeoutMs: 300 })
  // The pool's one connection, held (tried again should a loaded machine take longer than the timeout to make it).
  let held: pg.PoolClient | undefined
  for (let i = 0; i < 20 && held === undefined; i++) held = await pool.pool.connect().catch(() => undefined)
  if (held === undefined) throw new Error('could not hold the pool\'s connection')
  t.teardown(() => { held.release() })
  for (const [operation, run] of OPERATIONS) {
    const err = await failure(async () => await run(prisma))
    t.ok(databaseUnavailable(err), `${operation}: recognised, ${form(err)}`)
  }
})

const onServer = serverUrl === undefined ? 'needs PostgreSQL (TEST_DATABASE_URL)' : false

t.test('out of reach: PostgreSQL terminates the backend of a statement in flight (57P01, as on a restart)', { skip: onServer }, async (t) => {
  const url = (await testDatabaseUrl())!
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  t.teardown(() => admin.end())
  for (const [operation, sql] of [['a raw statement', 'SELECT pg_sleep(120)::text AS slept, 1 AS one'], ['a transaction', 'SELECT pg_sleep(120)::text AS slept, 2 AS two']] as const) {
    const { prisma } = client(t, url)
    const running = failure(async () => operation === 'a raw statement'
      ? await prisma.$queryRawUnsafe(sql)
      : await prisma.$transaction(async (tx) => await tx.$queryRawUnsafe(sql)))
    // Once the statement runs (a minute at most, on a loaded machine), its backend is terminated.
    let terminated = 0
    for (let i = 0; i < 6_000 && terminated === 0; i++) {
      terminated = (await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1', [sql])).rowCount ?? 0
      if (terminated === 0) await new Promise((resolve) => setTimeout(resolve, 10))
    }
    t.equal(terminated, 1, `${operation}: its backend terminated`)
    const err = await running
    t.ok(databaseUnavailable(err), `${operation}: recognised, ${form(err)}`)
  }
})

t.test('not out of reach: the statement\'s own failures and a pool the service closed', async (t) => {
  const db = await testDatabase()
  const ordinary: Array<[string, () => Promise<unknown>]> = [
    ['division by zero', async () => await db.prisma.$queryRawUnsafe('SELECT 1/0 AS x')],
    ['a syntax error', async () => await db.prisma.$queryRawUnsafe('SELEC 1')],
    ['a record required and absent', async () => await db.prisma.school.findFirstOrThrow({ where: { id: SCHOOL } })],
    ['a plain bug', async () => { throw new TypeError('Cannot read properties of undefined') }]
  ]
  if (serverUrl !== undefined) {
    const url = (await testDatabaseUrl())!
    const { prisma: timed } = client(t, url, { statementTimeoutMs: 50 })
    ordinary.push(['a statement timeout (57014)', async () => await timed.$queryRawUnsafe('SELECT pg_sleep(5)::text AS slept')])
    // Ended here, as the service ends it on close (nothing is left to disconnect).
    const closed = openPostgresClient({ url, poolSize: 1, connectTimeoutMs: 5_000 })
    await closed.pool.pool.end()
    ordinary.push(['a pool the service has closed', async () => await closed.prisma.school.findMany()])
  }
  for (const [what, run] of ordinary) {
    const err = await failure(run)
    t.notOk(databaseUnavailable(err), `${what}: not recognised, ${form(err)}`)
  }
})
