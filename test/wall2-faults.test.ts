// Wall 2 alone under faults (issue 36 point 4): a school's statement goes out with its school's
// set_config(..., true) in one sequence of the extended protocol, one implicit transaction
// (src/db/session-pool.ts). The reads run on the plain Prisma client under a school session (no
// wall 1: row-level security is the only wall), two schools' reads interleaved on a small pool,
// while each fault is injected: the setting refused, the statement timed out or cancelled after
// the setting, the connection reset mid-sequence, and Debian's PgBouncer in transaction mode
// between the pool and PostgreSQL. No read may return a row of another school, and no connection
// may carry a school to the next statement.
import { spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PrismaPg } from '@prisma/adapter-pg'
import pg from 'pg'
import t from 'tap'
import { PrismaClient } from '../src/generated/prisma/client.js'
import { openPostgresClient } from '../src/db/open.js'
import { schoolSession, sessionAdapter } from '../src/db/school-session.js'
import { openSessionPool } from '../src/db/session-pool.js'
import { seedSchool, serverUrl, testDatabase, testDatabaseUrl, unlessCitus, type SeededSchool } from './helper.js'

/** What the proxy does with the bytes the pool sends: pass them, change them, or pass a part and cut. */
type Fault = (chunk: Buffer) => Buffer | { cutAfter: Buffer }

/** A TCP proxy to PostgreSQL that hands every chunk the client sends to `fault` first. */
async function faultyProxy (target: URL): Promise<{ url: string, fault: (f: Fault | undefined) => void, close: () => Promise<void> }> {
  let current: Fault | undefined
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    const upstream = createConnection({ port: Number(target.port || 5432), host: target.hostname })
    sockets.add(client).add(upstream)
    const end = (): void => { client.destroy(); upstream.destroy() }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
    upstream.pipe(client)
    client.on('data', (chunk: Buffer) => {
      const out = current === undefined ? chunk : current(chunk)
      if (Buffer.isBuffer(out)) {
        upstream.write(out)
        return
      }
      // The part written, then both ends reset: the server sees a sequence without its Sync.
      upstream.write(out.cutAfter, end)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String(portOf(server))
  return {
    url: url.toString(),
    fault: (f) => { current = f },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    }
  }
}

function portOf (server: Server): number {
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no address')
  return address.port
}

/** The bytes of the frontend messages of `chunk` up to and including the first Execute ('E'). */
function throughFirstExecute (chunk: Buffer): Buffer | undefined {
  for (let at = 0; at + 5 <= chunk.length;) {
    const type = String.fromCharCode(chunk[at]!)
    const end = at + 1 + chunk.readInt32BE(at + 1)
    if (type === 'E') return chunk.subarray(0, end)
    at = end
  }
  return undefined
}

/** The setting's text as it goes out for `school` (setConfigStatement). */
const settingOf = (school: SeededSchool): Buffer => Buffer.from(`set_config('app.school_id', '${school.schoolId}'`)

type Read = () => Promise<string[]>

/** What a school's session reads of students, `schoolId:id` each, by a model query and by raw SQL. */
function readers (prisma: PrismaClient, schoolId: string): Read[] {
  return [
    async () => await schoolSession.run({ schoolId }, async () =>
      (await prisma.student.findMany({ select: { id: true, schoolId: true } })).map((s) => `${s.schoolId}:${s.id}`)),
    async () => await schoolSession.run({ schoolId }, async () =>
      (await prisma.$queryRawUnsafe<Array<{ row: string }>>("SELECT school_id || ':' || id AS row FROM students")).map((s) => s.row))
  ]
}

const own = (school: SeededSchool): string[] => school.studentIds.map((id) => `${school.schoolId}:${id}`).sort()

interface Interleaved {
  /** Reads that answered, by school: each must be that school's students exactly. */
  answered: Map<SeededSchool, string[][]>
  failed: unknown[]
}

/**
 * `rounds` reads of each school, started together and interleaved (a, b, a, b, ...), plus `faulty`
 * (the fault's own statements), all awaited; the reads' answers and failures.
 */
async function interleaved (prisma: PrismaClient, schools: SeededSchool[], rounds: number, faulty: Array<Promise<unknown>> = []): Promise<Interleaved> {
  const started: Array<{ school: SeededSchool, read: Promise<string[]> }> = []
  for (let i = 0; i < rounds; i++) {
    for (const school of schools) {
      const read = readers(prisma, school.schoolId)[i % 2]!
      started.push({ school, read: read() })
    }
  }
  const answered = new Map<SeededSchool, string[][]>(schools.map((school) => [school, []]))
  const failed: unknown[] = []
  const settled = await Promise.allSettled(started.map(async ({ read }) => await read))
  settled.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') answered.get(started[i]!.school)!.push(outcome.value.sort())
    else failed.push(outcome.reason)
  })
  await Promise.allSettled(faulty)
  return { answered, failed }
}

type Tap = Pick<typeof t, 'same' | 'equal' | 'ok'>

/** No answer of a school holds anything but its own students. */
function onlyOwn (t: Tap, result: Interleaved, what: string): void {
  for (const [school, answers] of result.answered) {
    const wrong = answers.filter((rows) => JSON.stringify(rows) !== JSON.stringify(own(school)))
    t.same(wrong, [], `${what}: each of ${answers.length} answers to ${school.schoolId.slice(0, 8)}… is its own students, all of them`)
  }
}

/**
 * Every connection of `pool` at once (each checked out while the others are), outside any school:
 * none has a school set, none sees a student.
 */
async function noSchoolLeft (t: Tap, pool: pg.Pool, connections: number, what: string): Promise<void> {
  const clients = await Promise.all(Array.from({ length: connections }, async () => await pool.connect()))
  try {
    const seen = await Promise.all(clients.map(async (client) => (await client.query<{ setting: string | null, students: string }>(
      "SELECT nullif(current_setting('app.school_id', true), '') AS setting, (SELECT count(*) FROM students) AS students")).rows[0]))
    t.same(seen, clients.map(() => ({ setting: null, students: '0' })), `${what}: none of the ${connections} connections has a school set or sees a student`)
  } finally {
    for (const client of clients) client.release()
  }
}

/** Polls (one statement each time, no timer) until `condition` holds; false after `tries`. */
async function waitFor (condition: () => Promise<boolean>, tries = 5_000): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await condition()) return true
  }
  return false
}

const onServer = serverUrl === undefined ? 'needs PostgreSQL (the pool of session-pool.ts; PGlite keeps its own path)' : false
// On Citus a school's statement keeps BEGIN, SET LOCAL and COMMIT (session-pool.ts).
const plainServer = onServer || await unlessCitus('the sequence of one Sync is the plain server\'s form')

const POOL = 4

t.test('wall 2 alone: no fault between the pool and PostgreSQL returns another school\'s row or leaves a school set', { skip: plainServer }, async (t) => {
  const db = await testDatabase()
  const a = await seedSchool('Faults North', [['Ada North'], ['Alan North']])
  const b = await seedSchool('Faults South', [['Bea South']])
  const proxy = await faultyProxy(new URL((await testDatabaseUrl())!))
  t.teardown(() => proxy.close())
  const { prisma, pool } = openPostgresClient({ url: proxy.url, poolSize: POOL, connectTimeoutMs: 60_000 })
  t.teardown(() => prisma.$disconnect())
  const admin = new pg.Client({ connectionString: db.ownerUrl })
  await admin.connect()
  t.teardown(() => admin.end())

  onlyOwn(t, await interleaved(prisma, [a, b], 10), 'no fault')
  await noSchoolLeft(t, pool.pool, POOL, 'no fault')

  await t.test('the setting refused by PostgreSQL (a syntax error in it): the statement does not run', async (t) => {
    // North's setting refused, every time; south's let through.
    proxy.fault((chunk) => {
      const at = chunk.indexOf(settingOf(a))
      if (at < 0) return chunk
      const changed = Buffer.from(chunk)
      changed.write('!', at + 'set_config'.length) // `set_config!'app.school_id', ...`: same length, refused
      return changed
    })
    const result = await interleaved(prisma, [a, b], 10)
    proxy.fault(undefined)
    t.equal(result.answered.get(a)!.length, 0, 'no read of north answered')
    t.equal(result.failed.length, 10, 'each of north\'s failed')
    t.ok(result.failed.every((err) => /syntax error/.test(String(err))), 'with the setting\'s error')
    t.equal(result.answered.get(b)!.length, 10, 'south\'s all answered')
    onlyOwn(t, result, 'north refused')
    await noSchoolLeft(t, pool.pool, POOL, 'after the refusals')
    onlyOwn(t, await interleaved(prisma, [a, b], 4), 'after the refusals')
  })

  await t.test('the statement timed out after the setting', async (t) => {
    // A client of its own whose connections time out statements (statement_timeout at connection start).
    const timed = openPostgresClient({ url: proxy.url, poolSize: POOL, connectTimeoutMs: 60_000, statementTimeoutMs: 1_500 })
    t.teardown(() => timed.prisma.$disconnect())
    const sleepers = [a, b, a].map((school) => schoolSession.run({ schoolId: school.schoolId }, async () =>
      await timed.prisma.$queryRawUnsafe('SELECT pg_sleep(60), (SELECT count(*) FROM students)')))
    const outcomes = sleepers.map(async (sleeper) => await sleeper.then(() => 'answered', (err: unknown) => String(err)))
    const result = await interleaved(timed.prisma, [a, b], 10, outcomes)
    for (const outcome of await Promise.all(outcomes)) t.match(outcome, /statement timeout/, 'the sleeper timed out')
    onlyOwn(t, result, 'beside the timeouts')
    await noSchoolLeft(t, timed.pool.pool, POOL, 'after the timeouts')
    onlyOwn(t, await interleaved(timed.prisma, [a, b], 4), 'after the timeouts')
  })

  for (const [kill, error] of [['pg_cancel_backend', /cancel/], ['pg_terminate_backend', /terminat|Connection terminated|ECONNRESET|closed/]] as const) {
    await t.test(`the statement ${kill === 'pg_cancel_backend' ? 'cancelled' : 'ended with its connection'} (${kill}) after the setting`, async (t) => {
      const marker = `marker_wall2_${kill}`
      const sleepers = [a, b].map((school) => schoolSession.run({ schoolId: school.schoolId }, async () =>
        await prisma.$queryRawUnsafe(`SELECT pg_sleep(60), current_setting('app.school_id') AS ${marker}, (SELECT count(*) FROM students)`)))
      const outcomes = sleepers.map(async (sleeper) => await sleeper.then(() => 'answered', (err: unknown) => String(err)))
      // The two sleepers hold two of the pool's connections: the reads interleave on the others.
      const killed = (async () => {
        let done = 0
        const seen = await waitFor(async () => {
          const { rows } = await admin.query<{ done: boolean }>(
            `SELECT ${kill}(pid) AS done FROM pg_stat_activity WHERE query LIKE '%${marker}%' AND wait_event = 'PgSleep' AND pid <> pg_backend_pid()`)
          done += rows.filter((row) => row.done).length
          return done >= 2
        })
        t.ok(seen, `both sleepers reached ${kill} while sleeping with their school set`)
      })()
      const result = await interleaved(prisma, [a, b], 10, [...outcomes, killed])
      for (const outcome of await Promise.all(outcomes)) t.match(outcome, error, 'the sleeper failed with it')
      onlyOwn(t, result, `beside ${kill}`)
      await noSchoolLeft(t, pool.pool, POOL, `after ${kill}`)
      onlyOwn(t, await interleaved(prisma, [a, b], 4), `after ${kill}`)
    })
  }

  await t.test('the connection reset mid-sequence: after the setting\'s Execute, before the statement', async (t) => {
    // North's sequences cut after the setting (no Sync reaches the server); south's let through.
    proxy.fault((chunk) => {
      if (chunk.indexOf(settingOf(a)) < 0) return chunk
      const part = throughFirstExecute(chunk)
      return part === undefined ? chunk : { cutAfter: part }
    })
    const result = await interleaved(prisma, [a, b], 10)
    proxy.fault(undefined)
    t.equal(result.answered.get(a)!.length, 0, 'no read of north answered')
    t.equal(result.failed.length, 10, 'each of north\'s failed')
    t.equal(result.answered.get(b)!.length, 10, 'south\'s all answered')
    onlyOwn(t, result, 'north reset')
    await noSchoolLeft(t, pool.pool, POOL, 'after the resets')
    onlyOwn(t, await interleaved(prisma, [a, b], 4), 'after the resets')
  })
})

const PGBOUNCER = '/usr/sbin/pgbouncer'

/** A free TCP port of the loopback (asked of the system, then given back). */
async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = portOf(server)
  await new Promise<void>((resolve) => server.close(() => { resolve() }))
  return port
}

/**
 * Debian's PgBouncer in transaction mode in front of `target`, on a free port, with a config file
 * of its own in a temporary folder: `servers` server connections for any number of clients, each
 * transaction given whichever is free.
 */
async function pgbouncer (target: URL, servers: number): Promise<{ url: string, close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'sds-pgbouncer-'))
  // PgBouncer refuses to run as root: there it is told to switch to nobody, who must read the file.
  chmodSync(dir, 0o755)
  const port = await freePort()
  const database = target.pathname.slice(1)
  const config = join(dir, 'pgbouncer.ini')
  writeFileSync(config, [
    '[databases]',
    `${database} = host=${target.hostname} port=${target.port || 5432} dbname=${database} user=${decodeURIComponent(target.username)}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = any',
    'pool_mode = transaction',
    `default_pool_size = ${servers}`,
    'max_client_conn = 100',
    // pg sends these at connection start; PgBouncer passes on only the ones it tracks.
    'ignore_startup_parameters = extra_float_digits,options,statement_timeout',
    ''
  ].join('\n'), { mode: 0o644 })
  const child = spawn(PGBOUNCER, [...(process.getuid?.() === 0 ? ['-u', 'nobody'] : []), config], { stdio: ['ignore', 'ignore', 'pipe'] })
  let log = ''
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      log += chunk.toString()
      if (log.includes('process up')) resolve()
    })
    child.on('exit', (code) => { reject(new Error(`pgbouncer exited (${code}): ${log}`)) })
  })
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String(port)
  return {
    url: url.toString(),
    close: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGINT')
      await exited
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

// In CI (.ci/run installs it) a missing binary fails the test rather than skipping it.
const withPgbouncer = plainServer || (existsSync(PGBOUNCER) || process.env.CI === 'true' ? false : `needs Debian's pgbouncer (${PGBOUNCER}: apt-get install pgbouncer)`)

t.test('wall 2 alone behind PgBouncer in transaction mode: each read sees its own school only, no server connection keeps one', { skip: withPgbouncer }, async (t) => {
  const a = await seedSchool('Pooled North', [['Ada Pooled'], ['Alan Pooled']])
  const b = await seedSchool('Pooled South', [['Bea Pooled']])
  const servers = 2
  const bouncer = await pgbouncer(new URL((await testDatabaseUrl())!), servers)
  t.teardown(() => bouncer.close())
  // Unnamed statements: PgBouncer before 1.21 keeps no prepared statement across server
  // connections, and a named one parsed on one would not exist on the other.
  const clients = 6
  const { forPrisma, pool } = openSessionPool({ connectionString: bouncer.url, max: clients })
  const prisma = new PrismaClient({ adapter: sessionAdapter(new PrismaPg(forPrisma, { disposeExternalPool: true }), { driverSetsSchool: true }) })
  t.teardown(() => prisma.$disconnect())

  for (let round = 1; round <= 3; round++) {
    // Six client connections over two server connections: the schools' sequences take turns on each.
    const result = await interleaved(prisma, [a, b], 20)
    t.equal(result.failed.length, 0, `round ${round}: every read answered`)
    onlyOwn(t, result, `round ${round}`)
    // Both server connections at once: two transactions open together hold one each.
    const held = await Promise.all([0, 1].map(async () => await pool.connect()))
    try {
      await Promise.all(held.map(async (client) => await client.query('BEGIN')))
      const seen = await Promise.all(held.map(async (client) => (await client.query<{ pid: number, setting: string | null, students: string }>(
        "SELECT pg_backend_pid() AS pid, nullif(current_setting('app.school_id', true), '') AS setting, (SELECT count(*) FROM students) AS students")).rows[0]!))
      t.equal(new Set(seen.map((row) => row.pid)).size, servers, `round ${round}: both server connections`)
      t.same(seen.map(({ setting, students }) => ({ setting, students })), [0, 1].map(() => ({ setting: null, students: '0' })), `round ${round}: neither has a school set or shows a student`)
      await Promise.all(held.map(async (client) => await client.query('COMMIT')))
    } finally {
      for (const client of held) client.release()
    }
  }

  // A school's interactive transaction through PgBouncer: the setting after BEGIN, one server connection.
  const inTransaction = await schoolSession.run({ schoolId: a.schoolId }, async () => await prisma.$transaction(async (tx) =>
    (await tx.$queryRawUnsafe<Array<{ row: string }>>("SELECT school_id || ':' || id AS row FROM students")).map((s) => s.row).sort()))
  t.same(inTransaction, own(a), 'a transaction of north: its own students')
})
