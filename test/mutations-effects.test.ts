// What a mutation does besides its write, as an import or a CLI write does: it counts in the access
// audit as a write; it drops the school's cached answers (the response cache on) and a teacher's
// kept classrooms, so the next read sees it; it enters the teacher's own feed; and mutations have a
// limit of their own, per caller.
import t from 'tap'
import { createUser } from '../src/admin/users.js'
import { createTeacher } from '../src/records/teachers.js'
import { build, gql, login, PASSWORD, seedSchool, testDatabase, unique, type GraphQLResponse } from './helper.js'
import { auditRows } from './fixtures/audit.js'

function ok (res: GraphQLResponse): Record<string, any> {
  if (res.body.errors !== undefined) throw new Error(JSON.stringify(res.body.errors))
  return res.body.data!
}

t.test('a mutation counts in the access audit as a write of its records', async (t) => {
  const app = await build(t, { auditFlushMs: 60_000 })
  const school = await seedSchool(unique('Audited Writes'))
  const { accessToken } = await login(app, school.username)
  ok(await gql(app, 'mutation Enrol { createStudent(input: { fullName: "Audited" }) { id } }', { token: accessToken }))
  ok(await gql(app, 'mutation Bulk { upsertStudents(items: [{ sourcedId: "a-1", fullName: "One" }, { sourcedId: "a-2", fullName: "Two" }]) { created } }', { token: accessToken }))
  await app.audit.flush()
  const rows = (await auditRows<{ operation: string, record_type: string, record_count: number, action: string }>(await testDatabase(), school.schoolId, 'operation, record_type, record_count, action')).filter((r) => r.action === 'write')
  t.same(rows.map((r) => [r.operation, r.record_type, Number(r.record_count)]), [['Enrol', 'Student', 1], ['Bulk', 'Student', 2]], 'each mutation\'s records, as written')
})

t.test('a mutation drops the cached answers of the school and the teachers\' kept classrooms: the next read sees it', async (t) => {
  const app = await build(t, { responseCacheTtl: 60 })
  const db = await testDatabase()
  const school = await seedSchool(unique('Cached Writes'), [['Cached Student', 'Room 1']])
  const { accessToken } = await login(app, school.username)
  const teacherId = await createTeacher(db, { schoolId: school.schoolId, fullName: 'Ms Cache' })
  const username = unique('teacher')
  await createUser(db, { username, password: PASSWORD, schoolId: school.schoolId, role: 'teacher', teacherId })
  const teacher = (await login(app, username)).accessToken
  const LIST = '{ students(limit: 100) { fullName } }'
  t.same(ok(await gql(app, LIST, { token: accessToken })).students, [{ fullName: 'Cached Student' }])
  t.same(ok(await gql(app, LIST, { token: teacher })).students, [], 'the teacher has no classroom yet')
  ok(await gql(app, 'mutation { changeStudent(student: { id: "' + school.studentIds[0]! + '" }, input: { fullName: "Renamed" }) { id } }', { token: accessToken }))
  ok(await gql(app, `mutation { assignTeacher(teacher: { id: "${teacherId}" }, classroom: { name: "Room 1" }) { role } }`, { token: accessToken }))
  let seen: unknown
  for (let i = 0; i < 100; i++) {
    seen = ok(await gql(app, LIST, { token: accessToken })).students
    if (JSON.stringify(seen) === JSON.stringify([{ fullName: 'Renamed' }])) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.same(seen, [{ fullName: 'Renamed' }], 'the cached list is dropped')
  // The bulk upsert writes through its own statements (src/db/typed-writes.ts): the same drop.
  ok(await gql(app, 'mutation { upsertStudents(items: [{ sourcedId: "cached-2", fullName: "Upserted" }]) { created } }', { token: accessToken }))
  for (let i = 0; i < 100; i++) {
    seen = ok(await gql(app, LIST, { token: accessToken })).students
    if (JSON.stringify(seen) === JSON.stringify([{ fullName: 'Renamed' }, { fullName: 'Upserted' }])) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.same(seen, [{ fullName: 'Renamed' }, { fullName: 'Upserted' }], 'the cached list is dropped after a bulk upsert too')
  t.same(ok(await gql(app, LIST, { token: teacher })).students, [{ fullName: 'Renamed' }], 'the teacher reads her new classroom at once')
  const feed = ok(await gql(app, '{ changes(limit: 100) { changes { type recordType } } }', { token: teacher })).changes.changes as Array<{ type: string, recordType: string }>
  t.ok(feed.some((c) => c.type === 'CREATED' && c.recordType === 'CLASSROOM'), 'the teacher\'s own feed has the classroom she was assigned')
})

t.test('mutations have a limit of their own, per caller, beside the requests\' limits', async (t) => {
  const app = await build(t, { rateLimitWritesPerMinute: 2 })
  const school = await seedSchool(unique('Limited Writes'))
  const { accessToken } = await login(app, school.username)
  const write = async (): Promise<GraphQLResponse> => await gql(app, 'mutation { createClassroom(input: { name: "' + unique('Room') + '" }) { id } }', { token: accessToken })
  ok(await write())
  ok(await write())
  const refused = await write()
  t.equal(refused.statusCode, 429)
  t.match(refused.body.errors?.[0], { extensions: { code: 'TOO_MANY_REQUESTS' }, message: /write limit of 2 mutations per minute/ })
  t.ok(ok(await gql(app, '{ classrooms { id } }', { token: accessToken })).classrooms.length === 2, 'reads are not counted on it; the refused write wrote nothing')
})
