// Wall 2 alone under faults (issue 29 point 4): a school's statement goes out with its school's
// set_config(..., true) in one sequence of the extended protocol, one implicit transaction
// (src/db/session-pool.ts). Each fault is injected between the service's pool and PostgreSQL, on a
// pool of one connection (the connection a fault leaves behind is the next statement's), and the
// reads run on the plain Prisma client under a school session: row-level security is the only
// wall. No read may return a row of another school, and nothing a fault leaves may carry a school
// to the next statement.
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { PrismaPg } from '@prisma/adapter-pg'
import pg from 'pg'
import t from 'tap'
import { PrismaClient } from '../src/generated/prisma/client.js'
import { openPostgresClient, type PostgresClient } from '../src/db/open.js'
import { schoolSession, sessionAdapter } from '../src/db/school-session.js'
import { openSessionPool } from '../src/db/session-pool.js'
import { seedSchool, serverUrl, testDatabase, testDatabaseUrl } from './helper.js'

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
      upstream.write(out.cutAfter, () => { setTimeout(end, 50) })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no proxy address')
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String(address.port)
  return {
    url: url.toString(),
    fault: (f) => { current = f },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    }
  }
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

const SETTING = Buffer.from("set_config('app.school_id', '")

t.test('wall 2 alone: no fault between the pool and PostgreSQL returns another school\'s row or leaves a school set', { skip: serverUrl === undefined ? 'needs PostgreSQL (the pool of session-pool.ts)' : false }, async (t) => {
  const db = await testDatabase()
  const a = await seedSchool('Faults North', [['Ada North'], ['Alan North']])
  const b = await seedSchool('Faults South', [['Bea South']])
  const proxy = await faultyProxy(new URL((await testDatabaseUrl())!))
  t.teardown(() => proxy.close())
  const opened: PostgresClient = openPostgresClient({ url: proxy.url, poolSize: 1, connectTimeoutMs: 10_000, statementTimeoutMs: 2_000 })
  const { prisma } = opened
  t.teardown(() => prisma.$disconnect())

  /** The students a school's session reads (wall 2 alone: no filter of the service's). */
  const studentsOf = (schoolId: string): Promise<string[]> =>
    schoolSession.run({ schoolId }, async () => (await prisma.student.findMany({ select: { id: true, schoolId: true } })).map((s) => `${s.schoolId}:${s.id}`))
  const own = (school: { schoolId: string, studentIds: string[] }): string[] => school.studentIds.map((id) => `${school.schoolId}:${id}`).sort()
  /** What a statement outside any school sees on the pool's connection: its setting and the students. */
  const leftOver = async (): Promise<{ setting: string | null, students: number }> => {
    const [row] = await prisma.$queryRawUnsafe<Array<{ setting: string | null, students: bigint }>>(
      "SELECT nullif(current_setting('app.school_id', true), '') AS setting, (SELECT count(*) FROM students) AS students")
    return { setting: row?.setting ?? null, students: Number(row?.students) }
  }
  const clean = async (t: Tap, what: string): Promise<void> => {
    t.same(await leftOver(), { setting: null, students: 0 }, `${what}: the next statement outside a school has no school and sees no student`)
    t.same((await studentsOf(b.schoolId)).sort(), own(b), `${what}: the next school's read sees its own students only`)
  }

  t.same((await studentsOf(a.schoolId)).sort(), own(a), 'no fault: the school\'s students')
  await clean(t, 'no fault')

  await t.test('the setting refused by PostgreSQL (a syntax error in it): the statement does not run', async (t) => {
    proxy.fault((chunk) => {
      const at = chunk.indexOf(SETTING)
      if (at < 0) return chunk
      const changed = Buffer.from(chunk)
      changed.write('!', at + 'set_config'.length) // `set_config!'app.school_id', ...`: same length, refused
      return changed
    })
    await t.rejects(studentsOf(a.schoolId), /syntax error/, 'the read fails with the setting\'s error')
    proxy.fault(undefined)
    await clean(t, 'after the refusal')
  })

  await t.test('the statement timed out after the setting', async (t) => {
    await t.rejects(schoolSession.run({ schoolId: a.schoolId }, async () => await prisma.$queryRawUnsafe('SELECT pg_sleep(5), (SELECT count(*) FROM students)')), /statement timeout/)
    await clean(t, 'after the timeout')
  })

  await t.test('the statement cancelled after the setting', async (t) => {
    const admin = new pg.Client({ connectionString: db.ownerUrl })
    await admin.connect()
    t.teardown(() => admin.end())
    const sleeping = schoolSession.run({ schoolId: a.schoolId }, async () => await prisma.$queryRawUnsafe("SELECT pg_sleep(1.5), current_setting('app.school_id') AS marker_wall2_cancel, (SELECT count(*) FROM students)"))
    // Settled as soon as it is cancelled, whenever the loop below sees it.
    const outcome = sleeping.then(() => new Error('not cancelled'), (err: unknown) => err)
    let cancelled = false
    for (let i = 0; i < 40 && !cancelled; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25))
      const { rows } = await admin.query<{ done: boolean }>("SELECT pg_cancel_backend(pid) AS done FROM pg_stat_activity WHERE query LIKE '%marker_wall2_cancel%' AND pid <> pg_backend_pid()")
      cancelled = rows.some((row) => row.done)
    }
    t.ok(cancelled, 'cancelled while it ran')
    t.match(String(await outcome), /cancel/, 'the read fails with the cancel')
    await clean(t, 'after the cancel')
  })

  await t.test('the connection reset after the setting, before the statement', async (t) => {
    proxy.fault((chunk) => {
      if (chunk.indexOf(SETTING) < 0) return chunk
      const part = throughFirstExecute(chunk)
      return part === undefined ? chunk : { cutAfter: part }
    })
    await t.rejects(studentsOf(a.schoolId), 'the read fails')
    proxy.fault(undefined)
    await clean(t, 'after the reset')
  })
})

type Tap = Pick<typeof t, 'same'>

/**
 * A pooler in transaction mode, as PgBouncer's: each client connection is served by whichever of
 * two server connections is free at the start of a transaction, and gives it back when the server
 * says it is idle again (ReadyForQuery 'I'). Here the two take turns, transaction by transaction,
 * so that no statement finds the server connection its previous one ran on.
 */
async function transactionPooler (target: URL): Promise<{ url: string, close: () => Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    const servers = [0, 1].map(() => createConnection({ port: Number(target.port || 5432), host: target.hostname }))
    for (const socket of [client, ...servers]) sockets.add(socket)
    const end = (): void => { for (const socket of [client, ...servers]) socket.destroy() }
    let active = 0
    let started = false
    let pending = Buffer.alloc(0)
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk])
      if (!started) {
        // The startup message (no type byte): both server connections start the same session.
        if (pending.length < 4 || pending.length < pending.readInt32BE(0)) return
        const length = pending.readInt32BE(0)
        for (const upstream of servers) upstream.write(pending.subarray(0, length))
        pending = pending.subarray(length)
        started = true
      }
      while (pending.length >= 5 && pending.length >= 1 + pending.readInt32BE(1)) {
        const length = 1 + pending.readInt32BE(1)
        servers[active]!.write(pending.subarray(0, length))
        pending = pending.subarray(length)
      }
    })
    servers.forEach((upstream, index) => {
      let buffered = Buffer.alloc(0)
      let ready = false // this server connection's own start-up is answered
      upstream.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk])
        while (buffered.length >= 5 && buffered.length >= 1 + buffered.readInt32BE(1)) {
          const length = 1 + buffered.readInt32BE(1)
          const message = buffered.subarray(0, length)
          buffered = buffered.subarray(length)
          const idle = message[0] === 0x5a && message[5] === 0x49 // ReadyForQuery, 'I'
          // The second connection's start-up is the pooler's, not the client's.
          if (index === active && (ready || index === 0)) client.write(message)
          if (idle && !ready) { ready = true; continue }
          if (idle && index === active) active = 1 - active
        }
      })
    })
    client.on('error', end).on('close', end)
    for (const upstream of servers) upstream.on('error', end).on('close', end)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no pooler address')
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String(address.port)
  return {
    url: url.toString(),
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    }
  }
}

t.test('wall 2 alone behind a pooler in transaction mode: each statement sees its own school only', { skip: serverUrl === undefined ? 'needs PostgreSQL (the pool of session-pool.ts)' : false }, async (t) => {
  const a = await seedSchool('Pooled North', [['Ada Pooled'], ['Alan Pooled']])
  const b = await seedSchool('Pooled South', [['Bea Pooled']])
  const pooler = await transactionPooler(new URL((await testDatabaseUrl())!))
  t.teardown(() => pooler.close())
  // Unnamed statements, as behind PgBouncer without prepared-statement support: a named one would
  // not exist on the other server connection.
  const { forPrisma } = openSessionPool({ connectionString: pooler.url, max: 1 })
  const prisma = new PrismaClient({ adapter: sessionAdapter(new PrismaPg(forPrisma, { disposeExternalPool: true }), { driverSetsSchool: true }) })
  t.teardown(() => prisma.$disconnect())
  const studentsOf = (schoolId: string): Promise<string[]> =>
    schoolSession.run({ schoolId }, async () => (await prisma.student.findMany({ select: { schoolId: true } })).map((s) => s.schoolId))
  const servers = new Set<number>()
  for (let i = 0; i < 6; i++) {
    const school = i % 2 === 0 ? a : b
    const seen = await studentsOf(school.schoolId)
    t.same([...new Set(seen)], [school.schoolId], `read ${i + 1}: ${school === a ? 'north' : 'south'}'s students only`)
    t.equal(seen.length, school.studentIds.length)
    const [row] = await prisma.$queryRawUnsafe<Array<{ pid: number, setting: string | null, students: bigint }>>(
      "SELECT pg_backend_pid() AS pid, nullif(current_setting('app.school_id', true), '') AS setting, (SELECT count(*) FROM students) AS students")
    t.same({ setting: row?.setting, students: Number(row?.students) }, { setting: null, students: 0 }, `after read ${i + 1}: no school on the next server connection`)
    servers.add(row!.pid)
    // One more transaction: the next read goes to the other server connection than this one's.
    const [other] = await prisma.$queryRawUnsafe<Array<{ pid: number }>>('SELECT pg_backend_pid() AS pid')
    servers.add(other!.pid)
  }
  t.equal(servers.size, 2, 'the statements ran on both server connections, the reads too')
})
