import t from 'tap'
import { createClassroomAssignment } from './fixtures.js'
import { build, gql, login, seedSchool, testDatabase } from './helper.js'
import { createTeacher } from '../src/admin/records.js'

t.test('school returns the caller\'s school', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Oak High')
  const { accessToken } = await login(app, school.username)
  const res = await gql(app, '{ school { id name } }', { token: accessToken })
  t.same(res.body, { data: { school: { id: school.schoolId, name: 'Oak High' } } })
})

t.test('teachers returns the caller\'s teachers with their classrooms, batched, at most `limit`', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const school = await seedSchool('Teacher School', [['Student One', 'Room 1'], ['Student Two', 'Room 2']])
  const other = await seedSchool('Other Teacher School', [['Elsewhere', 'Room 1']])
  const ids = [
    await createTeacher(db, { schoolId: school.schoolId, fullName: 'Teacher Alpha' }),
    await createTeacher(db, { schoolId: school.schoolId, fullName: 'Teacher Beta' }),
    await createTeacher(db, { schoolId: school.schoolId, fullName: 'Teacher Gamma' })
  ]
  await createTeacher(db, { schoolId: other.schoolId, fullName: 'Teacher Elsewhere' })
  await createClassroomAssignment(db, school.schoolId, ids[0]!, 'Room 2')
  await createClassroomAssignment(db, school.schoolId, ids[0]!, 'Room 1')
  await createClassroomAssignment(db, school.schoolId, ids[1]!, 'Room 1')
  const { accessToken } = await login(app, school.username)

  const res = await gql(app, '{ teachers(limit: 10) { id fullName classrooms { name } } }', { token: accessToken })
  t.same(res.body, {
    data: {
      teachers: [
        { id: ids[0], fullName: 'Teacher Alpha', classrooms: [{ name: 'Room 1' }, { name: 'Room 2' }] },
        { id: ids[1], fullName: 'Teacher Beta', classrooms: [{ name: 'Room 1' }] },
        { id: ids[2], fullName: 'Teacher Gamma', classrooms: [] }
      ]
    }
  })
  const two = await gql(app, '{ teachers(limit: 2) { fullName } }', { token: accessToken })
  t.same(two.body.data!.teachers, [{ fullName: 'Teacher Alpha' }, { fullName: 'Teacher Beta' }])
})
