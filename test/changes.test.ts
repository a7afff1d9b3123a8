// The change feed: creations, updates and deletions of a school's students, teachers and
// classrooms, in commit order, resumable, with tombstones, kept 90 days; and (on PostgreSQL) two
// concurrent writers of one school cannot make a reader skip a change.
import pg from 'pg'
import t from 'tap'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { setLocalStatements } from '../src/db/school-session.js'
import { createClassroomAssignment } from './fixtures.js'
import { build, gql, login, seedSchool, serverUrl, serviceConnection, testDatabase } from './helper.js'

const FEED = `query ($since: String, $limit: Int) {
  changes(since: $since, limit: $limit) {
    changes { cursor type recordType id sourcedId studentNumber at student { fullName } teacher { fullName } classroom { name } }
    nextCursor hasMore
  }
}`

async function feed (app: any, token: string, since: string | null, limit?: number) {
  const res = await gql(app, FEED, { token, variables: { since, limit } })
  if (res.body.errors !== undefined) throw new Error(JSON.stringify(res.body.errors))
  return res.body.data!.changes as { changes: any[], nextCursor: string, hasMore: boolean }
}

/** Every change after `since`, read `limit` at a time. */
async function follow (app: any, token: string, since: string | null, limit: number) {
  const all: any[] = []
  let cursor = since
  for (;;) {
    const page = await feed(app, token, cursor, limit)
    all.push(...page.changes)
    cursor = page.nextCursor
    if (!page.hasMore) return { all, cursor }
  }
}

t.test('creations, updates and deletions come in order, resumable, with tombstones', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const school = await seedSchool('Feed School')
  const other = await seedSchool('Other Feed School', [['Not Yours']])
  const { accessToken: token } = await login(app, school.username)
  const start = await gql(app, '{ latestChangeCursor }', { token })
  const since = start.body.data!.latestChangeCursor as string
  t.same((await feed(app, token, since)).changes, [], 'nothing yet')

  const scoped = db.forSchool(school.schoolId)
  const ada = await createStudent(db, { schoolId: school.schoolId, fullName: 'Ada Lovelace', studentNumber: 'N-1', sourcedId: 'sis-ada', classroom: 'Room 1' })
  const room = (await scoped.classroom.findFirstOrThrow({ select: { id: true } })).id
  const grace = await createTeacher(db, { schoolId: school.schoolId, givenName: 'Grace', familyName: 'Hopper', sourcedId: 'sis-grace' })
  await scoped.student.updateMany({ where: { id: ada }, data: { email: 'ada@example.org' } })
  await createClassroomAssignment(db, school.schoolId, grace, 'Room 1')
  const alan = await createStudent(db, { schoolId: school.schoolId, fullName: 'Alan Turing', studentNumber: 'N-2', sourcedId: 'sis-alan' })
  await scoped.student.deleteMany({ where: { id: alan } })
  await createStudent(db, { schoolId: other.schoolId, fullName: 'Also Not Yours' })

  const { all, cursor } = await follow(app, token, since, 2)
  t.same(all.map((c) => [c.type, c.recordType, c.id]), [
    ['CREATED', 'CLASSROOM', room],
    ['CREATED', 'STUDENT', ada],
    ['CREATED', 'TEACHER', grace],
    ['UPDATED', 'STUDENT', ada],
    ['UPDATED', 'TEACHER', grace],
    ['CREATED', 'STUDENT', alan],
    ['DELETED', 'STUDENT', alan]
  ], "the school's changes in order, read two at a time; none of the other school's")
  t.same(all[1].student, { fullName: 'Ada Lovelace' }, 'a change carries the record as it is now')
  t.equal(all[2].teacher.fullName, 'Grace Hopper')
  t.equal(all[0].classroom.name, 'Room 1')
  t.equal(all[1].teacher, null, 'and nothing of the other kinds')
  const tombstone = all[6]
  t.same([tombstone.sourcedId, tombstone.studentNumber, tombstone.student], ['sis-alan', 'N-2', null], 'a deletion leaves id and natural keys')
  t.equal(all[5].student, null, 'a record deleted since is null on its earlier changes too')
  t.ok(all.every((c) => typeof c.at === 'string' && !Number.isNaN(Date.parse(c.at))))
  t.equal(new Set(all.map((c) => c.cursor)).size, all.length)

  // Resuming from any change's cursor gives exactly what followed it.
  const resumed = await follow(app, token, all[3].cursor, 100)
  t.same(resumed.all.map((c) => c.cursor), all.slice(4).map((c) => c.cursor))
  const after = await feed(app, token, cursor)
  t.same(after, { changes: [], nextCursor: cursor, hasMore: false }, 'at the end: no changes, the same cursor')
  await scoped.classroom.updateMany({ where: { id: room }, data: { subject: 'Mathematics' } })
  t.same((await feed(app, token, cursor)).changes.map((c) => [c.type, c.recordType, c.id]), [['UPDATED', 'CLASSROOM', room]], 'later changes follow')
  const latest = (await feed(app, token, cursor)).nextCursor
  // Writing the same values again (an import run twice) changes only updated_at: not a change.
  await scoped.classroom.updateMany({ where: { id: room }, data: { subject: 'Mathematics' } })
  await scoped.student.updateMany({ data: { email: 'ada@example.org' }, where: { id: ada } })
  t.same((await feed(app, token, latest)).changes, [], 'an update that changes nothing is not in the feed')

  const fromStart = await follow(app, token, null, 1000)
  t.ok(fromStart.all.length >= all.length + 1, 'with no since: from the oldest change kept')
})

t.test('a cursor the feed no longer covers, or one that is not a cursor, is BAD_USER_INPUT', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const school = await seedSchool('Prune School', [['First Student'], ['Second Student']])
  const { accessToken: token } = await login(app, school.username)
  const before = (await feed(app, token, null)).changes
  t.equal(before.length, 2)
  // Age the first change past the 90 days the feed keeps; the next write of the school prunes it.
  const scoped = db.forSchool(school.schoolId)
  const oldest = await scoped.change.findFirstOrThrow({ orderBy: { seq: 'asc' } })
  await scoped.change.updateMany({ where: { seq: oldest.seq }, data: { at: new Date(Date.now() - 91 * 86_400_000) } })
  await createStudent(db, { schoolId: school.schoolId, fullName: 'Third Student' })
  const kept = (await feed(app, token, null)).changes
  t.same(kept.map((c) => c.student?.fullName), ['Second Student', 'Third Student'], 'changes older than 90 days are pruned')

  const start = Buffer.from('changes:0').toString('base64url')
  for (const [since, message] of [[start, /older than the change feed keeps/], ['garbage', /not a cursor of the change feed/]] as const) {
    const res = await gql(app, FEED, { token, variables: { since } })
    t.equal(res.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT')
    t.match(res.body.errors?.[0]?.message, message)
  }
  t.equal((await feed(app, token, before[0].cursor)).changes.length, 2, 'a cursor just before the oldest kept change still works')
  for (const limit of [-1, 1001]) {
    const res = await gql(app, FEED, { token, variables: { limit } })
    t.equal(res.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT')
  }
})

t.test("the latest cursor is the school's counter or its newest change, whichever is further (on Citus the counter stays where distribution left it)", async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const school = await seedSchool('Counter School', [['First Counted'], ['Second Counted']])
  const { accessToken: token } = await login(app, school.username)
  const newest = (await feed(app, token, null)).changes.at(-1)
  // As after `school-data citus distribute`: the shards' triggers number the changes from the feed
  // itself, and schools.change_seq no longer moves.
  await db.prisma.school.update({ where: { id: school.schoolId }, data: { changeSeq: 0n } })
  const latest = (await gql(app, '{ latestChangeCursor }', { token })).body.data!.latestChangeCursor
  t.equal(latest, newest.cursor, 'the newest change')
  t.same((await feed(app, token, latest as string)).changes, [], 'and following it reads nothing more')
  await db.prisma.school.update({ where: { id: school.schoolId }, data: { changeSeq: 10n } })
  t.equal((await gql(app, '{ latestChangeCursor }', { token })).body.data!.latestChangeCursor, Buffer.from('changes:10').toString('base64url'),
    'a counter ahead of the changes kept (all pruned) still counts')
})

t.test('two concurrent writers of one school: no reader skips a change', {
  skip: serverUrl === undefined ? 'PostgreSQL only: two concurrent transactions on two connections (TEST_DATABASE_URL)' : false
}, async (t) => {
  const app = await build(t)
  const school = await seedSchool('Concurrent School')
  const { accessToken: token } = await login(app, school.username)
  const since = (await gql(app, '{ latestChangeCursor }', { token })).body.data!.latestChangeCursor as string
  const connect = async () => await serviceConnection(t)
  const [one, two, watcher] = [await connect(), await connect(), await connect()]
  const insert = (client: pg.Client, name: string) =>
    client.query('INSERT INTO students (school_id, id, full_name, updated_at) VALUES ($1, gen_random_uuid(), $2, now()) RETURNING id', [school.schoolId, name])
  // The school as the service sets it in a transaction (on Citus, the form that reaches the workers).
  const { citus } = await testDatabase()
  const begin = async (client: pg.Client): Promise<void> => {
    await client.query('BEGIN')
    for (const statement of setLocalStatements({ schoolId: school.schoolId }, citus)) await client.query(statement)
  }
  for (const client of [one, two]) await begin(client)
  const first = (await insert(one, 'Written First')).rows[0].id
  // The second writer numbers its change only once the first has committed: it waits for the lock.
  const second = insert(two, 'Written Second')
  let waiting = false
  for (let i = 0; i < 500 && !waiting; i++) {
    // On Citus the wait is on the school's worker, which citus_stat_activity shows (the shard's name in the query).
    const { rows } = await watcher.query(
      `SELECT count(*)::int AS n FROM ${citus ? 'citus_stat_activity' : 'pg_stat_activity'} WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO %students%'`)
    waiting = rows[0].n > 0
    if (!waiting) await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.ok(waiting, 'the second writer waits for the first')
  t.same((await feed(app, token, since)).changes, [], 'uncommitted changes are not shown')
  await one.query('COMMIT')
  const secondId = (await second).rows[0].id
  const afterFirst = await feed(app, token, since)
  t.same(afterFirst.changes.map((c) => c.id), [first], 'the first commit is read while the second is open')
  await two.query('COMMIT')
  const rest = await feed(app, token, afterFirst.nextCursor)
  t.same(rest.changes.map((c) => c.id), [secondId], 'and the second follows it: nothing skipped')

  // A rolled-back writer gives its number back, so the numbers stay dense.
  for (const client of [one, two]) await begin(client)
  await insert(one, 'Rolled Back')
  const third = insert(two, 'Kept')
  await one.query('ROLLBACK')
  const thirdId = (await third).rows[0].id
  await two.query('COMMIT')
  const last = await feed(app, token, rest.nextCursor)
  t.same(last.changes.map((c) => c.id), [thirdId])
  const seq = (cursor: string) => BigInt(Buffer.from(cursor, 'base64url').toString().slice('changes:'.length))
  t.equal(seq(last.changes[0].cursor), seq(rest.nextCursor) + 1n, 'numbers stay dense after a rollback')
})
