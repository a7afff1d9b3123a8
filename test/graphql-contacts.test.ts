// A student's contacts (guardians, parents, relatives: the OneRoster import's agents) in the
// GraphQL API: `contacts`, `contactsPage`, `contact` and `Student.contacts` for an administrator and
// for clients (names core, email/phone/sms roster.readonly, as REST's /users), the lists' filters,
// orders, paging and limits as `students`', a student's contacts read in one statement per page of
// students, and a teacher refused every way to them before anything runs (docs/decisions.md
// "A student's agents").
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.js'
import { createSchool } from '../src/admin/schools.js'
import type { Database } from '../src/db/client.js'
import { registeredStatement } from '../src/db/typed-reads.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { createClassroomAssignment } from './fixtures.js'
import { build, gql, testConfig, testDatabase, unique } from './helper.js'
import { schoolCallers, type SchoolCallers } from './oneroster/callers.js'

interface School extends SchoolCallers { schoolId: string, students: Record<string, string>, contacts: Record<string, string> }

/**
 * A school of three students (s-1 in Room 1, s-2 in Room 2, s-3 with no contact), a teacher of
 * Room 1, a guardian g-1 of s-1 and s-2, an inactive parent p-1 of s-1 and a relative r-1 of s-2,
 * created in that order; and another school whose guardian g-1 (a colliding sourcedId) is of its
 * own student s-1.
 */
async function school (app: FastifyInstance): Promise<School> {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Contacts School'))
  const students: Record<string, string> = {}
  students['s-1'] = await createStudent(db, { schoolId, fullName: 'Ada One', givenName: 'Ada', familyName: 'One', sourcedId: 's-1', classroom: 'Room 1' })
  students['s-2'] = await createStudent(db, { schoolId, fullName: 'Ben Two', givenName: 'Ben', familyName: 'Two', sourcedId: 's-2', classroom: 'Room 2' })
  students['s-3'] = await createStudent(db, { schoolId, fullName: 'Cy Three', givenName: 'Cy', familyName: 'Three', sourcedId: 's-3', classroom: 'Room 1' })
  const teacherId = await createTeacher(db, { schoolId, fullName: 'Mary Teach', givenName: 'Mary', familyName: 'Teach', sourcedId: 'tea-1' })
  await createClassroomAssignment(db, schoolId, teacherId, 'Room 1')
  const tenant = db.forSchool(schoolId)
  const contacts: Record<string, string> = {}
  contacts['g-1'] = (await tenant.agent.create({
    data: {
      schoolId,
      sourcedId: 'g-1',
      role: 'guardian',
      givenName: 'Gia',
      familyName: 'Zed',
      email: 'gia@example.org',
      phone: '555-0100',
      sms: '555-0101',
      studentIds: [students['s-1'], students['s-2']]
    },
    select: { id: true }
  })).id
  contacts['p-1'] = (await tenant.agent.create({
    data: { schoolId, sourcedId: 'p-1', role: 'parent', givenName: 'Pia', familyName: 'Adams', status: 'INACTIVE', studentIds: [students['s-1']] },
    select: { id: true }
  })).id
  contacts['r-1'] = (await tenant.agent.create({
    data: { schoolId, sourcedId: 'r-1', role: 'relative', givenName: 'Rex', familyName: 'Moss', preferredName: 'Rexy', studentIds: [students['s-2']] },
    select: { id: true }
  })).id
  const otherId = await createSchool(db, unique('Other Contacts School'))
  const otherStudent = await createStudent(db, { schoolId: otherId, fullName: 'Ada One', sourcedId: 's-1' })
  await db.forSchool(otherId).agent.create({
    data: { schoolId: otherId, sourcedId: 'g-1', role: 'guardian', givenName: 'Other', familyName: 'Guardian', email: 'other@example.org', studentIds: [otherStudent] }
  })
  return { schoolId, students, contacts, ...await schoolCallers(app, db, schoolId, teacherId, 'contacts') }
}

const CONTACT = 'id sourcedId role givenName familyName preferredName email phone sms status version'

t.test('an administrator reads contacts, a contact by id, a student\'s contacts and a contact\'s students', async (t) => {
  const app = await build(t)
  const s = await school(app)

  const all = await gql(app, `{ contacts { ${CONTACT} createdAt updatedAt students { sourcedId } } }`, { token: s.admin })
  t.notOk(all.body.errors)
  const contacts = all.body.data!.contacts as Array<Record<string, unknown>>
  t.same(contacts.map((contact) => contact.sourcedId), ['g-1', 'p-1', 'r-1'], 'the school\'s contacts in creation order, never the other school\'s')
  t.same(contacts[0], {
    id: s.contacts['g-1'],
    sourcedId: 'g-1',
    role: 'GUARDIAN',
    givenName: 'Gia',
    familyName: 'Zed',
    preferredName: null,
    email: 'gia@example.org',
    phone: '555-0100',
    sms: '555-0101',
    status: 'ACTIVE',
    version: 1,
    createdAt: contacts[0]!.createdAt,
    updatedAt: contacts[0]!.updatedAt,
    students: [{ sourcedId: 's-1' }, { sourcedId: 's-2' }]
  })
  t.match(contacts[0]!.createdAt, /^\d{4}-\d\d-\d\dT/)
  t.same(contacts.map((contact) => [contact.role, contact.status]), [['GUARDIAN', 'ACTIVE'], ['PARENT', 'INACTIVE'], ['RELATIVE', 'ACTIVE']])

  const one = await gql(app, 'query ($id: ID!) { contact(id: $id) { sourcedId preferredName students { fullName classroomName } } }', { token: s.admin, variables: { id: s.contacts['r-1'] } })
  t.same(one.body, { data: { contact: { sourcedId: 'r-1', preferredName: 'Rexy', students: [{ fullName: 'Ben Two', classroomName: 'Room 2' }] } } })
  const missing = await gql(app, 'query ($id: ID!) { contact(id: $id) { id } }', { token: s.admin, variables: { id: s.students['s-1'] } })
  t.same(missing.body, { data: { contact: null } }, 'a student\'s id names no contact')
  const bad = await gql(app, '{ contact(id: "not-a-uuid") { id } }', { token: s.admin })
  t.equal(bad.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT')

  const students = await gql(app, '{ students(orderBy: { field: FAMILY_NAME }) { sourcedId contacts { sourcedId familyName } } }', { token: s.admin })
  t.same(students.body.data!.students, [
    { sourcedId: 's-1', contacts: [{ sourcedId: 'p-1', familyName: 'Adams' }, { sourcedId: 'g-1', familyName: 'Zed' }] },
    { sourcedId: 's-3', contacts: [] },
    { sourcedId: 's-2', contacts: [{ sourcedId: 'r-1', familyName: 'Moss' }, { sourcedId: 'g-1', familyName: 'Zed' }] }
  ], 'each student\'s contacts by family name; none for a student without one')
})

t.test('contacts filter by student, role, status and name, order as students, and page by cursor', async (t) => {
  const app = await build(t)
  const s = await school(app)
  const sourcedIds = async (args: string, variables: Record<string, unknown> = {}): Promise<unknown> => {
    const res = await gql(app, `query ${args.includes('$student') ? '($student: ID) ' : ''}{ contacts${args} { sourcedId } }`, { token: s.admin, variables })
    t.notOk(res.body.errors, args)
    return (res.body.data!.contacts as Array<{ sourcedId: string }>).map((contact) => contact.sourcedId)
  }
  t.same(await sourcedIds('(filter: { studentId: $student })', { student: s.students['s-1'] }), ['g-1', 'p-1'])
  t.same(await sourcedIds('(filter: { studentId: $student })', { student: s.students['s-3'] }), [])
  t.same(await sourcedIds('(filter: { role: GUARDIAN })'), ['g-1'])
  t.same(await sourcedIds('(filter: { role: RELATIVE, studentId: $student })', { student: s.students['s-2'] }), ['r-1'])
  t.same(await sourcedIds('(filter: { status: INACTIVE })'), ['p-1'])
  t.same(await sourcedIds('(filter: { search: "rex" })'), ['r-1'], 'the preferred name too')
  t.same(await sourcedIds('(filter: { search: "ZE" })'), ['g-1'])
  t.same(await sourcedIds('(orderBy: { field: FAMILY_NAME })'), ['p-1', 'r-1', 'g-1'])
  t.same(await sourcedIds('(orderBy: { field: GIVEN_NAME, direction: DESC })'), ['r-1', 'p-1', 'g-1'])
  t.same(await sourcedIds('(limit: 2)'), ['g-1', 'p-1'])
  t.same(await sourcedIds('(limit: 0)'), [])

  const badStudent = await gql(app, '{ contacts(filter: { studentId: "nope" }) { id } }', { token: s.admin })
  t.equal(badStudent.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT')
  t.equal((await gql(app, '{ contacts(limit: 1001) { id } }', { token: s.admin })).body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT')
  t.equal((await gql(app, '{ contacts(filter: { search: "" }) { id } }', { token: s.admin })).body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT')

  const PAGE = 'query ($after: String) { contactsPage(limit: 2, after: $after, orderBy: { field: FAMILY_NAME }) { nodes { sourcedId } pageInfo { endCursor hasNextPage } } }'
  const first = (await gql(app, PAGE, { token: s.admin })).body.data!.contactsPage
  t.same(first.nodes, [{ sourcedId: 'p-1' }, { sourcedId: 'r-1' }])
  t.equal(first.pageInfo.hasNextPage, true)
  const second = (await gql(app, PAGE, { token: s.admin, variables: { after: first.pageInfo.endCursor } })).body.data!.contactsPage
  t.same(second, { nodes: [{ sourcedId: 'g-1' }], pageInfo: { endCursor: second.pageInfo.endCursor, hasNextPage: false } })

  // A students' cursor is not a contacts' one.
  const studentsPage = (await gql(app, '{ studentsPage(limit: 1) { pageInfo { endCursor } } }', { token: s.admin })).body.data!.studentsPage
  const foreign = await gql(app, 'query ($after: String) { contacts(after: $after) { id } }', { token: s.admin, variables: { after: studentsPage.pageInfo.endCursor } })
  t.equal(foreign.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT')
})

t.test('a roster-core.readonly client reads contacts\' names but is refused their email, phone and sms; roster.readonly reads them', async (t) => {
  const app = await build(t)
  const s = await school(app)
  const names = await gql(app, '{ contacts { sourcedId role givenName familyName status students { sourcedId } } }', { token: s.core })
  t.notOk(names.body.errors)
  t.same((names.body.data!.contacts as Array<{ sourcedId: string }>).map((contact) => contact.sourcedId), ['g-1', 'p-1', 'r-1'])
  const nested = await gql(app, '{ students { contacts { familyName } } }', { token: s.core })
  t.notOk(nested.body.errors, 'Student.contacts is core')

  for (const field of ['email', 'phone', 'sms']) {
    const refused = await gql(app, `{ contacts { id ${field} } }`, { token: s.core })
    t.equal(refused.body.errors?.[0]?.extensions?.code, 'FORBIDDEN', field)
    t.same(refused.body.errors?.[0]?.extensions?.fields, [{ field: `Contact.${field}`, needs: 'roster.readonly' }])
    t.notOk(refused.body.data, 'refused before it ran')
  }
  const viaStudent = await gql(app, '{ students { contacts { email } } }', { token: s.core })
  t.equal(viaStudent.body.errors?.[0]?.extensions?.code, 'FORBIDDEN')

  const full = await gql(app, '{ contacts(filter: { role: GUARDIAN }) { email phone sms } }', { token: s.full })
  t.same(full.body, { data: { contacts: [{ email: 'gia@example.org', phone: '555-0100', sms: '555-0101' }] } })
  const demographics = await gql(app, '{ contacts { id } }', { token: s.demographics })
  t.equal(demographics.body.errors?.[0]?.extensions?.code, 'FORBIDDEN', 'demographics alone grant no roster')
})

t.test('a teacher is refused every way to contacts before anything runs, and still reads her students', async (t) => {
  const app = await build(t)
  const s = await school(app)
  const operations: Array<[query: string, field: string, variables?: Record<string, unknown>]> = [
    ['{ contacts { id } }', 'Query.contacts'],
    ['{ contactsPage { nodes { id } } }', 'Query.contactsPage'],
    ['query ($id: ID!) { contact(id: $id) { id } }', 'Query.contact', { id: s.contacts['g-1'] }],
    ['{ students { id contacts { id } } }', 'Student.contacts'],
    ['{ classrooms { students { ...withContacts } } } fragment withContacts on Student { contacts { givenName } }', 'Student.contacts'],
    ['{ mine: students { id } c: contacts(limit: 0) { id } }', 'Query.contacts']
  ]
  for (const [query, field, variables] of operations) {
    const res = await gql(app, query, { token: s.teacher, ...(variables !== undefined && { variables }) })
    t.equal(res.body.errors?.length, 1, query)
    const [error] = res.body.errors!
    t.equal(error!.extensions?.code, 'FORBIDDEN', query)
    t.match(error!.message, /a teacher reads no contact/)
    t.same((error!.extensions?.fields as Array<{ field: string }>).map((f) => f.field), [field])
    t.notOk(res.body.data, 'nothing ran')
  }
  const students = await gql(app, '{ students { sourcedId } }', { token: s.teacher })
  t.same(students.body, { data: { students: [{ sourcedId: 's-1' }, { sourcedId: 's-3' }] } }, 'her class, without contacts')
})

/**
 * The database `db` with each school client counting the typed statements run through it, by the
 * model each reads (what a resolver asks of the database).
 */
function counting (db: Database): { database: Database, statements: string[] } {
  const statements: string[] = []
  const clients = new WeakMap<object, unknown>()
  const wrap = (client: object): unknown => {
    let proxy = clients.get(client)
    if (proxy === undefined) {
      proxy = new Proxy(client, {
        get (target, property) {
          const value = Reflect.get(target, property, target) as unknown
          if (typeof value !== 'function') return value
          if (property !== '$queryRawUnsafe') return value.bind(target)
          return async (sql: string, ...values: unknown[]) => {
            statements.push(registeredStatement(sql)?.model ?? 'unregistered')
            return await (value as (...args: unknown[]) => Promise<unknown>).call(target, sql, ...values)
          }
        }
      })
      clients.set(client, proxy)
    }
    return proxy
  }
  const database = new Proxy(db, {
    get (target, property) {
      const value = Reflect.get(target, property, target) as unknown
      if (property === 'forSchool') return (...args: Parameters<Database['forSchool']>) => wrap(target.forSchool(...args))
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
  return { database, statements }
}

t.test('a page of students\' contacts, and those contacts\' students, are one statement each', async (t) => {
  const db = await testDatabase()
  const { database, statements } = counting(db)
  const app = await buildApp(testConfig(), { database, logger: false })
  t.teardown(() => app.close())
  const s = await school(app)
  statements.length = 0
  const res = await gql(app, '{ students { sourcedId contacts { sourcedId students { sourcedId } } } }', { token: s.admin })
  t.notOk(res.body.errors)
  t.same(res.body.data!.students, [
    { sourcedId: 's-1', contacts: [{ sourcedId: 'p-1', students: [{ sourcedId: 's-1' }] }, { sourcedId: 'g-1', students: [{ sourcedId: 's-1' }, { sourcedId: 's-2' }] }] },
    { sourcedId: 's-2', contacts: [{ sourcedId: 'r-1', students: [{ sourcedId: 's-2' }] }, { sourcedId: 'g-1', students: [{ sourcedId: 's-1' }, { sourcedId: 's-2' }] }] },
    { sourcedId: 's-3', contacts: [] }
  ])
  t.same(statements, ['Student', 'Agent', 'Student'], 'the students, their contacts in one statement, the contacts\' students in one')
})
