// Subscriptions across API nodes: two real API processes (dist/server.js, production settings) on
// one database. A subscriber on each node follows one school while changes commit through the
// other node's GraphQL endpoint and straight at the database (as the CLI and the import write):
// each subscriber gets exactly the feed. Then the user is disabled at the database: both sockets
// close with 4441. And the three clients of the docs follow a write storm through both nodes while
// the node they are on shuts down (1001): each resumes on the other, with exactly the feed.
import { createClient } from 'graphql-ws'
import t from 'tap'
import WebSocket from 'ws'
import { createSchool } from '../src/admin/schools.js'
import { createUser, disableUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { SUBSCRIPTION_CLOSE } from '../src/plugins/subscriptions.js'
import { post, productionNodes, type Node } from './fixtures/api-nodes.js'
import { Applied, followers } from './fixtures/subscription-clients.js'
import { createTestDatabase, PASSWORD, serverUrl, unique } from './helper.js'

const skip = serverUrl === undefined ? 'several API processes share a PostgreSQL server (set TEST_DATABASE_URL)' : false

interface Follower { cursors: string[], closeCode: number | undefined, wake: Array<() => void> }

function follow (t: { teardown: (fn: () => unknown) => void }, node: Node, token: string, since: string): Follower {
  const client = createClient({ url: `ws://127.0.0.1:${node.port}/subscriptions`, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { token } })
  t.teardown(async () => { await client.dispose() })
  const follower: Follower = { cursors: [], closeCode: undefined, wake: [] }
  const woken = (): void => { for (const wake of follower.wake.splice(0)) wake() }
  client.subscribe<{ changes: { cursor: string } }>({ query: 'subscription ($since: String) { changes(since: $since) { cursor } }', variables: { since } }, {
    next ({ data }) {
      follower.cursors.push(data!.changes.cursor)
      woken()
    },
    error (err) {
      // A close event's code; -1 for an error of the operation.
      const code = (err as { code?: unknown }).code
      follower.closeCode = typeof code === 'number' ? code : -1
      woken()
    },
    complete () {}
  })
  return follower
}

async function until (follower: Follower, condition: () => boolean): Promise<void> {
  while (!condition()) {
    if (follower.closeCode !== undefined) throw new Error(`closed (${follower.closeCode}) before the condition`)
    await new Promise<void>((resolve) => { follower.wake.push(resolve) })
  }
}

t.test('a subscriber on each node gets every change committed anywhere, and both close on a revocation', { skip }, async (t) => {
  const db = await createTestDatabase()
  const nodes = await productionNodes(t, 'url' in db.migrationTarget ? db.migrationTarget.url : '')
  const schoolId = await createSchool(db, unique('Two Node School'))
  const username = unique('nodes')
  await createUser(db, { username, password: PASSWORD, schoolId })
  const login = await post(nodes[0]!, 'mutation ($u: String!, $p: String!) { login(username: $u, password: $p) { accessToken } }', { u: username, p: PASSWORD })
  const token = login.body.data.login.accessToken as string
  const since = (await post(nodes[0]!, '{ latestChangeCursor }', {}, token)).body.data.latestChangeCursor as string
  const followers = nodes.map((node) => follow(t, node, token, since))

  for (let i = 0; i < 5; i++) {
    const res = await post(nodes[1]!, 'mutation ($n: String!) { createStudent(input: { fullName: $n }) { id } }', { n: `Through node ${i}` }, token)
    t.equal(res.body.errors, undefined)
    await createStudent(db, { schoolId, fullName: `At the database ${i}` })
  }
  const feed = await post(nodes[0]!, 'query ($since: String) { changes(since: $since, limit: 1000) { changes { cursor } } }', { since }, token)
  const expected = (feed.body.data.changes.changes as Array<{ cursor: string }>).map((c) => c.cursor)
  t.equal(expected.length, 10)
  for (const follower of followers) {
    await until(follower, () => follower.cursors.length >= expected.length)
    t.same(follower.cursors, expected, 'exactly the feed')
  }

  await disableUser(db, username)
  for (const follower of followers) {
    while (follower.closeCode === undefined) await new Promise<void>((resolve) => { follower.wake.push(resolve) })
    t.equal(follower.closeCode, SUBSCRIPTION_CLOSE.revoked.code, 'closed on every node')
  }
})

t.test('the three clients follow a write storm on two nodes through the shutdown of theirs, none lost or twice', { skip }, async (t) => {
  const db = await createTestDatabase()
  const nodes = await productionNodes(t, 'url' in db.migrationTarget ? db.migrationTarget.url : '', 2, { SHUTDOWN_DRAIN_MS: '0' })
  const schoolId = await createSchool(db, unique('Storm Nodes School'))
  const username = unique('storm')
  await createUser(db, { username, password: PASSWORD, schoolId })
  const login = await post(nodes[1]!, 'mutation ($u: String!, $p: String!) { login(username: $u, password: $p) { accessToken } }', { u: username, p: PASSWORD })
  const token = login.body.data.login.accessToken as string
  const since = (await post(nodes[1]!, '{ latestChangeCursor }', {}, token)).body.data.latestChangeCursor as string
  // Node 0 while it serves, then node 1 (as a balancer would).
  let serving = nodes[0]!
  const url = (): string => `ws://127.0.0.1:${serving.port}/subscriptions`
  const applied = Object.entries(followers).map(([name, follow]) => {
    const changes = new Applied()
    const follower = { name, changes, connections: 0 }
    t.teardown(follow({ url, connectionParams: async () => { follower.connections += 1; return { token } }, since, applied: changes }))
    return follower
  })

  const WRITES = 30
  let next = 0
  const writer = async (): Promise<void> => {
    while (next < WRITES) {
      const i = next++
      if (i === 10) {
        // Node 0 shuts down mid-storm: its sockets close with 1001 once its (zero) drain is over.
        serving = nodes[1]!
        nodes[0]!.proc.kill('SIGTERM')
      }
      if (i % 2 === 0) {
        const res = await post(nodes[1]!, 'mutation ($n: String!) { createStudent(input: { fullName: $n }) { id } }', { n: `Storm ${i}` }, token)
        if (res.body.errors !== undefined) throw new Error(JSON.stringify(res.body.errors))
      } else {
        await createStudent(db, { schoolId, fullName: `Storm ${i}` })
      }
    }
  }
  await Promise.all([writer(), writer(), writer()])
  const feed = await post(nodes[1]!, 'query ($since: String) { changes(since: $since, limit: 1000) { changes { cursor } } }', { since }, token)
  const expected = (feed.body.data.changes.changes as Array<{ cursor: string }>).map((c) => c.cursor)
  t.equal(expected.length, WRITES)
  for (const { name, changes, connections } of applied) {
    await changes.until(WRITES)
    t.same(changes.changes.map((c) => c.cursor), expected, `${name}: exactly the feed`)
    t.equal(connections, 2, `${name}: connected again, to the other node`)
  }
})
