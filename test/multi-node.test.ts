// Three real API processes (node dist/server.js, as in production) on different ports against one
// database and one Redis: nothing that must be shared lives in one process. A login on one node
// refreshes on another; a user moved to another school on the database loses the old school on
// every node; a token issued before a user's latest change (disable then enable, A -> B -> A) stays
// refused on every node, including one started after the change; a user's rate limit is one count
// across the nodes.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { assignUser, createUser, disableUser, enableUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { post, startNode, type Node } from './fixtures/api-nodes.js'
import { REDIS_URL } from './fixtures/shared-state.js'
import { PASSWORD, createTestDatabase, serverUrl, unique } from './helper.js'

const LOGIN = 'mutation ($u: String!, $p: String!) { login(username: $u, password: $p) { accessToken refreshToken } }'
const REFRESH = 'mutation ($t: String!) { refreshToken(refreshToken: $t) { accessToken } }'
const STUDENTS = '{ students(limit: 5) { fullName } }'

async function redisReachable (): Promise<boolean> {
  const { Redis } = await import('ioredis')
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null })
  try {
    await redis.connect()
    return (await redis.ping()) === 'PONG'
  } catch {
    return false
  } finally {
    redis.disconnect()
  }
}

const skip = serverUrl === undefined
  ? 'several API processes share a PostgreSQL server (set TEST_DATABASE_URL)'
  : (process.env.CI !== 'true' && !(await redisReachable()) ? `no Redis at ${REDIS_URL}` : false)

t.test('three API nodes on one database and one Redis', { skip }, async (t) => {
  const db = await createTestDatabase()
  const url = 'url' in db.migrationTarget ? db.migrationTarget.url : ''
  const env = {
    SCHOOL_DATA_ENV: 'production',
    DATABASE_URL: url,
    JWT_SECRET: randomBytes(48).toString('base64url'),
    REDIS_URL,
    REDIS_KEY_PREFIX: `sds-test-${randomBytes(6).toString('hex')}:`,
    RATE_LIMIT_USER_PER_MINUTE: '12',
    LOG_LEVEL: 'warn'
  }
  const nodes: Node[] = []
  t.teardown(async () => {
    for (const node of nodes) node.proc.kill('SIGKILL')
  })
  for (let i = 0; i < 3; i++) nodes.push(await startNode(env))
  const [a, b, c] = nodes as [Node, Node, Node]

  const oldSchool = await createSchool(db, 'Old School')
  const newSchool = await createSchool(db, 'New School')
  await createStudent(db, { schoolId: oldSchool, fullName: 'Old Student' })
  await createStudent(db, { schoolId: newSchool, fullName: 'New Student' })

  t.test('a login on one node refreshes on another, and its tokens work on the third', async (t) => {
    const username = unique('walker')
    await createUser(db, { username, password: PASSWORD, schoolId: oldSchool })
    const login = await post(a, LOGIN, { u: username, p: PASSWORD })
    t.equal(login.status, 200)
    const { refreshToken } = login.body.data.login
    const refreshed = await post(b, REFRESH, { t: refreshToken })
    t.notOk(refreshed.body.errors, JSON.stringify(refreshed.body.errors))
    const students = await post(c, STUDENTS, {}, refreshed.body.data.refreshToken.accessToken)
    t.same(students.body.data.students, [{ fullName: 'Old Student' }])
  })

  t.test('a user moved to another school loses the old one on every node', async (t) => {
    const username = unique('mover')
    await createUser(db, { username, password: PASSWORD, schoolId: oldSchool })
    const { accessToken } = (await post(a, LOGIN, { u: username, p: PASSWORD })).body.data.login
    for (const node of nodes) t.same((await post(node, STUDENTS, {}, accessToken)).body.data.students, [{ fullName: 'Old Student' }])

    await assignUser(db, username, newSchool)
    // From the commit of the move on.
    const moved = Date.now()
    const after: number[] = []
    for (const node of nodes) {
      // Polled until the node refuses the old token; the time is reported, not asserted (shared machines).
      for (;;) {
        const res = await post(node, STUDENTS, {}, accessToken)
        if (res.body.errors !== undefined) {
          t.equal(res.body.errors[0].extensions.code, 'UNAUTHENTICATED', `node ${node.port} refuses the old school's token`)
          t.notOk(JSON.stringify(res.body).includes('Old Student'))
          after.push(Date.now() - moved)
          break
        }
        t.same(res.body.data.students, [{ fullName: 'Old Student' }], 'until then, only the old school (the move is not yet known)')
        if (Date.now() - moved > 15_000) throw new Error(`node ${node.port} still accepts the old token after 15 s`)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }
    t.comment(`old token refused on all three nodes ${Math.max(...after)} ms after the move`)
    // Logging in again gives the new school, on any node.
    const again = (await post(c, LOGIN, { u: username, p: PASSWORD })).body.data.login
    t.same((await post(b, STUDENTS, {}, again.accessToken)).body.data.students, [{ fullName: 'New Student' }])
  })

  /** Until every node has applied the changes so far (a sentinel user disabled after them). */
  async function settled (over: Node[]): Promise<void> {
    const username = unique('sentinel')
    await createUser(db, { username, password: PASSWORD, schoolId: oldSchool })
    const { accessToken } = (await post(over[0]!, LOGIN, { u: username, p: PASSWORD })).body.data.login
    await disableUser(db, username)
    for (const node of over) {
      const start = Date.now()
      while ((await post(node, STUDENTS, {}, accessToken)).body.errors === undefined) {
        if (Date.now() - start > 15_000) throw new Error(`node ${node.port} missed the sentinel change`)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }
  }

  const code = async (node: Node, token: string): Promise<unknown> =>
    (await post(node, STUDENTS, {}, token)).body.errors?.[0]?.extensions?.code

  t.test('tokens issued before a disable stay refused after the user is enabled again, and after A -> B -> A, on every node', async (t) => {
    const enabled = unique('enabled')
    await createUser(db, { username: enabled, password: PASSWORD, schoolId: oldSchool })
    const beforeDisable = (await post(a, LOGIN, { u: enabled, p: PASSWORD })).body.data.login.accessToken
    const traveller = unique('traveller')
    await createUser(db, { username: traveller, password: PASSWORD, schoolId: oldSchool })
    const firstForA = (await post(b, LOGIN, { u: traveller, p: PASSWORD })).body.data.login.accessToken
    for (const node of nodes) {
      t.same((await post(node, STUDENTS, {}, beforeDisable)).body.data?.students, [{ fullName: 'Old Student' }], 'control: valid before')
    }

    await disableUser(db, enabled)
    await enableUser(db, enabled)
    await assignUser(db, traveller, newSchool)
    await assignUser(db, traveller, oldSchool)
    await settled(nodes)
    for (const node of nodes) {
      t.equal(await code(node, beforeDisable), 'UNAUTHENTICATED', `node ${node.port} refuses the token issued before disable -> enable`)
      t.equal(await code(node, firstForA), 'UNAUTHENTICATED', `node ${node.port} refuses the token first issued for A after A -> B -> A`)
    }
    // A node started after the changes reads them on start.
    const late = await startNode(env)
    nodes.push(late)
    t.equal(await code(late, beforeDisable), 'UNAUTHENTICATED', 'a node started after the changes refuses the first token')
    t.equal(await code(late, firstForA), 'UNAUTHENTICATED', 'and the token first issued for A')
    const again = (await post(late, LOGIN, { u: enabled, p: PASSWORD })).body.data.login.accessToken
    for (const node of nodes) t.same((await post(node, STUDENTS, {}, again)).body.data?.students, [{ fullName: 'Old Student' }], 'a new login works everywhere')
    late.proc.kill('SIGKILL')
    nodes.pop()
  })

  t.test('a user\'s rate limit is counted across the nodes', async (t) => {
    const username = unique('busy')
    await createUser(db, { username, password: PASSWORD, schoolId: newSchool })
    const { accessToken } = (await post(a, LOGIN, { u: username, p: PASSWORD })).body.data.login
    const statuses: number[] = []
    // 12 per minute for the user, in all: four rounds over the three nodes.
    for (let round = 0; round < 4; round++) {
      for (const node of nodes) statuses.push((await post(node, STUDENTS, {}, accessToken)).status)
    }
    t.same(statuses.filter((s) => s === 200).length, 12, 'twelve answered across the nodes')
    const refused = await post(b, STUDENTS, {}, accessToken)
    t.equal(refused.status, 429, 'the thirteenth refused, on whichever node')
    t.ok(Number(refused.headers.get('retry-after')) > 0, 'Retry-After')
  })
})
