// A teacher taken off a classroom loses it on every API node at once: two real API processes
// (node dist/server.js) with the response cache on and a TTL of an hour, each keeping the
// teacher's classrooms and a cached answer of hers; the assignment ended by another process
// (`school-data teacher unassign`, or `school-data import oneroster` with a bulk enrollments.csv
// that no longer holds it). Her next read on either node leaves the classroom and its students out,
// with no wait for a TTL: the write's NOTIFY school_data_changed reaches both nodes at its commit,
// while the command is still closing its connection, and drops their kept classrooms and cached
// answers (and row-level security reads the assignments in the statement itself).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { assignTeacher, createTeacher } from '../src/records/teachers.js'
import { post, productionNodes, type Node } from './fixtures/api-nodes.js'
import { runCli } from './fixtures/cli.js'
import { createTestDatabase, LOGIN, PASSWORD, serverUrl, unique } from './helper.js'

const READ = '{ classrooms { name } students { fullName } }'

const skip = serverUrl === undefined ? 'several API processes and the CLI share a PostgreSQL server (set TEST_DATABASE_URL)' : false

t.test('a classroom taken from a teacher by the CLI or an import leaves her next read on every node', { skip }, async (t) => {
  const db = await createTestDatabase()
  const url = 'url' in db.migrationTarget ? db.migrationTarget.url : ''
  const nodes = await productionNodes(t, url, 2, { RESPONSE_CACHE_TTL: '3600' })
  const env = { PATH: process.env.PATH, DATABASE_URL: url }
  const work = mkdtempSync(join(tmpdir(), 'sds-unassign-nodes-'))
  t.teardown(() => rmSync(work, { recursive: true, force: true }))

  async function tokenOf (username: string): Promise<string> {
    const res = await post(nodes[0]!, LOGIN, { username, password: PASSWORD })
    const token = res.body.data?.login?.accessToken as string | undefined
    if (token === undefined) throw new Error(`no token: ${JSON.stringify(res.body)}`)
    return token
  }

  /** Her classrooms' and students' names, sorted. */
  async function read (node: Node, token: string): Promise<{ body: { classrooms: string[], students: string[] }, cache: string | null }> {
    const res = await post(node, READ, {}, token)
    if (res.body.errors !== undefined) throw new Error(JSON.stringify(res.body.errors))
    const { classrooms, students } = res.body.data as { classrooms: Array<{ name: string }>, students: Array<{ fullName: string }> }
    return {
      body: { classrooms: classrooms.map((c) => c.name).sort(), students: students.map((s) => s.fullName).sort() },
      cache: res.headers.get('x-cache')
    }
  }

  /** Reads twice on each node: her classrooms kept, and her answer cached (the second is a hit). */
  async function warm (t: Test, token: string, expected: unknown): Promise<void> {
    for (const node of nodes) {
      await read(node, token)
      const cached = await read(node, token)
      t.same(cached.body, expected, `control: node ${node.port} answers from both classrooms`)
      t.equal(cached.cache, 'hit', `control: node ${node.port} answers from its cache`)
    }
  }

  async function nextReads (t: Test, token: string, expected: unknown, what: string): Promise<void> {
    for (const node of nodes) {
      const next = await read(node, token)
      t.same(next.body, expected, `${what}: her next read on node ${node.port} leaves the classroom and its student out`)
      t.not(next.cache, 'hit', 'not the cached answer')
    }
  }

  t.test('school-data teacher unassign', async (t) => {
    const schoolId = await createSchool(db, unique('Unassign Nodes School'))
    const teacherId = await createTeacher(db, { schoolId, fullName: 'Tia Teacher' })
    await createStudent(db, { schoolId, fullName: 'Ann Kept', classroom: 'Room 1' })
    await createStudent(db, { schoolId, fullName: 'Ben Taken', classroom: 'Room 2' })
    for (const classroom of ['Room 1', 'Room 2']) await assignTeacher(db, { schoolId, teacherId, classroom })
    const username = unique('tia')
    await createUser(db, { username, password: PASSWORD, schoolId, role: 'teacher', teacherId })
    const token = await tokenOf(username)
    await warm(t, token, { classrooms: ['Room 1', 'Room 2'], students: ['Ann Kept', 'Ben Taken'] })

    const run = await runCli(['teacher', 'unassign', '--school', schoolId, '--teacher', teacherId, '--classroom', 'Room 2'], env)
    t.equal(run.code, 0, run.stderr)
    await nextReads(t, token, { classrooms: ['Room 1'], students: ['Ann Kept'] }, 'unassigned by the CLI')
  })

  t.test('school-data import oneroster, a bulk enrollments.csv without the assignment', async (t) => {
    const schoolId = await createSchool(db, unique('Import Nodes School'))
    const csv = (rows: string[][]): string => rows.map((r) => r.join(',')).join('\n') + '\n'
    const enrollments = [
      ['sourcedId', 'classSourcedId', 'userSourcedId', 'role', 'primary'],
      ['e1', 'cls-1', 'tea-1', 'teacher', 'true'],
      ['e2', 'cls-2', 'tea-1', 'teacher', 'true'],
      ['e3', 'cls-1', 'stu-1', 'student', 'false'],
      ['e4', 'cls-2', 'stu-2', 'student', 'false']
    ]
    const bundle = (rows: string[][]): string => {
      const dir = join(work, `bundle-${rows.length}`)
      mkdirSync(dir)
      writeFileSync(join(dir, 'manifest.csv'), csv([['propertyName', 'value'], ['oneroster.version', '1.1'],
        ['file.users', 'bulk'], ['file.classes', 'bulk'], ['file.enrollments', 'bulk']]))
      writeFileSync(join(dir, 'users.csv'), csv([['sourcedId', 'role', 'givenName', 'familyName'],
        ['tea-1', 'teacher', 'Ida', 'Imported'], ['stu-1', 'student', 'Cal', 'Kept'], ['stu-2', 'student', 'Dee', 'Taken']]))
      writeFileSync(join(dir, 'classes.csv'), csv([['sourcedId', 'title'], ['cls-1', 'Room 1'], ['cls-2', 'Room 2']]))
      writeFileSync(join(dir, 'enrollments.csv'), csv(rows))
      return dir
    }
    const first = await runCli(['import', 'oneroster', bundle(enrollments), '--school', schoolId], env)
    t.equal(first.code, 0, first.stderr)
    const teacher = await db.forSchool(schoolId).teacher.findFirstOrThrow({ where: { sourcedId: 'tea-1' }, select: { id: true } })
    const username = unique('ida')
    await createUser(db, { username, password: PASSWORD, schoolId, role: 'teacher', teacherId: teacher.id })
    const token = await tokenOf(username)
    await warm(t, token, { classrooms: ['Room 1', 'Room 2'], students: ['Cal Kept', 'Dee Taken'] })

    const second = await runCli(['import', 'oneroster', bundle(enrollments.filter((row) => row[0] !== 'e2')), '--school', schoolId, '--json'], env)
    t.equal(second.code, 0, second.stderr)
    t.equal(JSON.parse(second.stdout).teacherAssignments.removed, 1, 'the import ended the assignment')
    await nextReads(t, token, { classrooms: ['Room 1'], students: ['Cal Kept'] }, 'ended by the import')
  })
})
