import t from 'tap'
import { build, gql, login, seedSchool } from './helper.js'

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
