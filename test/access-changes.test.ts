// A user moved to another school, or disabled, loses the old access within a second on every API
// node (LISTEN/NOTIFY, no query per request), and their refresh tokens are revoked.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { assignUser, createSchool, createStudent, disableUser, enableUser } from '../src/admin/records.js'
import { buildApp } from '../src/app.js'
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
