// A user moved to another school, or disabled, loses the old access within a second on every API
// node (LISTEN/NOTIFY, no query per request), and their refresh tokens are revoked. A token issued
// before the user's latest change never comes back (disable then enable, A -> B -> A).
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { assignUser, disableUser, enableUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { buildApp } from '../src/app.js'
import { ACCESS_CHANGES_KEPT_DAYS, MAX_ACCESS_TOKEN_TTL } from '../src/auth/access-changes.js'
import { openDatabase, type Database } from '../src/db/client.js'
import { gql, login, seedSchool, testConfig, testDatabase } from './helper.js'

const REFRESH = 'mutation ($t: String!) { refreshToken(refreshToken: $t) { accessToken } }'
const STUDENTS = '{ students { id } }'

/** A second API node: its own database connections (on PostgreSQL) and its own listener. */
async function secondNode (test: { teardown: (fn: () => unknown) => void }): Promise<FastifyInstance> {
  const db = await testDatabase()
  let database: Database = db
  if ('url' in db.migrationTarget) {
    const own = await openDatabase({ url: db.migrationTarget.url })
    test.teardown(() => own.close())
    database = own
  }
  const app = await buildApp(testConfig(), { database, logger: false })
  test.teardown(() => app.close())
  return app
}

async function node (test: { teardown: (fn: () => unknown) => void }): Promise<FastifyInstance> {
  const app = await buildApp(testConfig(), { database: await testDatabase(), logger: false })
  test.teardown(() => app.close())
  return app
}

/** Milliseconds until `token` is refused on `app`, polling; fails after `limit` ms. */
async function refusedWithin (app: FastifyInstance, token: string, limit: number): Promise<number> {
  const start = Date.now()
  for (;;) {
    const res = await gql(app, STUDENTS, { token })
    if (res.body.errors?.[0]?.extensions?.code === 'UNAUTHENTICATED') return Date.now() - start
    if (Date.now() - start > limit) return Number.POSITIVE_INFINITY
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

t.test('a user moved to another school loses the old school on every node within a second', async (t) => {
  const db = await testDatabase()
  const one = await node(t)
  const two = await secondNode(t)
  const school = await seedSchool('Before Move', [['Old Student']])
  const target = await createSchool(db, 'After Move')
  const newStudent = await createStudent(db, { schoolId: target, fullName: 'New Student' })
  const { accessToken, refreshToken } = await login(one, school.username)
  for (const app of [one, two]) {
    const res = await gql(app, STUDENTS, { token: accessToken })
    t.same(res.body.data, { students: [{ id: school.studentIds[0] }] }, 'control: the old school before the move')
  }

  await assignUser(db, school.username, target)
  for (const [name, app] of [['this node', one], ['another node', two]] as const) {
    const elapsed = await refusedWithin(app, accessToken, 1000)
    t.ok(elapsed <= 1000, `${name} refuses the old access token after ${elapsed} ms`)
  }
  const refreshed = await gql(two, REFRESH, { variables: { t: refreshToken } })
  t.equal(refreshed.body.errors?.[0]?.extensions?.code, 'INVALID_REFRESH_TOKEN', 'the refresh tokens are revoked')

  const again = await login(two, school.username)
  const res = await gql(one, STUDENTS, { token: again.accessToken })
  t.same(res.body.data, { students: [{ id: newStudent }] }, 'a new login reads the new school, on any node')

  // A node that starts after the change knows it too (it reads the recent changes on start).
  const three = await node(t)
  t.equal((await gql(three, STUDENTS, { token: accessToken })).body.errors?.[0]?.extensions?.code, 'UNAUTHENTICATED')
  t.same((await gql(three, STUDENTS, { token: again.accessToken })).body.data, { students: [{ id: newStudent }] })
})

t.test('a disabled user loses access on every node within a second, cannot log in or refresh, and can be enabled again', async (t) => {
  const db = await testDatabase()
  const one = await node(t)
  const two = await secondNode(t)
  const school = await seedSchool('Disable School', [['Someone']])
  const { accessToken, refreshToken } = await login(one, school.username)
  t.same((await gql(two, STUDENTS, { token: accessToken })).body.errors, undefined, 'control: access before')

  await disableUser(db, school.username)
  for (const [name, app] of [['this node', one], ['another node', two]] as const) {
    const elapsed = await refusedWithin(app, accessToken, 1000)
    t.ok(elapsed <= 1000, `${name} refuses the access token after ${elapsed} ms`)
  }
  await t.rejects(login(one, school.username), /Invalid credentials/, 'login is refused with the usual message')
  const refreshed = await gql(one, REFRESH, { variables: { t: refreshToken } })
  t.equal(refreshed.body.errors?.[0]?.extensions?.code, 'INVALID_REFRESH_TOKEN')

  await enableUser(db, school.username)
  const back = await login(one, school.username)
  t.same((await gql(two, STUDENTS, { token: back.accessToken })).body.data, { students: [{ id: school.studentIds[0] }] })
  t.equal((await gql(two, REFRESH, { variables: { t: refreshToken } })).body.errors?.[0]?.extensions?.code,
    'INVALID_REFRESH_TOKEN', 'the old refresh token stays revoked')
})

/**
 * Resolves once every node has applied every access change committed so far: a sentinel user is
 * disabled after them, and notifications arrive in commit order, so a node that refuses the
 * sentinel's token has seen the changes before it.
 */
async function settled (apps: FastifyInstance[]): Promise<void> {
  const db = await testDatabase()
  const sentinel = await seedSchool('Sentinel School')
  const { accessToken } = await login(apps[0]!, sentinel.username)
  await disableUser(db, sentinel.username)
  for (const app of apps) {
    if (await refusedWithin(app, accessToken, 5000) === Number.POSITIVE_INFINITY) throw new Error('a node missed the sentinel change')
  }
}

const refused = async (app: FastifyInstance, token: string): Promise<string | undefined> =>
  (await gql(app, STUDENTS, { token })).body.errors?.[0]?.extensions?.code as string | undefined

t.test('enabling a disabled user again does not revive the access tokens issued before the disable', async (t) => {
  const db = await testDatabase()
  const one = await node(t)
  const two = await secondNode(t)
  const school = await seedSchool('Enable Again School', [['Someone']])
  const before = await login(one, school.username)
  await disableUser(db, school.username)
  await enableUser(db, school.username)
  await settled([one, two])
  for (const [name, app] of [['this node', one], ['another node', two]] as const) {
    t.equal(await refused(app, before.accessToken), 'UNAUTHENTICATED', `${name} refuses the token issued before the disable`)
  }
  const after = await login(two, school.username)
  for (const app of [one, two]) {
    t.same((await gql(app, STUDENTS, { token: after.accessToken })).body.data, { students: [{ id: school.studentIds[0] }] }, 'a new login reads the school')
  }
  const three = await node(t)
  t.equal(await refused(three, before.accessToken), 'UNAUTHENTICATED', 'a node started after the changes refuses it too')
  t.same((await gql(three, STUDENTS, { token: after.accessToken })).body.errors, undefined)
})

t.test('a user moved A -> B -> A loses the tokens first issued for A', async (t) => {
  const db = await testDatabase()
  const one = await node(t)
  const two = await secondNode(t)
  const a = await seedSchool('School A Round Trip', [['A Student']])
  const b = await createSchool(db, 'School B Round Trip')
  const first = await login(one, a.username)
  await assignUser(db, a.username, b)
  const inB = await login(one, a.username)
  await assignUser(db, a.username, a.schoolId)
  await settled([one, two])
  for (const app of [one, two]) {
    t.equal(await refused(app, first.accessToken), 'UNAUTHENTICATED', 'the first token for A stays revoked')
    t.equal(await refused(app, inB.accessToken), 'UNAUTHENTICATED', 'the token for B is revoked')
  }
  const back = await login(two, a.username)
  t.same((await gql(one, STUDENTS, { token: back.accessToken })).body.data, { students: [{ id: a.studentIds[0] }] }, 'a new login reads A')
  const three = await node(t)
  t.equal(await refused(three, first.accessToken), 'UNAUTHENTICATED', 'a node started after the moves refuses it too')
})

t.test('a token issued after the user\'s latest change stands', async (t) => {
  const db = await testDatabase()
  const one = await node(t)
  const school = await seedSchool('Newer Token School', [['Someone']])
  await disableUser(db, school.username)
  await enableUser(db, school.username)
  // Logged in right after the enable: the token carries the enable's access version.
  const fresh = await login(one, school.username)
  t.same((await gql(one, STUDENTS, { token: fresh.accessToken })).body.data, { students: [{ id: school.studentIds[0] }] })
  await settled([one])
  t.same((await gql(one, STUDENTS, { token: fresh.accessToken })).body.data, { students: [{ id: school.studentIds[0] }] }, 'nor once it has')
})

t.test('access changes are kept as long as the longest access token lives', async (t) => {
  const db = await testDatabase()
  t.ok(MAX_ACCESS_TOKEN_TTL < ACCESS_CHANGES_KEPT_DAYS * 86_400, 'the longest lifetime is shorter than the changes are kept')
  const school = await seedSchool('Retention School', [['Kept Student']])
  const other = await createSchool(db, 'Retention Other School')
  // The longest lifetime ACCESS_TOKEN_TTL allows.
  const config = { accessTokenTtl: MAX_ACCESS_TOKEN_TTL }
  const issuing = await buildApp(testConfig(config), { database: db, logger: false })
  t.teardown(() => issuing.close())
  const { accessToken } = await login(issuing, school.username)
  await assignUser(db, school.username, other)
  const ages = async (): Promise<Array<{ id: bigint, changedAt: Date }>> =>
    await db.prisma.userAccessChange.findMany({ where: { userId: (await db.prisma.user.findUniqueOrThrow({ where: { username: school.username } })).id }, select: { id: true, changedAt: true } })
  const [move] = await ages()
  // The move as old as the oldest token still alive (a minute short of the lifetime), then another
  // user's change runs the trigger's prune.
  await db.prisma.$executeRaw`UPDATE user_access_changes SET changed_at = now() - make_interval(secs => ${MAX_ACCESS_TOKEN_TTL - 60}) WHERE id = ${move!.id}`
  await disableUser(db, (await seedSchool('Retention Trigger')).username)
  t.same((await ages()).map((row) => row.id), [move!.id], 'the prune keeps a change a live token predates')
  const started = await buildApp(testConfig(config), { database: db, logger: false })
  t.teardown(() => started.close())
  t.equal(await refused(started, accessToken), 'UNAUTHENTICATED', 'a node started now refuses the token issued before the move')

  // The trigger's prune and ACCESS_CHANGES_KEPT_DAYS are one fact: a day short is kept, a day over goes.
  await db.prisma.$executeRaw`UPDATE user_access_changes SET changed_at = now() - make_interval(days => ${ACCESS_CHANGES_KEPT_DAYS - 1}) WHERE id = ${move!.id}`
  await disableUser(db, (await seedSchool('Retention Trigger 2')).username)
  t.equal((await ages()).length, 1, `kept at ${ACCESS_CHANGES_KEPT_DAYS - 1} days`)
  await db.prisma.$executeRaw`UPDATE user_access_changes SET changed_at = now() - make_interval(days => ${ACCESS_CHANGES_KEPT_DAYS + 1}) WHERE id = ${move!.id}`
  await disableUser(db, (await seedSchool('Retention Trigger 3')).username)
  t.equal((await ages()).length, 0, `pruned at ${ACCESS_CHANGES_KEPT_DAYS + 1} days`)
})

t.test('readiness reports the loss of the notification connection', async (t) => {
  const db = await testDatabase()
  if (!('url' in db.migrationTarget)) {
    t.pass('the embedded database delivers notifications in process; nothing to lose')
    return
  }
  const app = await secondNode(t)
  t.equal((await app.inject({ method: 'GET', url: '/ready' })).statusCode, 200)
  // Cut the listening connection from the server side, as a network fault or restart would.
  const admin = await openDatabase({ url: db.ownerUrl! })
  t.teardown(() => admin.close())
  await admin.prisma.$executeRawUnsafe("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND datname = current_database()")
  let down = false
  for (let i = 0; i < 100 && !down; i++) {
    down = (await app.inject({ method: 'GET', url: '/ready' })).statusCode === 503
    if (!down) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  t.ok(down, '/ready answers 503 while the notifications are lost')
  let up = false
  for (let i = 0; i < 200 && !up; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    up = (await app.inject({ method: 'GET', url: '/ready' })).statusCode === 200
  }
  t.ok(up, 'and 200 again once it has reconnected by itself')
})
