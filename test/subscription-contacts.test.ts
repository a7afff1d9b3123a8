// A teacher's subscription over WebSocket that selects a student's contacts is refused before it
// runs, with the FORBIDDEN error the HTTP endpoint answers a teacher's query with (each field as
// needing `school`: TEACHER_UNREACHABLE, src/graphql/scope-check.ts; test/graphql-contacts.test.ts
// for HTTP), whether the contacts are selected directly, in a fragment or in an inline fragment;
// the same teacher's subscription without contacts is accepted and pushed her student, and an
// administrator's subscription selecting contacts is accepted and pushed the student's contacts.
import t from 'tap'
import { createUser } from '../src/admin/users.js'
import { createSchool } from '../src/admin/schools.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { createClassroomAssignment } from './fixtures.js'
import { serve, Subscriber, wsClient } from './fixtures/subscriptions.js'
import { gql, login, PASSWORD, testDatabase, unique } from './helper.js'

t.test("a teacher's subscription selecting contacts is refused with FORBIDDEN (needs school); without them, and an administrator's, are pushed", async (t) => {
  const { app, url } = await serve(t)
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Subscription Contacts School'))
  const teacherId = await createTeacher(db, { schoolId, fullName: 'Mia Teacher' })
  await createClassroomAssignment(db, schoolId, teacherId, 'Room 1')
  const ada = await createStudent(db, { schoolId, fullName: 'Ada One', sourcedId: 's-1', classroom: 'Room 1' })
  await db.forSchool(schoolId).agent.create({
    data: { schoolId, sourcedId: 'g-1', role: 'guardian', givenName: 'Gia', familyName: 'Zed', studentIds: [ada] }
  })
  const adminName = unique('sub-contacts-admin')
  await createUser(db, { username: adminName, password: PASSWORD, schoolId })
  const teacherName = unique('sub-contacts-teacher')
  await createUser(db, { username: teacherName, password: PASSWORD, schoolId, role: 'teacher', teacherId })
  const admin = (await login(app, adminName)).accessToken
  const teacher = (await login(app, teacherName)).accessToken

  // Each caller's feed from just before an update of Ada: a subscription accepted from that cursor
  // is pushed the update at once, so a refusal that let the subscription through would show as a
  // push (and fail below) rather than as a wait.
  const latest = async (token: string): Promise<string> => (await gql(app, '{ latestChangeCursor }', { token })).body.data!.latestChangeCursor as string
  const since = { admin: await latest(admin), teacher: await latest(teacher) }
  await db.forSchool(schoolId).student.updateMany({ where: { id: ada }, data: { email: 'ada@example.org' } })

  const teacherClient = wsClient(t, url, teacher)
  const refusals: Array<[name: string, query: string]> = [
    ['selected directly', 'subscription ($since: String) { changes(since: $since) { id student { contacts { id } } } }'],
    ['in a fragment', 'subscription ($since: String) { changes(since: $since) { id student { ...withContacts } } } fragment withContacts on Student { contacts { givenName } }'],
    ['in an inline fragment, aliased', 'subscription ($since: String) { changes(since: $since) { id ... on Change { student { guardians: contacts { id } } } } }']
  ]
  for (const [name, query] of refusals) {
    const refused = new Subscriber(teacherClient, query, { since: since.teacher })
    await refused.until(() => refused.ended !== undefined || refused.pushed.length > 0)
    t.same(refused.pushed, [], `${name}: nothing pushed`)
    t.equal(refused.ended, 'error', `${name}: the subscription ends with an error`)
    t.equal(refused.errors.length, 1, name)
    t.match(refused.errors, [{
      message: /a teacher reads no contact/,
      extensions: { code: 'FORBIDDEN', fields: [{ field: 'Student.contacts', needs: 'school' }] }
    }], `${name}: FORBIDDEN, Student.contacts needing school, as over HTTP`)
  }

  const accepted = new Subscriber(teacherClient, 'subscription ($since: String) { changes(since: $since) { type id student { sourcedId fullName } } }', { since: since.teacher })
  await accepted.until(() => accepted.ended !== undefined || accepted.pushed.some((change) => change.id === ada))
  t.same(accepted.errors, [], "the teacher's subscription without contacts is accepted")
  t.same(accepted.pushed, [{ type: 'UPDATED', id: ada, student: { sourcedId: 's-1', fullName: 'Ada One' } }], 'and pushed her student')
  accepted.stop()

  const withContacts = new Subscriber(wsClient(t, url, admin), 'subscription ($since: String) { changes(since: $since) { type id student { sourcedId contacts { sourcedId givenName } } } }', { since: since.admin })
  await withContacts.until(() => withContacts.ended !== undefined || withContacts.pushed.some((change) => change.id === ada))
  t.same(withContacts.errors, [], "an administrator's subscription selecting contacts is accepted")
  t.same(withContacts.pushed, [{ type: 'UPDATED', id: ada, student: { sourcedId: 's-1', contacts: [{ sourcedId: 'g-1', givenName: 'Gia' }] } }], "and pushed the student's contacts")
  withContacts.stop()
})
