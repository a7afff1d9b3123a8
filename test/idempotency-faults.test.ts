// An idempotency key's fate is its write's (src/graphql/idempotency.ts): kept in the write's own
// transaction, with the answer read back there. (a) A write whose answer could not be read (a lost
// connection, injected) must not be written again by a retry with the same key. (b) A node killed
// while its mutation's transaction is open leaves nothing behind: a retry on another node runs at
// once (no IDEMPOTENCY_KEY_IN_USE until a lease ends) and the student is created once (PostgreSQL
// only: two API processes, and a lock held from a connection of the test's own).
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
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

t.test('(a) a write that committed and whose answer could not be read back is not written again by a retry', async (t) => {
  // The fault, through the app's public seam (its `database`): the school client's next read of a
  // student fails once, as a lost connection would, wherever it runs: on the client (an answer
  // read after the commit) or in one of its transactions (an answer read before it).
  const db = await testDatabase()
  let failNext = false
  const faulty = <C extends object>(client: C): C => new Proxy(client, {
    get (target, prop) {
      const value: unknown = Reflect.get(target, prop)
      if (prop === 'student') {
        return new Proxy(value as object, {
          get (delegate, op) {
            const inner: unknown = Reflect.get(delegate, op)
            if (op === 'findFirst' && failNext) {
              return async () => { failNext = false; throw new Error('Connection terminated unexpectedly (a test fault)') }
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
  const school = await seedSchool(unique('Read Back School'))
  const token = (await login(app, school.username)).accessToken
  const fullName = unique('Read Back')
  const CREATE = 'mutation ($input: StudentInput!, $key: String) { createStudent(input: $input, idempotencyKey: $key) { id fullName version } }'
  const variables = { input: { fullName }, key: randomUUID() }
  failNext = true
  const first = await gql(app, CREATE, { token, variables })
  t.equal(failNext, false, 'the fault struck the answer\'s read')
  t.ok(first.body.errors !== undefined && first.body.data?.createStudent == null, 'the first request fails with the fault')
  const retry = await gql(app, CREATE, { token, variables })
  t.equal(retry.body.errors, undefined, 'the retry answers')
  t.match(retry.body.data?.createStudent, { fullName, version: 1 })
  const again = await gql(app, CREATE, { token, variables })
  t.same(again.body, retry.body, 'and the same again')
  t.equal(await db.forSchool(school.schoolId).student.count({ where: { fullName } }), 1, 'the student was written once')
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
}
