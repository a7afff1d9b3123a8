// The service's side of Citus (docs/running/citus.md) on a real coordinator, when
// one is configured: CITUS_URL, a superuser URL of a database on a Citus coordinator that has its
// workers added. The suite creates a database of its own on the coordinator and on each worker
// (same user, trust authentication, as in the other suites), and drops them at the end.
//
// The database is distributed by the service's own command (`school-data citus distribute`,
// src/admin/citus.ts), and the suite shows that a school's statements, transactions, nested reads,
// import upserts, notices and change feed work there, that each wall alone keeps a school to its
// rows, that the school-setting check tells a school not passed on to the workers, and that a
// teacher's own change feed is written on the shards.
import { randomUUID } from 'node:crypto'
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { assignUser, createUser, disableUser, setUserRole } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { assignTeacher, createTeacher } from '../src/records/teachers.js'
import { buildApp } from '../src/app.js'
import { openDatabase, SCHOOL_SETTING_PROBE } from '../src/db/client.js'
import { applyMigrations, migrationsDir } from '../src/db/migrations/index.js'
import type { Prisma } from '../src/generated/prisma/client.js'
import { DATA_CHANGED_CHANNEL } from '../src/db/notifications.js'
import { CitusError, distributeOnCitus } from '../src/admin/citus.js'
import { ROW_FEED_FUNCTION } from '../src/db/migrations/citus-tables.js'
import { inSchoolTransaction } from '../src/import/connection.js'
import { emptyPlan } from '../src/import/oneroster.js'
import { writePlan } from '../src/import/write.js'
import { PASSWORD, gql, login, testConfig } from './helper.js'
import { citusWorkers, createCitusDatabase, createCitusRole, dropCitusDatabase, run } from './fixtures/citus.js'

const citusUrl = process.env.CITUS_URL || undefined
const SERVICE = 'sds_citus_service'

function asRole (url: string, role: string): string {
  const u = new URL(url)
  u.username = role
  u.password = ''
  return u.toString()
}

t.test('the service on a Citus coordinator', { skip: citusUrl === undefined ? 'set CITUS_URL to a database on a Citus coordinator with workers' : false }, async (t) => {
  const admin = citusUrl!
  const found = await citusWorkers(admin)
  t.ok(found !== null && found.length > 0, `a coordinator with ${found?.length ?? 0} worker(s)`)

  // A database of its own on every node, with the coordinator and the workers of CITUS_URL's.
  const workers = found!
  const name = `sds_citus_${randomUUID().slice(0, 8)}`
  const url = await createCitusDatabase(admin, workers, name)
  t.teardown(async () => await dropCitusDatabase(admin, workers, name))
  await t.rejects(distributeOnCitus(url), { name: CitusError.name, message: /pending migrations .*run `school-data migrate` first/ }, 'distribution refuses an unmigrated database')
  await applyMigrations({ url })
  // A school that has records and feeds before the distribution: they are kept as they are.
  const owner = await openDatabase({ url })
  const early = await createSchool(owner, 'Citus Early School')
  const earlyTeacher = await createTeacher(owner, { schoolId: early, fullName: 'Early Teacher' })
  await assignTeacher(owner, { schoolId: early, teacherId: earlyTeacher, classroom: 'Early Room' })
  await createStudent(owner, { schoolId: early, fullName: 'Early Student', classroom: 'Early Room' })
  await owner.close()
  const FEEDS = `SELECT (SELECT count(*)::int FROM changes WHERE school_id = $1) AS school,
    (SELECT count(*)::int FROM teacher_changes WHERE school_id = $1) AS teacher, (SELECT max(id)::int FROM teacher_changes WHERE school_id = $1) AS newest`
  const feedsBefore = (await run(url, FEEDS, [early])).rows[0] as { school: number, teacher: number, newest: number }
  t.ok(feedsBefore.teacher >= 4 && feedsBefore.school >= 4, 'a school with records and feeds before distribution')
  t.match(await distributeOnCitus(url), { distributed: true, workers: workers.length }, 'school-data citus distribute')
  t.same((await run(url, FEEDS, [early])).rows[0], feedsBefore, 'its feeds as they were: copying its rows into the shards wrote nothing')
  t.same(await distributeOnCitus(url), { distributed: false, reason: 'already distributed' }, 'a second run changes nothing')
  const kinds = (await run(url, 'SELECT logicalrelid::text AS name, partmethod FROM pg_dist_partition ORDER BY 1')).rows
  t.same(kinds, [
    { name: 'academic_sessions', partmethod: 'h' }, { name: 'agents', partmethod: 'h' }, { name: 'changes', partmethod: 'h' }, { name: 'classrooms', partmethod: 'h' },
    { name: 'courses', partmethod: 'h' }, { name: 'roster_tombstones', partmethod: 'h' }, { name: 'schools', partmethod: 'n' },
    { name: 'students', partmethod: 'h' }, { name: 'teacher_changes', partmethod: 'h' }, { name: 'teacher_classrooms', partmethod: 'h' },
    { name: 'teachers', partmethod: 'h' }
  ], 'schools is a reference table, the records\' tables are distributed by hash (users and clients stay on the coordinator)')
  const groups = (await run(url, "SELECT count(DISTINCT colocationid)::int AS n FROM pg_dist_partition WHERE partmethod = 'h'")).rows
  t.same(groups, [{ n: 1 }], 'and co-located')
  const placed = await run(url, "SELECT count(DISTINCT nodeport)::int AS nodes FROM citus_shards WHERE table_name = 'students'::regclass")
  t.ok((placed.rows[0] as { nodes: number }).nodes > 1, 'the students are spread over the workers')
  await createCitusRole(admin, workers, SERVICE)
  await run(url, `GRANT USAGE ON SCHEMA public TO ${SERVICE};
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${SERVICE};
    GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${SERVICE};`)
  const serviceUrl = asRole(url, SERVICE)

  const db = await openDatabase({ url: serviceUrl })
  t.teardown(() => db.close())
  t.equal(db.citus, true, 'the service knows the coordinator')
  t.equal(db.rowSecurity, true, 'and is under row-level security')

  const schools = await Promise.all([0, 1, 2, 3].map(async (i) => {
    const school = await createSchool(db, `Citus School ${i}`)
    for (let j = 0; j < 3; j++) await createStudent(db, { schoolId: school, fullName: `S${i} Student ${j}`, classroom: `S${i} Room ${j % 2}` })
    return school
  }))

  await t.test('a school from before the distribution: its feeds number on from their newest', async (t) => {
    await createStudent(db, { schoolId: early, fullName: 'Later Student', classroom: 'Early Room' })
    const after = (await run(url, FEEDS, [early])).rows[0] as { school: number, teacher: number, newest: number }
    t.same(after, { school: feedsBefore.school + 1, teacher: feedsBefore.teacher + 1, newest: feedsBefore.newest + 1 },
      "one change in the school's feed, one entry in its teacher's, numbered next")
  })

  await t.test('a school\'s statements and transactions see its own rows, on whichever worker they are', async (t) => {
    for (const [i, school] of schools.entries()) {
      const scoped = db.forSchool(school)
      const rows = await scoped.student.findMany({ select: { fullName: true, classroom: { select: { name: true } } }, orderBy: { fullName: 'asc' } })
      t.same(rows.map((r) => r.fullName), [0, 1, 2].map((j) => `S${i} Student ${j}`), `school ${i}: its three students`)
      t.ok(rows.every((r) => r.classroom?.name.startsWith(`S${i} Room`)), 'with their classrooms (relations by query)')
      t.equal(await scoped.$transaction(async (tx: Prisma.TransactionClient) => await tx.student.count()), 3, 'in a transaction too')
    }
  })

  await t.test('each wall alone keeps a school to its own rows', async (t) => {
    // Wall 2 alone: the service role under row-level security, the school client's filters off.
    const wall2 = await openDatabase({ url: serviceUrl, tenantFilter: false })
    t.teardown(() => wall2.close())
    // Wall 1 alone: the superuser, whom row-level security does not bind.
    const wall1 = await openDatabase({ url })
    t.teardown(() => wall1.close())
    t.equal(wall1.rowSecurity, false)
    for (const [name, only] of [['wall 2', wall2], ['wall 1', wall1]] as const) {
      for (const [i, school] of schools.entries()) {
        const names = (await only.forSchool(school).student.findMany({ select: { fullName: true } })).map((r) => r.fullName)
        t.ok(names.length >= 3 && names.every((n) => n.startsWith(`S${i} `)), `${name} alone: school ${i} reads its own students only`)
      }
    }
  })

  await t.test('the school-setting check passes, and its read fails where the school is not passed on', async (t) => {
    await t.resolves(db.checkSchoolSetting())
    const client = new pg.Client({ connectionString: serviceUrl })
    await client.connect()
    t.teardown(() => client.end())
    await client.query(`BEGIN; SET LOCAL app.school_id = '${schools[0]!}'`)
    await t.rejects(client.query(SCHOOL_SETTING_PROBE, [schools[0]]), /invalid input syntax for type uuid/, 'without citus.propagate_set_commands the workers see no school')
    await client.query('ROLLBACK')
    await client.query(`BEGIN; SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL app.school_id = '${schools[0]!}'`)
    t.same((await client.query(SCHOOL_SETTING_PROBE, [schools[0]])).rows, [{ n: 3 }], 'with it, they do')
    await client.query('COMMIT')
  })

  await t.test('a committed write is announced on the coordinator', async (t) => {
    const listener = new pg.Client({ connectionString: serviceUrl })
    await listener.connect()
    t.teardown(() => listener.end())
    const heard: string[] = []
    listener.on('notification', (n) => { heard.push(n.payload ?? '') })
    await listener.query(`LISTEN ${DATA_CHANGED_CHANNEL}`)
    await db.forSchool(schools[1]!).student.create({ data: { schoolId: schools[1]!, fullName: 'Announced' }, select: { id: true } })
    await listener.query('SELECT 1')
    t.same(heard, [schools[1]])
  })

  await t.test('a write that returns an enum column (through the immutable casts)', async (t) => {
    const created = await db.forSchool(schools[1]!).student.create({ data: { schoolId: schools[1]!, fullName: 'Enum Returned' }, select: { status: true, gradeLevel: true } })
    t.same(created, { status: 'ACTIVE', gradeLevel: null })
    const updated = await db.forSchool(schools[1]!).student.updateMany({ where: { fullName: 'Enum Returned' }, data: { status: 'INACTIVE' } })
    t.equal(updated.count, 1)
  })

  await t.test('the import\'s upserts write and update a school\'s rows', async (t) => {
    const options = { databaseUrl: serviceUrl, dataDir: '.data-test-unused' }
    const id = randomUUID()
    const plan = (name: string) => ({ ...emptyPlan(), classrooms: [{ id, sourcedId: 'class-1', name, gradeLevel: null, subject: null, classCode: null, classType: null, location: null, periods: [], grades: [], subjects: [], subjectCodes: [], courseId: null, termIds: [] }] })
    const first = await inSchoolTransaction(options, schools[2]!, async (sql) => await writePlan(sql, schools[2]!, plan('Imported'), () => {}))
    t.same(first.classrooms, { created: 1, updated: 0, unchanged: 0, removed: 0 })
    const again = await inSchoolTransaction(options, schools[2]!, async (sql) => await writePlan(sql, schools[2]!, plan('Imported'), () => {}))
    t.same(again.classrooms, { created: 0, updated: 0, unchanged: 1, removed: 0 }, 'a second run changes nothing')
    const renamed = await inSchoolTransaction(options, schools[2]!, async (sql) => await writePlan(sql, schools[2]!, plan('Renamed'), () => {}))
    t.same(renamed.classrooms, { created: 0, updated: 1, unchanged: 0, removed: 0 }, 'a changed row is updated')
  })

  await t.test('through the API: each school reads its own students, with their classrooms; /ready is 200', async (t) => {
    const app = await buildApp(testConfig({ databaseUrl: serviceUrl }), { database: db, logger: false })
    t.teardown(() => app.close())
    for (const [i, school] of schools.slice(0, 2).entries()) {
      const username = `citus-${randomUUID()}`
      await createUser(db, { username, password: PASSWORD })
      await assignUser(db, username, school)
      const { accessToken } = await login(app, username)
      const { body } = await gql(app, '{ school { name } students { fullName classroomName } }', { token: accessToken })
      t.equal(body.errors, undefined)
      const data = body.data as { school: { name: string }, students: Array<{ fullName: string, classroomName: string | null }> }
      t.equal(data.school.name, `Citus School ${i}`)
      t.same(data.students.filter((s) => s.fullName.startsWith(`S${i} `)).map((s) => s.classroomName), [`S${i} Room 0`, `S${i} Room 1`, `S${i} Room 0`], 'its students, with their classrooms')
      t.ok(data.students.every((s) => s.fullName.startsWith(`S${i} `) || (i === 1 && ['Announced', 'Enum Returned'].includes(s.fullName))), 'its own students only')
    }
    const ready = await app.inject({ method: 'GET', url: '/ready' })
    t.equal(ready.statusCode, 200)

    // users stay on the coordinator, a table of its own (its key to schools is a trigger there):
    // disabling one revokes its tokens there, and the node refuses them at once.
    const username = `citus-${randomUUID()}`
    await createUser(db, { username, password: PASSWORD })
    await assignUser(db, username, schools[0]!)
    const { accessToken } = await login(app, username)
    t.equal((await gql(app, '{ school { name } }', { token: accessToken })).body.errors, undefined)
    await disableUser(db, username)
    let refused = false
    for (let i = 0; i < 50 && !refused; i++) {
      refused = (await gql(app, '{ school { name } }', { token: accessToken })).body.errors !== undefined
      if (!refused) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    t.ok(refused, 'a disabled user\'s access token is refused (user disable)')
  })

  await t.test('the school\'s change feed: each write numbered densely, on the school\'s worker', async (t) => {
    const school = schools[3]!
    const scoped = db.forSchool(school)
    t.equal(await scoped.change.count(), 5, 'its three students and two classrooms, created after distribution, are in it')
    const id = (await scoped.student.create({ data: { schoolId: school, fullName: 'Fed Student', studentNumber: 'F-1' }, select: { id: true } })).id
    await scoped.student.update({ where: { schoolId_id: { schoolId: school, id } }, data: { fullName: 'Fed Student Renamed' } })
    await scoped.student.update({ where: { schoolId_id: { schoolId: school, id } }, data: { fullName: 'Fed Student Renamed' } }) // no change: no entry
    const teacher = await createTeacher(db, { schoolId: school, fullName: 'Fed Teacher' })
    await assignTeacher(db, { schoolId: school, teacherId: teacher, classroom: 'Fed Room' })
    await scoped.student.delete({ where: { schoolId_id: { schoolId: school, id } } })
    // Ten writers at once: numbers stay dense and unique.
    await Promise.all(Array.from({ length: 10 }, async (_, k) =>
      await db.forSchool(school).student.create({ data: { schoolId: school, fullName: `Concurrent ${k}` }, select: { id: true } })))
    const changes = await scoped.change.findMany({ orderBy: { seq: 'asc' } })
    t.same(changes.map((c) => c.seq), changes.map((_, i) => BigInt(i + 1)), 'numbered 1, 2, ... without a gap')
    const mine = changes.filter((c) => c.recordId === id || c.recordId === teacher).map((c) => [c.type, c.recordType, c.studentNumber])
    t.same(mine, [
      ['CREATED', 'STUDENT', 'F-1'], ['UPDATED', 'STUDENT', 'F-1'], ['CREATED', 'TEACHER', null], ['UPDATED', 'TEACHER', null], ['DELETED', 'STUDENT', 'F-1']
    ], 'created, updated (an unchanged update writes nothing), the teacher and their assignment, deleted')
    t.ok(changes.every((c) => c.schoolId === school), 'the school\'s own changes only')
    t.equal(await db.forSchool(schools[2]!).change.count({ where: { recordId: id } }), 0, 'another school reads none of them')
  })

  await t.test('both feeds wait on one lock of the school: writers taking them in either order never deadlock', async (t) => {
    // Writer one's first statement changes nothing but updated_at: no school-feed entry, but a
    // teacher feed's trigger locks the school. Writer two then writes a student (the school's
    // feed first, then the teacher's); writer one next writes a teacher. With a lock of its own
    // for each feed, two would hold the school feed's and wait for the teacher feed's, one the
    // reverse: a deadlock on the school's worker, one of them cancelled.
    const school = await createSchool(db, 'Citus Lock Order School')
    const teacher = await createTeacher(db, { schoolId: school, fullName: 'Lock Teacher' })
    await assignTeacher(db, { schoolId: school, teacherId: teacher, classroom: 'Lock Room' })
    const student = await createStudent(db, { schoolId: school, fullName: 'Lock Student', classroom: 'Lock Room' })
    const seqs = async (): Promise<number[]> => (await run(url, 'SELECT seq::int AS seq FROM changes WHERE school_id = $1 ORDER BY seq', [school])).rows.map((r: { seq: number }) => r.seq)
    const before = await seqs()
    const [one, two, watcher] = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })]
    for (const client of [one, two, watcher]) await client.connect()
    t.teardown(async () => { for (const client of [one, two, watcher]) await client.end().catch(() => {}) })
    await one.query('BEGIN')
    await one.query("UPDATE classrooms SET updated_at = now() + interval '1 second' WHERE school_id = $1", [school])
    await two.query('BEGIN')
    const twoWrites = two.query("UPDATE students SET preferred_name = 'Second' WHERE school_id = $1 AND id = $2", [school, student])
    let waiting = false
    for (let i = 0; i < 500 && !waiting; i++) {
      const { rows } = await watcher.query("SELECT count(*)::int AS n FROM citus_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE %students%'")
      waiting = rows[0].n > 0
      if (!waiting) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    t.ok(waiting, 'the second writer waits for the first')
    await one.query("UPDATE teachers SET preferred_name = 'First' WHERE school_id = $1 AND id = $2", [school, teacher])
    await one.query('COMMIT')
    await twoWrites
    await two.query('COMMIT')
    const after = await seqs()
    t.same(after.slice(before.length), [before.length + 1, before.length + 2], 'both committed, their changes numbered next, in commit order')
  })

  await t.test('through the API: the school\'s feed and its cursors; a teacher\'s own feed', async (t) => {
    const app = await buildApp(testConfig({ databaseUrl: serviceUrl }), { database: db, logger: false })
    t.teardown(() => app.close())
    const school = schools[3]!
    const admin = `citus-${randomUUID()}`
    await createUser(db, { username: admin, password: PASSWORD })
    await assignUser(db, admin, school)
    const { accessToken } = await login(app, admin)
    const latest = (await gql(app, '{ latestChangeCursor }', { token: accessToken })).body.data as { latestChangeCursor: string }
    await db.forSchool(school).classroom.create({ data: { schoolId: school, name: 'After The Cursor' }, select: { id: true } })
    const { body } = await gql(app, 'query ($since: String) { changes(since: $since) { changes { type classroom { name } } hasMore } }', { token: accessToken, variables: { since: latest.latestChangeCursor } })
    t.equal(body.errors, undefined)
    t.same(body.data, { changes: { changes: [{ type: 'CREATED', classroom: { name: 'After The Cursor' } }], hasMore: false } }, 'the change after the latest cursor, and only it')

    // A teacher's own feed, written by its statement triggers on the school's shards.
    const teacherUser = `citus-${randomUUID()}`
    const teacher = await createTeacher(db, { schoolId: school, fullName: 'Feed Teacher' })
    await createUser(db, { username: teacherUser, password: PASSWORD })
    await assignUser(db, teacherUser, school)
    await setUserRole(db, teacherUser, { role: 'teacher', teacherId: teacher })
    const teacherToken = (await login(app, teacherUser)).accessToken
    const FEED = 'query ($since: String) { changes(since: $since) { changes { type recordType id } nextCursor } }'
    const feed = async (since?: string) => {
      const { body } = await gql(app, FEED, { token: teacherToken, variables: { since } })
      t.equal(body.errors, undefined)
      return (body.data as { changes: { changes: Array<{ type: string, recordType: string, id: string }>, nextCursor: string } }).changes
    }
    t.same((await feed()).changes, [{ type: 'CREATED', recordType: 'TEACHER', id: teacher }], "a teacher's own record is in her feed from the start")
    const { latestChangeCursor } = (await gql(app, '{ latestChangeCursor }', { token: teacherToken })).body.data as { latestChangeCursor: string }
    await assignTeacher(db, { schoolId: school, teacherId: teacher, classroom: 'Feed Room' })
    const student = await createStudent(db, { schoolId: school, fullName: 'Feed Student', classroom: 'Feed Room' })
    const later = await feed(latestChangeCursor)
    t.same(later.changes.map((c) => `${c.type} ${c.recordType}`), ['UPDATED TEACHER', 'CREATED CLASSROOM', 'CREATED STUDENT'],
      'after her latest cursor: her assignment, its classroom, then a student created in it')
    t.equal(later.changes[2]?.id, student)
    await db.forSchool(school).student.updateMany({ where: { id: student }, data: { classroomId: null } })
    t.same((await feed(later.nextCursor)).changes, [{ type: 'DELETED', recordType: 'STUDENT', id: student }], 'the student moved out: a tombstone')
    const ids = async (): Promise<number[]> =>
      (await run(url, 'SELECT id FROM teacher_changes WHERE school_id = $1 ORDER BY id', [school])).rows.map((r: { id: string }) => Number(r.id))
    const before = await ids()
    t.ok(before.length >= 5, `${before.length} entries`)
    t.same(before, before.map((_, i) => i + 1), "the school's entries are numbered on its shard from its newest, 1, 2, ...")

    // The school's shards moved to another worker: its numbers go on from its newest there.
    const [shard] = (await run(url, `SELECT shardid, nodename, nodeport FROM citus_shards
      WHERE shardid = get_shard_id_for_distribution_column('teacher_changes', $1::uuid)`, [school])).rows as Array<{ shardid: string, nodename: string, nodeport: number }>
    const target = workers.find((w) => w.nodename !== shard!.nodename || w.nodeport !== shard!.nodeport)!
    await run(url, "SELECT citus_move_shard_placement($1, $2, $3, $4, $5, shard_transfer_mode => 'block_writes')",
      [shard!.shardid, shard!.nodename, shard!.nodeport, target.nodename, target.nodeport])
    await db.forSchool(school).student.updateMany({ where: { id: student }, data: { classroomId: later.changes[1]!.id } })
    t.same((await feed(later.nextCursor)).changes.map((c) => `${c.type} ${c.recordType}`), ['DELETED STUDENT', 'CREATED STUDENT'], 'after the move, the student moved back in follows in her feed')
    const after = await ids()
    t.same(after, after.map((_, i) => i + 1), 'numbered on from the newest on the new worker')
    t.ok(after.length > before.length)
  })

  await t.test('writes through the API: create, change with a version, a bulk upsert, an idempotent retry, an assignment ended, a deletion', async (t) => {
    const app = await buildApp(testConfig({ databaseUrl: serviceUrl }), { database: db, logger: false })
    t.teardown(() => app.close())
    const school = schools[0]!
    const username = `citus-${randomUUID()}`
    await createUser(db, { username, password: PASSWORD })
    await assignUser(db, username, school)
    const { accessToken } = await login(app, username)
    const send = async (query: string, variables: Record<string, unknown> = {}) => (await gql(app, query, { token: accessToken, variables })).body
    const ok = (body: Awaited<ReturnType<typeof send>>): Record<string, any> => {
      if (body.errors !== undefined) throw new Error(JSON.stringify(body.errors))
      return body.data!
    }
    const room = ok(await send('mutation { createClassroom(input: { name: "Citus Write Room", sourcedId: "cw-room" }) { id version } }')).createClassroom
    t.equal(room.version, 1)
    const created = ok(await send('mutation { createStudent(input: { fullName: "Citus Writer", sourcedId: "cw-1", classroom: { sourcedId: "cw-room" } }) { id version classroomName } }')).createStudent
    t.same({ version: created.version, classroomName: created.classroomName }, { version: 1, classroomName: 'Citus Write Room' }, 'created on its school\'s shard, in its classroom')
    const changed = ok(await send('mutation { changeStudent(student: { sourcedId: "cw-1" }, input: { preferredName: "CW" }, expectedVersion: 1) { preferredName version } }')).changeStudent
    t.same(changed, { preferredName: 'CW', version: 2 }, 'a change based on its version moves the version (the trigger on the shards)')
    const stale = await send('mutation { changeStudent(student: { sourcedId: "cw-1" }, input: { preferredName: "Lost" }, expectedVersion: 1) { version } }')
    t.match(stale.errors?.[0]?.extensions, { code: 'VERSION_CONFLICT', currentVersion: 2 }, 'a change based on an old version is refused')

    const UPSERT = 'mutation ($items: [StudentUpsert!]!) { upsertStudents(items: $items) { created changed unchanged items { sourcedId outcome version } } }'
    const items = Array.from({ length: 30 }, (_, i) => ({ sourcedId: `cw-bulk-${i}`, fullName: `Citus Bulk ${i}`, gradeLevel: 'GRADE_2' }))
    t.match(ok(await send(UPSERT, { items })).upsertStudents, { created: 30, changed: 0, unchanged: 0 }, 'a bulk upsert creates')
    t.match(ok(await send(UPSERT, { items })).upsertStudents, { created: 0, changed: 0, unchanged: 30 }, 'the same batch again changes nothing')
    const moved = ok(await send(UPSERT, { items: items.map((item, i) => i < 10 ? { ...item, gradeLevel: 'GRADE_3' } : item) })).upsertStudents
    t.match(moved, { created: 0, changed: 10, unchanged: 20 }, 'ten changed, written on the shard')
    t.ok(moved.items.slice(0, 10).every((item: { version: number }) => item.version === 2), 'their versions moved')
    const duplicate = await send(UPSERT, { items: [{ sourcedId: 'cw-bulk-0', fullName: 'X', studentNumber: 'cw-n' }, { sourcedId: 'cw-new', fullName: 'Y', studentNumber: 'cw-n' }] })
    t.match(duplicate.errors?.[0]?.extensions, { code: 'CONFLICT' }, 'a natural key given twice is a conflict')
    t.equal(await db.forSchool(school).student.count({ where: { sourcedId: 'cw-new' } }), 0, 'and nothing of the batch was written')

    const CREATE = 'mutation { createTeacher(input: { fullName: "Citus Retry", sourcedId: "cw-t" }, idempotencyKey: "cw-key-1") { id version } }'
    const first = ok(await send(CREATE)).createTeacher
    const retry = ok(await send(CREATE)).createTeacher
    t.same(retry, first, 'a retry with the same key gets the first answer')
    t.equal(await db.forSchool(school).teacher.count({ where: { sourcedId: 'cw-t' } }), 1, 'and the teacher was written once')
    ok(await send('mutation { assignTeacher(teacher: { sourcedId: "cw-t" }, classroom: { sourcedId: "cw-room" }) { role } }'))
    ok(await send('mutation { endTeacherAssignment(teacher: { sourcedId: "cw-t" }, classroom: { sourcedId: "cw-room" }) { role } }'))
    t.equal(await db.forSchool(school).teacherClassroom.count({ where: { teacherId: first.id } }), 0, 'an assignment made and ended')
    const deleted = ok(await send('mutation { deleteStudent(student: { sourcedId: "cw-1" }, expectedVersion: 2) { recordType id } }')).deleteStudent
    t.same(deleted, { recordType: 'STUDENT', id: created.id })
    const feed = (await run(url, 'SELECT type FROM changes WHERE school_id = $1 AND record_id = $2 ORDER BY seq', [school, created.id])).rows.map((r: { type: string }) => r.type)
    t.same(feed, ['CREATED', 'UPDATED', 'DELETED'], 'each write in the school\'s change feed, ending with its tombstone')
    t.equal(await db.forSchool(schools[1]!).student.count({ where: { sourcedId: { startsWith: 'cw-' } } }), 0, 'another school reads none of them')
  })

  await t.test('the import\'s removals delete and end a school\'s rows on its shard', async (t) => {
    const school = schools[2]!
    const options = { databaseUrl: serviceUrl, dataDir: '.data-test-unused' }
    const scoped = db.forSchool(school)
    const student = await scoped.student.create({ data: { schoolId: school, fullName: 'To Be Removed', sourcedId: 'rm-1' }, select: { id: true } })
    const teacher = await createTeacher(db, { schoolId: school, fullName: 'Removed Teacher' })
    const { classroomId } = await assignTeacher(db, { schoolId: school, teacherId: teacher, classroom: 'Removal Room' })
    const plan = { ...emptyPlan(), removed: { ...emptyPlan().removed, students: [{ id: student.id, sourcedId: 'rm-1' }], assignments: [{ teacherId: teacher, classroomId, teacher: 'none', classroom: 'Removal Room' }] } }
    const written = await inSchoolTransaction(options, school, async (sql) => await writePlan(sql, school, plan, () => {}))
    t.equal(written.students.removed, 1, 'the student is removed')
    t.equal(await scoped.student.count({ where: { id: student.id } }), 0)
    t.equal(written.teacherAssignments.removed, 1, 'the assignment is ended')
    t.equal(await scoped.teacherClassroom.count({ where: { teacherId: teacher } }), 0)
    const tomb = (await run(url, 'SELECT type FROM changes WHERE school_id = $1 AND record_id = $2 ORDER BY seq DESC LIMIT 1', [school, student.id])).rows
    t.same(tomb, [{ type: 'DELETED' }], 'with its tombstone in the change feed')
  })

  await t.test('a user\'s key to schools holds on the coordinator (a trigger there)', async (t) => {
    const [user] = (await run(url, 'SELECT id FROM users LIMIT 1')).rows as Array<{ id: string }>
    await t.rejects(run(url, 'UPDATE users SET school_id = $1 WHERE id = $2', [randomUUID(), user!.id]), { code: '23503', constraint: 'users_school_id_fkey' })
    await t.resolves(run(url, 'UPDATE users SET school_id = $1 WHERE id = $2', [schools[0], user!.id]))
  })
})

t.test('a database distributed by an earlier release takes the later migrations', { skip: citusUrl === undefined ? 'set CITUS_URL to a database on a Citus coordinator with workers' : false }, async (t) => {
  // The release before record versions: its migrations, distributed as it did. Then `migrate`
  // applies the newer ones on the distributed tables: their columns, functions and triggers (on
  // the shards too), which Citus refuses to a plain session ("triggers are not supported on
  // distributed tables") and to a script sent whole.
  const admin = citusUrl!
  const workers = (await citusWorkers(admin))!
  const name = `sds_citus_up_${randomUUID().slice(0, 8)}`
  const url = await createCitusDatabase(admin, workers, name)
  t.teardown(async () => await dropCitusDatabase(admin, workers, name))
  const FIRST_NEWER = '20261126032730_record_versions_and_idempotency'
  const older = await mkdtemp(join(tmpdir(), 'sds-migrations-'))
  t.teardown(async () => await rm(older, { recursive: true, force: true }))
  const newer: string[] = []
  for (const entry of await readdir(migrationsDir, { withFileTypes: true })) {
    if (entry.isDirectory() && entry.name >= FIRST_NEWER) newer.push(entry.name)
    else await cp(join(migrationsDir, entry.name), join(older, entry.name), { recursive: true })
  }
  await applyMigrations({ url }, older)
  // distributeOnCitus refuses pending migrations: the newer ones are recorded for it as if applied, then taken out.
  for (const migration of newer) {
    await run(url, 'INSERT INTO _prisma_migrations (id, checksum, migration_name, finished_at, applied_steps_count) VALUES ($1, $1, $2, now(), 1)', [randomUUID(), migration])
  }
  t.match(await distributeOnCitus(url), { distributed: true })
  await run(url, 'DELETE FROM _prisma_migrations WHERE checksum = id')
  // The row feed's function as an earlier release wrote it (a lock of its own).
  const LOCK = 'PERFORM "teacher_feed_open"(ARRAY[school], false);'
  t.ok(ROW_FEED_FUNCTION.includes(LOCK))
  await run(url, ROW_FEED_FUNCTION.replace(LOCK, "PERFORM pg_advisory_xact_lock(hashtextextended('school_data_changes:' || school::text, 0));"))

  t.same(await applyMigrations({ url }), newer, 'school-data migrate applies the newer migrations on the distributed tables')
  // Tenant tables a newer migration made (academic sessions, courses) are distributed by migrate
  // itself, co-located with the others: left on the coordinator, Citus would keep them local.
  const placed = (await run(url, `SELECT logicalrelid::text AS name, colocationid = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'students'::regclass) AS colocated
    FROM pg_dist_partition WHERE logicalrelid IN ('academic_sessions'::regclass, 'courses'::regclass) ORDER BY 1`)).rows
  t.same(placed, [{ name: 'academic_sessions', colocated: true }, { name: 'courses', colocated: true }], 'the tables a newer migration adds are distributed and co-located')
  const keys = (await run(url, `SELECT conname, pg_get_constraintdef(oid) LIKE '%ON UPDATE CASCADE%' AS cascades FROM pg_constraint
    WHERE contype = 'f' AND conrelid IN ('academic_sessions'::regclass, 'courses'::regclass) ORDER BY 1`)).rows as Array<{ conname: string, cascades: boolean }>
  t.same(keys.map((k) => k.conname), ['academic_sessions_school_id_fkey', 'academic_sessions_school_id_parent_id_fkey', 'courses_school_id_fkey', 'courses_school_id_school_year_id_fkey'], 'with their keys')
  t.ok(keys.every((k) => !k.cascades), 'without ON UPDATE CASCADE, as the distribution gives the others')
  t.same(await applyMigrations({ url }), [], 'a second migrate changes nothing')
  const shards = (await run(url, `SELECT result FROM run_command_on_shards('students',
    $$SELECT count(*) FROM pg_trigger WHERE tgrelid = '%s'::regclass AND tgname LIKE 'students\\_version%%'$$)`)).rows as Array<{ result: string }>
  t.ok(shards.length > 1 && shards.every((s) => s.result === '1'), `the version trigger is on every shard of students (${shards.length})`)
  const school = randomUUID()
  await run(url, "INSERT INTO schools (id, name, updated_at) VALUES ($1, 'Upgraded', now())", [school])
  const [created] = (await run(url, "INSERT INTO students (id, school_id, full_name, updated_at) VALUES ($1, $2, 'Before', now()) RETURNING id, version", [randomUUID(), school])).rows as Array<{ id: string, version: number }>
  const [changed] = (await run(url, "UPDATE students SET full_name = 'After' WHERE school_id = $1 AND id = $2 RETURNING version", [school, created!.id])).rows as Array<{ version: number }>
  t.same([created!.version, changed!.version], [1, 2], 'and moves a record\'s version there')
  const year = randomUUID()
  await run(url, "INSERT INTO academic_sessions (school_id, id, title, type, start_date, end_date, school_year, updated_at) VALUES ($1, $2, '2026-2027', 'schoolYear', '2026-08-15', '2027-06-15', 2027, now())", [school, year])
  await run(url, "INSERT INTO courses (school_id, id, title, school_year_id, updated_at) VALUES ($1, $2, 'Algebra I', $3, now())", [school, randomUUID(), year])
  const [session] = (await run(url, "UPDATE academic_sessions SET title = '2026/27' WHERE school_id = $1 AND id = $2 RETURNING version, type::text AS type", [school, year])).rows as Array<{ version: number, type: string }>
  t.same(session, { version: 2, type: 'schoolYear' }, 'a distributed academic session keeps its version trigger and reads its type as text')
  const [course] = (await run(url, 'SELECT c.title, s.title AS year FROM courses c JOIN academic_sessions s ON s.school_id = c.school_id AND s.id = c.school_year_id WHERE c.school_id = $1', [school])).rows
  t.same(course, { title: 'Algebra I', year: '2026/27' }, 'and a course joins its school year on the school\'s shards')
  // A function a newer migration replaces is replaced on the workers too, where the feeds' triggers run it.
  const bodies = (await run(url, `SELECT result FROM run_command_on_workers(
    $$SELECT bool_and(prosrc LIKE '%MATERIALIZED%') FROM pg_proc WHERE proname IN ('teacher_feed_students', 'teacher_feed_teachers', 'teacher_feed_classrooms_updated')$$)`)).rows as Array<{ result: string }>
  t.same(bodies.map((b) => b.result), workers.map(() => 't'), 'the teacher feed\'s functions are the newest on every worker')
  const rowFeed = (await run(url, `SELECT result FROM run_command_on_workers(
    $$SELECT bool_and(prosrc LIKE '%teacher_feed_open%' AND prosrc NOT LIKE '%pg_advisory_xact_lock%') FROM pg_proc WHERE proname = 'record_change_row'$$)`)).rows as Array<{ result: string }>
  t.same(rowFeed.map((b) => b.result), workers.map(() => 't'), 'the row feed\'s function is this release\'s on every worker: one lock of the school for both feeds')
})
