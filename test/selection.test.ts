// Only what a query selects is read: the Prisma select built from a GraphQL selection, and the
// select the students list hands to the school's client for the spec's own query.
import t from 'tap'
import type { TenantDb } from '../src/db/tenant.js'
import { mergeSelect } from '../src/graphql/selection.js'
import { build, gql, login, seedSchool } from './helper.js'

t.test('mergeSelect: a relation read whole stays whole; partial selects of one relation add up', async (t) => {
  const whole = { classroom: true }
  const name = { classroom: { select: { name: true } } }
  t.same(mergeSelect(mergeSelect({ id: true }, name), whole), { id: true, classroom: true }, 'whole after partial')
  t.same(mergeSelect(mergeSelect({ id: true }, whole), name), { id: true, classroom: true }, 'partial after whole')
  t.same(
    mergeSelect(mergeSelect({}, name), { classroom: { select: { id: true } } }),
    { classroom: { select: { name: true, id: true } } },
    'two partial selects'
  )
  t.same(mergeSelect({ id: true }, { fullName: true }), { id: true, fullName: true }, 'columns')
})

t.test("students reads only the classroom's name for classroomName, and the whole classroom for classroom", async (t) => {
  const app = await build(t)
  const school = await seedSchool('Selection Elementary', [['Ada Lovelace', 'Room 1'], ['Grace Hopper']])
  const { accessToken } = await login(app, school.username)

  // Every findMany of a student list through the school's client, as the resolver asked for it.
  const selects: unknown[] = []
  const db = app.db as { forSchool: (schoolId: string) => TenantDb }
  const forSchool = db.forSchool
  t.teardown(() => { db.forSchool = forSchool })
  db.forSchool = (schoolId) => forSchool(schoolId).$extends({
    query: {
      student: {
        findMany ({ args, query }) {
          selects.push(args.select)
          return query(args)
        }
      }
    }
  }) as unknown as TenantDb

  const flat = await gql(app, '{ students(limit: 10) { id fullName classroomName } }', { token: accessToken })
  t.same(flat.body, {
    data: {
      students: [
        { id: school.studentIds[0], fullName: 'Ada Lovelace', classroomName: 'Room 1' },
        { id: school.studentIds[1], fullName: 'Grace Hopper', classroomName: null }
      ]
    }
  })
  t.same(selects.at(-1), { id: true, fullName: true, classroom: { select: { name: true } } }, 'the classroom name alone')

  // Both orders of the two fields: the whole classroom is read, and serves both.
  for (const query of [
    '{ students(limit: 1) { classroomName classroom { id name gradeLevel } } }',
    '{ students(limit: 1) { classroom { id name gradeLevel } classroomName } }'
  ]) {
    const both = await gql(app, query, { token: accessToken })
    t.equal(both.body.errors, undefined, query)
    const [student] = both.body.data!.students as Array<{ classroomName: string, classroom: { id: string, name: string } }>
    t.equal(student?.classroomName, 'Room 1', query)
    t.equal(student?.classroom.name, 'Room 1', query)
    t.match(student?.classroom.id, /^[0-9a-f-]{36}$/, query)
    t.same(selects.at(-1), { id: true, classroom: true }, `the whole classroom: ${query}`)
  }
})
