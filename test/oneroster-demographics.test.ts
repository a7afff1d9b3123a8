// OneRoster 1.2's demographics over REST (GET /demographics, /demographics/{sourcedId}): the
// students' and teachers' demographics (kept on the user, typed-reads.ts DEMOGRAPHIC_COLUMNS), one
// collection in one order (the two tables merged), in 1EdTech's
// DemographicsDType, only for a caller holding roster-demographics.readonly (a roster.readonly or
// roster-core.readonly client and a teacher are refused, as a teacher is refused a date of birth in
// GraphQL); filter, sort, fields and paging as the other collections; 404 unknownobject for a
// student or teacher without demographics or an unknown sourcedId; the access audit of the students
// and teachers handed over; every answer validated against the served OpenAPI description.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { createClassroomAssignment } from './fixtures.js'
import { build, gql, testDatabase, unique } from './helper.js'
import { clientToken, seedClient } from './fixtures/oauth.js'
import { schoolCallers } from './oneroster/callers.js'
import { type Answer, checkedAnswers, refused } from './oneroster/answers.js'
import { auditRows } from './fixtures/audit.js'

interface School {
  schoolId: string
  admin: string
  teacher: string
  core: string
  full: string
  demographics: string
  /** roster.readonly and roster-demographics.readonly. */
  both: string
}

/**
 * A school of four students: s-1 (every demographic field), s-2 (a few), s-3 (a date of birth only)
 * and s-4 (none: no demographics record); a teacher tea-1 (a date of birth, sex and city of birth)
 * who teaches Room 1 (s-1, s-2), and a teacher tea-2 without demographics.
 */
async function school (app: FastifyInstance): Promise<School> {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Demographics School'))
  await createStudent(db, { schoolId, fullName: 'Ada One', sourcedId: 's-1', classroom: 'Room 1' })
  await createStudent(db, { schoolId, fullName: 'Ben Two', sourcedId: 's-2', classroom: 'Room 1' })
  await createStudent(db, { schoolId, fullName: 'Cy Three', sourcedId: 's-3', classroom: 'Room 2' })
  await createStudent(db, { schoolId, fullName: 'Di Four', sourcedId: 's-4', classroom: 'Room 2' })
  const tenant = db.forSchool(schoolId)
  await tenant.student.updateMany({
    where: { sourcedId: 's-1' },
    data: {
      dateOfBirth: new Date('2015-03-09T00:00:00Z'),
      sex: 'female',
      americanIndianOrAlaskaNative: false,
      asian: true,
      blackOrAfricanAmerican: false,
      nativeHawaiianOrOtherPacificIslander: false,
      white: true,
      demographicRaceTwoOrMoreRaces: true,
      hispanicOrLatinoEthnicity: false,
      countryOfBirthCode: 'US',
      stateOfBirthAbbreviation: 'NY',
      cityOfBirth: 'Albany',
      publicSchoolResidenceStatus: '01652'
    }
  })
  await tenant.student.updateMany({ where: { sourcedId: 's-2' }, data: { sex: 'male', white: false, hispanicOrLatinoEthnicity: true } })
  await tenant.student.updateMany({ where: { sourcedId: 's-3' }, data: { dateOfBirth: new Date('2016-07-01T00:00:00Z') } })
  const teacherId = await createTeacher(db, { schoolId, fullName: 'Ms One', sourcedId: 'tea-1' })
  await createClassroomAssignment(db, schoolId, teacherId, 'Room 1')
  await tenant.teacher.updateMany({ where: { sourcedId: 'tea-1' }, data: { dateOfBirth: new Date('1980-05-05T00:00:00Z'), sex: 'female', cityOfBirth: 'Boston' } })
  await createTeacher(db, { schoolId, fullName: 'Mr Two', sourcedId: 'tea-2' })
  return {
    schoolId,
    ...await schoolCallers(app, db, schoolId, teacherId, 'demo'),
    both: await clientToken(app, await seedClient(schoolId, ['roster.readonly', 'roster-demographics.readonly']))
  }
}

/** Every answer of this file is validated against the service's OpenAPI description. */
const answers = checkedAnswers()
const { get, invalid } = answers

const ids = (res: Answer): string[] => (res.body.demographics as Array<{ sourcedId: string }>).map((record) => record.sourcedId)

t.test('the demographics of the students and teachers that have any, every field the model keeps', async (t) => {
  const app = await build(t)
  const s = await school(app)

  const all = await get(app, '/demographics', s.demographics)
  t.equal(all.statusCode, 200)
  t.equal(all.headers['x-total-count'], '4', 'a student or teacher without demographics has no record')
  t.same(ids(all).sort(), ['s-1', 's-2', 's-3', 'tea-1'])
  const one = (await get(app, '/demographics/s-1', s.demographics)).body.demographics
  t.same(one, {
    sourcedId: 's-1',
    status: 'active',
    dateLastModified: one.dateLastModified,
    birthDate: '2015-03-09',
    sex: 'female',
    americanIndianOrAlaskaNative: 'false',
    asian: 'true',
    blackOrAfricanAmerican: 'false',
    nativeHawaiianOrOtherPacificIslander: 'false',
    white: 'true',
    demographicRaceTwoOrMoreRaces: 'true',
    hispanicOrLatinoEthnicity: 'false',
    countryOfBirthCode: 'US',
    stateOfBirthAbbreviation: 'NY',
    cityOfBirth: 'Albany',
    publicSchoolResidenceStatus: '01652'
  }, "in 1EdTech's names, the flags as 'true' or 'false'")
  t.match(one.dateLastModified, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
  const two = (await get(app, '/demographics/s-2?fields=sourcedId,sex,white,hispanicOrLatinoEthnicity,birthDate', s.demographics)).body.demographics
  t.same(two, { sourcedId: 's-2', sex: 'male', white: 'false', hispanicOrLatinoEthnicity: 'true' }, 'fields without a value are left out; fields selects')

  const teacher = (await get(app, '/demographics/tea-1', s.demographics)).body.demographics
  t.same(teacher, { sourcedId: 'tea-1', status: 'active', dateLastModified: teacher.dateLastModified, birthDate: '1980-05-05', sex: 'female', cityOfBirth: 'Boston' }, "a teacher's demographics, by her sourcedId")
  refused(t, await get(app, '/demographics/s-4', s.demographics), 404, 'unknownobject', 'a student without demographics')
  refused(t, await get(app, '/demographics/tea-2', s.demographics), 404, 'unknownobject', 'a teacher without demographics')
  refused(t, await get(app, '/demographics/nobody', s.demographics), 404, 'unknownobject', 'an unknown sourcedId')
  t.match((await get(app, '/demographics/nobody', s.demographics)).body.imsx_description, /^Unknown Object: no demographics with sourcedId nobody$/)
})

t.test('filter, sort, fields and paging as the other collections', async (t) => {
  const app = await build(t)
  const s = await school(app)

  t.same(ids(await get(app, `/demographics?filter=${encodeURIComponent("sex='female'")}&sort=sourcedId`, s.demographics)), ['s-1', 'tea-1'], "a filter holds for the students' and the teachers'")
  t.same(ids(await get(app, `/demographics?filter=${encodeURIComponent("white='false'")}`, s.demographics)), ['s-2'])
  t.same(ids(await get(app, `/demographics?filter=${encodeURIComponent("white!='true'")}&sort=sourcedId`, s.demographics)), ['s-2', 's-3', 'tea-1'], '!= keeps the records without a value')
  t.same(ids(await get(app, `/demographics?filter=${encodeURIComponent("birthDate>='2016-01-01'")}`, s.demographics)), ['s-3'])
  t.same(ids(await get(app, `/demographics?filter=${encodeURIComponent("birthDate<'2000-01-01'")}`, s.demographics)), ['tea-1'])
  t.same(ids(await get(app, `/demographics?filter=${encodeURIComponent("cityOfBirth~'alb' OR sex='male'")}&sort=sourcedId&orderBy=desc`, s.demographics)), ['s-2', 's-1'])
  t.same(ids(await get(app, '/demographics?sort=birthDate', s.demographics)), ['tea-1', 's-1', 's-3', 's-2'], 'students and teachers in one order, records without a value last')
  t.same(ids(await get(app, '/demographics?sort=birthDate&orderBy=desc', s.demographics)), ['s-2', 's-3', 's-1', 'tea-1'], 'and its reverse')
  t.same(ids(await get(app, '/demographics?sort=cityOfBirth', s.demographics)), ['s-1', 'tea-1', 's-2', 's-3'], 'Albany, Boston, then none (by id)')

  const first = await get(app, '/demographics?limit=2&sort=sourcedId', s.demographics)
  t.same(ids(first), ['s-1', 's-2'])
  t.equal(first.headers['x-total-count'], '4', "the students' and the teachers' counted")
  t.match(String(first.headers.link), /sort=sourcedId&offset=2>; rel="next"/)
  const second = await get(app, '/demographics?limit=2&offset=2&sort=sourcedId', s.demographics)
  t.same(ids(second), ['s-3', 'tea-1'], 'a page holds students and teachers in the order asked')
  t.equal(second.headers['x-total-count'], '4')
  t.match(String(second.headers.link), /offset=0&sort=sourcedId>; rel="prev"/)
  const pages: string[] = []
  for (let offset = 0; offset < 5; offset++) pages.push(...ids(await get(app, `/demographics?limit=1&offset=${offset}&sort=birthDate&orderBy=desc`, s.demographics)))
  t.same(pages, ['s-2', 's-3', 's-1', 'tea-1'], 'pages of one neither overlap nor skip')
  t.same((await get(app, '/demographics?offset=10', s.demographics)).body, { demographics: [] }, 'past the end: an empty page')
  const filtered = await get(app, `/demographics?filter=${encodeURIComponent("sex='female'")}&limit=1`, s.demographics)
  t.equal(filtered.headers['x-total-count'], '2', 'X-Total-Count counts the filtered records of both tables')

  t.same((await get(app, '/demographics?fields=sourcedId,birthDate&sort=sourcedId', s.demographics)).body.demographics,
    [{ sourcedId: 's-1', birthDate: '2015-03-09' }, { sourcedId: 's-2' }, { sourcedId: 's-3', birthDate: '2016-07-01' }, { sourcedId: 'tea-1', birthDate: '1980-05-05' }])

  refused(t, await get(app, `/demographics?filter=${encodeURIComponent("white='yes'")}`, s.demographics), 400, 'invalid_filter_field', 'a flag compared with another value')
  refused(t, await get(app, `/demographics?filter=${encodeURIComponent("givenName='Ada'")}`, s.demographics), 400, 'invalid_filter_field', 'a field of users, not of demographics')
  refused(t, await get(app, '/demographics?sort=shoeSize', s.demographics), 400, 'invalid_filter_field', 'a sort on an unknown field')
  refused(t, await get(app, '/demographics?fields=sourcedId,givenName', s.demographics), 400, 'invalid_selection_field', 'fields naming a field of users')
  refused(t, await get(app, '/demographics?limit=0', s.demographics), 400, 'invaliddata', 'a bad limit')
})

t.test('only a caller holding roster-demographics.readonly reads demographics; a teacher is refused as in GraphQL', async (t) => {
  const app = await build(t)
  const s = await school(app)

  for (const [who, token] of [['administrator', s.admin], ['roster-demographics.readonly', s.demographics], ['roster.readonly and demographics', s.both]] as const) {
    t.same(ids(await get(app, '/demographics?sort=sourcedId', token)), ['s-1', 's-2', 's-3', 'tea-1'], `${who}: the demographics`)
    t.equal((await get(app, '/demographics/s-1', token)).statusCode, 200, `${who}: one record`)
    t.equal((await get(app, '/demographics/tea-1', token)).statusCode, 200, `${who}: a teacher's`)
  }
  for (const [who, token] of [['roster.readonly', s.full], ['roster-core.readonly', s.core], ['a teacher', s.teacher]] as const) {
    for (const path of ['/demographics', '/demographics/s-1', '/demographics/tea-1']) {
      const res = await get(app, path, token)
      refused(t, res, 403, 'forbidden', `${who}: ${path}`)
      t.match(res.body.imsx_description, /roster-demographics\.readonly/, `${who}: the refusal names the scope`)
    }
  }
  refused(t, await get(app, '/demographics'), 401, 'unauthorisedrequest', 'no token')

  // The teacher's rule is GraphQL's: a date of birth is outside her scopes there too.
  const graphql = await gql(app, '{ students(limit: 5) { dateOfBirth } }', { token: s.teacher })
  t.match(graphql.body.errors?.[0]?.extensions, { code: 'FORBIDDEN' }, "GraphQL refuses the teacher her students' dates of birth")
  // A roster.readonly client reads users, never a demographic column through them.
  t.notOk('birthDate' in (await get(app, '/users/s-1', s.both)).body.user, 'UserDType has no demographics')
  t.notOk('sex' in (await get(app, '/users/tea-1', s.both)).body.user, "nor a teacher's")
  // Nor does the teacher read her own through the users: her role holds no demographics scope.
  const herself = await get(app, '/teachers/tea-1', s.teacher)
  t.equal(herself.statusCode, 200)
  t.notOk('birthDate' in herself.body.user || 'sex' in herself.body.user, 'the teacher reads her own user record, no demographics')
})

t.test('reads of demographics are written to the access audit as reads of students and teachers', async (t) => {
  const app = await build(t)
  const s = await school(app)
  t.equal((await get(app, '/demographics', s.demographics)).statusCode, 200)
  t.equal((await get(app, '/demographics/s-3', s.admin)).statusCode, 200)
  t.equal((await get(app, '/demographics/tea-1', s.admin)).statusCode, 200)
  refused(t, await get(app, '/demographics/s-4', s.admin), 404, 'unknownobject', 'none handed over')
  await app.audit.flush()
  // The two tables of /demographics are read at once: their rows in either order.
  const rows = (await auditRows(await testDatabase(), s.schoolId)).sort((a, b) => `${String(a.operation)} ${String(a.record_type)}`.localeCompare(`${String(b.operation)} ${String(b.record_type)}`))
  t.match(rows, [
    { operation: 'getAllDemographics', record_type: 'Student', record_count: 3, action: 'read', user_id: null },
    { operation: 'getAllDemographics', record_type: 'Teacher', record_count: 1, action: 'read', user_id: null },
    { operation: 'getDemographics', record_type: 'Student', record_count: 1, action: 'read', client_id: null },
    { operation: 'getDemographics', record_type: 'Teacher', record_count: 1, action: 'read', client_id: null }
  ], 'the students and teachers whose demographics were handed over')
  t.equal(rows.length, 4, 'a 404 hands over nothing')
})

t.test('every answer of this file validates against the OpenAPI description (src/oneroster/openapi.ts)', async (t) => {
  t.ok(answers.count() > 30, `${answers.count()} answers`)
  t.same(invalid, [], 'collections, single records and refusals')
})
