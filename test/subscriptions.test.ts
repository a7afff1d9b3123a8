// GraphQL subscriptions over WebSocket (src/plugins/subscriptions.ts), through a real listening
// server and graphql-ws's own client: changes pushed as they commit, deletions included, exactly the
// `changes` query's feed from a cursor on (nothing lost or twice at the seam, during writes); what a
// teacher and a client may see; the token in connection_init, and the socket closed when it expires
// or is revoked; the limits, keep-alive and origin check; the shutdown's going-away close.
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import t from 'tap'
import WebSocket from 'ws'
import { assignUser, createUser, disableUser } from '../src/admin/users.js'
import { revokeClient } from '../src/admin/clients.js'
import { createSchool } from '../src/admin/schools.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { SUBSCRIPTION_CLOSE } from '../src/plugins/subscriptions.js'
import { createClassroomAssignment } from './fixtures.js'
import { clientToken, seedClient } from './fixtures/oauth.js'
import { serve, Subscriber, wsClient } from './fixtures/subscriptions.js'
import { build, gql, login, PASSWORD, seedSchool, serverUrl, testClock, testDatabase, unique } from './helper.js'

const CHANGES = `subscription ($since: String) {
  changes(since: $since) { cursor type recordType id sourcedId student { fullName } teacher { id } classroom { id } }
}`

const FEED = `query ($since: String) {
  changes(since: $since, limit: 1000) { changes { cursor type recordType id sourcedId student { fullName } teacher { id } classroom { id } } nextCursor hasMore }
}`

interface Pushed { cursor: string, type: string, recordType: string, id: string, sourcedId?: string | null }

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
const entries = (changes: Pushed[]) =>
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

/** A raw WebSocket on the endpoint (graphql-transport-ws), open or refused with its HTTP status. */
async function rawSocket (url: string, options: WebSocket.ClientOptions = {}): Promise<{ socket: WebSocket } | { status: number }> {
  const socket = new WebSocket(url, 'graphql-transport-ws', options)
  return await new Promise((resolve, reject) => {
    socket.once('open', () => { resolve({ socket }) })
    socket.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0 })
      socket.terminate()
    })
    socket.once('error', reject)
  })
}

/** Sends connection_init with `token` and waits for the ack. */
async function initialised (socket: WebSocket, token: string): Promise<void> {
  socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } }))
  await new Promise<void>((resolve) => {
    socket.on('message', (data: Buffer) => { if ((JSON.parse(data.toString('utf8')) as { type: string }).type === 'connection_ack') resolve() })
  })
}

const closeOf = async (socket: WebSocket): Promise<number> => await new Promise((resolve) => socket.once('close', (code) => resolve(code)))

t.test('open subscriptions are bounded per caller and per node, each refusal coded', async (t) => {
  const { app, url } = await serve(t, { subscriptionsPerCaller: 2, subscriptionsPerNode: 3 })
  const db = await testDatabase()
  const school = await seedSchool(unique('Bounded School'))
  const { accessToken: token } = await login(app, school.username)
  const since = await latest(app, token)
  const client = wsClient(t, url, token)
  const held = [new Subscriber(client, CHANGES, { since }), new Subscriber(client, CHANGES, { since })]
  await createStudent(db, { schoolId: school.schoolId, fullName: 'Counted' })
  for (const subscriber of held) await subscriber.count(1)
  const third = new Subscriber(client, CHANGES, { since })
  await third.end()
  t.match(third.errors, [{ extensions: { code: 'TOO_MANY_REQUESTS' }, message: /SUBSCRIPTIONS_PER_CALLER/ }], 'a third of one caller')

  const second = await seedSchool(unique('Second Bounded School'))
  const { accessToken: token2 } = await login(app, second.username)
  const client2 = wsClient(t, url, token2)
  const since2 = await latest(app, token2)
  const fits = new Subscriber(client2, CHANGES, { since: since2 })
  await createStudent(db, { schoolId: second.schoolId, fullName: 'Fits' })
  await fits.count(1)
  const over = new Subscriber(client2, CHANGES, { since: since2 })
  await over.end()
  t.match(over.errors, [{ extensions: { code: 'SERVICE_UNAVAILABLE' }, message: /SUBSCRIPTIONS_PER_NODE/ }], 'a fourth on the node')
  for (const subscriber of [...held, fits]) subscriber.stop()
})

t.test('pings keep the socket; a peer that does not answer them is dropped', async (t) => {
  const { app, url } = await serve(t, { subscriptionKeepaliveMs: 25 })
  const school = await seedSchool(unique('Keepalive School'))
  const { accessToken: token } = await login(app, school.username)
  const answering = await rawSocket(url)
  if (!('socket' in answering)) throw new Error('refused')
  await initialised(answering.socket, token)
  let pings = 0
  await new Promise<void>((resolve) => answering.socket.on('ping', () => { if (++pings === 3) resolve() }))
  t.equal(answering.socket.readyState, WebSocket.OPEN, 'three pings answered: still open')
  answering.socket.close()

  const silent = await rawSocket(url, { autoPong: false })
  if (!('socket' in silent)) throw new Error('refused')
  await initialised(silent.socket, token)
  t.equal(await closeOf(silent.socket), 1006, 'no pong: dropped')
})

t.test('browsers connect only from the origins of CORS_ORIGINS; the upgrade counts on the rate limits', async (t) => {
  const { url } = await serve(t, { corsOrigins: ['https://app.example.org'], rateLimitAddressPerMinute: 2 })
  t.match(await rawSocket(url, { headers: { origin: 'https://evil.example.org' } }), { status: 403 }, 'another origin: 403')
  const listed = await rawSocket(url, { headers: { origin: 'https://app.example.org' } })
  t.ok('socket' in listed, 'a listed origin opens')
  if ('socket' in listed) listed.socket.close()
  const plain = await rawSocket(url)
  t.ok('socket' in plain, 'no origin (not a browser) opens')
  if ('socket' in plain) plain.socket.close()
  t.match(await rawSocket(url), { status: 429 }, 'over the address limit: 429')
})

t.test('each subscribe counts on the caller\'s rate limit', async (t) => {
  const { app, url } = await serve(t, { rateLimitUserPerMinute: 2 })
  const school = await seedSchool(unique('Rate School'))
  const { accessToken: token } = await login(app, school.username)
  // `latest` is the user's first request (login is anonymous), the first subscribe the second.
  const since = await latest(app, token)
  const client = wsClient(t, url, token)
  const first = new Subscriber(client, CHANGES, { since })
  const second = new Subscriber(client, CHANGES, { since })
  await second.end()
  t.match(second.errors, [{ extensions: { code: 'TOO_MANY_REQUESTS', retryAfter: Number } }])
  first.stop()
})

t.test('at shutdown, once the drain is over, sockets close with 1001 (going away)', async (t) => {
  const { app, url } = await serve(t)
  const school = await seedSchool(unique('Shutdown School'))
  const { accessToken: token } = await login(app, school.username)
  const opened = await rawSocket(url)
  if (!('socket' in opened)) throw new Error('refused')
  await initialised(opened.socket, token)
  const closed = closeOf(opened.socket)
  await app.shutdown.run(0)
  t.equal(await closed, SUBSCRIPTION_CLOSE.goingAway.code)
})

t.test('a subscriber that does not read is closed with 4413 once its socket holds too much unsent', async (t) => {
  const { app, url } = await serve(t, { subscriptionMaxBufferedBytes: 1024, subscriptionsPerCaller: 10 })
  const db = await testDatabase()
  const school = await seedSchool(unique('Slow School'))
  const { accessToken: token } = await login(app, school.username)
  const since = await latest(app, token)
  // A feed longer than the kernel's socket buffers hold, in one statement.
  const long = 'x'.repeat(200)
  await db.forSchool(school.schoolId).student.createMany({
    data: Array.from({ length: 5000 }, (_, i) => ({ schoolId: school.schoolId, fullName: `Slow ${i}`, sourcedId: `${long}-${i}` }))
  })
  const opened = await rawSocket(url)
  if (!('socket' in opened)) throw new Error('refused')
  const socket = opened.socket
  await initialised(socket, token)
  const closed = closeOf(socket)
  socket.pause()
  for (let i = 0; i < 10; i++) {
    socket.send(JSON.stringify({ id: String(i), type: 'subscribe', payload: { query: 'subscription ($since: String) { changes(since: $since) { cursor sourcedId } }', variables: { since } } }))
  }
  // Unread until the service gives up on it (its metric), then read: the close frame comes behind
  // what was buffered.
  const counted = async (): Promise<number> => {
    const metric = await app.metrics.registry.getSingleMetric('sds_subscription_closes_total')!.get()
    return metric.values.find((value) => value.labels.reason === 'tooSlow')?.value ?? 0
  }
  while (await counted() === 0) await new Promise((resolve) => setTimeout(resolve, 10))
  socket.resume()
  t.equal(await closed, SUBSCRIPTION_CLOSE.tooSlow.code)
  const open = await app.metrics.registry.getSingleMetric('sds_subscriptions_open')!.get()
  t.equal(open.values[0]?.value, 0, 'its subscriptions stopped')
})

t.test('a dropped notification connection loses nothing: subscribers read again once it listens again', { skip: serverUrl === undefined ? 'the embedded database listens in process: nothing to drop' : false }, async (t) => {
  const { app, url } = await serve(t)
  const db = await testDatabase()
  const school = await seedSchool(unique('Dropped School'))
  const { accessToken: token } = await login(app, school.username)
  const since = await latest(app, token)
  const subscriber = new Subscriber(wsClient(t, url, token), CHANGES, { since })
  await createStudent(db, { schoolId: school.schoolId, fullName: 'Before the drop' })
  await subscriber.count(1)
  const admin = new pg.Client({ connectionString: db.ownerUrl! })
  await admin.connect()
  t.teardown(() => admin.end())
  // Every LISTEN connection of the database (this node's), dropped; the writes that follow commit
  // while it opens again.
  await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND datname = current_database()")
  const during: string[] = []
  for (let i = 0; i < 5; i++) during.push(await createStudent(db, { schoolId: school.schoolId, fullName: `While dropped ${i}` }))
  await subscriber.until(() => during.every((id) => subscriber.pushed.some((c) => c.id === id)))
  t.same(entries(subscriber.pushed), entries((await feed(app, token, since)).changes), 'exactly the feed')
  subscriber.stop()
})

t.test('the records a push hands over are in the access audit, as the caller\'s, under the operation\'s name', async (t) => {
  const { app, url } = await serve(t)
  const db = await testDatabase()
  const school = await seedSchool(unique('Audited Push School'))
  const { accessToken: token } = await login(app, school.username)
  const since = await latest(app, token)
  const subscriber = new Subscriber(wsClient(t, url, token), 'subscription Follow($since: String) { changes(since: $since) { id student { fullName } } }', { since })
  await createStudent(db, { schoolId: school.schoolId, fullName: 'Audited' })
  await subscriber.count(1)
  await app.audit.flush()
  const sql = 'SELECT operation, record_type, record_count, action, user_id FROM access_audit WHERE school_id = $1'
  const rows = db.ownerUrl !== undefined
    ? await (async () => {
      const client = new pg.Client({ connectionString: db.ownerUrl })
      await client.connect()
      try { return (await client.query(sql, [school.schoolId])).rows } finally { await client.end() }
    })()
    // The embedded database runs as the service role for the session; its session user may read.
    : await db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe('SET LOCAL ROLE postgres')
      return await tx.$queryRawUnsafe<unknown[]>(sql, school.schoolId)
    })
  const user = await db.prisma.user.findUniqueOrThrow({ where: { username: school.username }, select: { id: true } })
  // (The count is what the database handed over, as for the same query over HTTP.)
  t.match(rows, [{ operation: 'Follow', record_type: 'Student', record_count: Number, action: 'read', user_id: user.id }])
  t.ok((rows as Array<{ record_count: number }>)[0]!.record_count > 0)
  subscriber.stop()
})

t.test('a user moved to another school, or unassigned, has their socket closed', async (t) => {
  const { app, url } = await serve(t)
  const db = await testDatabase()
  for (const [what, change] of [
    ['moved', async (username: string) => { await assignUser(db, username, await createSchool(db, unique('Elsewhere'))) }],
    ['unassigned', async (username: string) => { await db.prisma.user.update({ where: { username }, data: { schoolId: null } }) }]
  ] as const) {
    const school = await seedSchool(unique(`${what} School`))
    const { accessToken: token } = await login(app, school.username)
    const subscriber = new Subscriber(wsClient(t, url, token), CHANGES, { since: await latest(app, token) })
    await createStudent(db, { schoolId: school.schoolId, fullName: `Before ${what}` })
    await subscriber.count(1)
    await change(school.username)
    await subscriber.end()
    t.equal(subscriber.closeCode, SUBSCRIPTION_CLOSE.revoked.code, what)
  }
})
