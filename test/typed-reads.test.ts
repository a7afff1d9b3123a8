// The hot reads as typed statements (src/db/typed-reads.ts, issue 29): the declared column types
// are the database's; the school is bound by wall 1's step and a statement that does not take it
// is refused before it runs; each wall alone stops a row of another school on this path; a caller
// narrower than the school reads through the model operations; and the lists answer through it.
import t from 'tap'
import { TenantViolationError } from '../src/db/tenant.js'
import { COLUMN_TYPES, TYPED_TABLES, columnOf, listRead, registerStatement, relationRead, type TypedModel } from '../src/db/typed-reads.js'
import { deniedColumns } from '../src/auth/scopes.js'
import { createTestDatabase, gql, testDatabase, type TestDatabaseOptions } from './helper.js'
import { mirror } from './isolation/mirror.js'

t.test('the declared column types of the typed statements are the migrated database\'s', async (t) => {
  const db = await testDatabase()
  for (const [model, table] of Object.entries(TYPED_TABLES) as Array<[TypedModel, string]>) {
    const rows = await db.prisma.$queryRawUnsafe<Array<{ column_name: string, udt_name: string }>>(
      'SELECT column_name::text, udt_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY column_name', table)
    const declared = Object.entries(COLUMN_TYPES[model]).map(([field, type]) => [columnOf(field), type]).sort(([a], [b]) => a! < b! ? -1 : 1)
    t.same(rows.map((row) => [row.column_name, row.udt_name]), declared, `${table}: every column, with its type`)
  }
})

const STUDENTS_READ = { model: 'Student', fields: ['fullName'], classroom: ['name'], conditions: [], order: ['id'], descending: false, take: 1000 } as const

t.test('wall 1 binds the school to a typed statement, and refuses one that does not take it before it runs', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  const client = db.forSchool(m.a.schoolId)
  t.equal(client.$typedReads(), true, 'an administrator\'s client reads lists as typed statements')
  const { statement, values } = listRead(STUDENTS_READ)
  const rows = await client.$queryRawUnsafe<Array<{ id: string }>>(statement.sql, ...values)
  t.same(rows.map((row) => row.id).sort(), [...m.a.studentIds].sort(), 'the statement reads the school\'s students, the school bound by the step')

  await t.rejects(client.$queryRawUnsafe('SELECT s.id FROM students s WHERE s.school_id = $1'), TenantViolationError,
    'a statement not built by typed-reads.ts is refused')
  // A column that does not exist: had the statement run, PostgreSQL would have refused it instead.
  const joinWithoutSchool = registerStatement({
    sql: 'SELECT s.id AS "id", c.no_such_column AS "x" FROM students s JOIN classrooms c ON c.id = s.classroom_id WHERE s.school_id = $1',
    model: 'Student',
    classroom: undefined
  })
  await t.rejects(client.$queryRawUnsafe(joinWithoutSchool.sql), { name: 'TenantViolationError', message: /classrooms c does not take the school/ },
    'a registered statement with a table that does not take the school is refused before it runs')
  const otherTable = registerStatement({ sql: 'SELECT u.id AS "id" FROM users u WHERE u.school_id = $1', model: 'Student', classroom: undefined })
  await t.rejects(client.$queryRawUnsafe(otherTable.sql), { name: 'TenantViolationError', message: /tenant tables only/ }, 'and one that reads another table')
  const twoStatements = registerStatement({ sql: 'SELECT s.id AS "id" FROM students s WHERE s.school_id = $1; SELECT 1', model: 'Student', classroom: undefined })
  await t.rejects(client.$queryRawUnsafe(twoStatements.sql), { name: 'TenantViolationError', message: /one statement/ }, 'and two statements')
})

t.test('a caller narrower than the school reads through the model operations', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  const teacher = db.forSchool(m.a.schoolId, { teacherId: m.a.teacherIds[0] })
  t.equal(teacher.$typedReads(), false, 'a teacher\'s client does not')
  const { statement, values } = listRead(STUDENTS_READ)
  await t.rejects(teacher.$queryRawUnsafe(statement.sql, ...values), TenantViolationError, 'and refuses a typed statement (callerReach)')
  const core = db.forSchool(m.a.schoolId, { deniedColumns: deniedColumns(['roster-core.readonly']) })
  t.equal(core.$typedReads(), false, 'nor does the client of a caller without every scope')
  await t.rejects(core.$queryRawUnsafe(statement.sql, ...values), TenantViolationError, 'which refuses it too')
})

t.test('the lists and their relations answer through the typed statements', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  // Every typed statement the app's school clients send, seen through a proxy of each client.
  const sent: string[] = []
  const forSchool = db.forSchool.bind(db)
  db.forSchool = (schoolId, reach) => new Proxy(forSchool(schoolId, reach), {
    get (target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver)
      if (key !== '$queryRawUnsafe' || typeof value !== 'function') return value
      return (sql: string, ...values: unknown[]) => {
        sent.push(sql.slice(0, sql.indexOf(' FROM ')))
        return (value as (...args: unknown[]) => unknown).call(target, sql, ...values)
      }
    }
  })
  t.teardown(() => { db.forSchool = forSchool })
  const res = await gql(m.app, '{ students(limit: 1000) { id fullName classroomName classroom { id name teachers { id } students { id } } } ' +
    'teachers(limit: 1000) { id classrooms { id } } classroomsPage(limit: 1000) { nodes { id name } } }', { token: m.a.token })
  t.equal(res.body.errors, undefined)
  t.equal(res.body.data?.students.length, m.a.studentIds.length, 'every student')
  t.equal(res.body.data?.teachers.length, m.a.teacherIds.length, 'every teacher')
  t.equal(res.body.data?.classroomsPage.nodes.length, m.a.classroomIds.length, 'every classroom')
  t.ok(res.body.data?.students.every((s: { classroomName: string, classroom: { name: string, teachers: unknown[], students: unknown[] } }) =>
    s.classroomName === s.classroom.name && s.classroom.teachers.length > 0 && s.classroom.students.length === 2), 'with their classrooms, teachers and rosters')
  t.equal(sent.length, 6, 'in six statements: three lists, and one per relation for all of its parents')
  t.equal(res.body.data?.students.length > 1 ? sent.filter((sql) => sql.includes('"$parent"')).length : 0, 3, 'three of them relations')
  const teacher = await gql(m.app, '{ students(limit: 1000) { id classroom { teachers { id } } } }', { token: m.a.teacherToken })
  t.equal(teacher.body.errors, undefined)
  t.equal(sent.length, 6, 'a teacher\'s reads send none')
})

/** Rows of school B that school A's client reads on the typed path, by list and by relation. */
async function crossSchoolRows (options: TestDatabaseOptions, t: { equal: (a: unknown, b: unknown, message: string) => void, teardown: (fn: () => unknown) => void }): Promise<number> {
  const db = await createTestDatabase(options)
  const m = await mirror(t, db)
  const client = db.forSchool(m.a.schoolId)
  t.equal(client.$typedReads(), true, 'the typed path is taken')
  const foreign = new Set(m.b.ids)
  let found = 0
  for (const model of ['Student', 'Teacher', 'Classroom'] as const) {
    const { statement, values } = listRead({ model, fields: ['id'], conditions: [], order: ['id'], descending: false, take: 1000 })
    const rows = await client.$queryRawUnsafe<Array<{ id: string }>>(statement.sql, ...values)
    found += rows.filter((row) => foreign.has(row.id)).length
  }
  for (const [relation, ids] of [['Classroom.teachers', m.b.classroomIds], ['Classroom.students', m.b.classroomIds], ['Teacher.classrooms', m.b.teacherIds]] as const) {
    const { statement, values } = relationRead(relation, ['id'], ids)
    const rows = await client.$queryRawUnsafe<Array<{ id: string }>>(statement.sql, ...values)
    found += rows.filter((row) => foreign.has(row.id)).length
  }
  return found
}

t.test('on the typed path each wall alone stops a row of another school', async (t) => {
  t.equal(await crossSchoolRows({}, t), 0, 'both walls: none')
  t.equal(await crossSchoolRows({ role: 'owner' }, t), 0, 'wall 1 alone (a role that bypasses row-level security): none')
  t.equal(await crossSchoolRows({ tenantFilter: false }, t), 0, 'wall 2 alone (the school conditions taken out): none')
  t.ok(await crossSchoolRows({ role: 'owner', tenantFilter: false }, t) > 0, 'control: with neither wall, B\'s rows reach A')
})
