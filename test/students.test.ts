import t from 'tap'
import { createStudent } from '../src/records/students.js'
import { build, gql, login, seedSchool, testDatabase } from './helper.js'

t.test('students returns the selected fields of the caller\'s students, at most `limit`', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Maple Elementary', [
    ['Ada Lovelace', 'Room 1'], ['Alan Turing', 'Room 2'], ['Grace Hopper'], ['Edsger Dijkstra', 'Room 1']
  ])
  const { accessToken } = await login(app, school.username)

  const all = await gql(app, '{ students(limit: 10) { id fullName classroomName } }', { token: accessToken })
  t.equal(all.statusCode, 200)
  t.same(all.body, {
    data: {
      students: [
        { id: school.studentIds[0], fullName: 'Ada Lovelace', classroomName: 'Room 1' },
        { id: school.studentIds[1], fullName: 'Alan Turing', classroomName: 'Room 2' },
        { id: school.studentIds[2], fullName: 'Grace Hopper', classroomName: null },
        { id: school.studentIds[3], fullName: 'Edsger Dijkstra', classroomName: 'Room 1' }
      ]
    }
  }, 'in creation order, with classroom names')

  const two = await gql(app, '{ students(limit: 2) { fullName } }', { token: accessToken })
  t.same(two.body.data!.students, [{ fullName: 'Ada Lovelace' }, { fullName: 'Alan Turing' }])

  const none = await gql(app, '{ students(limit: 0) { id } }', { token: accessToken })
  t.same(none.body.data!.students, [])

  const nested = await gql(app, '{ students(limit: 1) { classroom { name } } }', { token: accessToken })
  t.same(nested.body.data!.students, [{ classroom: { name: 'Room 1' } }])
})

t.test('students without limit returns at most the default page of 100', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Big School', Array.from({ length: 103 }, (_, i) => [`Student ${i}`] as [string]))
  const { accessToken } = await login(app, school.username)
  const res = await gql(app, '{ students { id } }', { token: accessToken })
  t.equal(res.body.data!.students.length, 100)
  const max = await gql(app, '{ students(limit: 1000) { id } }', { token: accessToken })
  t.equal(max.body.data!.students.length, 103)
})

t.test('a limit below 0 or above 1000 is refused with BAD_USER_INPUT', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Limit School', [['Only Student']])
  const { accessToken } = await login(app, school.username)
  for (const limit of [-1, 1001]) {
    const res = await gql(app, 'query($limit: Int) { students(limit: $limit) { id } }', { token: accessToken, variables: { limit } })
    t.equal(res.statusCode, 200)
    t.equal(res.body.errors![0]!.extensions!.code, 'BAD_USER_INPUT')
    t.match(res.body.errors![0]!.message, /limit must be between 0 and 1000/)
    t.same(res.body.errors![0]!.path, ['students'])
  }
})

t.test('students without an access token is UNAUTHENTICATED at path students', async (t) => {
  const app = await build(t)
  const res = await gql(app, '{ students(limit: 1) { id fullName classroomName } }')
  t.equal(res.statusCode, 200)
  t.equal(res.body.data, null)
  t.equal(res.body.errors!.length, 1)
  t.equal(res.body.errors![0]!.extensions!.code, 'UNAUTHENTICATED')
  t.same(res.body.errors![0]!.path, ['students'])
  t.same(res.body.errors![0]!.locations, [{ line: 1, column: 3 }])
  t.match(res.body.errors![0]!.message, /Authentication required/)
})

t.test('two schools never see each other\'s students, teachers or school', async (t) => {
  const app = await build(t)
  // Mirrored data: same names in both schools, so only the ids tell them apart.
  const a = await seedSchool('Twin School', [['Sam Same', 'Room A'], ['Pat Same', 'Room A']])
  const b = await seedSchool('Twin School', [['Sam Same', 'Room A'], ['Pat Same', 'Room A']])
  const tokenA = (await login(app, a.username)).accessToken
  const tokenB = (await login(app, b.username)).accessToken
  const query = '{ school { id } students(limit: 1000) { id } }'
  const resA = await gql(app, query, { token: tokenA })
  const resB = await gql(app, query, { token: tokenB })
  t.same(resA.body.data!.school.id, a.schoolId)
  t.same(resB.body.data!.school.id, b.schoolId)
  t.same(resA.body.data!.students.map((s: { id: string }) => s.id).sort(), [...a.studentIds].sort())
  t.same(resB.body.data!.students.map((s: { id: string }) => s.id).sort(), [...b.studentIds].sort())
})

t.test('a student\'s full record: names, number, dates, grade level, status, timestamps', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const school = await seedSchool('Record School')
  const id = await createStudent(db, {
    schoolId: school.schoolId,
    givenName: 'Ada',
    familyName: 'Lovelace',
    preferredName: 'Addie',
    studentNumber: 'S-0001',
    sourcedId: 'sis-ada',
    email: 'ada@example.org',
    dateOfBirth: '2015-12-10',
    gradeLevel: 'KG',
    status: 'inactive',
    enrollmentStartDate: '2021-09-01',
    enrollmentEndDate: '2026-06-30',
    classroom: 'Room K'
  })
  const split = await createStudent(db, { schoolId: school.schoolId, fullName: '  Ludwig van Beethoven ' })
  const { accessToken } = await login(app, school.username)
  const res = await gql(app, `query ($id: ID!) { student(id: $id) {
    id sourcedId fullName givenName familyName preferredName studentNumber email dateOfBirth gradeLevel status
    enrollmentStartDate enrollmentEndDate classroomName classroom { name gradeLevel } createdAt updatedAt } }`, { token: accessToken, variables: { id } })
  const student = res.body.data!.student
  t.match(student, {
    id,
    sourcedId: 'sis-ada',
    fullName: 'Ada Lovelace',
    givenName: 'Ada',
    familyName: 'Lovelace',
    preferredName: 'Addie',
    studentNumber: 'S-0001',
    email: 'ada@example.org',
    dateOfBirth: '2015-12-10',
    gradeLevel: 'KINDERGARTEN',
    status: 'INACTIVE',
    enrollmentStartDate: '2021-09-01',
    enrollmentEndDate: '2026-06-30',
    classroomName: 'Room K',
    classroom: { name: 'Room K', gradeLevel: null }
  }, 'the full name is derived from the given and family names; OneRoster KG is KINDERGARTEN')
  t.match(student.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
  t.equal(student.createdAt, student.updatedAt)

  const derived = await gql(app, 'query ($id: ID!) { student(id: $id) { fullName givenName familyName status gradeLevel } }', { token: accessToken, variables: { id: split } })
  t.same(derived.body.data!.student, { fullName: 'Ludwig van Beethoven', givenName: 'Ludwig van', familyName: 'Beethoven', status: 'ACTIVE', gradeLevel: null },
    'from a full name alone: the last word is the family name')

  // A change of the names renews a derived full name.
  await db.forSchool(school.schoolId).student.updateMany({ where: { id }, data: { givenName: 'Augusta Ada' } })
  const renamed = await gql(app, 'query ($id: ID!) { student(id: $id) { fullName updatedAt } }', { token: accessToken, variables: { id } })
  t.equal(renamed.body.data!.student.fullName, 'Augusta Ada Lovelace')
})

t.test('creating a student refuses bad enums, dates, emails and a taken student number, saying why', async (t) => {
  const db = await testDatabase()
  const school = await seedSchool('Validation School')
  await createStudent(db, { schoolId: school.schoolId, fullName: 'First One', studentNumber: 'N-1' })
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ gradeLevel: 'GRADE_14' }, /Grade level must be one of PRE_KINDERGARTEN, KINDERGARTEN, GRADE_1.*or a OneRoster code/],
    [{ status: 'EXPELLED' }, /Status must be one of ACTIVE, INACTIVE, GRADUATED, TRANSFERRED, WITHDRAWN/],
    [{ dateOfBirth: '2015-02-30' }, /Date of birth must be a day as YYYY-MM-DD/],
    [{ enrollmentStartDate: '01/09/2021' }, /Enrollment start date must be a day as YYYY-MM-DD/],
    [{ enrollmentStartDate: '2022-01-01', enrollmentEndDate: '2021-01-01' }, /end date must not be before the start date/],
    [{ email: 'not an email' }, /is not an email address/],
    [{ studentNumber: 'N-1' }, /is taken in this school/]
  ]
  for (const [fields, message] of cases) {
    await t.rejects(createStudent(db, { schoolId: school.schoolId, fullName: 'Someone', ...fields }), { name: 'AdminError', message }, JSON.stringify(fields))
  }
  await t.rejects(createStudent(db, { schoolId: school.schoolId }), { name: 'AdminError', message: /A full name, or a given or family name, is required/ })
  const other = await seedSchool('Other Validation School')
  t.ok(await createStudent(db, { schoolId: other.schoolId, fullName: 'Same Number', studentNumber: 'N-1' }), 'student numbers are unique per school only')
})
