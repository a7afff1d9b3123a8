// The reads of lists and relations as typed statements (src/db/typed-reads.ts, issues 29 and 36),
// for every caller: the declared column types are the database's; the school (and a teacher) are
// bound by wall 1's step and a statement that does not take them is refused before it runs; a
// teacher's statements read the teacher's reach and a client's the columns of its scopes only; each
// wall alone stops a row of another school, and a teacher's row out of reach, on this path; and
// the lists answer through it for administrators, teachers and clients alike.
import t from 'tap'
import { TenantViolationError } from '../src/db/tenant.js'
import { COLUMN_TYPES, TYPED_TABLES, columnOf, countRead, listRead, registerStatement, relationRead, assignmentsRead, type ListRead, type StatementReach, type TypedModel } from '../src/db/typed-reads.js'
import { deniedColumns } from '../src/auth/scopes.js'
import type { Reach } from '../src/db/reach.js'
import { calendarBundle, importCalendar } from './fixtures/calendar.js'
import { createTestDatabase, gql, testDatabase, type TestDatabaseOptions } from './helper.js'
import { mirror, type MirrorSchool } from './isolation/mirror.js'

t.test('the declared column types of the typed statements are the migrated database\'s', async (t) => {
  const db = await testDatabase()
  for (const [model, table] of Object.entries(TYPED_TABLES) as Array<[TypedModel, string]>) {
    const rows = await db.prisma.$queryRawUnsafe<Array<{ column_name: string, udt_name: string }>>(
      'SELECT column_name::text, udt_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY column_name', table)
    const declared = Object.entries(COLUMN_TYPES[model]).map(([field, type]) => [columnOf(field), type]).sort(([a], [b]) => a! < b! ? -1 : 1)
    t.same(rows.map((row) => [row.column_name, row.udt_name]), declared, `${table}: every column, with its type`)
  }
})

const studentsRead = (reach: StatementReach, fields: string[] = ['fullName']): ListRead =>
  ({ model: 'Student', fields, classroom: ['name'], conditions: [], order: ['id'], descending: false, take: 1000, reach })

t.test('wall 1 binds the school to a typed statement, and refuses one that does not take it before it runs', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  const client = db.forSchool(m.a.schoolId)
  t.equal(client.$statementReach(), 'school', 'an administrator\'s client reads the school\'s rows')
  const { statement, values } = listRead(studentsRead('school'))
  const rows = await client.$queryRawUnsafe<Array<{ id: string }>>(statement.sql, ...values)
  t.same(rows.map((row) => row.id).sort(), [...m.a.studentIds].sort(), 'the statement reads the school\'s students, the school bound by the step')

  await t.rejects(client.$queryRawUnsafe('SELECT s.id FROM students s WHERE s.school_id = $1'), TenantViolationError,
    'a statement not built by typed-reads.ts is refused')
  // A column that does not exist: had the statement run, PostgreSQL would have refused it instead.
  const joinWithoutSchool = registerStatement({
    sql: 'SELECT s.id AS "id", c.no_such_column AS "x" FROM students s JOIN classrooms c ON c.id = s.classroom_id WHERE s.school_id = $1',
    model: 'Student',
    joined: [],
    columns: []
  })
  await t.rejects(client.$queryRawUnsafe(joinWithoutSchool.sql), { name: 'TenantViolationError', message: /classrooms c does not take the school/ },
    'a registered statement with a table that does not take the school is refused before it runs')
  const otherTable = registerStatement({ sql: 'SELECT u.id AS "id" FROM users u WHERE u.school_id = $1', model: 'Student', joined: [], columns: [] })
  await t.rejects(client.$queryRawUnsafe(otherTable.sql), { name: 'TenantViolationError', message: /tenant tables only/ }, 'and one that reads another table')
  const twoStatements = registerStatement({ sql: 'SELECT s.id AS "id" FROM students s WHERE s.school_id = $1; SELECT 1', model: 'Student', joined: [], columns: [] })
  await t.rejects(client.$queryRawUnsafe(twoStatements.sql), { name: 'TenantViolationError', message: /one statement/ }, 'and two statements')
  const teachers = listRead({ ...studentsRead('teacher'), model: 'Teacher', classroom: undefined })
  await t.rejects(client.$queryRawUnsafe(teachers.statement.sql, ...teachers.values), { name: 'TenantViolationError', message: /teacher's client only/ },
    'and a statement built for a teacher\'s reach (its $2 is the teacher, which this client has not)')
})

t.test('a teacher\'s statements take the teacher\'s reach, bound by wall 1; a school\'s statement or one without the reach is refused', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  const teacher = db.forSchool(m.a.schoolId, { teacherId: m.a.teacherIds[0] })
  t.equal(teacher.$statementReach(), 'teacher', 'a teacher\'s client reads the teacher\'s reach')
  const inReach = (ids: string[]) => ids.filter((id) => m.a.teacherReach.has(id)).sort()
  for (const model of ['Student', 'Teacher', 'Classroom'] as const) {
    const { statement, values } = listRead({ model, fields: ['id'], conditions: [], order: ['id'], descending: false, take: 1000, reach: 'teacher' })
    const rows = await teacher.$queryRawUnsafe<Array<{ id: string }>>(statement.sql, ...values)
    const all = model === 'Student' ? m.a.studentIds : model === 'Teacher' ? m.a.teacherIds : m.a.classroomIds
    t.same(rows.map((row) => row.id).sort(), inReach(all), `${model}: the teacher's reach, exactly`)
    t.ok(inReach(all).length < all.length, `${model}: which is less than the school`)
  }
  const school = listRead(studentsRead('school'))
  await t.rejects(teacher.$queryRawUnsafe(school.statement.sql, ...school.values), { name: 'TenantViolationError', message: /teacher's reach only/ },
    'a statement built for the school is refused on a teacher\'s client')
  // A teacher's statement whose classroom join lacks the reach: refused before it runs.
  const built = listRead(studentsRead('teacher'))
  const unconfined = registerStatement({ ...built.statement, sql: built.statement.sql.replace(/ AND EXISTS \(SELECT 1 FROM teacher_classrooms rc [^)]*\)/, '') })
  t.not(unconfined.sql, built.statement.sql, 'the control statement differs from the built one by the classroom\'s reach')
  await t.rejects(teacher.$queryRawUnsafe(unconfined.sql, ...built.values), { name: 'TenantViolationError', message: /classrooms c is not confined to the teacher's reach/ },
    'a teacher\'s statement with a table outside the reach conditions is refused before it runs')
  const relation = relationRead('Teacher.classrooms', ['id'], m.a.teacherIds, 'teacher')
  const rows = await teacher.$queryRawUnsafe<Array<{ id: string, $parent: string }>>(relation.statement.sql, ...relation.values)
  t.ok(rows.length > 0 && rows.every((row) => m.a.teacherReach.has(row.id)), 'a colleague\'s classrooms: only those in the teacher\'s reach')
  t.ok(rows.some((row) => row.$parent === m.a.teacherIds[1]), 'a colleague\'s shared classroom is read')
})

t.test('a client\'s statements read the columns of its scopes only', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  const core = db.forSchool(m.a.schoolId, { deniedColumns: deniedColumns(['roster-core.readonly']) })
  t.equal(core.$statementReach(), 'school')
  t.notOk(core.$readableColumns('Student').includes('email'), 'its readable columns leave out what its scopes deny')
  t.ok(core.$readableColumns('Student').includes('fullName'), 'and keep the others')
  const fine = listRead(studentsRead('school', ['fullName']))
  t.equal((await core.$queryRawUnsafe<unknown[]>(fine.statement.sql, ...fine.values)).length, m.a.studentIds.length, 'a statement of its columns runs')
  const email = listRead(studentsRead('school', ['fullName', 'email']))
  await t.rejects(core.$queryRawUnsafe(email.statement.sql, ...email.values), { name: 'TenantViolationError', message: /Student.email needs the scope/ },
    'one that selects a column outside its scopes is refused before it runs')
  const byEmail = listRead({ ...studentsRead('school'), conditions: [{ kind: 'equals', field: 'email', value: 'x@example.org' }] })
  await t.rejects(core.$queryRawUnsafe(byEmail.statement.sql, ...byEmail.values), { name: 'TenantViolationError', message: /Student.email needs the scope/ },
    'and so is one that filters by such a column')
  const titles = assignmentsRead('Classroom.teacherAssignments', ['title'], ['name'], m.a.classroomIds, 'school')
  await t.rejects(core.$queryRawUnsafe(titles.statement.sql, ...titles.values), { name: 'TenantViolationError', message: /Teacher.title needs the scope/ },
    'or that reads one in a joined record')
})

/**
 * What the app's school clients send from now on: the typed statements (their text up to FROM),
 * and the model operations by model.
 */
function watchSchoolClients (t: { teardown: (fn: () => unknown) => void }, db: Awaited<ReturnType<typeof testDatabase>>): { sent: string[], models: string[] } {
  const sent: string[] = []
  const models: string[] = []
  const forSchool = db.forSchool.bind(db)
  db.forSchool = (schoolId, reach) => new Proxy(forSchool(schoolId, reach), {
    get (target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver)
      if (key === '$queryRawUnsafe' && typeof value === 'function') {
        return (sql: string, ...values: unknown[]) => {
          sent.push(sql.slice(0, sql.indexOf(' FROM ')))
          return (value as (...args: unknown[]) => unknown).call(target, sql, ...values)
        }
      }
      if (typeof key === 'string' && ['student', 'teacher', 'classroom', 'teacherClassroom'].includes(key)) models.push(key)
      return value
    }
  })
  t.teardown(() => { db.forSchool = forSchool })
  return { sent, models }
}

const CALLERS: Array<[string, keyof MirrorSchool, number]> = [['an administrator', 'token', 6], ['a teacher', 'teacherToken', 4], ['a roster-core.readonly client', 'coreClientToken', 6]]

t.test('the lists and their relations answer through the typed statements, for every kind of caller', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  const { sent, models } = watchSchoolClients(t, db)
  const query = '{ students(limit: 1000) { id fullName classroomName classroom { id name teachers { id } students { id } teacherAssignments { role teacher { fullName } } } } ' +
    'teachers(limit: 1000) { id classrooms { id } classroomAssignments { classroom { name } } } classroomsPage(limit: 1000) { nodes { id name } } }'
  for (const [who, token, students] of CALLERS) {
    sent.length = 0
    models.length = 0
    const res = await gql(m.app, query, { token: m.a[token] as string })
    t.equal(res.body.errors, undefined, who)
    t.equal(res.body.data?.students.length, students, `${who}: every student in reach`)
    t.ok(res.body.data?.students.every((s: { classroomName: string, classroom: { name: string, teachers: unknown[], students: unknown[], teacherAssignments: unknown[] } }) =>
      s.classroomName === s.classroom.name && s.classroom.teachers.length > 0 && s.classroom.students.length === 2 && s.classroom.teacherAssignments.length > 0),
    `${who}: with their classrooms, teachers, assignments and rosters`)
    t.equal(sent.length, 8, `${who}: in eight statements: three lists, and one per relation for all of its parents`)
    t.equal(sent.filter((sql) => sql.includes('"$parent"')).length, 5, `${who}: five of them relations`)
    t.same(models, [], `${who}: and no model operation`)
  }
})

t.test('a OneRoster page and its X-Total-Count are one statement, for every kind of caller; a page past the end counts apart', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  const { sent, models } = watchSchoolClients(t, db)
  const get = async (token: string, url: string) => await m.app.inject({ method: 'GET', url: `/ims/oneroster/rostering/v1p2${url}`, headers: { authorization: `Bearer ${token}` } })
  for (const [who, token, students] of CALLERS) {
    for (const [url, records, statements] of [['/students?limit=2', 2, 1], ['/users?limit=2&sort=familyName', 2, 3], ['/students?limit=2&offset=100', 0, 2]] as const) {
      sent.length = 0
      const res = await get(m.a[token] as string, url)
      t.equal(res.statusCode, 200, `${who} ${url}`)
      t.equal(res.json().users.length, records, `${who} ${url}: the page`)
      if (url.startsWith('/students')) t.equal(res.headers['x-total-count'], String(students), `${who} ${url}: the total of the caller's reach`)
      t.equal(sent.length, statements, `${who} ${url}: ${statements === 1 ? 'one statement' : url.startsWith('/users') ? 'one per table, students, teachers and agents' : 'the page, then its count'}`)
    }
  }
  t.same(models, [], 'and no model operation')
})

type Test = { teardown: (fn: () => unknown) => void }
type Who = 'administrator' | 'teacher' | 'client'

/**
 * Rows out of reach that school A's client for each kind of caller reads on the typed path, by
 * list, relation and assignments: B's rows, and for a teacher also A's rows outside the teacher's
 * reach. One database of `options` for the three.
 */
async function rowsOutOfReach (options: TestDatabaseOptions, t: Test): Promise<Record<Who, number>> {
  const db = await createTestDatabase(options)
  const m = await mirror(t, db)
  const found: Record<Who, number> = { administrator: 0, teacher: 0, client: 0 }
  for (const who of ['administrator', 'teacher', 'client'] as const) {
    const reach: Reach = who === 'teacher' ? { teacherId: m.a.teacherIds[0] } : who === 'client' ? { deniedColumns: deniedColumns(['roster-core.readonly']) } : {}
    const client = db.forSchool(m.a.schoolId, reach)
    const kind = client.$statementReach()
    const outside = (id: string): boolean => m.b.ids.has(id) || (who === 'teacher' && !m.a.teacherReach.has(id))
    const count = (rows: Array<Record<string, unknown>>): void => {
      for (const row of rows) for (const key of ['id', 'teacher.id', 'classroom.id']) if (typeof row[key] === 'string' && outside(row[key])) found[who]++
    }
    for (const model of ['Student', 'Teacher', 'Classroom'] as const) {
      const { statement, values } = listRead({ model, fields: ['id'], classroom: model === 'Student' ? ['name'] : undefined, conditions: [], order: ['id'], descending: false, take: 1000, reach: kind })
      count(await client.$queryRawUnsafe(statement.sql, ...values))
    }
    const classrooms = [...m.a.classroomIds, ...m.b.classroomIds]
    const teachers = [...m.a.teacherIds, ...m.b.teacherIds]
    for (const [relation, ids] of [['Classroom.teachers', classrooms], ['Classroom.students', classrooms], ['Teacher.classrooms', teachers]] as const) {
      const { statement, values } = relationRead(relation, ['id'], ids, kind, relation === 'Classroom.students' ? ['name'] : undefined)
      count(await client.$queryRawUnsafe(statement.sql, ...values))
    }
    for (const [relation, ids] of [['Classroom.teacherAssignments', classrooms], ['Teacher.classroomAssignments', teachers]] as const) {
      const { statement, values } = assignmentsRead(relation, ['fullName'], ['name'], ids, kind)
      count(await client.$queryRawUnsafe(statement.sql, ...values))
    }
  }
  return found
}

t.test('on the typed path each wall alone stops a row out of reach, for administrators, teachers and clients', async (t) => {
  const none = { administrator: 0, teacher: 0, client: 0 }
  t.same(await rowsOutOfReach({}, t), none, 'both walls: none')
  t.same(await rowsOutOfReach({ role: 'owner' }, t), none, 'wall 1 alone (a role that bypasses row-level security): none')
  t.same(await rowsOutOfReach({ tenantFilter: false }, t), none, 'wall 2 alone (the school and reach conditions taken out): none')
  const neither = await rowsOutOfReach({ role: 'owner', tenantFilter: false }, t)
  t.ok(neither.administrator > 0 && neither.teacher > neither.administrator && neither.client > 0, 'control: with neither wall, rows out of reach are read, by each kind of caller')
})

t.test('OneRoster\'s statements (a filter predicate, an offset, a count) take the school and the reach as every statement does', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  const tenant = db.forSchool(m.a.schoolId)
  await tenant.student.updateMany({ where: { id: m.a.studentIds[1]! }, data: { sourcedId: 'same-key' } })
  await db.forSchool(m.b.schoolId).student.updateMany({ where: { id: m.b.studentIds[1]! }, data: { sourcedId: 'same-key' } })
  const byKey = (reach: StatementReach, value: string): ListRead => ({
    model: 'Student',
    fields: ['sourcedId'],
    conditions: [{ kind: 'predicate', predicate: { kind: 'any', parts: [{ kind: 'compare', field: 'sourcedKey', op: '=', value }, { kind: 'compare', field: 'fullName', op: '~', value: 'zzz' }] } }],
    order: ['sourcedKey', 'id'],
    descending: false,
    take: 10,
    skip: 0,
    reach
  })
  const run = async (client: ReturnType<typeof db.forSchool>, read: ListRead): Promise<string[]> => {
    const { statement, values } = listRead(read)
    return (await client.$queryRawUnsafe<Array<{ id: string }>>(statement.sql, ...values)).map((row) => row.id)
  }
  t.same(await run(tenant, byKey('school', 'same-key')), [m.a.studentIds[1]], 'a sourcedId both schools hold: the caller\'s school\'s record')
  t.same(await run(tenant, byKey('school', m.a.studentIds[0]!)), [m.a.studentIds[0]], 'a record without a sourcedId by its id')
  t.same(await run(tenant, byKey('school', m.b.studentIds[0]!)), [], 'another school\'s record by its id: none')
  t.same(await run(tenant, { ...byKey('school', 'x'), conditions: [], skip: m.a.studentIds.length }), [], 'an offset past the school\'s records: none of the other school\'s')
  const { statement, values } = countRead({ model: 'Student', conditions: [], reach: 'school' })
  t.same(await tenant.$queryRawUnsafe(statement.sql, ...values), [{ count: m.a.studentIds.length }], 'a count: the school\'s records')
  const teacher = db.forSchool(m.a.schoolId, { teacherId: m.a.teacherIds[0] })
  const reached = countRead({ model: 'Student', conditions: [], reach: 'teacher' })
  t.same(await teacher.$queryRawUnsafe(reached.statement.sql, ...reached.values), [{ count: m.a.studentIds.filter((id) => m.a.teacherReach.has(id)).length }], 'a teacher\'s count: her reach')
  await t.rejects(teacher.$queryRawUnsafe(statement.sql, ...values), { name: 'TenantViolationError' }, 'a teacher\'s client refuses the school\'s count')
  const core = db.forSchool(m.a.schoolId, { deniedColumns: deniedColumns(['roster-core.readonly']) })
  const byEmail = countRead({ model: 'Student', conditions: [{ kind: 'predicate', predicate: { kind: 'compare', field: 'email', op: '~', value: '@' } }], reach: 'school' })
  await t.rejects(core.$queryRawUnsafe(byEmail.statement.sql, ...byEmail.values), { name: 'TenantViolationError', message: /Student\.email/ },
    'a core client\'s count filtering by a column outside its scopes is refused before it runs')
  t.ok(byEmail.statement.sql.includes('s.school_id = $1'), 'the count takes the school where wall 1 puts it')
  const counted = listRead({ ...byKey('teacher', 'x'), conditions: [], take: 1, total: true })
  t.same((await teacher.$queryRawUnsafe<Array<{ $total: number }>>(counted.statement.sql, ...counted.values)).map((row) => row.$total),
    [m.a.studentIds.filter((id) => m.a.teacherReach.has(id)).length], 'a teacher\'s page carries the total of her reach')
  const emailPage = listRead({ ...byKey('school', 'x'), conditions: [{ kind: 'predicate', predicate: { kind: 'compare', field: 'email', op: '~', value: '@' } }], total: true })
  await t.rejects(core.$queryRawUnsafe(emailPage.statement.sql, ...emailPage.values), { name: 'TenantViolationError', message: /Student\.email/ },
    'and a core client\'s, with a condition on a column outside its scopes, is refused before it runs')
})

t.test('a session\'s parent and children and a course\'s school year are subqueries that take the school, and a teacher\'s reach (the whole calendar)', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  // Both schools: the same sourcedIds.
  for (const school of [m.a, m.b]) {
    await importCalendar(db, school.schoolId, calendarBundle([
      ['y-1', '', '', 'Year', 'schoolYear', '2026-08-20', '2027-06-18', '', '2027'],
      ['t-1', '', '', 'Term', 'term', '2026-08-20', '2027-01-15', 'y-1', '2027']
    ], [['c-1', '', '', 'y-1', 'Course', 'C-1', '09', 'org-1', '', '']]))
  }
  const sessions = (reach: StatementReach): ListRead => ({
    model: 'AcademicSession', fields: ['sourcedId', 'parentKey', 'childKeys'], conditions: [], order: ['sourcedKey', 'id'], descending: false, take: 10, reach
  })
  const rows = async (client: ReturnType<typeof db.forSchool>, read: ListRead): Promise<unknown[]> => {
    const { statement, values } = listRead(read)
    return (await client.$queryRawUnsafe<Array<Record<string, unknown>>>(statement.sql, ...values)).map(({ sourcedId, parentKey, childKeys }) => [sourcedId, parentKey, childKeys])
  }
  const expected = [['t-1', 'y-1', []], ['y-1', null, ['t-1']]]
  t.same(await rows(db.forSchool(m.a.schoolId), sessions('school')), expected, 'an administrator: the school\'s sessions, each reference its own school\'s')
  const teacher = db.forSchool(m.a.schoolId, { teacherId: m.a.teacherIds[2] })
  t.same(await rows(teacher, sessions('teacher')), expected, 'a teacher of no classroom: the whole calendar too')
  const course = listRead({ model: 'Course', fields: ['sourcedId', 'schoolYearKey'], conditions: [], order: ['id'], descending: false, take: 10, reach: 'teacher' })
  t.same(await teacher.$queryRawUnsafe(course.statement.sql, ...course.values), [{ id: (await db.forSchool(m.a.schoolId).course.findFirstOrThrow({ select: { id: true } })).id, sourcedId: 'c-1', schoolYearKey: 'y-1' }],
    'a course\'s school year by its sourcedId')

  const built = listRead(sessions('teacher'))
  const withoutSchool = registerStatement({ ...built.statement, sql: built.statement.sql.replace('ap.school_id = $1 AND ', '') })
  t.not(withoutSchool.sql, built.statement.sql)
  await t.rejects(teacher.$queryRawUnsafe(withoutSchool.sql, ...built.values), { name: 'TenantViolationError', message: /academic_sessions ap does not take the school/ },
    'a parent\'s subquery without the school is refused before it runs')
  const withoutReach = registerStatement({ ...built.statement, sql: built.statement.sql.replace('ac.school_id IS NOT NULL AND $2::uuid IS NOT NULL', 'TRUE') })
  t.not(withoutReach.sql, built.statement.sql)
  await t.rejects(teacher.$queryRawUnsafe(withoutReach.sql, ...built.values), { name: 'TenantViolationError', message: /academic_sessions ac is not confined to the teacher's reach/ },
    'and on a teacher\'s client, a children\'s subquery without the teacher\'s reach')
  t.throws(() => listRead({ ...sessions('school'), model: 'Course' }), /Course has no parentKey/, 'a key of another model is not read')
})
