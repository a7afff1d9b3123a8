// A change of a user's role (or of the teacher record a teacher is) is an access change: every API
// node refuses the access tokens issued before, within a second, as for a moved user. Two real API
// processes on one database; the change is a write to users (as `school-data user role` makes it).
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { createClassroomAssignment } from './fixtures.js'
import { post, productionNodes, refusedEverywhere, type Node } from './fixtures/api-nodes.js'
import { createTestDatabase, LOGIN, PASSWORD, serverUrl } from './helper.js'

const STUDENTS = '{ students(limit: 100) { fullName } }'

async function loginAt (node: Node, username: string): Promise<string> {
  const res = await post(node, LOGIN, { username, password: PASSWORD })
  const token = res.body.data?.login?.accessToken as string | undefined
  if (token === undefined) throw new Error(`no token: ${JSON.stringify(res.body)}`)
  return token
}

const skip = serverUrl === undefined ? 'several API processes share a PostgreSQL server (set TEST_DATABASE_URL)' : false

t.test('two API nodes refuse the tokens of a user whose role changed within a second', { skip }, async (t) => {
  const db = await createTestDatabase()
  const nodes = await productionNodes(t, 'url' in db.migrationTarget ? db.migrationTarget.url : '')

  const schoolId = await createSchool(db, 'Role Change School')
  await createStudent(db, { schoolId, fullName: 'Ann Inclass', classroom: 'Room A' })
  await createStudent(db, { schoolId, fullName: 'Bob Elsewhere', classroom: 'Room B' })
  const teacherA = await createTeacher(db, { schoolId, fullName: 'Teacher A' })
  const teacherB = await createTeacher(db, { schoolId, fullName: 'Teacher B' })
  await createClassroomAssignment(db, schoolId, teacherA, 'Room A')
  await createClassroomAssignment(db, schoolId, teacherB, 'Room B')
  await createUser(db, { username: 'demoted', password: PASSWORD, schoolId })
  await createUser(db, { username: 'bystander', password: PASSWORD, schoolId })

  const before = await loginAt(nodes[0]!, 'demoted')
  const bystander = await loginAt(nodes[1]!, 'bystander')
  for (const node of nodes) {
    t.equal((await post(node, STUDENTS, {}, before)).body.data?.students.length, 2, `control: node ${node.port} answers the administrator`)
  }

  // An administrator becomes Teacher A.
  await db.prisma.user.update({ where: { username: 'demoted' }, data: { role: 'TEACHER', teacherId: teacherA } })
  const demoted = Date.now()
  const after = await refusedEverywhere(t, nodes, STUDENTS, before, demoted, 'the token issued before')
  t.ok(Math.max(...after) < 1000, `every node refused the administrator's token within a second (${after.join(', ')} ms)`)
  t.equal((await post(nodes[1]!, STUDENTS, {}, bystander)).body.data?.students.length, 2, 'another user of the school is untouched')
  const asTeacherA = await loginAt(nodes[1]!, 'demoted')
  t.same((await post(nodes[0]!, STUDENTS, {}, asTeacherA)).body.data?.students, [{ fullName: 'Ann Inclass' }], 'logged in again: Teacher A\'s reach')

  // The teacher record changes: A's token goes too.
  await db.prisma.user.update({ where: { username: 'demoted' }, data: { teacherId: teacherB } })
  const moved = await refusedEverywhere(t, nodes, STUDENTS, asTeacherA, Date.now(), 'the token issued before')
  t.ok(Math.max(...moved) < 1000, `a new teacher record: every node refused the token within a second (${moved.join(', ')} ms)`)
  const asTeacherB = await loginAt(nodes[0]!, 'demoted')
  t.same((await post(nodes[1]!, STUDENTS, {}, asTeacherB)).body.data?.students, [{ fullName: 'Bob Elsewhere' }], 'logged in again: Teacher B\'s reach')
})
