// Mutations on two real API processes on one PostgreSQL database (node dist/server.js, as in
// production): an idempotency key answered by one node is answered the same by the other, and the
// mutation runs once; two writers of the same record at once, each on its own node, never lose an
// update silently (with expectedVersion one is refused with the version now; without it each
// writes its own fields only). PostgreSQL only: the embedded database is one process's.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { productionNodes, type Node } from './fixtures/api-nodes.js'
import { LOGIN, PASSWORD, serverUrl, testDatabase, testDatabaseUrl, unique } from './helper.js'

if (serverUrl === undefined) {
  t.pass('skipped: two API processes need a PostgreSQL server (TEST_DATABASE_URL)')
} else {
  t.setTimeout(300_000)
  let nodes: Node[]
  let token: string

  t.before(async () => {
    const url = (await testDatabaseUrl())!
    nodes = await productionNodes(t, url, 2)
    const db = await testDatabase()
    const schoolId = await createSchool(db, unique('Two Nodes School'))
    const username = unique('admin')
    await createUser(db, { username, password: PASSWORD, schoolId })
    const res = await send(nodes[0]!, LOGIN, { username, password: PASSWORD })
    token = res.body.data.login.accessToken
  })

  async function send (node: Node, query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<{ status: number, body: any }> {
    const res = await fetch(`http://127.0.0.1:${node.port}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers },
      body: JSON.stringify({ query, variables })
    })
    return { status: res.status, body: await res.json() }
  }

  const CREATE = 'mutation ($input: StudentInput!) { createStudent(input: $input) { id sourcedId fullName version } }'
  const COUNT = 'query ($s: String!) { students(filter: { search: $s }, limit: 1000) { id } }'

  t.test('a retry with the same idempotency key on the other node gets the first answer, and the student is created once', async (t) => {
    const key = randomUUID()
    const name = unique('Idem')
    const input = { sourcedId: name, fullName: name }
    const first = await send(nodes[0]!, CREATE, { input }, { 'idempotency-key': key })
    t.equal(first.body.errors, undefined)
    const again = await send(nodes[1]!, CREATE, { input }, { 'idempotency-key': key })
    t.same(again.body, first.body, 'the same answer, from the other node')
    const asArgument = await send(nodes[1]!, 'mutation ($input: StudentInput!, $k: String) { createStudent(input: $input, idempotencyKey: $k) { id sourcedId fullName version } }', { input, k: key })
    t.same(asArgument.body.data, first.body.data, 'the key as an argument is the same key (the same mutation and selection)')
    const other = await send(nodes[1]!, CREATE, { input: { ...input, fullName: 'Someone else' } }, { 'idempotency-key': key })
    t.equal(other.body.errors?.[0]?.extensions?.code, 'IDEMPOTENCY_KEY_REUSED', 'the same key with another body is refused')
    const found = await send(nodes[0]!, COUNT, { s: name })
    t.equal(found.body.data.students.length, 1, 'created once')
  })

  t.test('the same key sent to both nodes at once: one runs it, the other waits for it on the key and answers the same; created once', async (t) => {
    for (let round = 0; round < 5; round++) {
      const key = randomUUID()
      const name = unique('Race')
      const answers = await Promise.all(nodes.map(async (node) => await send(node, CREATE, { input: { sourcedId: name, fullName: name } }, { 'idempotency-key': key })))
      t.same(answers.map((a) => a.body.errors), [undefined, undefined], `round ${round}: both answered (no IDEMPOTENCY_KEY_IN_USE)`)
      t.same(answers[1]!.body.data, answers[0]!.body.data, `round ${round}: the same answer`)
      const found = await send(nodes[0]!, COUNT, { s: name })
      t.equal(found.body.data.students.length, 1, `round ${round}: created once`)
    }
  })

  const CHANGE = 'mutation ($id: ID!, $input: StudentChange!, $v: Int) { changeStudent(student: { id: $id }, input: $input, expectedVersion: $v) { givenName familyName version } }'
  const READ = 'query ($id: ID!) { student(id: $id) { givenName familyName preferredName version } }'

  t.test('two writers of one student at once, one per node: with expectedVersion one is refused with the version now, nothing lost', async (t) => {
    for (let round = 0; round < 10; round++) {
      const created = await send(nodes[0]!, CREATE, { input: { givenName: 'Start', familyName: 'Start' } })
      const id = created.body.data.createStudent.id as string
      const [a, b] = await Promise.all([
        send(nodes[0]!, CHANGE, { id, input: { givenName: `A${round}` }, v: 1 }),
        send(nodes[1]!, CHANGE, { id, input: { givenName: `B${round}` }, v: 1 })
      ])
      const won = [a, b].filter((r) => r.body.errors === undefined)
      const lost = [a, b].filter((r) => r.body.errors !== undefined)
      t.equal(won.length, 1, `round ${round}: one writer wins`)
      t.match(lost[0]?.body.errors?.[0], { extensions: { code: 'VERSION_CONFLICT', currentVersion: 2 } }, `round ${round}: the other is refused with the version now`)
      const now = (await send(nodes[1]!, READ, { id })).body.data.student
      t.same(now, { givenName: won[0]!.body.data.changeStudent.givenName, familyName: 'Start', preferredName: null, version: 2 }, `round ${round}: the winner's write, and only it`)
    }
  })

  t.test('two writers of one student at once without a version: each writes its own fields, both are kept', async (t) => {
    for (let round = 0; round < 10; round++) {
      const created = await send(nodes[0]!, CREATE, { input: { givenName: 'Start', familyName: 'Start' } })
      const id = created.body.data.createStudent.id as string
      const answers = await Promise.all([
        send(nodes[0]!, CHANGE, { id, input: { givenName: `A${round}` } }),
        send(nodes[1]!, CHANGE, { id, input: { preferredName: `B${round}` } })
      ])
      t.same(answers.map((r) => r.body.errors), [undefined, undefined], `round ${round}: both written`)
      const now = (await send(nodes[1]!, READ, { id })).body.data.student
      t.same(now, { givenName: `A${round}`, familyName: 'Start', preferredName: `B${round}`, version: 3 }, `round ${round}: both changes kept, two versions on`)
    }
  })
}
