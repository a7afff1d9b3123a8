// Contract tests of the library behaviours wall 2 relies on (docs/changing/tenant-isolation.md). Each fails the day an upgrade of Prisma, @prisma/adapter-pg or pg changes what it
// checks: read the failure before touching the isolation suite.
// - Prisma calls the driver adapter in the async context of the client call (school-session.ts
//   reads the school there), for many concurrent calls of different schools.
// - src/db/session-pool.ts: PrismaPg takes the pool Proxy, sends a statement outside a
//   transaction through `pool.query` (where the school is set) and a transaction's through
//   `pool.connect`; a school's statement and its setting cost one round trip and go out as one
//   sequence of the extended protocol (one Sync, no simple Query: no BEGIN, no COMMIT), which pg
//   takes from a subclass of its Query on a pipelining pool; a transaction no more than BEGIN, its
//   statements and COMMIT.
import { randomUUID } from 'node:crypto'
import { createServer, connect, type Server, type Socket } from 'node:net'
import { PrismaPg } from '@prisma/adapter-pg'
import pg from 'pg'
import t from 'tap'
import { PrismaClient } from '../../src/generated/prisma/client.js'
import { openSessionPool } from '../../src/db/session-pool.js'
import { schoolSession, sessionAdapter } from '../../src/db/school-session.js'
import { serverUrl, testDatabase, testDatabaseUrl, unlessCitus } from '../helper.js'

const SETTING = "SELECT current_setting('app.school_id', true) AS school"

async function settingOf (prisma: PrismaClient): Promise<string | null> {
  const [row] = await prisma.$queryRawUnsafe<Array<{ school: string | null }>>(SETTING)
  return row?.school === '' ? null : row?.school ?? null
}

t.test('Prisma calls the driver adapter in the async context of each client call', async (t) => {
  const db = await testDatabase()
  const schools = Array.from({ length: 20 }, () => randomUUID())
  const seen = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
    const school = schools[i % schools.length]!
    return { school, seen: await schoolSession.run({ schoolId: school }, async () => await settingOf(db.prisma)) }
  }))
  t.equal(seen.filter(({ school, seen }) => school !== seen).length, 0, '200 concurrent statements of 20 schools: each ran with its own school')
  t.equal(await settingOf(db.prisma), null, 'outside a school: none')
  const inTransaction = await schoolSession.run({ schoolId: schools[0]! }, async () => await db.prisma.$transaction(async (tx) => {
    const [row] = await tx.$queryRawUnsafe<Array<{ school: string }>>(SETTING)
    return row?.school
  }))
  t.equal(inTransaction, schools[0], 'a transaction begun in a school\'s session runs with its school')
})

const onServer = serverUrl === undefined ? 'the pool of session-pool.ts is PostgreSQL only (set TEST_DATABASE_URL)' : false

/**
 * A TCP proxy to PostgreSQL that delays every chunk, each way, by `delayMs`, and counts the round
 * trips: the times a client sends after an answer reached it (or first). Writes the client makes
 * without waiting for an answer are one round trip, however slow the machine: an answer reaches it
 * `2 * delayMs` after it sent, at the earliest.
 */
async function delayingProxy (target: URL, delayMs: number): Promise<{ url: string, roundTrips: () => number, sent: () => Map<string, number>, close: () => Promise<void> }> {
  const sockets = new Set<Socket>()
  let roundTrips = 0
  // The frontend messages the clients sent, by type (after each connection's start-up message).
  const sent = new Map<string, number>()
  const count = (): ((chunk: Buffer) => void) => {
    let pending = Buffer.alloc(0)
    let started = false
    return (chunk) => {
      pending = Buffer.concat([pending, chunk])
      if (!started) {
        if (pending.length < 4 || pending.length < pending.readInt32BE(0)) return
        pending = pending.subarray(pending.readInt32BE(0))
        started = true
      }
      while (pending.length >= 5 && pending.length >= 1 + pending.readInt32BE(1)) {
        const type = String.fromCharCode(pending[0]!)
        sent.set(type, (sent.get(type) ?? 0) + 1)
        pending = pending.subarray(1 + pending.readInt32BE(1))
      }
    }
  }
  const forward = (from: Socket, to: Socket, onChunk: () => void, onDelivered: () => void): void => {
    from.on('data', (chunk) => {
      onChunk()
      setTimeout(() => {
        if (to.destroyed) return
        to.write(chunk)
        onDelivered()
      }, delayMs)
    })
    from.on('close', () => { setTimeout(() => to.destroy(), delayMs) })
    from.on('error', () => {})
  }
  // No Nagle delay of the proxy's own: only the delay under test.
  const server: Server = createServer({ noDelay: true }, (client) => {
    const upstream = connect({ port: Number(target.port || 5432), host: target.hostname, noDelay: true })
    sockets.add(client).add(upstream)
    let answered = true
    client.on('data', count())
    forward(client, upstream, () => {
      if (answered) roundTrips += 1
      answered = false
    }, () => {})
    forward(upstream, client, () => {}, () => { answered = true })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no proxy address')
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String(address.port)
  return {
    url: url.toString(),
    roundTrips: () => roundTrips,
    sent: () => new Map(sent),
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

t.test('session-pool.ts: what it relies on in PrismaPg and pg', { skip: onServer }, async (t) => {
  const url = (await testDatabaseUrl())!
  const calls: string[] = []
  const { forPrisma, pool } = openSessionPool({ connectionString: url, max: 2 })
  t.ok(forPrisma instanceof pg.Pool, 'the Proxy passes for a pg.Pool')
  // A spy in front of the school pool: which of its methods PrismaPg calls.
  const spied = new Proxy(forPrisma, {
    get (target, key) {
      const value = Reflect.get(target, key) as unknown
      if ((key === 'query' || key === 'connect') && typeof value === 'function') {
        return (...args: unknown[]) => {
          calls.push(key)
          return (value as (...a: unknown[]) => unknown)(...args)
        }
      }
      return value
    }
  })
  const prisma = new PrismaClient({ adapter: sessionAdapter(new PrismaPg(spied, { disposeExternalPool: true }), { driverSetsSchool: true }) })
  t.teardown(() => prisma.$disconnect())
  const school = randomUUID()

  calls.length = 0
  t.equal(await schoolSession.run({ schoolId: school }, async () => await settingOf(prisma)), school, 'a statement of a school runs with its school set')
  t.same(calls, ['query'], 'PrismaPg sent it through pool.query')
  t.equal(await settingOf(prisma), null, 'the next statement on the pool has no school: the setting ended with its transaction')
  const [row] = (await pool.query(SETTING)).rows as Array<{ school: string | null }>
  t.ok(row?.school === null || row?.school === '', 'nor has the connection')

  calls.length = 0
  const inTransaction = await schoolSession.run({ schoolId: school }, async () => await prisma.$transaction(async (tx) => {
    const [first] = await tx.$queryRawUnsafe<Array<{ school: string }>>(SETTING)
    const [second] = await tx.$queryRawUnsafe<Array<{ school: string }>>(SETTING)
    return [first?.school, second?.school]
  }))
  t.same(inTransaction, [school, school], 'a school\'s transaction runs with its school set')
  t.same(calls, ['connect'], 'PrismaPg ran the transaction on a client of pool.connect, never through pool.query')

  await t.rejects(schoolSession.run({ schoolId: school }, async () => await prisma.$queryRawUnsafe('SELECT 1/0')), /division by zero/, 'a failing statement fails')
  t.equal(await schoolSession.run({ schoolId: school }, async () => await settingOf(prisma)), school, 'and the pool goes on serving schools')
})

t.test('session-pool.ts: a school\'s statement costs one round trip, a transaction no more than BEGIN, its statements and COMMIT', { skip: onServer }, async (t) => {
  const delayMs = 60
  const proxy = await delayingProxy(new URL((await testDatabaseUrl())!), delayMs)
  t.teardown(() => proxy.close())
  const { forPrisma } = openSessionPool({ connectionString: proxy.url, max: 1 })
  const prisma = new PrismaClient({ adapter: sessionAdapter(new PrismaPg(forPrisma, { disposeExternalPool: true }), { driverSetsSchool: true }) })
  t.teardown(() => prisma.$disconnect())
  const school = randomUUID()
  // Connected, and the statement planned, before counting.
  await schoolSession.run({ schoolId: school }, async () => await settingOf(prisma))
  let before = proxy.roundTrips()
  const sentBefore = proxy.sent()
  t.equal(await schoolSession.run({ schoolId: school }, async () => await settingOf(prisma)), school)
  t.equal(proxy.roundTrips() - before, 1, 'the setting and the statement in one round trip')
  const sentNow = proxy.sent()
  const delta = (type: string): number => (sentNow.get(type) ?? 0) - (sentBefore.get(type) ?? 0)
  t.same({ parse: delta('P'), bind: delta('B'), execute: delta('E'), sync: delta('S'), query: delta('Q') }, { parse: 2, bind: 2, execute: 2, sync: 1, query: 0 },
    'one sequence of the extended protocol: the setting\'s Parse/Bind/Execute and the statement\'s, one Sync, no simple query (no BEGIN, no COMMIT)')

  // A transaction: BEGIN, then set_config written with the first statement, then COMMIT.
  before = proxy.roundTrips()
  const seen = await schoolSession.run({ schoolId: school }, async () => await prisma.$transaction(async (tx) => {
    const [row] = await tx.$queryRawUnsafe<Array<{ school: string }>>(SETTING)
    return row?.school
  }))
  t.equal(seen, school)
  t.equal(proxy.roundTrips() - before, 3, 'a school\'s transaction of one statement in three round trips')
})

// On a real coordinator the citus settings are Citus's own (test/citus.test.ts shows the forms there).
const plainServer = onServer || await unlessCitus('it reads back, from a plain server, what the Citus form sends')

t.test('session-pool.ts and school-session.ts: on a Citus coordinator, both paths set the school with SET LOCAL, after telling Citus to pass it on', { skip: plainServer }, async (t) => {
  // A plain server takes `citus.propagate_set_commands` as a placeholder setting: what is sent can
  // be read back. (That Citus then passes the school on to its workers is shown on a cluster:
  // docs/running/citus.md.)
  const url = (await testDatabaseUrl())!
  const told = openSessionPool({ connectionString: url, max: 2 }, { citus: true })
  const { forPrisma } = told
  t.equal(told.citus, true)
  t.equal(await told.detect(), true, 'told, it does not ask the server')
  const plain = openSessionPool({ connectionString: url, max: 1 })
  t.equal(await plain.detect(), false, 'a server without the citus extension is not a coordinator')
  await plain.pool.end()
  const prisma = new PrismaClient({ adapter: sessionAdapter(new PrismaPg(forPrisma, { disposeExternalPool: true }), { driverSetsSchool: true, citus: () => true }) })
  t.teardown(() => prisma.$disconnect())
  const SENT = "SELECT current_setting('app.school_id', true) AS school, current_setting('app.teacher_id', true) AS teacher, current_setting('citus.propagate_set_commands', true) AS propagate"
  type Sent = Array<{ school: string | null, teacher: string | null, propagate: string | null }>
  const school = randomUUID()
  const teacher = randomUUID()

  const [statement] = await schoolSession.run({ schoolId: school, teacherId: teacher }, async () => await prisma.$queryRawUnsafe<Sent>(SENT))
  t.same(statement, { school, teacher, propagate: 'local' }, 'a statement: propagation on, then the school and the teacher')
  const inTransaction = await schoolSession.run({ schoolId: school }, async () => await prisma.$transaction(async (tx) => await tx.$queryRawUnsafe<Sent>(SENT)))
  t.same({ school: inTransaction[0]?.school, propagate: inTransaction[0]?.propagate }, { school, propagate: 'local' }, 'a transaction: the same (set_config would not have turned propagation on)')
  const [after] = await prisma.$queryRawUnsafe<Sent>(SENT)
  t.ok((after?.school ?? '') === '' && (after?.propagate ?? '') === '', 'both ended with their transaction')
})
