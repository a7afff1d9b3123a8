// An idempotency key's fate is its write's (src/graphql/idempotency.ts): kept in the write's own
// transaction, with the answer read back there. (a) A write whose answer could not be read back
// after its commit (a student deleted in between) must not be written again by a retry with the
// same key. (b) A node killed while its mutation's transaction is open leaves nothing behind: a
// retry on another node runs at once (no IDEMPOTENCY_KEY_IN_USE until a lease ends) and the student
// is created once. PostgreSQL only: both hold locks from connections of their own.
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import t from 'tap'
import { createSchool, createUser } from '../src/admin/records.js'
import { productionNodes, type Node } from './fixtures/api-nodes.js'
import { build, gql, LOGIN, login, PASSWORD, seedSchool, serverUrl, testDatabase, testDatabaseUrl, unique } from './helper.js'

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
  for (let i = 0; i < 600; i++) {
    const { rows } = await probe.query<{ query: string }>("SELECT query FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND NOT (pid = ANY($1))", [pids])
    if (rows.some((row) => query.test(row.query))) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`no statement matching ${String(query)} waits for a lock`)
}

if (serverUrl === undefined) {
  t.pass('skipped: locks held from connections of their own need a PostgreSQL server (TEST_DATABASE_URL)')
} else {
  t.setTimeout(300_000)

  t.test('(a) a write that committed and whose answer could not be read back is not written again by a retry', async (t) => {
    const app = await build(t)
    const school = await seedSchool(unique('Read Back School'))
    const token = (await login(app, school.username)).accessToken
    const locker = await ownerConnection(t)
    const deleter = await ownerConnection(t)
    const sourcedId = unique('readback')
    const CREATE = 'mutation ($input: StudentInput!, $key: String) { createStudent(input: $input, idempotencyKey: $key) { id sourcedId classroomName } }'
    const variables = { input: { sourcedId, fullName: 'Read Back' }, key: randomUUID() }
    // The answer reads the student's classroom: the classrooms table locked, the read back waits
    // (the write itself, of a student in no classroom, does not read it).
    await locker.query('BEGIN')
    await locker.query('LOCK TABLE classrooms IN ACCESS EXCLUSIVE MODE')
    const first = gql(app, CREATE, { token, variables })
    await blocked(deleter, [locker, deleter], /classrooms/)
    // Meanwhile the student is deleted (by SQL, triggers off): in the way of an answer read after
    // the commit; nothing to delete while the write's transaction is still open.
    await deleter.query("SET session_replication_role = 'replica'")
    await deleter.query('DELETE FROM students WHERE sourced_id = $1', [sourcedId])
    await locker.query('ROLLBACK')
    const answer = await first
    const retry = await gql(app, CREATE, { token, variables })
    const created = await deleter.query<{ n: number }>("SELECT count(*)::int AS n FROM changes WHERE type = 'CREATED' AND sourced_id = $1", [sourcedId])
    t.equal(created.rows[0]!.n, 1, 'the student was written once')
    t.same(retry.body, answer.body, 'the retry gets the first answer')
    t.equal(answer.body.errors, undefined, 'the first answer is the student written')
  })

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
    await locker.query('SELECT id FROM classrooms WHERE id = $1 FOR UPDATE', [room])
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
