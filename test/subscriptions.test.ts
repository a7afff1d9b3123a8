// GraphQL subscriptions over WebSocket (src/plugins/subscriptions.ts), through a real listening
// server and graphql-ws's own client: changes pushed as they commit, deletions included, exactly the
// `changes` query's feed from a cursor on (nothing lost or twice at the seam, during writes); what a
// teacher and a client may see; the token in connection_init, and the socket closed when it expires
// or is revoked; the limits, keep-alive and origin check; the shutdown's going-away close.
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { createClient, type Client } from 'graphql-ws'
import t from 'tap'
import WebSocket from 'ws'
import { createUser, disableUser } from '../src/admin/users.js'
import { revokeClient } from '../src/admin/clients.js'
import { createSchool } from '../src/admin/schools.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import type { Config } from '../src/config.js'
import { SUBSCRIPTION_CLOSE } from '../src/plugins/subscriptions.js'
import { createClassroomAssignment } from './fixtures.js'
import { clientToken, seedClient } from './fixtures/oauth.js'
import { build, gql, login, PASSWORD, seedSchool, testClock, testDatabase, unique } from './helper.js'

const CHANGES = `subscription ($since: String) {
  changes(since: $since) { cursor type recordType id sourcedId student { fullName } teacher { id } classroom { id } }
}`

const FEED = `query ($since: String) {
  changes(since: $since, limit: 1000) { changes { cursor type recordType id sourcedId student { fullName } teacher { id } classroom { id } } nextCursor hasMore }
}`

interface Pushed { cursor: string, type: string, recordType: string, id: string }

/** An app listening on a free port, closed when the test ends; its subscriptions' URL. */
async function serve (
  t: Tap.Test,
  overrides: Partial<Config> = {},
  options: { now?: () => number } = {}
): Promise<{ app: FastifyInstance, url: string }> {
  const app = await build(t, overrides, options)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  return { app, url: `ws://127.0.0.1:${port}/subscriptions` }
}

/** A graphql-ws client with `token` in connection_init, no retries, disposed when the test ends. */
function wsClient (t: Tap.Test, url: string, token: string | undefined, extra: { params?: Record<string, unknown> } = {}): Client {
  const client = createClient({
    url,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    lazy: true,
    connectionParams: extra.params ?? (token === undefined ? {} : { authorization: `Bearer ${token}` })
  })
  t.teardown(async () => { await client.dispose() })
  return client
}

/** One subscription's pushes and how it ended; `until` waits for a condition on them (no sleep). */
class Subscriber {
  readonly pushed: any[] = []
  readonly errors: unknown[] = []
  ended: 'complete' | 'error' | undefined
  closeCode: number | undefined
  private readonly waiters: Array<() => void> = []
  readonly stop: () => void

  constructor (client: Client, query: string, variables: Record<string, unknown> = {}) {
    this.stop = client.subscribe({ query, variables }, {
      next: (result) => {
        if (result.errors !== undefined) this.errors.push(...result.errors)
        if (result.data != null) this.pushed.push(result.data.changes)
        this.wake()
      },
      error: (err) => {
        this.ended = 'error'
        const code = (err as { code?: unknown }).code
        if (typeof code === 'number') this.closeCode = code
        else this.errors.push(...(Array.isArray(err) ? err : [err]))
        this.wake()
      },
      complete: () => {
        this.ended ??= 'complete'
        this.wake()
      }
    })
  }

  private wake (): void {
    for (const waiter of this.waiters.splice(0)) waiter()
  }

  async until (condition: () => boolean): Promise<void> {
    while (!condition()) {
      if (this.ended !== undefined && !condition()) throw new Error(`ended (${this.ended}, ${String(this.closeCode)}) before the condition: ${JSON.stringify(this.errors)}`)
      await new Promise<void>((resolve) => { this.waiters.push(resolve) })
    }
  }

  async count (n: number): Promise<void> { await this.until(() => this.pushed.length >= n) }
  async end (): Promise<void> { await this.until(() => this.ended !== undefined) }
}

async function feed (app: FastifyInstance, token: string, since: string | null): Promise<{ changes: Pushed[], nextCursor: string }> {
  const res = await gql(app, FEED, { token, variables: { since } })
  if (res.body.errors !== undefined) throw new Error(JSON.stringify(res.body.errors))
  return res.body.data!.changes
}

async function latest (app: FastifyInstance, token: string): Promise<string> {
  const res = await gql(app, '{ latestChangeCursor }', { token })
  return res.body.data!.latestChangeCursor as string
}

const brief = (changes: Pushed[]) => changes.map((c) => [c.type, c.recordType, c.id])
/** A change's own fields; the record it names is read as it is when pushed, and may have changed since. */
const entries = (changes: Array<Pushed & Record<string, unknown>>) =>
  changes.map(({ cursor, type, recordType, id, sourcedId }) => ({ cursor, type, recordType, id, sourcedId }))

t.test('creations, updates and deletions are pushed as they commit, as the changes query reads them', async (t) => {
  const { app, url } = await serve(t)
  const db = await testDatabase()
  const school = await seedSchool(unique('Push School'))
  const { accessToken: token } = await login(app, school.username)
  const since = await latest(app, token)
  const subscriber = new Subscriber(wsClient(t, url, token), CHANGES, { since })

  const ada = await createStudent(db, { schoolId: school.schoolId, fullName: 'Ada Push', sourcedId: 'sis-ada' })
  await subscriber.count(1)
  t.same(brief(subscriber.pushed), [['CREATED', 'STUDENT', ada]], 'the creation, alone')
  t.equal(subscriber.pushed[0].student.fullName, 'Ada Push', 'the record as it is now, through the caller\'s client')
  const scoped = db.forSchool(school.schoolId)
  await scoped.student.updateMany({ where: { id: ada }, data: { email: 'ada@example.org' } })
  await subscriber.count(2)
  await scoped.student.deleteMany({ where: { id: ada } })
  await subscriber.count(3)
  t.same(brief(subscriber.pushed), [['CREATED', 'STUDENT', ada], ['UPDATED', 'STUDENT', ada], ['DELETED', 'STUDENT', ada]])
  t.equal(subscriber.pushed[2].student, null, 'a deletion: the record is gone')
  t.equal(subscriber.pushed[2].sourcedId, 'sis-ada', 'its tombstone keeps the natural key')
  t.same(entries(subscriber.pushed), entries((await feed(app, token, since)).changes), 'exactly the feed')
  subscriber.stop()
  await subscriber.end()
})

t.test('without since, a subscriber starts at the current end', async (t) => {
  const { app, url } = await serve(t)
  const db = await testDatabase()
  const school = await seedSchool(unique('Now School'), [['Before One']])
  const { accessToken: token } = await login(app, school.username)
  const subscriber = new Subscriber(wsClient(t, url, token), CHANGES)
  // Writes until one is pushed: the subscription may not have read its start yet when the first commits.
  let last = ''
  for (let i = 0; subscriber.pushed.length === 0; i++) {
    last = await createStudent(db, { schoolId: school.schoolId, fullName: `After ${i}` })
    await Promise.race([subscriber.count(1), new Promise((resolve) => setImmediate(resolve))])
  }
  await subscriber.until(() => subscriber.pushed.some((c) => c.id === last))
  t.notOk(subscriber.pushed.some((c) => c.id === school.studentIds[0]), 'nothing from before the subscription')
  const all = (await feed(app, token, null)).changes.map((c) => c.cursor)
  const pushed = subscriber.pushed.map((c) => c.cursor)
  t.same(all.slice(all.indexOf(pushed[0])), pushed, 'from its first push on, the feed without a gap')
})

t.test('resuming from a cursor during a write storm: nothing lost or twice at the seams, as the feed', async (t) => {
  const { app, url } = await serve(t)
  const db = await testDatabase()
  const school = await seedSchool(unique('Storm School'))
  const { accessToken: token } = await login(app, school.username)
  const start = await latest(app, token)
  const WRITES = 60
  const writes = (async () => {
    for (let i = 0; i < WRITES; i++) await createStudent(db, { schoolId: school.schoolId, fullName: `Storm ${i}` })
  })()
  // Three subscribers in a row, each resuming from the last cursor the one before got.
  const got: Pushed[] = []
  let since = start
  for (const take of [10, 20]) {
    const subscriber = new Subscriber(wsClient(t, url, token), CHANGES, { since })
    await subscriber.count(take)
    subscriber.stop()
    const kept = subscriber.pushed.slice(0, take)
    got.push(...kept)
    since = kept[kept.length - 1].cursor
  }
  const last = new Subscriber(wsClient(t, url, token), CHANGES, { since })
  await writes
  await last.until(() => got.length + last.pushed.length >= WRITES)
  got.push(...last.pushed)
  const expected = (await feed(app, token, start)).changes
  t.equal(expected.length, WRITES)
  t.same(got.map((c) => c.cursor), expected.map((c) => c.cursor), 'the feed, in order, none lost, none twice')
  last.stop()
})

t.test('a teacher is pushed only their own feed; leaving a classroom is a deletion for them', async (t) => {
  const { app, url } = await serve(t)
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Teacher Push School'))
  const teacherId = await createTeacher(db, { schoolId, fullName: 'Mia Teacher' })
  const username = unique('teacher')
  await createUser(db, { username, password: PASSWORD, schoolId, role: 'TEACHER', teacherId })
  const { accessToken: token } = await login(app, username)
  const own = await createClassroomAssignment(db, schoolId, teacherId, 'Own Room')
  const since = await latest(app, token)
  const subscriber = new Subscriber(wsClient(t, url, token), CHANGES, { since })

  await createStudent(db, { schoolId, fullName: 'Not In Reach' })
  const ann = await createStudent(db, { schoolId, fullName: 'Ann Own', classroom: 'Own Room' })
  await subscriber.until(() => subscriber.pushed.some((c) => c.id === ann))
  await db.forSchool(schoolId).student.deleteMany({ where: { id: ann } })
  await subscriber.until(() => subscriber.pushed.some((c) => c.id === ann && c.type === 'DELETED'))
  const ids = subscriber.pushed.map((c) => c.id)
  t.notOk(ids.some((id) => id !== ann && id !== teacherId && id !== own), 'nothing out of the teacher\'s reach')
  t.same(entries(subscriber.pushed), entries((await feed(app, token, since)).changes), "exactly the teacher's feed")
  subscriber.stop()
})

t.test("a client is pushed the fields of its scopes; others are refused through the app's error codes", async (t) => {
  const { app, url } = await serve(t)
  const db = await testDatabase()
  const school = await seedSchool(unique('Client Push School'))
  const core = await clientToken(app, await seedClient(school.schoolId, ['roster-core.readonly']))
  const client = wsClient(t, url, core)
  const refused = new Subscriber(client, 'subscription { changes { id student { dateOfBirth } } }')
  await refused.end()
  t.equal(refused.ended, 'error')
  t.match(refused.errors, [{ extensions: { code: 'FORBIDDEN' } }], 'a field outside its scopes: FORBIDDEN before anything runs')

  const since = await latest(app, core)
  const subscriber = new Subscriber(client, 'subscription ($since: String) { changes(since: $since) { id student { fullName } } }', { since })
  const ada = await createStudent(db, { schoolId: school.schoolId, fullName: 'Ada Scoped' })
  await subscriber.count(1)
  t.same(subscriber.pushed, [{ id: ada, student: { fullName: 'Ada Scoped' } }])
  subscriber.stop()

  const bad = new Subscriber(client, CHANGES, { since: 'not-a-cursor' })
  await bad.end()
  t.match(bad.errors, [{ extensions: { code: 'BAD_USER_INPUT' }, path: ['changes'] }], 'a bad cursor: as the query refuses it')
  const query = new Subscriber(client, '{ latestChangeCursor }')
  await query.end()
  t.match(query.errors, [{ extensions: { code: 'BAD_REQUEST' } }], 'queries go over HTTP')
})

t.test('a subscription sent over HTTP is refused with its code', async (t) => {
  const app = await build(t)
  const school = await seedSchool(unique('Http Sub School'))
  const { accessToken: token } = await login(app, school.username)
  const res = await gql(app, 'subscription { changes { id } }', { token })
  t.match(res.body.errors, [{ extensions: { code: 'BAD_REQUEST' }, message: /WebSocket at \/subscriptions/ }])
})

t.test('a missing or bad token closes the socket with 4403', async (t) => {
  const { url } = await serve(t)
  for (const [name, params] of [['no token', {}], ['a bad token', { authorization: 'Bearer not.a.token' }], ['a bad token field', { token: 'x' }]] as const) {
    const subscriber = new Subscriber(wsClient(t, url, undefined, { params }), CHANGES)
    await subscriber.end()
    t.equal(subscriber.closeCode, 4403, name)
  }
})

t.test('the socket closes when its token expires (the app\'s clock), or its user is disabled', async (t) => {
  const clock = testClock()
  const { app, url } = await serve(t, {}, { now: clock.now })
  const school = await seedSchool(unique('Expiry School'))
  const { accessToken: token } = await login(app, school.username)
  const expiring = new Subscriber(wsClient(t, url, token), CHANGES, { since: await latest(app, token) })
  const db = await testDatabase()
  // Pushed first: the connection is up.
  await createStudent(db, { schoolId: school.schoolId, fullName: 'Before Expiry' })
  await expiring.count(1)
  clock.advance(900_000)
  await expiring.end()
  t.equal(expiring.closeCode, SUBSCRIPTION_CLOSE.expired.code, 'expired: closed with its code')

  clock.advance(-900_000)
  const other = await seedSchool(unique('Disable School'))
  const { accessToken: second } = await login(app, other.username)
  const disabled = new Subscriber(wsClient(t, url, second), CHANGES, { since: await latest(app, second) })
  await createStudent(db, { schoolId: other.schoolId, fullName: 'Before Disable' })
  await disabled.count(1)
  await disableUser(db, other.username)
  await disabled.end()
  t.equal(disabled.closeCode, SUBSCRIPTION_CLOSE.revoked.code, 'disabled: closed with its code')
})

t.test('a revoked client\'s socket closes', async (t) => {
  const { app, url } = await serve(t)
  const db = await testDatabase()
  const school = await seedSchool(unique('Revoke School'))
  const seeded = await seedClient(school.schoolId, ['roster-core.readonly'])
  const token = await clientToken(app, seeded)
  const subscriber = new Subscriber(wsClient(t, url, token), 'subscription ($since: String) { changes(since: $since) { id } }', { since: await latest(app, token) })
  await createStudent(db, { schoolId: school.schoolId, fullName: 'Before Revoke' })
  await subscriber.count(1)
  await revokeClient(db, seeded.clientId)
  await subscriber.end()
  t.equal(subscriber.closeCode, SUBSCRIPTION_CLOSE.revoked.code)
})
