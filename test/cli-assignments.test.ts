// `school-data teacher unassign`, `student assign` and `student unassign` as an operator runs them
// (unassignTeacher, src/records/teachers.ts; assignStudent, unassignStudent, src/records/students.ts):
// the commands run in process (runCli) on this file's database (PostgreSQL as the service role, or an embedded
// database in a temporary folder), read back through the API: the teacher's login stops reading
// the classroom, the school's change feed and the teacher's own feed say so, and what is not there
// (an assignment, a classroom, another school's records) is refused with nothing written.
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { buildApp } from '../src/app.js'
import { openDatabase } from '../src/db/client.js'
import { runCli, type CliRun } from './fixtures/cli.js'
import { build, cliEnvironment, gql, login, testConfig } from './helper.js'

// Each command opens the embedded database anew when there is no server: slow on a busy machine.
t.setTimeout(600_000)

let env: NodeJS.ProcessEnv
let dataDir: string
const cli = async (args: string[], input?: string): Promise<CliRun> => await runCli(args, env, input)
const lastLine = (text: string): string => text.trimEnd().split('\n').at(-1) ?? ''
const PASSWORD = 'a long enough password'

t.before(async () => {
  const given = await cliEnvironment(t, 'sds-cli-assignments-')
  env = given
  dataDir = given.DATA_DIR
})

async function created (args: string[], input?: string): Promise<string> {
  const run = await cli(args, input)
  if (run.code !== 0) throw new Error(`${args.join(' ')}: ${run.stderr}`)
  return lastLine(run.stdout)
}

/**
 * `read` through the API on the database the CLI writes to: this file's PostgreSQL database, or
 * the CLI's embedded one, opened only while no CLI process holds it.
 */
async function api<T> (t: Test, read: (app: FastifyInstance) => Promise<T>): Promise<T> {
  if (env.DATABASE_URL !== undefined) return await read(await build(t))
  const db = await openDatabase({ dataDir, migrate: false })
  const app = await buildApp(testConfig(), { database: db, logger: false })
  try {
    return await read(app)
  } finally {
    await app.close()
    await db.close()
  }
}

async function ask (app: FastifyInstance, username: string, query: string, variables?: Record<string, unknown>): Promise<Record<string, any>> {
  const { accessToken } = await login(app, username, PASSWORD)
  const res = await gql(app, query, { token: accessToken, variables })
  if (res.body.errors !== undefined) throw new Error(JSON.stringify(res.body.errors))
  return res.body.data!
}

const FEED = 'query ($since: String) { changes(since: $since, limit: 100) { changes { type recordType id sourcedId } } }'

/** A feed's entries after `since`, as "TYPE RECORD id". */
async function feed (app: FastifyInstance, username: string, since: string): Promise<string[]> {
  const data = await ask(app, username, FEED, { since })
  return data.changes.changes.map((c: { type: string, recordType: string, id: string }) => `${c.type} ${c.recordType} ${c.id}`)
}

async function refused (t: Test, args: string[], message: RegExp): Promise<string> {
  const run = await cli(args)
  t.equal(run.code, 1, args.join(' '))
  t.match(run.stderr, message, args.join(' '))
  t.notMatch(run.stderr, /Prisma|constraint|P20\d\d/, `${args.join(' ')}: no database error`)
  t.equal(run.stdout, '', `${args.join(' ')}: nothing on standard output`)
  return run.stderr
}

/** A school with a teacher (and her login) in Room 1 and Room 2, a student in each, and an administrator. */
async function school (name: string) {
  const schoolId = await created(['school', 'create', '--name', name])
  const teacherId = await created(['teacher', 'create', '--school', schoolId, '--full-name', 'Tess Teacher', '--sourced-id', 'sis-tess'])
  const ann = await created(['student', 'create', '--school', schoolId, '--full-name', 'Ann One', '--classroom', 'Room 1'])
  const ben = await created(['student', 'create', '--school', schoolId, '--full-name', 'Ben Two', '--classroom', 'Room 2'])
  for (const room of ['Room 1', 'Room 2']) await created(['teacher', 'assign', '--school', schoolId, '--teacher', teacherId, '--classroom', room])
  const teacher = `tess-${schoolId.slice(-12)}`
  const admin = `admin-${schoolId.slice(-12)}`
  await created(['user', 'create', '--username', teacher, '--school', schoolId, '--role', 'teacher', '--teacher', teacherId], PASSWORD + '\n')
  await created(['user', 'create', '--username', admin, '--school', schoolId], PASSWORD + '\n')
  return { schoolId, teacherId, ann, ben, teacher, admin }
}

const READ = '{ latestChangeCursor students { id } classrooms { id name } }'

t.test('teacher unassign ends an assignment: the teacher reads the classroom no more, and both change feeds say so', async (t) => {
  const s = await school('Unassign Academy')
  const before = await api(t, async (app) => ({
    teacher: await ask(app, s.teacher, READ),
    school: (await ask(app, s.admin, '{ latestChangeCursor }')).latestChangeCursor as string
  }))
  t.same(before.teacher.students.map((x: { id: string }) => x.id).sort(), [s.ann, s.ben].sort(), 'control: both classrooms\' students')
  const room1 = before.teacher.classrooms.find((c: { name: string }) => c.name === 'Room 1').id as string
  const room2 = before.teacher.classrooms.find((c: { name: string }) => c.name === 'Room 2').id as string

  const run = await cli(['teacher', 'unassign', '--school', s.schoolId, '--teacher', s.teacherId, '--classroom', 'Room 1'])
  t.equal(run.code, 0, run.stderr)
  t.equal(run.stderr, `Unassigned teacher ${s.teacherId} from Room 1 (${room1})\n`)
  t.equal(run.stdout, '')

  await api(t, async (app) => {
    const after = await ask(app, s.teacher, READ)
    t.same(after.students, [{ id: s.ben }], 'Room 1\'s student is out of her reach')
    t.same(after.classrooms, [{ id: room2, name: 'Room 2' }], 'and Room 1 itself')
    t.same(await feed(app, s.teacher, before.teacher.latestChangeCursor), [
      `DELETED STUDENT ${s.ann}`, `UPDATED TEACHER ${s.teacherId}`, `DELETED CLASSROOM ${room1}`
    ], 'her own feed: the classroom and its student leave her reach (tombstones), her record is updated')
    t.same(await feed(app, s.admin, before.school), [`UPDATED TEACHER ${s.teacherId}`],
      'the school\'s feed: an assignment is part of the teacher record')
  })

  // By id, as well as by name.
  const byId = await cli(['teacher', 'unassign', '--school', s.schoolId, '--teacher', s.teacherId, '--classroom', room2])
  t.equal(byId.code, 0, byId.stderr)
  await api(t, async (app) => {
    t.same((await ask(app, s.teacher, READ)).classrooms, [], 'no classroom left')
  })
})

t.test('teacher unassign refuses what is not there, and another school\'s classroom as if it did not exist; nothing is written', async (t) => {
  const s = await school('Refusing Academy')
  const other = await school('Other Academy')
  const otherRoom1 = await api(t, async (app) => (await ask(app, other.admin, '{ classrooms { id name } }')).classrooms
    .find((c: { name: string }) => c.name === 'Room 1').id as string)
  await created(['student', 'create', '--school', s.schoolId, '--full-name', 'Cy Three', '--classroom', 'Room 3'])
  const cursor = await api(t, async (app) => (await ask(app, s.admin, '{ latestChangeCursor }')).latestChangeCursor as string)
  const unassign = (classroom: string, teacher = s.teacherId): string[] =>
    ['teacher', 'unassign', '--school', s.schoolId, '--teacher', teacher, '--classroom', classroom]

  await refused(t, unassign('Room 3'), new RegExp(`^error: Teacher ${s.teacherId} is not assigned to classroom "Room 3" \\([0-9a-f-]{36}\\): nothing was changed\\n$`))
  await refused(t, unassign('Nowhere'), new RegExp(`^error: Classroom "Nowhere" is not a classroom of school ${s.schoolId}\\n$`))
  const missing = '00000000-0000-4000-8000-000000000000'
  const absent = await refused(t, unassign(missing), /is not a classroom of school/)
  const foreign = await refused(t, unassign(otherRoom1), /is not a classroom of school/)
  t.equal(foreign.replace(otherRoom1, missing), absent, 'another school\'s classroom is refused exactly as one that does not exist')
  await refused(t, unassign('Room 1', other.teacherId), new RegExp(`^error: Teacher ${other.teacherId} is not a teacher of school ${s.schoolId}\\n$`))
  await refused(t, unassign('Room 1', 'not-a-uuid'), /^error: Teacher id "not-a-uuid" is not a UUID\n$/)
  await refused(t, ['teacher', 'unassign', '--school', s.schoolId, '--teacher', s.teacherId], /required option '--classroom <classroom>'/)

  await api(t, async (app) => {
    t.same(await feed(app, s.admin, cursor), [], 'nothing was written')
    t.equal((await ask(app, s.teacher, READ)).students.length, 2, 'she still reads both classrooms')
    t.equal((await ask(app, other.teacher, READ)).students.length, 2, 'and the other school is untouched')
  })
})

t.test('student unassign takes a student out of their classroom, student assign moves one in; both refuse what is not there', async (t) => {
  const s = await school('Moving Academy')
  const other = await school('Elsewhere Academy')
  const before = await api(t, async (app) => ({
    teacher: await ask(app, s.teacher, READ),
    school: (await ask(app, s.admin, '{ latestChangeCursor }')).latestChangeCursor as string
  }))
  const room1 = before.teacher.classrooms.find((c: { name: string }) => c.name === 'Room 1').id as string

  const run = await cli(['student', 'unassign', '--school', s.schoolId, '--student', s.ann])
  t.equal(run.code, 0, run.stderr)
  t.equal(run.stderr, `Unassigned student ${s.ann} from Room 1 (${room1})\n`)
  await api(t, async (app) => {
    const ann = (await ask(app, s.admin, 'query ($id: ID!) { student(id: $id) { fullName classroomName } }', { id: s.ann })).student
    t.same(ann, { fullName: 'Ann One', classroomName: null }, 'the student stays, in no classroom')
    t.same(await feed(app, s.admin, before.school), [`UPDATED STUDENT ${s.ann}`], 'the school\'s feed: the student updated')
    t.same(await feed(app, s.teacher, before.teacher.latestChangeCursor), [`DELETED STUDENT ${s.ann}`], 'her teacher\'s feed: the student left her reach')
  })

  await refused(t, ['student', 'unassign', '--school', s.schoolId, '--student', s.ann], new RegExp(`^error: Student ${s.ann} is in no classroom: nothing was changed\\n$`))
  const moved = await cli(['student', 'assign', '--school', s.schoolId, '--student', s.ann, '--classroom', 'Room 2'])
  t.equal(moved.code, 0, moved.stderr)
  t.match(moved.stderr, /^Assigned student .* to Room 2 \(/)
  const again = await cli(['student', 'assign', '--school', s.schoolId, '--student', s.ann, '--classroom', 'Room 2'])
  t.match(again.stderr, /is in Room 2 .* already: nothing was changed/)
  await refused(t, ['student', 'unassign', '--school', s.schoolId, '--student', s.ann, '--classroom', 'Room 1'],
    new RegExp(`^error: Student ${s.ann} is not in classroom "Room 1" \\(${room1}\\): nothing was changed\\n$`))
  await refused(t, ['student', 'unassign', '--school', s.schoolId, '--student', other.ann], new RegExp(`^error: Student ${other.ann} is not a student of school ${s.schoolId}\\n$`))
  await refused(t, ['student', 'assign', '--school', s.schoolId, '--student', other.ann, '--classroom', 'Room 1'], /is not a student of school/)
  const left = await cli(['student', 'unassign', '--school', s.schoolId, '--student', s.ann, '--classroom', 'Room 2'])
  t.equal(left.code, 0, left.stderr)
  await api(t, async (app) => {
    t.same((await ask(app, s.teacher, READ)).students, [{ id: s.ben }], 'the teacher reads Ben alone')
    t.same((await ask(app, other.teacher, READ)).students.length, 2, 'the other school is untouched')
  })
})
