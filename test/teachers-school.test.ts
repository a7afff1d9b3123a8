import t from 'tap'
import { createClassroomAssignment } from './fixtures.js'
import { build, gql, login, PASSWORD, seedSchool, testDatabase, unique } from './helper.js'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { createTeacher } from '../src/records/teachers.js'

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

t.test('school shows its time zone and address; a bad time zone or country is refused', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const schoolId = await createSchool(db, 'Lake School', {
    timeZone: 'America/Chicago', addressLine1: '1 Lake Road', city: 'Chicago', region: 'IL', postalCode: '60601', country: 'us', phone: '+1 312 555 0100', website: 'https://lake.example.org'
  })
  const username = unique('lake')
  await createUser(db, { username, password: PASSWORD, schoolId })
  const { accessToken } = await login(app, username)
  const res = await gql(app, '{ school { name timeZone addressLine1 addressLine2 city region postalCode country phone website } }', { token: accessToken })
  t.same(res.body.data!.school, {
    name: 'Lake School', timeZone: 'America/Chicago', addressLine1: '1 Lake Road', addressLine2: null, city: 'Chicago', region: 'IL', postalCode: '60601', country: 'US', phone: '+1 312 555 0100', website: 'https://lake.example.org'
  })
  const plain = await seedSchool('Plain School')
  const { accessToken: plainToken } = await login(app, plain.username)
  t.equal((await gql(app, '{ school { timeZone } }', { token: plainToken })).body.data!.school.timeZone, 'UTC', 'UTC by default')
  await t.rejects(createSchool(db, 'Bad Zone', { timeZone: 'Mars/Olympus' }), { name: 'AdminError', message: /not an IANA time zone/ })
  await t.rejects(createSchool(db, 'Bad Country', { country: 'USA' }), { name: 'AdminError', message: /ISO 3166-1 alpha-2/ })
})

t.test('a teacher\'s record with the role in each classroom, both ways', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const school = await seedSchool('Roles School')
  const id = await createTeacher(db, {
    schoolId: school.schoolId, givenName: 'Grace', familyName: 'Hopper', email: 'grace@example.org', title: 'Head of Science', status: 'INACTIVE', sourcedId: 'sis-grace'
  })
  await createClassroomAssignment(db, school.schoolId, id, 'Room B', 'ASSISTANT')
  await createClassroomAssignment(db, school.schoolId, id, 'Room A')
  const { accessToken } = await login(app, school.username)
  const res = await gql(app, `query ($id: ID!) { teacher(id: $id) {
    fullName givenName familyName preferredName email title status sourcedId
    classrooms { name }
    classroomAssignments { role classroom { name } teacher { id } }
  } }`, { token: accessToken, variables: { id } })
  t.same(res.body.data!.teacher, {
    fullName: 'Grace Hopper',
    givenName: 'Grace',
    familyName: 'Hopper',
    preferredName: null,
    email: 'grace@example.org',
    title: 'Head of Science',
    status: 'INACTIVE',
    sourcedId: 'sis-grace',
    classrooms: [{ name: 'Room A' }, { name: 'Room B' }],
    classroomAssignments: [
      { role: 'PRIMARY', classroom: { name: 'Room A' }, teacher: { id } },
      { role: 'ASSISTANT', classroom: { name: 'Room B' }, teacher: { id } }
    ]
  })
  const rooms = await gql(app, '{ classrooms { name teachers { email } teacherAssignments { role teacher { title } } } }', { token: accessToken })
  t.same(rooms.body.data!.classrooms, [
    { name: 'Room A', teachers: [{ email: 'grace@example.org' }], teacherAssignments: [{ role: 'PRIMARY', teacher: { title: 'Head of Science' } }] },
    { name: 'Room B', teachers: [{ email: 'grace@example.org' }], teacherAssignments: [{ role: 'ASSISTANT', teacher: { title: 'Head of Science' } }] }
  ], 'nested records carry all their fields')
  await t.rejects(createTeacher(db, { schoolId: school.schoolId, fullName: 'X', status: 'RETIRED' }), { name: 'AdminError', message: /Status must be one of ACTIVE, INACTIVE/ })
})
