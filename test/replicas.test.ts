// Read replicas (DATABASE_REPLICA_URLS) against a real streaming replica: a primary and a replica
// of this test's own (test/cluster.ts), both logging every statement, so the test sees where each
// read ran.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { buildApp } from '../src/app.js'
import { openDatabase, type Database } from '../src/db/client.js'
import { applyMigrations } from '../src/db/migrations/index.js'
import { parseLsn } from '../src/db/replicas.js'
import { caughtUp, clusterUnavailable, query, startClusters, type ClusterSet } from './cluster.js'
import { PASSWORD, gql, login, serverUrl, testConfig, unique } from './helper.js'

t.test('WAL positions compare as numbers', async (t) => {
  t.ok(parseLsn('0/16B3748') < parseLsn('0/16B3750'))
  t.ok(parseLsn('0/FFFFFFFF') < parseLsn('1/0'))
  t.equal(parseLsn('16/B374D848'), (0x16n << 32n) | 0xB374D848n)
  t.throws(() => parseLsn('16-B374'))
})

const unavailable = serverUrl === undefined
  ? 'replicas need PostgreSQL (set TEST_DATABASE_URL); the embedded database has none'
  : clusterUnavailable()

const SERVICE = 'sds_replica_service'
// A read of the students: a model query's, or a typed statement's (src/db/typed-reads.ts).
const STUDENTS_SQL = /FROM "public"\."students"|FROM students s\b/g

function count (log: string): number {
  return log.match(STUDENTS_SQL)?.length ?? 0
}

async function eventually (what: string, check: () => Promise<boolean>, tries = 150): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`timed out waiting until ${what}`)
}

t.test('reads on a streaming replica', { skip: process.env.CI === 'true' ? false : unavailable }, async (t) => {
  const clusters: ClusterSet = await startClusters({ replica: true, logStatements: true })
  t.teardown(() => clusters.destroy())
  const { primary } = clusters
  const replica = clusters.replica!
  await query(primary.url(), 'CREATE DATABASE sds')
  await applyMigrations({ url: primary.url('sds') })
  await query(primary.url(), `CREATE ROLE ${SERVICE} LOGIN NOSUPERUSER NOBYPASSRLS`)
  await query(primary.url('sds'), `
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${SERVICE};
    GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${SERVICE};
    REVOKE INSERT, UPDATE, DELETE ON _prisma_migrations FROM ${SERVICE};`)

  // The administrator's writes, as the CLI makes them.
  const owner: Database = await openDatabase({ url: primary.url('sds') })
  t.teardown(() => owner.close())
  const schoolId = await createSchool(owner, 'Replica High')
  const username = unique('user')
  await createUser(owner, { username, password: PASSWORD, schoolId })
  const studentId = await createStudent(owner, { schoolId, fullName: 'Ada Lovelace', classroom: 'Room 1' })
  await caughtUp(primary.url('sds'), replica.url('sds'))

  const app: FastifyInstance = await buildApp(testConfig({
    databaseUrl: primary.url('sds', SERVICE),
    databaseReplicaUrls: [replica.url('sds', SERVICE)]
  }), { logger: false })
  t.teardown(() => app.close())
  const { accessToken: token } = await login(app, username)
  const students = async (): Promise<string[]> => {
    const res = await gql(app, '{ students(limit: 10) { id fullName } }', { token })
    t.equal(res.statusCode, 200)
    t.notOk(res.body.errors, JSON.stringify(res.body.errors))
    return (res.body.data?.students as Array<{ fullName: string }>).map((s) => s.fullName)
  }
  const replicaReads = async (): Promise<boolean> => {
    const before = count(replica.log())
    await students()
    return count(replica.log()) > before
  }

  t.test('a school\'s reads run on the replica, not on the primary', async (t) => {
    await eventually('the replica serves reads', replicaReads)
    const onPrimary = count(primary.log())
    const onReplica = count(replica.log())
    for (let i = 0; i < 5; i++) t.same(await students(), ['Ada Lovelace'])
    t.ok(count(replica.log()) >= onReplica + 5, 'five reads on the replica')
    t.equal(count(primary.log()), onPrimary, 'no student read on the primary')
    t.same(app.db.replicaStatus().map((r) => r.up), [true])
  })

  t.test('a change is read from the primary until the replica has replayed it', async (t) => {
    await query(replica.url('sds'), 'SELECT pg_wal_replay_pause()')
    // Written elsewhere (another node, the CLI): this node hears of it from the notification.
    await owner.prisma.student.update({ where: { schoolId_id: { schoolId, id: studentId } }, data: { fullName: 'Ada King' } })
    await eventually('the change is seen', async () => (await students())[0] === 'Ada King')
    const [stale] = await query<{ full_name: string }>(replica.url('sds'), 'SELECT full_name FROM students WHERE id = $1', [studentId])
    t.equal(stale?.full_name, 'Ada Lovelace', 'the paused replica still has the old row')
    const onReplica = count(replica.log())
    for (let i = 0; i < 3; i++) t.same(await students(), ['Ada King'])
    t.equal(count(replica.log()), onReplica, 'no read on the replica that has not replayed the change')

    await query(replica.url('sds'), 'SELECT pg_wal_replay_resume()')
    await caughtUp(primary.url('sds'), replica.url('sds'))
    await eventually('the replica serves reads again', replicaReads)
    t.same(await students(), ['Ada King'])
  })

  t.test('a write through the service is read back at once (read your writes)', async (t) => {
    await eventually('the replica serves reads', replicaReads)
    await query(replica.url('sds'), 'SELECT pg_wal_replay_pause()')
    t.teardown(() => query(replica.url('sds'), 'SELECT pg_wal_replay_resume()'))
    const db = app.db.forSchool(schoolId)
    await db.student.update({ where: { schoolId_id: { schoolId, id: studentId } }, data: { fullName: 'Augusta Ada King' } })
    const read = await db.student.findFirst({ where: { id: studentId }, select: { fullName: true } })
    t.equal(read?.fullName, 'Augusta Ada King')
    t.same(await students(), ['Augusta Ada King'])
  })

  t.test('the replica going away: reads fall back to the primary, and return when it does', async (t) => {
    await query(replica.url('sds'), 'SELECT pg_wal_replay_resume()')
    await caughtUp(primary.url('sds'), replica.url('sds'))
    await eventually('the replica serves reads', replicaReads)
    await replica.stop()
    const onPrimary = count(primary.log())
    for (let i = 0; i < 5; i++) t.same(await students(), ['Augusta Ada King'], 'answered while the replica is down')
    t.ok(count(primary.log()) > onPrimary, 'read on the primary')
    await eventually('the replica is marked down', async () => app.db.replicaStatus()[0]?.up === false)

    await replica.start()
    await caughtUp(primary.url('sds'), replica.url('sds'))
    await eventually('the replica serves reads again', replicaReads)
    t.same(app.db.replicaStatus().map((r) => r.up), [true])
    t.same(await students(), ['Augusta Ada King'])
  })
})
