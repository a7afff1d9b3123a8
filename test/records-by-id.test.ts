import t from 'tap'
import { createTeacher } from '../src/records/teachers.js'
import { createClassroomAssignment } from './fixtures.js'
import { build, gql, login, seedSchool, testDatabase } from './helper.js'

const MISSING = '00000000-0000-4000-8000-000000000000'

async function school () {
  const app = await build(t)
  const db = await testDatabase()
  const seeded = await seedSchool('Records School', [['Zoe Young', 'Room B'], ['Adam Able', 'Room B'], ['Mia Middle', 'Room A']])
  const teacherId = await createTeacher(db, { schoolId: seeded.schoolId, fullName: 'Teacher Only' })
  await createClassroomAssignment(db, seeded.schoolId, teacherId, 'Room B')
  const { accessToken } = await login(app, seeded.username)
  return { app, seeded, teacherId, token: accessToken }
}

t.test('student, teacher and classroom by id, with their relations', async (t) => {
  const { app, seeded, teacherId, token } = await school()
  const [zoe] = seeded.studentIds
  const student = await gql(app, 'query ($id: ID!) { student(id: $id) { id fullName classroomName classroom { id name } } }', { token, variables: { id: zoe } })
  t.equal(student.body.data!.student.fullName, 'Zoe Young')
  t.equal(student.body.data!.student.classroomName, 'Room B')
  const roomId = student.body.data!.student.classroom.id as string

  const room = await gql(app, 'query ($id: ID!) { classroom(id: $id) { name students { fullName } teachers { id fullName } } }', { token, variables: { id: roomId } })
  t.same(room.body, {
    data: {
      classroom: {
        name: 'Room B',
        students: [{ fullName: 'Adam Able' }, { fullName: 'Zoe Young' }],
        teachers: [{ id: teacherId, fullName: 'Teacher Only' }]
      }
    }
  })

  const teacher = await gql(app, 'query ($id: ID!) { teacher(id: $id) { fullName classrooms { name } } }', { token, variables: { id: teacherId } })
  t.same(teacher.body, { data: { teacher: { fullName: 'Teacher Only', classrooms: [{ name: 'Room B' }] } } })

  const rooms = await gql(app, '{ classrooms { name students { fullName } } }', { token })
  t.same(rooms.body.data!.classrooms, [
    { name: 'Room A', students: [{ fullName: 'Mia Middle' }] },
    { name: 'Room B', students: [{ fullName: 'Adam Able' }, { fullName: 'Zoe Young' }] }
  ])
  const one = await gql(app, '{ classrooms(limit: 1) { name } }', { token })
  t.same(one.body.data!.classrooms, [{ name: 'Room A' }])
})

t.test('an unknown id is null; an id that is not a UUID is BAD_USER_INPUT', async (t) => {
  const { app, token } = await school()
  for (const field of ['student', 'teacher', 'classroom']) {
    const missing = await gql(app, `query ($id: ID!) { ${field}(id: $id) { id } }`, { token, variables: { id: MISSING } })
    t.same(missing.body, { data: { [field]: null } }, `${field} of an unknown id`)
    const bad = await gql(app, `query ($id: ID!) { ${field}(id: $id) { id } }`, { token, variables: { id: 'not-a-uuid' } })
    t.equal(bad.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', `${field} of a malformed id`)
    t.match(bad.body.errors?.[0]?.message, /must be a UUID/)
  }
})
