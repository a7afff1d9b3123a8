// Only what a query selects is read: the Prisma select built from a GraphQL selection, and the
// select the students list hands to the school's client for the spec's own query.
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { SchoolDb } from '../src/db/school-client.js'
import { mergeSelect } from '../src/graphql/selection.js'
import { createTeacher } from '../src/records/teachers.js'
import { createClassroomAssignment } from './fixtures.js'
import { build, gql, login, seedSchool, testDatabase } from './helper.js'

/**
 * The columns a typed statement (src/db/typed-reads.ts) reads, as the findMany `select` of the model
 * path that reads the same: a list's (Student), or a relation's for its parents (TeacherClassroom).
 */
function selectOfStatement (sql: string): { model: string, select: Record<string, unknown> } {
  const columns = [...sql.slice(0, sql.indexOf(' FROM ')).matchAll(/(\w+)\.(\w+)(?:::text)? AS "([^"]+)"/g)]
  const select: Record<string, unknown> = {}
  const below: Record<string, true> = {}
  let relation: string | undefined
  for (const [, table, column, alias] of columns) {
    if (alias === '$parent') {
      select[column!.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = true
      relation = table === 'tc' && sql.includes('JOIN teachers t') ? 'teacher' : 'classroom'
    } else if (alias!.startsWith('classroom.')) {
      below[alias!.slice('classroom.'.length)] = true
      relation = 'classroom'
    } else if (columns[0]![3] === '$parent') {
      below[alias!] = true
    } else {
      select[alias!] = true
    }
  }
  if (relation !== undefined) select[relation] = { select: below }
  return { model: columns[0]![3] === '$parent' ? 'TeacherClassroom' : 'Student', select }
}

/**
 * The `select` of every findMany of `model` the app's resolvers and loaders run through the school's
 * client, as they asked for it (before the tenant extension adds the school), or of the typed
 * statement they send instead, until the test ends.
 */
function spySelects (t: Test, app: FastifyInstance, model: 'Student' | 'TeacherClassroom'): unknown[] {
  const selects: unknown[] = []
  const db = app.db as { forSchool: (schoolId: string) => SchoolDb }
  const forSchool = db.forSchool
  t.teardown(() => { db.forSchool = forSchool })
  db.forSchool = (schoolId) => forSchool(schoolId).$extends({
    query: {
      $allModels: {
        findMany ({ model: name, args, query }) {
          if (name === model) selects.push(args.select)
          return query(args)
        }
      },
      $queryRawUnsafe ({ args, query }) {
        const read = selectOfStatement((args as unknown as [string])[0])
        if (read.model === model) selects.push(read.select)
        return query(args)
      }
    }
  })
  return selects
}

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

t.test("students reads only the classroom's name for classroomName, and the selected classroom columns for classroom", async (t) => {
  const app = await build(t)
  const school = await seedSchool('Selection Elementary', [['Ada Lovelace', 'Room 1'], ['Grace Hopper']])
  const { accessToken } = await login(app, school.username)

  const selects = spySelects(t, app, 'Student')

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

  // Both orders of the two fields: the classroom's selected columns and its name, serving both.
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
    t.same(selects.at(-1), { id: true, classroom: { select: { id: true, name: true, gradeLevel: true } } }, `the selected classroom columns: ${query}`)
  }
})

t.test("a classroom's teachers and a teacher's classrooms are read with the columns the query selects, in one query per batch", async (t) => {
  const app = await build(t)
  const school = await seedSchool('Loader Elementary', [['Ada Lovelace', 'Room 1'], ['Alan Turing', 'Room 1'], ['Grace Hopper', 'Room 2']])
  const db = await testDatabase()
  const zed = await createTeacher(db, { schoolId: school.schoolId, fullName: 'Zed Teacher' })
  const amy = await createTeacher(db, { schoolId: school.schoolId, fullName: 'Amy Teacher' })
  const room1 = await createClassroomAssignment(db, school.schoolId, zed, 'Room 1')
  const room2 = await createClassroomAssignment(db, school.schoolId, zed, 'Room 2')
  await createClassroomAssignment(db, school.schoolId, amy, 'Room 1', 'ASSISTANT')
  const room3 = await createClassroomAssignment(db, school.schoolId, amy, 'Room 3')
  const byName = new Map([['Room 1', room1], ['Room 2', room2]])
  await db.forSchool(school.schoolId).classroom.update({ where: { schoolId_id: { schoolId: school.schoolId, id: room1 } }, data: { subject: 'Mathematics' } })
  const { accessToken } = await login(app, school.username)

  const selects = spySelects(t, app, 'TeacherClassroom')

  const students = await gql(app, '{ students { fullName classroom { name teachers { fullName } } } }', { token: accessToken })
  t.same(students.body, {
    data: {
      students: [
        { fullName: 'Ada Lovelace', classroom: { name: 'Room 1', teachers: [{ fullName: 'Amy Teacher' }, { fullName: 'Zed Teacher' }] } },
        { fullName: 'Alan Turing', classroom: { name: 'Room 1', teachers: [{ fullName: 'Amy Teacher' }, { fullName: 'Zed Teacher' }] } },
        { fullName: 'Grace Hopper', classroom: { name: 'Room 2', teachers: [{ fullName: 'Zed Teacher' }] } }
      ]
    }
  }, 'teachers by full name, for each student\'s classroom')
  t.same(selects, [{ classroomId: true, teacher: { select: { id: true, fullName: true } } }], 'one query, the selected teacher columns')

  selects.length = 0
  const teachers = await gql(app, '{ teachers { fullName email classrooms { id name } } }', { token: accessToken })
  t.same(teachers.body, {
    data: {
      teachers: [
        { fullName: 'Zed Teacher', email: null, classrooms: [{ id: byName.get('Room 1'), name: 'Room 1' }, { id: byName.get('Room 2'), name: 'Room 2' }] },
        { fullName: 'Amy Teacher', email: null, classrooms: [{ id: byName.get('Room 1'), name: 'Room 1' }, { id: room3, name: 'Room 3' }] }
      ]
    }
  }, 'classrooms by name, for each teacher')
  t.same(selects, [{ teacherId: true, classroom: { select: { id: true, name: true } } }], 'one query, the selected classroom columns')

  // Two places under one list that select different columns (one through a fragment): Mercurius
  // merges their calls for the same teacher into one, yet both get their columns.
  selects.length = 0
  const aliased = await gql(app, `{ teachers { named: classrooms { name } ...Subjects } }
    fragment Subjects on Teacher { subjects: classrooms { subject } }`, { token: accessToken })
  t.equal(aliased.body.errors, undefined)
  t.same(aliased.body.data!.teachers, [
    { named: [{ name: 'Room 1' }, { name: 'Room 2' }], subjects: [{ subject: 'Mathematics' }, { subject: null }] },
    { named: [{ name: 'Room 1' }, { name: 'Room 3' }], subjects: [{ subject: 'Mathematics' }, { subject: null }] }
  ])
  t.same(selects, [{ teacherId: true, classroom: { select: { id: true, name: true, subject: true } } }], 'one read, the union of both places')
})
