// Lists: keyset paging (studentsPage/teachersPage/classroomsPage and `after` on the plain lists),
// orderings, filters and limits; and, on PostgreSQL, that a page deep in 100,000 students is an
// index range scan that reads only the page (no OFFSET).
import pg from 'pg'
import t from 'tap'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { PrismaPg } from '@prisma/adapter-pg'
import { PrismaClient } from '../src/generated/prisma/client.js'
import { schoolClient } from '../src/db/school-client.js'
import { planPage } from '../src/graphql/paging.js'
import { STUDENTS } from '../src/records/students.js'
import { listRead } from '../src/db/typed-reads.js'
import { createClassroomAssignment } from './fixtures.js'
import { build, gql, login, seedSchool, serverUrl, testDatabase } from './helper.js'

const PAGE = `query ($limit: Int, $after: String, $filter: StudentFilter, $orderBy: StudentOrder) {
  studentsPage(limit: $limit, after: $after, filter: $filter, orderBy: $orderBy) {
    nodes { id givenName familyName createdAt updatedAt }
    pageInfo { endCursor hasNextPage }
  }
}`

const NAMES: Array<[string, string]> = [
  ['Ada', 'Lovelace'], ['Alan', 'Turing'], ['Grace', 'Hopper'], ['Edsger', 'Dijkstra'], ['Barbara', 'Liskov'],
  ['Donald', 'Knuth'], ['Ada', 'Turing'], ['Alan', 'Lovelace'], ['Grace', 'Knuth'], ['John', 'Backus'],
  ['Frances', 'Allen'], ['Ken', 'Thompson'], ['Dennis', 'Ritchie'], ['Niklaus', 'Wirth'], ['Tony', 'Hoare'],
  ['Leslie', 'Lamport'], ['Robin', 'Milner'], ['Adele', 'Goldberg'], ['Margaret', 'Hamilton'], ['Jean', 'Sammet'],
  ['Ada', 'Hopper'], ['Kristen', 'Nygaard'], ['Ole', 'Dahl'], ['Alan', 'Kay'], ['Grace', 'Turing']
]

async function school (t: { teardown: (fn: () => unknown) => void }) {
  const app = await build(t)
  const db = await testDatabase()
  const seeded = await seedSchool('Paging School')
  const ids: string[] = []
  for (const [i, [givenName, familyName]] of NAMES.entries()) {
    ids.push(await createStudent(db, {
      schoolId: seeded.schoolId,
      givenName,
      familyName,
      classroom: i % 3 === 0 ? 'Room Three' : undefined,
      gradeLevel: i % 2 === 0 ? 'GRADE_3' : '04',
      status: i % 5 === 0 ? 'WITHDRAWN' : undefined,
      studentNumber: `S-${i}`
    }))
  }
  const { accessToken } = await login(app, seeded.username)
  return { app, db, seeded, ids, token: accessToken }
}

async function walk (app: any, token: string, variables: Record<string, unknown>, limit: number) {
  const seen: any[] = []
  let after: string | null = null
  let pages = 0
  for (;;) {
    const res = await gql(app, PAGE, { token, variables: { ...variables, limit, after } })
    if (res.body.errors !== undefined) throw new Error(JSON.stringify(res.body.errors))
    const page = res.body.data!.studentsPage
    seen.push(...page.nodes)
    pages += 1
    if (!page.pageInfo.hasNextPage) return { seen, pages }
    after = page.pageInfo.endCursor
  }
}

t.test('paging walks every student once, in each order and direction, as one long list would', async (t) => {
  const { app, ids, token } = await school(t)
  for (const field of ['FAMILY_NAME', 'GIVEN_NAME', 'CREATED_AT', 'UPDATED_AT', 'ID']) {
    for (const direction of ['ASC', 'DESC']) {
      const orderBy = { field, direction }
      const whole = await gql(app, PAGE, { token, variables: { limit: 1000, orderBy } })
      const all = whole.body.data!.studentsPage.nodes.map((n: { id: string }) => n.id)
      t.same([...all].sort(), [...ids].sort(), `${field} ${direction}: every student`)
      const { seen, pages } = await walk(app, token, { orderBy }, 4)
      t.same(seen.map((n) => n.id), all, `${field} ${direction}: pages of 4 give the same sequence`)
      t.equal(pages, Math.ceil(ids.length / 4), `${field} ${direction}: ${pages} pages`)
    }
  }
  const byFamily = (await walk(app, token, { orderBy: { field: 'FAMILY_NAME' } }, 6)).seen
  for (let i = 1; i < byFamily.length; i++) {
    const [a, b] = [byFamily[i - 1], byFamily[i]]
    t.ok(a.familyName < b.familyName || (a.familyName === b.familyName && (a.givenName < b.givenName || (a.givenName === b.givenName && a.id < b.id))),
      `${a.familyName}, ${a.givenName} before ${b.familyName}, ${b.givenName}`)
  }
  const byId = await walk(app, token, {}, 10)
  t.same(byId.seen.map((n) => n.id), ids, 'the default order is by id (creation order)')
})

t.test('the plain list takes the same cursor and keeps the specification\'s shape', async (t) => {
  const { app, ids, token } = await school(t)
  const first = await gql(app, PAGE, { token, variables: { limit: 5 } })
  const after = first.body.data!.studentsPage.pageInfo.endCursor
  const res = await gql(app, 'query ($after: String) { students(limit: 5, after: $after) { id fullName classroomName } }', { token, variables: { after } })
  t.same(res.body.data!.students.map((s: { id: string }) => s.id), ids.slice(5, 10))
  t.same(Object.keys(res.body.data!.students[0]), ['id', 'fullName', 'classroomName'])
})

t.test('a cursor is refused with another order, on another list, or when made up', async (t) => {
  const { app, token } = await school(t)
  const first = await gql(app, PAGE, { token, variables: { limit: 3, orderBy: { field: 'FAMILY_NAME' } } })
  const after = first.body.data!.studentsPage.pageInfo.endCursor as string
  const cases: Array<[string, string, Record<string, unknown>, RegExp]> = [
    ['another field', PAGE, { after, orderBy: { field: 'GIVEN_NAME' } }, /use the same orderBy/],
    ['another direction', PAGE, { after, orderBy: { field: 'FAMILY_NAME', direction: 'DESC' } }, /use the same orderBy/],
    ['the default order', PAGE, { after }, /use the same orderBy/],
    ['made up', PAGE, { after: 'bm90LWEtY3Vyc29y' }, /not a cursor/],
    ['not base64 JSON', PAGE, { after: '!!!' }, /not a cursor/],
    ['another list', 'query ($after: String) { teachersPage(after: $after, orderBy: { field: FAMILY_NAME }) { nodes { id } } }', { after }, /cursor of students, not of teachers/]
  ]
  for (const [name, query, variables, message] of cases) {
    const res = await gql(app, query, { token, variables })
    t.equal(res.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', name)
    t.match(res.body.errors?.[0]?.message, message, name)
  }
})

t.test('limits of the page fields: 0 to 1000, default 100', async (t) => {
  const { app, token } = await school(t)
  for (const field of ['studentsPage', 'teachersPage', 'classroomsPage']) {
    for (const limit of [-1, 1001]) {
      const res = await gql(app, `query ($limit: Int) { ${field}(limit: $limit) { nodes { id } } }`, { token, variables: { limit } })
      t.equal(res.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', `${field}(limit: ${limit})`)
      t.match(res.body.errors?.[0]?.message, /limit must be between 0 and 1000/)
    }
  }
  const zero = await gql(app, '{ studentsPage(limit: 0) { nodes { id } pageInfo { endCursor hasNextPage } } }', { token })
  t.same(zero.body.data!.studentsPage, { nodes: [], pageInfo: { endCursor: null, hasNextPage: true } })
  const all = await gql(app, '{ studentsPage { nodes { id } pageInfo { hasNextPage } } }', { token })
  t.equal(all.body.data!.studentsPage.nodes.length, NAMES.length)
  t.equal(all.body.data!.studentsPage.pageInfo.hasNextPage, false)
})

t.test('filters: classroom, grade level, status and a name search, combined with paging', async (t) => {
  const { app, ids, token } = await school(t)
  const room = await gql(app, '{ classrooms(filter: { search: "three" }) { id name } }', { token })
  t.same(room.body.data!.classrooms.map((c: { name: string }) => c.name), ['Room Three'])
  const roomId = room.body.data!.classrooms[0].id
  const ask = async (filter: Record<string, unknown>) => {
    const res = await gql(app, 'query ($filter: StudentFilter) { students(filter: $filter, limit: 1000) { id } }', { token, variables: { filter } })
    if (res.body.errors !== undefined) throw new Error(JSON.stringify(res.body.errors))
    return res.body.data!.students.map((s: { id: string }) => s.id)
  }
  t.same(await ask({ classroomId: roomId }), ids.filter((_, i) => i % 3 === 0), 'by classroom')
  t.same(await ask({ gradeLevel: 'GRADE_4' }), ids.filter((_, i) => i % 2 === 1), 'by grade level (04 was stored as GRADE_4)')
  t.same(await ask({ status: 'WITHDRAWN' }), ids.filter((_, i) => i % 5 === 0), 'by status')
  t.same(await ask({ status: 'WITHDRAWN', gradeLevel: 'GRADE_3' }), ids.filter((_, i) => i % 10 === 0), 'conditions combine')
  const adas = NAMES.flatMap(([given, family], i) => (`${given} ${family}`.toLowerCase().includes('ada') ? [ids[i]] : []))
  t.same(await ask({ search: 'ADA' }), adas, 'name search: substring of any name, ignoring case')
  t.same(await ask({ search: 'urin' }), NAMES.flatMap(([, family], i) => (family === 'Turing' ? [ids[i]] : [])))
  t.same(await ask({ search: '%' }), [], 'LIKE wildcards are literal')
  t.same(await ask({ search: '_' }), [])
  const walked = await walk(app, token, { filter: { search: 'a' }, orderBy: { field: 'GIVEN_NAME', direction: 'DESC' } }, 3)
  const whole = await gql(app, PAGE, { token, variables: { limit: 1000, filter: { search: 'a' }, orderBy: { field: 'GIVEN_NAME', direction: 'DESC' } } })
  t.same(walked.seen.map((n) => n.id), whole.body.data!.studentsPage.nodes.map((n: { id: string }) => n.id), 'filtered pages')
  for (const [filter, message] of [[{ search: '' }, /1 to 100 characters/], [{ classroomId: 'nope' }, /filter.classroomId must be a UUID/]] as const) {
    const res = await gql(app, 'query ($filter: StudentFilter) { students(filter: $filter) { id } }', { token, variables: { filter } })
    t.equal(res.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT')
    t.match(res.body.errors?.[0]?.message, message)
  }
})

t.test('teachers and classrooms page, order and filter the same way', async (t) => {
  const { app, db, seeded, token } = await school(t)
  const teachers: string[] = []
  for (const [i, name] of ['Zed Zulu', 'Amy Alpha', 'Mo Mike', 'Bo Bravo', 'Cy Charlie'].entries()) {
    const id = await createTeacher(db, { schoolId: seeded.schoolId, fullName: name, status: i === 4 ? 'INACTIVE' : undefined })
    teachers.push(id)
    await createClassroomAssignment(db, seeded.schoolId, id, `Room ${i % 2}`, i === 0 ? 'ASSISTANT' : 'PRIMARY')
  }
  const names: string[] = []
  let after: string | null = null
  for (;;) {
    const res: any = await gql(app, 'query ($after: String) { teachersPage(limit: 2, after: $after, orderBy: { field: FAMILY_NAME }) { nodes { familyName } pageInfo { endCursor hasNextPage } } }', { token, variables: { after } })
    names.push(...res.body.data.teachersPage.nodes.map((n: { familyName: string }) => n.familyName))
    if (!res.body.data.teachersPage.pageInfo.hasNextPage) break
    after = res.body.data.teachersPage.pageInfo.endCursor
  }
  t.same(names, ['Alpha', 'Bravo', 'Charlie', 'Mike', 'Zulu'])
  const room0 = await gql(app, '{ classrooms(filter: { search: "room 0" }) { id teacherAssignments { role teacher { fullName } } } }', { token })
  const room = room0.body.data!.classrooms[0]
  t.same(room.teacherAssignments, [
    { role: 'PRIMARY', teacher: { fullName: 'Cy Charlie' } },
    { role: 'PRIMARY', teacher: { fullName: 'Mo Mike' } },
    { role: 'ASSISTANT', teacher: { fullName: 'Zed Zulu' } }
  ])
  const inRoom = await gql(app, 'query ($id: ID!) { teachers(filter: { classroomId: $id, status: ACTIVE }, orderBy: { field: GIVEN_NAME, direction: DESC }) { fullName } }', { token, variables: { id: room.id } })
  t.same(inRoom.body.data!.teachers, [{ fullName: 'Zed Zulu' }, { fullName: 'Mo Mike' }])
  const rooms = await gql(app, '{ classroomsPage(limit: 2, orderBy: { field: NAME, direction: DESC }) { nodes { name } pageInfo { hasNextPage } } }', { token })
  t.same(rooms.body.data!.classroomsPage, { nodes: [{ name: 'Room Three' }, { name: 'Room 1' }], pageInfo: { hasNextPage: true } })
})

/**
 * The plan of `statement` as run (EXPLAIN ANALYZE): every node, and the task count of each
 * distributed job. On a Citus coordinator the plan is Citus's, with each task's plan on its worker
 * inside: a school's read must be one task (one shard, the school's), and that task's plan is
 * checked as PostgreSQL's.
 */
async function explain (owner: pg.Client, statement: { sql: string, params: unknown[] }): Promise<{ nodes: any[], tasks: number[] }> {
  const { rows } = await owner.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.sql}`, statement.params)
  const nodes: any[] = []
  const tasks: number[] = []
  const visit = (node: any): void => {
    nodes.push(node)
    for (const child of node.Plans ?? []) visit(child)
    const job = node['Distributed Query']?.Job
    if (job !== undefined) {
      tasks.push(job['Task Count'])
      for (const task of job.Tasks ?? []) for (const remote of task['Remote Plan'] ?? []) for (const plan of remote) visit(plan.Plan)
    }
  }
  visit(rows[0]['QUERY PLAN'][0].Plan)
  return { nodes, tasks }
}

/** A shard's relations and indexes carry its number on Citus (students_102008): named as the table's. */
const unshardedName = (citus: boolean) => (name: string | undefined): string | undefined => citus ? name?.replace(/_\d+$/, '') : name

t.test('a page deep in 100,000 students is an index range scan that reads only the page (no OFFSET)', {
  skip: serverUrl === undefined ? 'PostgreSQL only: EXPLAIN of a 100,000-student school (TEST_DATABASE_URL)' : false
}, async (t) => {
  const db = await testDatabase()
  const seeded = await seedSchool('Huge School')
  const owner = new pg.Client({ connectionString: db.ownerUrl })
  await owner.connect()
  t.teardown(() => owner.end())
  await owner.query(`
    INSERT INTO students (school_id, id, given_name, family_name, updated_at)
    SELECT $1, gen_random_uuid(), 'Given ' || (i % 97), 'Family ' || lpad((i % 5000)::text, 5, '0'), now()
    FROM generate_series(1, 100000) AS i`, [seeded.schoolId])
  await owner.query('ANALYZE students')

  // The statement the resolver sends (src/records/lists.ts), run through a school client of this database.
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: db.ownerUrl }) })
  t.teardown(() => prisma.$disconnect())
  const scoped = schoolClient(prisma, seeded.schoolId)
  const orderBy = { field: 'FAMILY_NAME' as const, direction: 'ASC' as const }
  const read = async (after: string | null) => {
    const plan = planPage(STUDENTS.spec, { limit: 100, after, orderBy })
    const { statement: built, values } = listRead({
      model: 'Student',
      fields: ['fullName', ...plan.keyset.fields],
      conditions: STUDENTS.conditions(null),
      order: plan.keyset.fields,
      descending: plan.keyset.descending,
      after: plan.keyset.after,
      take: plan.take + 1,
      reach: 'school'
    })
    const rows = await scoped.$queryRawUnsafe<Array<{ id: string }>>(built.sql, ...values)
    return { rows, plan, statement: { sql: built.sql, params: [seeded.schoolId, ...values] } }
  }
  // A cursor three quarters of the way down: the 75,000th student in this order.
  const [deep] = (await owner.query(`SELECT family_name, given_name, id FROM students WHERE school_id = $1
    ORDER BY family_name, given_name, id OFFSET 74999 LIMIT 1`, [seeded.schoolId])).rows
  const cursor = planPage(STUDENTS.spec, { orderBy }).cursorOf({ familyName: deep.family_name, givenName: deep.given_name, id: deep.id })
  const first = await read(null)
  const page = await read(cursor)
  t.equal(page.rows.length, 101)
  const expected = (await owner.query(`SELECT id FROM students WHERE school_id = $1
    ORDER BY family_name, given_name, id OFFSET 75000 LIMIT 101`, [seeded.schoolId])).rows.map((r) => r.id)
  t.same(page.rows.map((r) => r.id), expected, 'the page after the cursor')
  t.notMatch(page.statement.sql, /OFFSET/i, 'no OFFSET in the statement')

  const unsharded = unshardedName(db.citus)
  for (const [name, statement] of [['first page', first.statement], ['deep page', page.statement]] as const) {
    const { nodes, tasks } = await explain(owner, statement)
    if (db.citus) t.same(tasks, [1], `${name}: one task on Citus, routed to the school's shard`)
    const scan = nodes.find((n) => unsharded(n['Relation Name']) === 'students')
    t.match(scan?.['Node Type'], /^Index (Only )?Scan$/, `${name}: an index scan of students`)
    t.equal(unsharded(scan?.['Index Name']), 'students_school_id_family_name_given_name_id_idx', `${name}: on the index of the order`)
    t.notOk(nodes.some((n) => n['Node Type'] === 'Sort'), `${name}: no sort`)
    const read = (scan?.['Actual Rows'] ?? 0) + (scan?.['Rows Removed by Filter'] ?? 0)
    t.ok(read <= 101 + 20, `${name}: reads ${read} index entries for a page of 101 (ties of the cursor's family name at most 20)`)
    if (name === 'deep page') t.match(scan?.['Index Cond'], /family_name >= /, 'the scan starts at the cursor')
  }
})

t.test('a teacher\'s page reads the classroom of the page\'s students only, after its LIMIT', {
  skip: serverUrl === undefined ? 'PostgreSQL only: EXPLAIN ANALYZE (TEST_DATABASE_URL)' : false
}, async (t) => {
  const db = await testDatabase()
  const seeded = await seedSchool('Plan School')
  const teacherId = await createTeacher(db, { schoolId: seeded.schoolId, fullName: 'Page Teacher' })
  for (const room of ['Room 01', 'Room 21']) await createClassroomAssignment(db, seeded.schoolId, teacherId, room)
  const owner = new pg.Client({ connectionString: db.ownerUrl })
  await owner.connect()
  t.teardown(() => owner.end())
  // 40 classrooms, the teacher's two among them, and 2,000 students spread over them by id (as
  // the bench's schools): her 100 are read by classroom and sorted for the page.
  await owner.query(`INSERT INTO classrooms (school_id, id, name, updated_at)
    SELECT $1, gen_random_uuid(), 'Room ' || lpad(i::text, 2, '0'), now() FROM generate_series(1, 40) AS i WHERE i NOT IN (1, 21)`, [seeded.schoolId])
  await owner.query(`
    INSERT INTO students (school_id, id, given_name, family_name, classroom_id, updated_at)
    SELECT $1, gen_random_uuid(), 'Given ' || i, 'Family ' || i, (SELECT array_agg(id ORDER BY name) FROM classrooms WHERE school_id = $1)[1 + i % 40], now()
    FROM generate_series(1, 2000) AS i`, [seeded.schoolId])
  // And the school's other teachers, two classrooms each, as its assignments' statistics.
  await owner.query('INSERT INTO teachers (school_id, id, full_name, updated_at) SELECT $1, gen_random_uuid(), \'Teacher \' || i, now() FROM generate_series(1, 60) AS i', [seeded.schoolId])
  await owner.query(`INSERT INTO teacher_classrooms (school_id, teacher_id, classroom_id)
    SELECT t.school_id, t.id, c.id FROM (SELECT *, row_number() OVER (ORDER BY id) AS n FROM teachers WHERE school_id = $1 AND id <> $2) t
    JOIN (SELECT *, row_number() OVER (ORDER BY name) AS n FROM classrooms WHERE school_id = $1) c ON c.n IN (1 + t.n % 40, 1 + (t.n + 20) % 40)`, [seeded.schoolId, teacherId])
  await owner.query('ANALYZE students, classrooms, teachers, teacher_classrooms')
  const { statement, values } = listRead({
    model: 'Student', fields: ['fullName'], classroom: ['name'], conditions: [], order: ['id'], descending: false, take: 20, reach: 'teacher'
  })
  const { nodes, tasks } = await explain(owner, { sql: statement.sql, params: [seeded.schoolId, teacherId, ...values] })
  if (db.citus) t.same(tasks, [1], 'one task on Citus, routed to the school\'s shard')
  const unsharded = unshardedName(db.citus)
  const below = (node: any): any[] => (node.Plans ?? []).flatMap((child: any) => [child, ...below(child)])
  const sorts = nodes.filter((n) => n['Node Type'] === 'Sort')
  // PostgreSQL's plan of this school in this database (after the 100,000 students above) reads her
  // students by classroom and sorts them: a join would read the 100 classrooms before the sort.
  // Another plan (a Citus shard's, or other statistics) reads her students in the page's order
  // and stops at the LIMIT with a join or a subquery alike: the assertions hold for every plan.
  if (sorts.length === 0) t.comment('this plan reads her students in the page\'s order (no sort)')
  t.notOk(sorts.some((sort) => below(sort).some((n) => unsharded(n['Relation Name']) === 'classrooms')), 'no classroom is read before the sort')
  const classrooms = nodes.filter((n) => unsharded(n['Relation Name']) === 'classrooms').reduce((sum, n) => sum + n['Actual Rows'] * n['Actual Loops'], 0)
  t.equal(classrooms, 20, 'the classroom is read for the page\'s 20 students only')
  const rows = await db.forSchool(seeded.schoolId, { teacherId }).$queryRawUnsafe<Array<{ 'classroom.name': string }>>(statement.sql, ...values)
  t.equal(rows.length, 20, 'the page')
  t.ok(rows.every((row) => row['classroom.name'] === 'Room 01' || row['classroom.name'] === 'Room 21'), 'each with its classroom, one of hers')
})

t.test('a name search finds % and _ literally', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const seeded = await seedSchool('Wildcard School')
  const percent = await createStudent(db, { schoolId: seeded.schoolId, givenName: '100%', familyName: 'Pure' })
  const underscore = await createStudent(db, { schoolId: seeded.schoolId, givenName: 'snake_case', familyName: 'Name' })
  await createStudent(db, { schoolId: seeded.schoolId, givenName: 'Plain', familyName: 'Name' })
  const { accessToken: token } = await login(app, seeded.username)
  const ask = async (search: string) => (await gql(app, 'query ($s: String) { students(filter: { search: $s }) { id } }', { token, variables: { s: search } }))
    .body.data!.students.map((s: { id: string }) => s.id)
  t.same(await ask('%'), [percent])
  t.same(await ask('0% p'), [percent])
  t.same(await ask('_'), [underscore])
  t.same(await ask('e_c'), [underscore])
})
