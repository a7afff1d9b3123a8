// An idempotency key's fate is its write's (src/graphql/idempotency.ts, mutateOnce): taken by the
// first statement of the write's own transaction and its answer stored by the last, with the answer
// read back there. (a) A write whose answer could not be read (a lost connection, injected) must not
// be written again by a retry with the same key. (c) A fault after the write, in its transaction
// (the answer's statement lost), leaves neither the write nor the key: a retry runs it once. (d) A
// rollback after the write keeps no key; a key answered is answered again without running. (e) The
// key's two statements are refused sent on their own, the key taken after another statement, and
// on a teacher's client. (b) A node killed while its mutation's transaction is open leaves nothing
// behind: a retry on another node runs at once (no IDEMPOTENCY_KEY_IN_USE until a lease ends) and
// the student is created once, and (f) a retry while the first's transaction is open waits on the
// key before it writes anything, then gets the first's answer (PostgreSQL only: two API processes,
// two transactions at once, and a lock held from a connection of the test's own).
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import t, { type Test } from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { KEEP_ANSWER, TAKE_KEY } from '../src/db/idempotency-keys.js'
import { mutateOnce, type OpenTransaction } from '../src/graphql/idempotency.js'
import { createTeacher } from '../src/records/teachers.js'
import { productionNodes, type Node } from './fixtures/api-nodes.js'
import { buildApp } from '../src/app.js'
import { gql, LOGIN, login, PASSWORD, seedSchool, serverUrl, testConfig, testDatabase, testDatabaseUrl, unique } from './helper.js'

/** A connection of the owner's (a superuser in the tests: past row-level security), closed at the end. */
async function ownerConnection (test: { teardown: (fn: () => unknown) => void }): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: (await testDatabase()).ownerUrl })
  await client.connect()
  test.teardown(() => client.end())
  return client
}

/** Waits until a backend other than `except` waits for a lock on a statement matching `query`. */
async function blocked (probe: pg.Client, except: pg.Client[], query: RegExp): Promise<void> {
  const pids = await Promise.all(except.map(async (c) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid))
  let seen: unknown[] = []
  for (let i = 0; i < 600; i++) {
    const { rows } = await probe.query<{ query: string }>('SELECT query, state, wait_event_type FROM pg_stat_activity WHERE datname = current_database() AND NOT (pid = ANY($1))', [pids])
    // Waiting for the lock (on Citus, the coordinator's backend waits for the worker that holds the
    // shard: a wait of another type).
    if (rows.some((row) => query.test(row.query) && (row as { state?: string }).state === 'active' && (row as { wait_event_type?: string | null }).wait_event_type != null)) return
    seen = rows
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`no statement matching ${String(query)} waits: ${JSON.stringify(seen)}`)
}

/**
 * The app with faults to inject through its public seam (its `database`), each once, as a lost
 * connection would strike: `readBack`, the school client's next read of a student, wherever it
 * runs (on the client, an answer read after the commit; in one of its transactions, an answer read
 * before it); `keepAnswer`, the idempotency key's answer statement in the write's transaction.
 */
async function faultyApp (t: Test) {
  const db = await testDatabase()
  const faults = { readBack: false, keepAnswer: false }
  const lost = (): Error => new Error('Connection terminated unexpectedly (a test fault)')
  const faulty = <C extends object>(client: C): C => new Proxy(client, {
    get (target, prop) {
      const value: unknown = Reflect.get(target, prop)
      if (prop === '$executeRawUnsafe') {
        return async (sql: string, ...values: unknown[]) => {
          if (sql === KEEP_ANSWER && faults.keepAnswer) {
            faults.keepAnswer = false
            throw lost()
          }
          return await (value as (...a: unknown[]) => Promise<unknown>).call(target, sql, ...values)
        }
      }
      if (prop === 'student') {
        return new Proxy(value as object, {
          get (delegate, op) {
            const inner: unknown = Reflect.get(delegate, op)
            if (op === 'findFirst' && faults.readBack) {
              return async () => { faults.readBack = false; throw lost() }
            }
            return typeof inner === 'function' ? (inner as (...a: unknown[]) => unknown).bind(delegate) : inner
          }
        })
      }
      if (prop === '$transaction') {
        return (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target,
          args.map((arg) => typeof arg === 'function' ? async (tx: object) => await (arg as (tx: object) => Promise<unknown>)(faulty(tx)) : arg))
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
    }
  })
  const database = Object.assign(Object.create(db) as typeof db, { forSchool: (...args: Parameters<typeof db.forSchool>) => faulty(db.forSchool(...args)) })
  const app = await buildApp(testConfig(), { database, logger: false })
  t.teardown(() => app.close())
  const school = await seedSchool(unique('Fault School'))
  const token = (await login(app, school.username)).accessToken
  const create = async (variables: Record<string, unknown>) => await gql(app, 'mutation ($input: StudentInput!, $key: String) { createStudent(input: $input, idempotencyKey: $key) { id fullName version } }', { token, variables })
  const students = async (fullName: string) => await db.forSchool(school.schoolId).student.count({ where: { fullName } })
  return { db, faults, create, students }
}

t.test('(a) a write that committed and whose answer could not be read back is not written again by a retry', async (t) => {
  const { faults, create, students } = await faultyApp(t)
  const fullName = unique('Read Back')
  const variables = { input: { fullName }, key: randomUUID() }
  faults.readBack = true
  const first = await create(variables)
  t.equal(faults.readBack, false, 'the fault struck the answer\'s read')
  t.ok(first.body.errors !== undefined && first.body.data?.createStudent == null, 'the first request fails with the fault')
  const retry = await create(variables)
  t.equal(retry.body.errors, undefined, 'the retry answers')
  t.match(retry.body.data?.createStudent, { fullName, version: 1 })
  const again = await create(variables)
  t.same(again.body, retry.body, 'and the same again')
  t.equal(await students(fullName), 1, 'the student was written once')
})

t.test('(c) the answer\'s statement lost after the write: neither the write nor the key is kept, and a retry runs it once', async (t) => {
  const { db, faults, create, students } = await faultyApp(t)
  const fullName = unique('Lost Answer')
  const variables = { input: { fullName }, key: randomUUID() }
  faults.keepAnswer = true
  const failed = await create(variables)
  t.equal(faults.keepAnswer, false, 'the fault struck the answer\'s statement, in the write\'s transaction')
  t.ok(failed.body.errors !== undefined && failed.body.data?.createStudent == null, 'the request fails with the fault')
  t.equal(await students(fullName), 0, 'the write rolled back with it')
  t.equal(await db.prisma.idempotencyKey.count({ where: { key: variables.key } }), 0, 'and the key taken before it too')
  const retry = await create(variables)
  t.match(retry.body.data?.createStudent, { fullName, version: 1 }, 'the retry runs')
  t.same((await create(variables)).body, retry.body, 'and is answered again')
  t.equal(await students(fullName), 1, 'the student was written once')
})

t.test('(d) mutateOnce: a rollback after the write keeps no key; a key answered is answered again without running', async (t) => {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Once School'))
  const school = db.forSchool(schoolId)
  const caller = { callerId: randomUUID(), key: randomUUID(), fingerprint: 'f' }
  const fullName = unique('Once')
  let runs = 0
  const create = async (open: OpenTransaction<{ id: string, at: Date }>) => await open(async (tx) => {
    runs++
    const { id } = await tx.student.create({ data: { schoolId, fullName }, select: { id: true } })
    return { id, at: new Date('2026-11-28T10:00:00.000Z') }
  })
  await t.rejects(mutateOnce(db.prisma, school, caller, async (open) => await open(async (tx) => {
    await tx.student.create({ data: { schoolId, fullName } })
    throw new Error('refused after the write')
  })), /refused after the write/)
  t.equal(await db.prisma.idempotencyKey.count({ where: { callerId: caller.callerId } }), 0, 'no key kept')
  t.equal(await school.student.count({ where: { fullName } }), 0, 'no student kept')
  const first = await mutateOnce(db.prisma, school, caller, create)
  const again = await mutateOnce(db.prisma, school, caller, create)
  t.same(again, first, 'the same answer, its Date a Date again')
  t.equal(runs, 1, 'the second call did not run')
  const kept = await db.prisma.idempotencyKey.findUniqueOrThrow({ where: { callerId_key: { callerId: caller.callerId, key: caller.key } } })
  t.same(kept.response, { id: first.id, at: { $date: '2026-11-28T10:00:00.000Z' } }, 'the answer kept with the key')
  t.ok(kept.completedAt !== null, 'answered')
  const reused = await mutateOnce(db.prisma, school, { ...caller, fingerprint: 'other' }, create).catch((err: unknown) => err)
  t.match(reused, { extensions: { code: 'IDEMPOTENCY_KEY_REUSED' } }, 'the key with another fingerprint is refused')
  t.equal(await school.student.count({ where: { fullName } }), 1, 'the student was written once')
})

t.test('(e) the key\'s statements run in the write\'s transaction only, the key taken first, and not on a teacher\'s client', async (t) => {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Key Statements School'))
  const school = db.forSchool(schoolId)
  const callerId = randomUUID()
  const ALONE = /run in the transaction of its write only/
  await t.rejects(school.$executeRawUnsafe(TAKE_KEY, callerId, 'alone', 'f'), ALONE, 'the key taken on its own: refused by the school session')
  await t.rejects(school.$executeRawUnsafe(KEEP_ANSWER, callerId, 'alone', '{}'), ALONE, 'an answer stored on its own')
  await t.rejects(db.prisma.$executeRawUnsafe(TAKE_KEY, callerId, 'alone', 'f'), ALONE, 'and on the unscoped client')
  await t.rejects(school.$transaction(async (tx: any) => {
    await tx.student.count()
    await tx.$executeRawUnsafe(TAKE_KEY, callerId, 'late', 'f')
  }), /taken by the first statement of its transaction/, 'the key taken after another statement')
  const teacherId = await createTeacher(db, { schoolId, fullName: unique('Key Teacher') })
  await t.rejects(db.forSchool(schoolId, { teacherId }).$transaction(async (tx: any) => await tx.$executeRawUnsafe(TAKE_KEY, callerId, 'teacher', 'f')),
    { name: 'TenantViolationError', message: /teachers only read/ }, 'a teacher\'s client keeps no key')
  t.equal(await db.prisma.idempotencyKey.count({ where: { callerId } }), 0, 'no key was kept')
  await school.$transaction(async (tx: any) => {
    await tx.$executeRawUnsafe(TAKE_KEY, callerId, 'in a transaction', 'f')
    t.equal(await tx.$executeRawUnsafe(KEEP_ANSWER, callerId, 'in a transaction', '{"ok":true}'), 1)
  })
  t.match(await db.prisma.idempotencyKey.findMany({ where: { callerId } }), [{ key: 'in a transaction', response: { ok: true } }], 'in a transaction, first: kept')
})

if (serverUrl === undefined) {
  t.pass('skipped: a node killed mid-write needs a PostgreSQL server (TEST_DATABASE_URL) for two API processes')
} else {
  t.setTimeout(300_000)

  t.test('(b) a node killed while its mutation\'s transaction is open: a retry on another node runs at once, the student created once', async (t) => {
    const url = (await testDatabaseUrl())!
    const nodes: Node[] = await productionNodes(t, url, 2)
    const db = await testDatabase()
    const schoolId = await createSchool(db, unique('Killed Node School'))
    const username = unique('admin')
    await createUser(db, { username, password: PASSWORD, schoolId })
    const send = async (node: Node, query: string, variables: Record<string, unknown>, token?: string): Promise<any> => {
      const res = await fetch(`http://127.0.0.1:${node.port}/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
        body: JSON.stringify({ query, variables })
      })
      return await res.json()
    }
    const token = (await send(nodes[0]!, LOGIN, { username, password: PASSWORD })).data.login.accessToken as string
    const room = (await send(nodes[0]!, 'mutation ($name: String!) { createClassroom(input: { name: $name }) { id } }', { name: unique('Room') }, token)).data.createClassroom.id as string
    const locker = await ownerConnection(t)
    const probe = await ownerConnection(t)
    const sourcedId = unique('killed')
    const CREATE = 'mutation ($input: StudentInput!, $key: String) { createStudent(input: $input, idempotencyKey: $key) { sourcedId fullName version classroom { id } } }'
    const variables = { input: { sourcedId, fullName: 'Killed Node', classroom: { id: room } }, key: randomUUID() }
    // The classroom's row locked: the student's insert waits on its foreign key, in its transaction.
    await locker.query('BEGIN')
    await locker.query('SELECT id FROM classrooms WHERE school_id = $1 AND id = $2 FOR UPDATE', [schoolId, room])
    send(nodes[0]!, CREATE, variables, token).catch(() => {})
    await blocked(probe, [locker, probe], /INSERT INTO "public"."students"/)
    nodes[0]!.proc.kill('SIGKILL')
    await new Promise((resolve) => nodes[0]!.proc.once('exit', resolve))
    await locker.query('ROLLBACK')
    const started = Date.now()
    const retry = await send(nodes[1]!, CREATE, variables, token)
    t.equal(retry.errors, undefined, `the retry on the other node runs: ${JSON.stringify(retry.errors)}`)
    t.same(retry.data?.createStudent, { sourcedId, fullName: 'Killed Node', version: 1, classroom: { id: room } }, 'and answers the student')
    t.ok(Date.now() - started < 30_000, 'at once, not after a lease')
    const again = await send(nodes[1]!, CREATE, variables, token)
    t.same(again, retry, 'a second retry gets the same answer')
    const created = await probe.query<{ n: number }>("SELECT count(*)::int AS n FROM changes WHERE type = 'CREATED' AND sourced_id = $1", [sourcedId])
    t.equal(created.rows[0]!.n, 1, 'the student was written once')
  })

  t.test('(f) a retry while the first\'s transaction is open waits on the key before it writes, then gets the first\'s answer', async (t) => {
    const db = await testDatabase()
    const schoolId = await createSchool(db, unique('Waiting Retry School'))
    const school = db.forSchool(schoolId)
    const probe = await ownerConnection(t)
    const caller = { callerId: randomUUID(), key: randomUUID(), fingerprint: 'f' }
    const fullName = unique('Waited For')
    let release!: () => void
    const released = new Promise<void>((resolve) => { release = resolve })
    let wrote!: () => void
    const written = new Promise<void>((resolve) => { wrote = resolve })
    const first = mutateOnce(db.prisma, school, caller, async (open) => await open(async (tx) => {
      const { id } = await tx.student.create({ data: { schoolId, fullName }, select: { id: true } })
      wrote()
      // Held open, its key taken, until the retry waits for it.
      await released
      return { id }
    }))
    await written
    let retryRan = false
    const retry = mutateOnce(db.prisma, school, caller, async (open) => await open(async (tx) => {
      retryRan = true
      return { id: (await tx.student.create({ data: { schoolId, fullName }, select: { id: true } })).id }
    }))
    await blocked(probe, [probe], /INSERT INTO "idempotency_keys"/)
    release()
    const answer = await first
    t.same(await retry, answer, 'the retry gets the first\'s answer')
    t.equal(retryRan, false, 'its write never ran: it waited on the key, its transaction\'s first statement')
    t.equal(await school.student.count({ where: { fullName } }), 1, 'the student was written once')
  })
}
