// UUIDs are read in any case (RFC 9562 §4): an id in capitals is the same record everywhere an id
// is taken (the CLI and the code behind it: the record writes of src/records/ (students.ts,
// teachers.ts, writes.ts) and the operators' src/admin/ (users.ts, clients.ts); GraphQL arguments,
// filters and cursors, the school client's walls), compared in one form (lower case), and a refusal
// says what really went wrong: not a UUID, no such record, or another school's.
import t from 'tap'
import { createClient, listClients, rotateClientSecret } from '../src/admin/clients.js'
import { createSchool } from '../src/admin/schools.js'
import { assignUser, createUser, listUsers } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { assignTeacher, createTeacher } from '../src/records/teachers.js'
import { build, cliEnvironment, gql, login, PASSWORD, testDatabase, unique } from './helper.js'
import { runCli } from './fixtures/cli.js'

const upper = (id: string): string => id.toUpperCase()
const LOWER_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

t.test('the administration code (what the CLI runs) takes ids in capitals as the same ids', async (t) => {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Capital School'))
  const studentId = await createStudent(db, { schoolId: upper(schoolId), fullName: 'Ada Lovelace', classroom: 'Room 1' })
  t.match(studentId, LOWER_UUID, 'student create --school <in capitals>')
  const teacherId = await createTeacher(db, { schoolId: upper(schoolId), fullName: 'Grace Hopper' })
  t.match(teacherId, LOWER_UUID, 'teacher create --school <in capitals>')
  const assigned = await assignTeacher(db, { schoolId: upper(schoolId), teacherId: upper(teacherId), classroom: 'Room 1' })
  t.match(assigned, { role: 'PRIMARY' }, 'teacher assign, both ids in capitals')
  const student = await db.forSchool(schoolId).student.findFirst({ where: { id: studentId }, select: { schoolId: true, classroomId: true } })
  t.same(student, { schoolId, classroomId: assigned.classroomId }, 'the student is in the school and in the teacher\'s classroom')

  const username = unique('capital-teacher')
  const userId = await createUser(db, { username, password: PASSWORD, schoolId: upper(schoolId), role: 'teacher', teacherId: upper(teacherId) })
  t.match(userId, LOWER_UUID, 'user create --school and --teacher in capitals')
  t.same((await listUsers(db, { schoolId: upper(schoolId) })).map((u) => [u.username, u.schoolId, u.teacherId]), [[username, schoolId, teacherId]], 'user list --school in capitals')
  const other = await createSchool(db, unique('Other Capital School'))
  const adminName = unique('capital-admin')
  await createUser(db, { username: adminName, password: PASSWORD })
  t.match(await assignUser(db, adminName, upper(other)), LOWER_UUID, 'user assign --school in capitals')

  const client = await createClient(db, { schoolId: upper(schoolId), name: 'Capital client', scopes: ['roster-core.readonly'] })
  t.same((await listClients(db, { schoolId: upper(schoolId) })).map((c) => c.id), [client.clientId], 'client list --school in capitals')
  t.match(await rotateClientSecret(db, upper(client.clientId), { overlapHours: 0 }), { clientId: client.clientId }, 'client rotate-secret with the id in capitals')

  // The refusals say what went wrong.
  await t.rejects(createStudent(db, { schoolId: 'not-a-uuid', fullName: 'X' }), { message: 'School id "not-a-uuid" is not a UUID' })
  const missing = '0198a2b4-0000-7000-8000-00000000abcd'
  await t.rejects(createStudent(db, { schoolId: upper(missing), fullName: 'X' }), { message: `School ${missing} does not exist` })
  await t.rejects(assignTeacher(db, { schoolId: upper(other), teacherId: upper(teacherId), classroom: 'Room 1' }),
    { message: `Teacher ${teacherId} is not a teacher of school ${other}` }, "another school's teacher: not one of this school")
})

t.test("the school client (wall 1) takes its own school's id in any case, and still refuses another's", async (t) => {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Wall Case School'))
  const other = await createSchool(db, unique('Wall Case Other'))
  // The client as the service builds it (the school from a token, in its one form).
  const tenant = db.forSchool(schoolId)
  t.equal(db.forSchool(upper(schoolId)), tenant, 'one client for the school whatever the case it is named in')
  const created = await tenant.student.create({ data: { schoolId: upper(schoolId), fullName: 'Alan Turing' }, select: { id: true, schoolId: true } })
  t.equal(created.schoolId, schoolId, 'written with the school in its one form')
  t.equal(await tenant.student.count({ where: { schoolId: upper(schoolId) } }), 1, 'a filter on the school in capitals')
  t.equal(await tenant.student.count({ where: { AND: [{ schoolId: upper(schoolId) }] } }), 1, 'and nested')
  await tenant.student.updateMany({ where: { id: created.id }, data: { schoolId: upper(schoolId), preferredName: 'Al' } })
  t.equal((await db.forSchool(schoolId).student.findFirst({ where: { id: created.id }, select: { preferredName: true } }))?.preferredName, 'Al', 'the same client as in lower case')
  await t.rejects(tenant.student.count({ where: { schoolId: upper(other) } }), { name: 'TenantViolationError', message: /other than the caller's school/ })
  await t.rejects(tenant.student.create({ data: { schoolId: other, fullName: 'X' } }), { name: 'TenantViolationError', message: /another school/ })
  await t.rejects(tenant.student.updateMany({ where: {}, data: { schoolId: upper(other) } }), { name: 'TenantViolationError', message: /Moving a row to another school/ })
})

t.test('GraphQL ids, filters and cursors in capitals find the same records', async (t) => {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('GraphQL Case School'))
  const username = unique('case-admin')
  await createUser(db, { username, password: PASSWORD, schoolId })
  const ids: string[] = []
  for (const name of ['Ada Lovelace', 'Alan Turing', 'Grace Hopper']) ids.push(await createStudent(db, { schoolId, fullName: name, classroom: 'Room 7' }))
  const teacherId = await createTeacher(db, { schoolId, fullName: 'Edsger Dijkstra' })
  const { classroomId } = await assignTeacher(db, { schoolId, teacherId, classroom: 'Room 7' })
  const app = await build(t)
  const token = (await login(app, username)).accessToken
  const one = await gql(app, 'query ($s: ID!, $t: ID!, $c: ID!) { student(id: $s) { id } teacher(id: $t) { id } classroom(id: $c) { id } }',
    { token, variables: { s: upper(ids[0]!), t: upper(teacherId), c: upper(classroomId) } })
  t.same(one.body.data, { student: { id: ids[0] }, teacher: { id: teacherId }, classroom: { id: classroomId } }, 'by id')
  const filtered = await gql(app, 'query ($c: ID) { students(filter: { classroomId: $c }) { id } teachers(filter: { classroomId: $c }) { id } }',
    { token, variables: { c: upper(classroomId) } })
  t.equal(filtered.body.data?.students.length, 3, 'filter.classroomId')
  t.same(filtered.body.data?.teachers, [{ id: teacherId }])
  // A page's cursor whose id is written in capitals: the same next page.
  const page = 'query ($after: String) { studentsPage(limit: 1, after: $after, orderBy: { field: ID }) { nodes { id } pageInfo { endCursor } } }'
  const first = await gql(app, page, { token })
  const cursor = first.body.data?.studentsPage.pageInfo.endCursor as string
  const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { v: string[] }
  const shouted = Buffer.from(JSON.stringify({ ...decoded, v: decoded.v.map(upper) })).toString('base64url')
  const next = await gql(app, page, { token, variables: { after: cursor } })
  const nextShouted = await gql(app, page, { token, variables: { after: shouted } })
  t.notOk(nextShouted.body.errors, JSON.stringify(nextShouted.body.errors))
  t.same(nextShouted.body.data, next.body.data, 'after a cursor with its id in capitals')
})

t.test('school-data student create and teacher create with --school in capitals (the report)', async (t) => {
  const env = await cliEnvironment(t, 'sds-ids-')
  const school = await runCli(['school', 'create', '--name', unique('CLI Capital School')], env)
  const schoolId = school.stdout.trim().split('\n').at(-1)!
  for (const args of [['student', 'create', '--full-name', 'Cli Student'], ['teacher', 'create', '--full-name', 'Cli Teacher']]) {
    const run = await runCli([...args, '--school', upper(schoolId)], env)
    t.equal(run.code, 0, `${args.slice(0, 2).join(' ')}: ${run.stderr}`)
    t.match(run.stdout.trim().split('\n').at(-1), LOWER_UUID)
  }
})
