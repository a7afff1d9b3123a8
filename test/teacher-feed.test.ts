// A teacher's change feed through the API: `changes` and `latestChangeCursor` follow what enters,
// changes in and leaves the teacher's reach, so a consumer that mirrors the feed ends with exactly
// what the teacher's lists show; the teacher's cursors belong to that teacher's feed alone.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { setLocalStatements } from '../src/db/school-session.js'
import { createClassroomAssignment } from './fixtures.js'
import { build, gql, login, PASSWORD, testDatabase, unique } from './helper.js'

const FEED = `query ($since: String, $limit: Int) {
  changes(since: $since, limit: $limit) {
    changes { cursor type recordType id sourcedId studentNumber at student { id fullName } teacher { id } classroom { id } }
    nextCursor hasMore
  }
}`

const LISTS = '{ students(limit: 1000) { id } teachers(limit: 1000) { id } classrooms(limit: 1000) { id } }'

async function ask (app: FastifyInstance, token: string, query: string, variables?: Record<string, unknown>) {
  const res = await gql(app, query, { token, variables })
  if (res.body.errors !== undefined) throw new Error(JSON.stringify(res.body.errors))
  return res.body.data!
}

/** The ids of every record the caller's lists show. */
async function listed (app: FastifyInstance, token: string): Promise<string[]> {
  const data = await ask(app, token, LISTS)
  return [...data.students, ...data.teachers, ...data.classrooms].map((row: { id: string }) => row.id).sort()
}

async function schoolWithTeacher (name: string) {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique(name))
  const teacherId = await createTeacher(db, { schoolId, fullName: 'Mia Teacher' })
  const username = unique('teacher')
  await createUser(db, { username, password: PASSWORD, schoolId })
  await db.prisma.user.update({ where: { username }, data: { role: 'TEACHER', teacherId } })
  const adminName = unique('admin')
  await createUser(db, { username: adminName, password: PASSWORD, schoolId })
  return { db, schoolId, teacherId, username, adminName, scoped: db.forSchool(schoolId) }
}

t.test("a consumer mirroring a teacher's feed holds exactly what the teacher's lists show, through moves in and out", async (t) => {
  const app = await build(t)
  const s = await schoolWithTeacher('Mirror Feed School')
  const { db, schoolId, teacherId, scoped } = s
  const room = (name: string, teacher = teacherId, role: 'PRIMARY' | 'ASSISTANT' = 'PRIMARY') =>
    createClassroomAssignment(db, schoolId, teacher, name, role)
  const student = (fullName: string, classroom?: string) => createStudent(db, { schoolId, fullName, classroom })
  const own = await room('Own Room')
  const cal = await createTeacher(db, { schoolId, fullName: 'Cal Colleague' })
  const other = await room('Other Room', cal)
  const ann = await student('Ann Own', 'Own Room')
  const ben = await student('Ben Other', 'Other Room')

  const { accessToken: token } = await login(app, s.username)
  // Sync as README says: the cursor first, then the lists, then the feed from the cursor.
  let cursor = (await ask(app, token, '{ latestChangeCursor }')).latestChangeCursor as string
  const mirror = new Set(await listed(app, token))
  t.same([...mirror].sort(), [ann, own, teacherId].sort(), 'the teacher starts with her classroom, its student and herself')

  const follow = async (step: string) => {
    for (;;) {
      const page = (await ask(app, token, FEED, { since: cursor, limit: 2 })).changes
      for (const change of page.changes) {
        if (change.type === 'DELETED') mirror.delete(change.id)
        else mirror.add(change.id)
      }
      cursor = page.nextCursor
      if (!page.hasMore) break
    }
    t.same([...mirror].sort(), await listed(app, token), step)
  }

  await scoped.student.updateMany({ where: { id: ben }, data: { classroomId: own } })
  await follow('a student moved into her classroom')
  await scoped.student.updateMany({ where: { id: ann }, data: { classroomId: other } })
  await follow('a student moved out of it')
  const cy = await student('Cy New', 'Own Room')
  await scoped.student.updateMany({ where: { id: cy }, data: { email: 'cy@example.org' } })
  await follow('a student created in it and updated')
  await room('Other Room', teacherId, 'ASSISTANT')
  await follow('assigned to a second classroom: its students and its teacher enter')
  await scoped.teacherClassroom.deleteMany({ where: { teacherId, classroomId: other } })
  await follow('unassigned from it again: they leave')
  await createClassroomAssignment(db, schoolId, cal, 'Own Room', 'ASSISTANT')
  await scoped.teacher.updateMany({ where: { id: cal }, data: { title: 'Assistant' } })
  await follow('a colleague joins her classroom and is updated')
  await scoped.student.updateMany({ where: { classroomId: own }, data: { classroomId: null } })
  await scoped.teacherClassroom.deleteMany({ where: { classroomId: own } })
  await follow('her classroom emptied of students and teachers')
  await scoped.classroom.deleteMany({ where: { id: own } })
  await room('Third Room')
  await student('Dee Third', 'Third Room')
  await scoped.student.deleteMany({ where: { id: cy } })
  await follow('a classroom deleted, a new one assigned, a student deleted')

  t.same([...mirror].sort(), await listed(app, token), 'at the end the mirror is exactly her lists')
  t.ok(mirror.has(teacherId) && mirror.size === 3, 'herself, Third Room and its student')
})

t.test("a teacher's feed: records as they are now, tombstones, resuming from any cursor", async (t) => {
  const app = await build(t)
  const s = await schoolWithTeacher('Feed Fields School')
  const { db, schoolId, teacherId, scoped } = s
  const { accessToken: token } = await login(app, s.username)
  const start = (await ask(app, token, '{ latestChangeCursor }')).latestChangeCursor as string
  const own = await createClassroomAssignment(db, schoolId, teacherId, 'Own Room')
  const ann = await createStudent(db, { schoolId, fullName: 'Ann Own', classroom: 'Own Room', sourcedId: 'sis-ann', studentNumber: 'A-1' })
  await createStudent(db, { schoolId, fullName: 'Not Hers', classroom: 'Elsewhere' })
  await scoped.student.deleteMany({ where: { id: ann } })

  const feed = (await ask(app, token, FEED, { since: start })).changes
  t.same(feed.changes.map((c: any) => [c.type, c.recordType, c.id]), [
    ['UPDATED', 'TEACHER', teacherId],
    ['CREATED', 'CLASSROOM', own],
    ['CREATED', 'STUDENT', ann],
    ['DELETED', 'STUDENT', ann]
  ], 'her own changes only, in order')
  t.same(feed.changes[0].teacher, { id: teacherId }, 'a change carries the record as it is now')
  t.same(feed.changes[1].classroom, { id: own })
  t.same([feed.changes[3].sourcedId, feed.changes[3].studentNumber, feed.changes[3].student], ['sis-ann', 'A-1', null], 'a tombstone')
  const resumed = (await ask(app, token, FEED, { since: feed.changes[1].cursor })).changes
  t.same(resumed.changes.map((c: any) => c.cursor), feed.changes.slice(2).map((c: any) => c.cursor), 'resumed from a change: what followed it')
  const end = (await ask(app, token, FEED, { since: feed.nextCursor })).changes
  t.same(end, { changes: [], nextCursor: feed.nextCursor, hasMore: false })
  t.equal((await ask(app, token, '{ latestChangeCursor }')).latestChangeCursor, feed.nextCursor, 'latestChangeCursor is her last change')
  const all = (await ask(app, token, FEED, {})).changes
  t.match(all.changes[0], { type: 'CREATED', recordType: 'TEACHER', id: teacherId }, 'with no since: from her oldest change, her own creation')
})

t.test("cursors: a teacher's belong to her feed; another feed's, a malformed one or an expired one is BAD_USER_INPUT", async (t) => {
  const app = await build(t)
  const s = await schoolWithTeacher('Feed Cursor School')
  const { db, schoolId, teacherId } = s
  await createClassroomAssignment(db, schoolId, teacherId, 'Own Room')
  const colleague = await createTeacher(db, { schoolId, fullName: 'Cal Colleague' })
  await createClassroomAssignment(db, schoolId, colleague, 'Own Room')
  const colleagueUser = unique('colleague')
  await createUser(db, { username: colleagueUser, password: PASSWORD, schoolId })
  await db.prisma.user.update({ where: { username: colleagueUser }, data: { role: 'TEACHER', teacherId: colleague } })
  const { accessToken: token } = await login(app, s.username)
  const { accessToken: admin } = await login(app, s.adminName)
  const { accessToken: colleagueToken } = await login(app, colleagueUser)
  const mine = (await ask(app, token, '{ latestChangeCursor }')).latestChangeCursor as string
  const school = (await ask(app, admin, '{ latestChangeCursor }')).latestChangeCursor as string
  const theirs = (await ask(app, colleagueToken, '{ latestChangeCursor }')).latestChangeCursor as string
  t.not(mine, theirs)

  const refused = async (as: string, since: string, message: RegExp, name: string) => {
    const res = await gql(app, FEED, { token: as, variables: { since } })
    t.equal(res.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', name)
    t.match(res.body.errors?.[0]?.message, message, name)
  }
  await refused(admin, mine, /since is a cursor of a teacher's change feed, not of yours/, "a teacher's cursor given by an administrator")
  await refused(token, school, /since is a cursor of the school's change feed, not of yours/, "the school's cursor given by a teacher")
  await refused(token, theirs, /since is a cursor of another teacher's change feed/, "a colleague's cursor")
  const encode = (text: string) => Buffer.from(text).toString('base64url')
  for (const bad of ['garbage', encode('teacher-changes:1'), encode(`teacher-changes:${teacherId}:x`), encode(`teacher-changes:${teacherId}:99999999999999999999`)]) {
    await refused(token, bad, /not a cursor of the change feed/, `malformed: ${bad}`)
  }
  t.same((await ask(app, token, FEED, { since: mine })).changes.changes, [], 'her own cursor works')

  // Age her feed past 90 days (as the feed's writer); the next write prunes all but the mark.
  await db.prisma.$transaction(async (tx) => {
    for (const statement of [...setLocalStatements({ schoolId }, db.citus), "SET LOCAL app.writing_teacher_feed = 'on'"]) await tx.$executeRawUnsafe(statement)
    await tx.$executeRawUnsafe("UPDATE teacher_changes SET at = now() - interval '92 days' WHERE teacher_id = $1::uuid", teacherId)
  })
  const eve = await createStudent(db, { schoolId, fullName: 'Eve New', classroom: 'Own Room' })
  await refused(token, encode(`teacher-changes:${teacherId}:0`), /older than the change feed keeps/, 'a cursor before pruned changes')
  const after = (await ask(app, token, FEED, { since: mine })).changes
  t.same(after.changes.map((c: any) => c.student?.fullName), ['Eve New'], 'a cursor at the mark still works')
  t.same((await ask(app, token, FEED, {})).changes.changes.map((c: any) => c.id), [colleague, eve],
    'with no since: from the mark (her colleague joining), the oldest change kept')
})
