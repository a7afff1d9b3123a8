// The record mutations through the API (docs/api/mutations.md): create, change (partial) and delete
// of students, teachers and classrooms, a student into and out of a classroom, a teacher's
// assignment made and ended, by id or natural key; each invalid field reported with its path; a
// natural key taken is a CONFLICT; another school's record is refused as a missing one; nothing is
// half-written; versions; who may write.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createTeacher } from '../src/records/teachers.js'
import { build, gql, login, seedSchool, testDatabase, unique, type GraphQLResponse } from './helper.js'
import { clientToken, seedClient } from './fixtures/oauth.js'

let app: FastifyInstance
let token: string
let schoolId: string
let otherToken: string

t.before(async () => {
  app = await build(t)
  const school = await seedSchool(unique('Writing School'))
  schoolId = school.schoolId
  token = (await login(app, school.username)).accessToken
  const other = await seedSchool(unique('Other School'))
  otherToken = (await login(app, other.username)).accessToken
})

const send = async (query: string, variables: Record<string, unknown> = {}, as = token): Promise<GraphQLResponse> =>
  await gql(app, query, { token: as, variables })

function ok (res: GraphQLResponse): Record<string, any> {
  if (res.body.errors !== undefined) throw new Error(JSON.stringify(res.body.errors))
  return res.body.data!
}

const CREATE_STUDENT = `mutation ($input: StudentInput!) {
  createStudent(input: $input) { id sourcedId fullName givenName email studentNumber dateOfBirth gradeLevel status classroomName version }
}`
const CHANGE_STUDENT = `mutation ($student: StudentRef!, $input: StudentChange!, $expectedVersion: Int) {
  changeStudent(student: $student, input: $input, expectedVersion: $expectedVersion) { id fullName email preferredName gradeLevel version }
}`

t.test('a student created, changed in the fields given only, read back, deleted; natural keys name it', async (t) => {
  const room = ok(await send('mutation { createClassroom(input: { name: "Room 7", sourcedId: "cls-7", subject: "Math" }) { id name version } }')).createClassroom
  t.match(room, { name: 'Room 7', version: 1 })
  const created = ok(await send(CREATE_STUDENT, {
    input: { sourcedId: 'stu-1', givenName: 'Ada', familyName: 'Lovelace', email: 'ada@example.org', studentNumber: 'N-1', dateOfBirth: '2015-12-10', gradeLevel: 'GRADE_3', classroom: { sourcedId: 'cls-7' } }
  })).createStudent
  t.match(created, { sourcedId: 'stu-1', fullName: 'Ada Lovelace', email: 'ada@example.org', studentNumber: 'N-1', dateOfBirth: '2015-12-10', gradeLevel: 'GRADE_3', status: 'ACTIVE', classroomName: 'Room 7', version: 1 })

  const changed = ok(await send(CHANGE_STUDENT, { student: { studentNumber: 'N-1' }, input: { preferredName: 'Addie', email: null } })).changeStudent
  t.match(changed, { id: created.id, fullName: 'Ada Lovelace', preferredName: 'Addie', email: null, gradeLevel: 'GRADE_3', version: 2 }, 'only the fields given changed; null cleared one')
  const same = ok(await send(CHANGE_STUDENT, { student: { sourcedId: 'stu-1' }, input: { preferredName: 'Addie' } })).changeStudent
  t.equal(same.version, 2, 'a change that changes nothing keeps the version')

  const read = ok(await send('query ($id: ID!) { student(id: $id) { preferredName version classroom { name } } }', { id: created.id })).student
  t.same(read, { preferredName: 'Addie', version: 2, classroom: { name: 'Room 7' } })

  const out = ok(await send('mutation { removeStudentFromClassroom(student: { sourcedId: "stu-1" }) { classroomName version } }')).removeStudentFromClassroom
  t.same(out, { classroomName: null, version: 3 })
  const back = ok(await send('mutation { placeStudent(student: { sourcedId: "stu-1" }, classroom: { name: "Room 7" }) { classroomName version } }')).placeStudent
  t.same(back, { classroomName: 'Room 7', version: 4 })

  const deleted = ok(await send('mutation ($id: ID!) { deleteStudent(student: { id: $id }) { recordType id sourcedId } }', { id: created.id })).deleteStudent
  t.same(deleted, { recordType: 'STUDENT', id: created.id, sourcedId: 'stu-1' })
  t.equal(ok(await send('query ($id: ID!) { student(id: $id) { id } }', { id: created.id })).student, null)
  const feed = ok(await send('{ changes(limit: 100) { changes { type recordType sourcedId } } }')).changes.changes as Array<{ type: string, recordType: string, sourcedId: string }>
  t.same(feed.filter((c) => c.sourcedId === 'stu-1').map((c) => c.type), ['CREATED', 'UPDATED', 'UPDATED', 'UPDATED', 'DELETED'], 'each write entered the school\'s change feed')
})

t.test('teachers and classrooms: created, changed, assigned, the assignment ended, deleted', async (t) => {
  const teacher = ok(await send('mutation { createTeacher(input: { sourcedId: "t-1", fullName: "Grace Hopper", title: "Teacher" }) { id fullName title version } }')).createTeacher
  t.match(teacher, { fullName: 'Grace Hopper', title: 'Teacher', version: 1 })
  ok(await send('mutation { createClassroom(input: { name: "Lab", sourcedId: "lab" }) { id } }'))
  const assigned = ok(await send('mutation { assignTeacher(teacher: { sourcedId: "t-1" }, classroom: { sourcedId: "lab" }, role: ASSISTANT) { role teacher { fullName } classroom { name } } }')).assignTeacher
  t.same(assigned, { role: 'ASSISTANT', teacher: { fullName: 'Grace Hopper' }, classroom: { name: 'Lab' } })
  const again = ok(await send('mutation { assignTeacher(teacher: { sourcedId: "t-1" }, classroom: { name: "Lab" }) { role } }')).assignTeacher
  t.equal(again.role, 'PRIMARY', 'an assignment that exists takes the role')
  const ended = ok(await send('mutation { endTeacherAssignment(teacher: { sourcedId: "t-1" }, classroom: { name: "Lab" }) { role teacher { version } classroom { name version } } }')).endTeacherAssignment
  t.same(ended, { role: 'PRIMARY', teacher: { version: 1 }, classroom: { name: 'Lab', version: 1 } },
    'an assignment is a record of its own: assigning, changing its role and ending it move neither the teacher\'s nor the classroom\'s version')
  const none = await send('mutation { endTeacherAssignment(teacher: { sourcedId: "t-1" }, classroom: { name: "Lab" }) { role } }')
  t.equal(none.body.errors?.[0]?.extensions?.code, 'NOT_FOUND', 'an assignment that is not there is NOT_FOUND')
  const renamed = ok(await send('mutation { changeClassroom(classroom: { sourcedId: "lab" }, input: { name: "Science Lab", subject: "Science" }) { name subject version } }')).changeClassroom
  t.same(renamed, { name: 'Science Lab', subject: 'Science', version: 2 })
  const changed = ok(await send('mutation { changeTeacher(teacher: { sourcedId: "t-1" }, input: { title: null, status: INACTIVE }, expectedVersion: 1) { title status version } }')).changeTeacher
  t.same(changed, { title: null, status: 'INACTIVE', version: 2 })
  t.same(ok(await send('mutation { deleteTeacher(teacher: { sourcedId: "t-1" }) { recordType sourcedId } }')).deleteTeacher, { recordType: 'TEACHER', sourcedId: 't-1' })
  t.same(ok(await send('mutation { deleteClassroom(classroom: { name: "Science Lab" }) { recordType sourcedId } }')).deleteClassroom, { recordType: 'CLASSROOM', sourcedId: 'lab' })
})

t.test('bad input: every invalid field with its path and BAD_USER_INPUT, nothing written', async (t) => {
  const res = await send(CREATE_STUDENT, { input: { sourcedId: 'bad-1', fullName: ' ', email: 'not-an-email', enrollmentStartDate: '2024-09-01', enrollmentEndDate: '2024-01-01' } })
  t.equal(res.body.errors?.length, 1)
  const error = res.body.errors![0]!
  t.equal(error.extensions?.code, 'BAD_USER_INPUT')
  t.same(error.path, ['createStudent'])
  t.same((error.extensions?.invalid as Array<{ path: unknown[] }>).map((f) => f.path), [
    ['input', 'fullName'], ['input', 'email'], ['input', 'enrollmentEndDate']
  ], 'each invalid field, with its path')
  const ref = await send(CHANGE_STUDENT, { student: { id: 'nope' }, input: { status: null } })
  t.same((ref.body.errors?.[0]?.extensions?.invalid as Array<{ path: unknown[] }>).map((f) => f.path), [['student', 'id'], ['input', 'status']])
  const two = await send(CHANGE_STUDENT, { student: { sourcedId: 'a', studentNumber: 'b' }, input: {} })
  t.equal(two.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', 'a reference gives exactly one key')
  const none = ok(await send('{ students(filter: { search: "bad-1" }) { id } }'))
  t.same(none.students, [])
})

t.test('a natural key taken is a CONFLICT naming the field; nothing half-written', async (t) => {
  ok(await send(CREATE_STUDENT, { input: { sourcedId: 'dup-1', studentNumber: 'D-1', fullName: 'First' } }))
  const taken = await send(CREATE_STUDENT, { input: { sourcedId: 'dup-2', studentNumber: 'D-1', fullName: 'Second' } })
  t.equal(taken.body.errors?.[0]?.extensions?.code, 'CONFLICT')
  t.same((taken.body.errors?.[0]?.extensions?.invalid as Array<{ path: unknown[] }>).map((f) => f.path), [['input', 'studentNumber']])
  const room = await send(CREATE_STUDENT, { input: { sourcedId: 'dup-3', fullName: 'Third', classroom: { name: 'No Such Room' } } })
  t.equal(room.body.errors?.[0]?.extensions?.code, 'NOT_FOUND')
  const bulk = await send('mutation ($items: [StudentUpsert!]!) { upsertStudents(items: $items) { created } }', {
    items: [{ sourcedId: 'bulk-ok', fullName: 'Fine' }, { sourcedId: 'bulk-taken', fullName: 'Taken', studentNumber: 'D-1' }]
  })
  t.equal(bulk.body.errors?.[0]?.extensions?.code, 'CONFLICT', 'one item with a taken key refuses the batch')
  const left = ok(await send('{ students(limit: 1000) { sourcedId } }')).students as Array<{ sourcedId: string | null }>
  t.same(left.map((s) => s.sourcedId).filter((s) => s !== null && /^(dup|bulk)-/.test(s)), ['dup-1'], 'nothing of the refused writes is there')
})

t.test("another school's record is refused exactly as a missing one", async (t) => {
  const mine = ok(await send(CREATE_STUDENT, { input: { fullName: 'Mine', sourcedId: 'mine-1' } })).createStudent
  const theirs = await send(CHANGE_STUDENT, { student: { id: mine.id }, input: { fullName: 'Theirs now' } }, otherToken)
  const missing = await send(CHANGE_STUDENT, { student: { id: '01900000-0000-7000-8000-000000000001' }, input: { fullName: 'Nobody' } }, otherToken)
  t.equal(theirs.body.errors?.[0]?.extensions?.code, 'NOT_FOUND')
  t.equal(missing.body.errors?.[0]?.extensions?.code, 'NOT_FOUND')
  t.equal(theirs.body.errors?.[0]?.message.replace(mine.id, 'ID'), missing.body.errors?.[0]?.message.replace('01900000-0000-7000-8000-000000000001', 'ID'), 'the same refusal')
  const bySourced = await send('mutation { deleteStudent(student: { sourcedId: "mine-1" }) { id } }', {}, otherToken)
  t.equal(bySourced.body.errors?.[0]?.extensions?.code, 'NOT_FOUND')
  const placed = await send('mutation ($id: ID!) { createClassroom(input: { name: "Theirs" }) { id } placeStudent(student: { id: $id }, classroom: { name: "Theirs" }) { id } }', { id: mine.id }, otherToken)
  t.equal(placed.body.errors?.[0]?.extensions?.code, 'NOT_FOUND')
  t.equal(ok(await send('query ($id: ID!) { student(id: $id) { fullName } }', { id: mine.id })).student.fullName, 'Mine', 'unchanged')
})

t.test('versions: a change based on an old version is a VERSION_CONFLICT saying the current one, writing nothing; the CLI and SQL move versions too', async (t) => {
  const created = ok(await send(CREATE_STUDENT, { input: { fullName: 'Versioned', sourcedId: 'ver-1' } })).createStudent
  ok(await send(CHANGE_STUDENT, { student: { id: created.id }, input: { fullName: 'Versioned 2' }, expectedVersion: 1 }))
  const stale = await send(CHANGE_STUDENT, { student: { id: created.id }, input: { fullName: 'Lost update' }, expectedVersion: 1 })
  t.match(stale.body.errors?.[0], { extensions: { code: 'VERSION_CONFLICT', currentVersion: 2 } })
  const del = await send('mutation ($id: ID!) { deleteStudent(student: { id: $id }, expectedVersion: 1) { id } }', { id: created.id })
  t.match(del.body.errors?.[0], { extensions: { code: 'VERSION_CONFLICT', currentVersion: 2 } })
  t.equal(ok(await send('query ($id: ID!) { student(id: $id) { fullName version } }', { id: created.id })).student.fullName, 'Versioned 2')
  const db = await testDatabase()
  await db.forSchool(schoolId).student.updateMany({ where: { id: created.id }, data: { gradeLevel: 'GRADE_1' } })
  t.equal(ok(await send('query ($id: ID!) { student(id: $id) { version } }', { id: created.id })).student.version, 3, 'a write outside the API moves the version')
  await db.forSchool(schoolId).student.updateMany({ where: { id: created.id }, data: { gradeLevel: 'GRADE_1', version: 1 } })
  t.equal(ok(await send('query ($id: ID!) { student(id: $id) { version } }', { id: created.id })).student.version, 3, 'only the database moves it: a write naming a version, changing nothing, keeps it')
})

t.test('who may write: administrators and clients with the write scopes; teachers and read-only clients are FORBIDDEN, told the scope they lack', async (t) => {
  const db = await testDatabase()
  const teacherId = await createTeacher(db, { schoolId, fullName: 'Reading Teacher' })
  const { createUser } = await import('../src/admin/users.js')
  const username = unique('teacher')
  await createUser(db, { username, password: 'correct horse battery staple', schoolId, role: 'teacher', teacherId })
  const teacherToken = (await login(app, username)).accessToken
  const refused = await send('mutation { createTeacher(input: { fullName: "Nope" }) { id } }', {}, teacherToken)
  t.match(refused.body.errors?.[0], { extensions: { code: 'FORBIDDEN' }, message: /Mutation.createTeacher needs the scope roster-core.createput/ })

  const reader = await clientToken(app, await seedClient(schoolId, ['roster.readonly']))
  const readOnly = await send('mutation { deleteClassroom(classroom: { name: "x" }) { id } }', {}, reader)
  t.match(readOnly.body.errors?.[0], { extensions: { code: 'FORBIDDEN' }, message: /Mutation.deleteClassroom needs the scope roster.delete/ })

  const core = await clientToken(app, await seedClient(schoolId, ['roster.readonly', 'roster-core.createput']))
  const made = ok(await send('mutation { createStudent(input: { fullName: "By Client", sourcedId: "cli-1" }) { id version } }', {}, core)).createStudent
  t.equal(made.version, 1, 'a client with roster-core.createput creates')
  const email = await send('mutation { createStudent(input: { fullName: "Mail", email: "m@example.org" }) { id } }', {}, core)
  t.match(email.body.errors?.[0], { extensions: { code: 'FORBIDDEN' }, message: /input.email needs the scope roster.createput/ })
  const coreOnly = await clientToken(app, await seedClient(schoolId, ['roster-core.readonly', 'roster.createput']))
  const unreadable = await send('mutation { createStudent(input: { fullName: "Mail", email: "m@example.org" }) { id } }', {}, coreOnly)
  t.match(unreadable.body.errors?.[0], { extensions: { code: 'FORBIDDEN' }, message: /input.email needs the scope roster.readonly/, }, 'a client writes only what it may read')
  const written = ok(await send('mutation { createStudent(input: { fullName: "Core Only", sourcedId: "core-1" }) { id sourcedId } }', {}, coreOnly)).createStudent
  t.equal(written.sourcedId, 'core-1', 'a client with limited read scopes writes through its narrowed school client')
  const deleter = await clientToken(app, await seedClient(schoolId, ['roster.delete']))
  t.same(ok(await send('mutation ($id: ID!) { deleteStudent(student: { id: $id }) { recordType } }', { id: made.id }, deleter)).deleteStudent, { recordType: 'STUDENT' })
})

t.test('idempotency keys: the first answer again, per caller; a refused mutation keeps none; expired keys are pruned', async (t) => {
  const CREATE = 'mutation ($input: StudentInput!, $key: String) { createStudent(input: $input, idempotencyKey: $key) { id fullName } }'
  const first = ok(await send(CREATE, { input: { fullName: 'Once', sourcedId: 'once-1' }, key: 'key-1' })).createStudent
  const again = ok(await send(CREATE, { input: { fullName: 'Once', sourcedId: 'once-1' }, key: 'key-1' })).createStudent
  t.same(again, first, 'the same answer, nothing created again (a second create would be a CONFLICT)')
  const reused = await send(CREATE, { input: { fullName: 'Twice', sourcedId: 'once-2' }, key: 'key-1' })
  t.equal(reused.body.errors?.[0]?.extensions?.code, 'IDEMPOTENCY_KEY_REUSED')
  const theirs = ok(await send(CREATE, { input: { fullName: 'Once', sourcedId: 'once-1' }, key: 'key-1' }, otherToken)).createStudent
  t.not(theirs.id, first.id, 'keys are per caller: another caller\'s key-1 is its own')

  const header = await app.inject({ method: 'POST', url: '/', headers: { authorization: `Bearer ${token}`, 'idempotency-key': '"key-2"' }, payload: { query: CREATE, variables: { input: { fullName: 'Header' }, key: 'other' } } })
  t.equal(header.json().errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', 'the header and the argument must agree')
  const bad = await send(CREATE, { input: { fullName: 'Bad key' }, key: 'with space' })
  t.equal(bad.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', 'a key is printable ASCII without spaces')

  const refused = await send(CREATE, { input: { fullName: 'Refused', classroom: { name: 'No Room Yet' } }, key: 'key-3' })
  t.equal(refused.body.errors?.[0]?.extensions?.code, 'NOT_FOUND')
  ok(await send('mutation { createClassroom(input: { name: "No Room Yet" }) { id } }'))
  const retried = ok(await send(CREATE, { input: { fullName: 'Refused', classroom: { name: 'No Room Yet' } }, key: 'key-3' })).createStudent
  t.equal(retried.fullName, 'Refused', 'a refused mutation keeps no answer: the retry runs it')

  const db = await testDatabase()
  const kept = await db.prisma.idempotencyKey.count({ where: { key: 'key-1' } })
  t.equal(kept, 2, 'one key-1 per caller')
  await db.prisma.idempotencyKey.updateMany({ where: { key: { in: ['key-1', 'key-3'] } }, data: { createdAt: new Date(Date.now() - 25 * 3600_000) } })
  ok(await send(CREATE, { input: { fullName: 'Prunes' }, key: 'key-4' }))
  t.same((await db.prisma.idempotencyKey.findMany({ where: { key: { in: ['key-1', 'key-3', 'key-4'] } }, select: { key: true } })).map((k) => k.key).sort(), ['key-1', 'key-4'],
    'the caller\'s next key pruned its keys older than 24 hours (the other caller\'s stay until its next)')
})

t.test('bulk upsert by sourcedId: per item created, changed or unchanged, in order; all or nothing; at most 1,000', async (t) => {
  const UPSERT = 'mutation ($items: [StudentUpsert!]!) { upsertStudents(items: $items) { created changed unchanged items { sourcedId id outcome version } } }'
  const items = [
    { sourcedId: 'up-1', fullName: 'Up One', gradeLevel: 'GRADE_1' },
    { sourcedId: 'up-2', fullName: 'Up Two', gradeLevel: 'GRADE_1', dateOfBirth: '2016-02-29' },
    { sourcedId: 'up-3', fullName: 'Up Three' }
  ]
  const first = ok(await send(UPSERT, { items })).upsertStudents
  t.match(first, { created: 3, changed: 0, unchanged: 0 })
  t.same(first.items.map((i: { sourcedId: string, outcome: string, version: number }) => [i.sourcedId, i.outcome, i.version]), [['up-1', 'CREATED', 1], ['up-2', 'CREATED', 1], ['up-3', 'CREATED', 1]])
  const again = ok(await send(UPSERT, { items })).upsertStudents
  t.match(again, { created: 0, changed: 0, unchanged: 3 }, 'the same batch again writes nothing')
  t.same(again.items.map((i: { id: string }) => i.id), first.items.map((i: { id: string }) => i.id))
  const changed = ok(await send(UPSERT, {
    items: [{ ...items[2], preferredName: 'Three' }, { ...items[0], gradeLevel: 'GRADE_2' }, { ...items[1], gradeLevel: 'GRADE_2' }, { sourcedId: 'up-4', givenName: 'Up', familyName: 'Four' }]
  })).upsertStudents
  t.same(changed.items.map((i: { sourcedId: string, outcome: string, version: number }) => [i.sourcedId, i.outcome, i.version]),
    [['up-3', 'CHANGED', 2], ['up-1', 'CHANGED', 2], ['up-2', 'CHANGED', 2], ['up-4', 'CREATED', 1]], 'in the order given')
  const read = ok(await send('{ students(filter: { search: "Up " }, limit: 10) { sourcedId fullName gradeLevel preferredName dateOfBirth } }')).students
  t.same(read.map((s: { sourcedId: string, gradeLevel: string | null }) => [s.sourcedId, s.gradeLevel]).sort(), [['up-1', 'GRADE_2'], ['up-2', 'GRADE_2'], ['up-3', null], ['up-4', null]])

  const bad = await send(UPSERT, { items: [{ sourcedId: 'up-5', fullName: 'Five' }, { sourcedId: 'up-5', fullName: 'Five again' }, { sourcedId: 'up-6' }] })
  t.equal(bad.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT')
  t.same((bad.body.errors?.[0]?.extensions?.invalid as Array<{ path: unknown[] }>).map((f) => f.path), [['items', 1, 'sourcedId']], 'a sourcedId twice')
  const nameless = await send(UPSERT, { items: [{ sourcedId: 'up-7', fullName: 'Seven' }, { sourcedId: 'up-8' }] })
  t.same((nameless.body.errors?.[0]?.extensions?.invalid as Array<{ path: unknown[] }>).map((f) => f.path), [['items', 1]], 'a new student needs a name')
  t.same(ok(await send('{ students(filter: { search: "Seven" }) { id } }')).students, [], 'all or nothing: the valid item is not written either')
  const tooMany = await send(UPSERT, { items: Array.from({ length: 1001 }, (_, i) => ({ sourcedId: `many-${i}`, fullName: 'Many' })) })
  t.equal(tooMany.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', 'at most 1,000 items')
})
