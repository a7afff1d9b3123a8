// The "done when", as a consumer meets it: a school made by the OneRoster import of a
// realistic 1.2 CSV export (a district's export of one school: orgs, a school year with its terms
// and grading periods, courses, a homeroom and scheduled classes, students with their guardians,
// teachers with a secondary role and a role at another school, an aide and a district
// administrator the service does not keep, enrollments, roles, demographics), read by a consumer
// configured with the base URL and a client's id and secret only: a token from /oauth/token with
// the scopes in OneRoster's full form, then every GET path of the served description walked (every
// collection page by page through Link, every record by its sourcedId, every nested collection for
// every parent), and every answer validated against the served OpenAPI description and, when a copy
// is at hand (ONEROSTER_OPENAPI_FILE), against 1EdTech's own file.
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { oneRosterDescription } from '../src/oneroster/openapi.js'
import type { Files } from './fixtures/csv-bundle.js'
import { basic, seedClient, tokenRequest } from './fixtures/oauth.js'
import { importRoster } from './fixtures/roster-import.js'
import { build, testDatabase, unique } from './helper.js'
import { BASE, checkedAnswers, refused } from './oneroster/answers.js'
import { oneEdTechValidator } from './oneroster/validate-1edtech.js'

const oneEdTechFile = process.env.ONEROSTER_OPENAPI_FILE || undefined

const STUDENTS = Array.from({ length: 12 }, (_, i) => `s-${String(i + 1).padStart(2, '0')}`)
const GUARDIANS = ['g-01', 'g-02', 'g-03', 'g-04']

/** What a SIS exports for one school of a district (sch-1 of dist-1). */
function districtExport (): Files {
  const given = ['Ada', 'Alan', 'Grace', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Katherine', 'Radia', 'Shafi', 'Tim', 'Vint']
  return {
    manifest: [['propertyName', 'value'], ['manifest.version', '1.0'], ['oneroster.version', '1.2'],
      ['file.academicSessions', 'bulk'], ['file.categories', 'absent'], ['file.classes', 'bulk'], ['file.classResources', 'absent'],
      ['file.courses', 'bulk'], ['file.courseResources', 'absent'], ['file.demographics', 'bulk'], ['file.enrollments', 'bulk'],
      ['file.lineItemLearningObjectiveIds', 'absent'], ['file.lineItems', 'absent'], ['file.orgs', 'bulk'], ['file.resources', 'absent'],
      ['file.results', 'absent'], ['file.roles', 'bulk'], ['file.userProfiles', 'absent'], ['file.users', 'bulk']],
    orgs: [['sourcedId', 'status', 'dateLastModified', 'name', 'type', 'identifier', 'parentSourcedId'],
      ['dist-1', '', '', 'Springfield District', 'district', 'NCES-0100', ''],
      ['sch-1', '', '', 'Springfield Elementary', 'school', 'NCES-0101', 'dist-1']],
    academicSessions: [['sourcedId', 'status', 'dateLastModified', 'title', 'type', 'startDate', 'endDate', 'parentSourcedId', 'schoolYear'],
      ['y-2027', '', '', '2026-2027', 'schoolYear', '2026-08-20', '2027-06-18', '', '2027'],
      ['t-fall', '', '', 'Fall', 'term', '2026-08-20', '2027-01-15', 'y-2027', '2027'],
      ['t-spring', '', '', 'Spring', 'term', '2027-01-19', '2027-06-18', 'y-2027', '2027'],
      ['gp-1', '', '', 'Quarter 1', 'gradingPeriod', '2026-08-20', '2026-10-23', 't-fall', '2027'],
      ['gp-2', '', '', 'Quarter 2', 'gradingPeriod', '2026-10-26', '2027-01-15', 't-fall', '2027']],
    courses: [['sourcedId', 'status', 'dateLastModified', 'schoolYearSourcedId', 'title', 'courseCode', 'grades', 'orgSourcedId', 'subjects', 'subjectCodes'],
      ['c-hr', '', '', 'y-2027', 'Homeroom 3', 'HR-3', '03', 'sch-1', '', ''],
      ['c-math', '', '', 'y-2027', 'Mathematics 3', 'MATH-3', '03', 'sch-1', 'Mathematics', '52031'],
      ['c-read', '', '', 'y-2027', 'Reading 3', 'ELA-3', '03', 'sch-1', 'English Language Arts', '51031']],
    classes: [['sourcedId', 'status', 'dateLastModified', 'title', 'grades', 'courseSourcedId', 'classCode', 'classType', 'location', 'schoolSourcedId', 'termSourcedIds', 'subjects', 'subjectCodes', 'periods'],
      ['cls-hr', '', '', 'Room 12', '03', 'c-hr', 'HR-3A', 'homeroom', 'Room 12', 'sch-1', 't-fall,t-spring', '', '', ''],
      ['cls-math', '', '', 'Mathematics 3', '03', 'c-math', 'MATH-3A', 'scheduled', 'Room 14', 'sch-1', 't-fall', 'Mathematics', '52031', '2'],
      ['cls-read', '', '', 'Reading 3', '03', 'c-read', 'ELA-3A', 'scheduled', 'Library', 'sch-1', 't-fall,t-spring', 'English Language Arts', '51031', '3,4']],
    users: [['sourcedId', 'status', 'dateLastModified', 'enabledUser', 'username', 'userIds', 'givenName', 'familyName', 'middleName', 'identifier', 'email', 'sms', 'phone', 'agentSourcedIds', 'grades', 'password', 'userMasterIdentifier', 'resourceSourcedIds', 'preferredGivenName', 'preferredMiddleName', 'preferredFamilyName', 'primaryOrgSourcedId', 'pronouns'],
      ...STUDENTS.map((id, i) => [id, '', '', i === 11 ? 'false' : 'true', `student${i + 1}`, `{State:ST-${1000 + i}}`, given[i]!, `Family${i + 1}`, '', `${5000 + i}`,
        `student${i + 1}@springfield.example`, '', '', i < GUARDIANS.length ? GUARDIANS[i]! : '', '03', '', '', '', '', '', '', 'sch-1', '']),
      ['t-1', '', '', 'true', 'mkrabappel', '{District:T-1}', 'Edna', 'Krabappel', '', 'T-1', 'edna@springfield.example', '', '555-0101', '', '', '', '', '', '', '', '', 'sch-1', 'she/her'],
      ['t-2', '', '', 'true', 'elizabeth', '', 'Elizabeth', 'Hoover', 'J', 'T-2', 'hoover@springfield.example', '', '', '', '', '', '', '', 'Liz', '', '', 'sch-1', ''],
      ['a-1', '', '', 'true', 'aide1', '', 'Otto', 'Aide', '', '', '', '', '', '', '', '', '', '', '', '', '', 'sch-1', ''],
      ['adm-1', '', '', 'true', 'chalmers', '', 'Gary', 'Chalmers', '', '', 'chalmers@springfield.example', '', '', '', '', '', '', '', '', '', '', 'dist-1', ''],
      ...GUARDIANS.map((id, i) => [id, '', '', 'true', '', '', `Parent${i + 1}`, `Family${i + 1}`, '', '', `parent${i + 1}@home.example`, `+1555010${i}`, '', STUDENTS[i]!, '', '', '', '', '', '', '', 'sch-1', ''])],
    roles: [['sourcedId', 'status', 'dateLastModified', 'userSourcedId', 'roleType', 'role', 'beginDate', 'endDate', 'orgSourcedId', 'userProfileSourcedId'],
      ...STUDENTS.map((id) => [`r-${id}`, '', '', id, 'primary', 'student', '2026-08-20', '2027-06-18', 'sch-1', '']),
      ['r-t-1', '', '', 't-1', 'primary', 'teacher', '2015-08-15', '', 'sch-1', ''],
      ['r-t-1-c', '', '', 't-1', 'secondary', 'counselor', '2026-08-20', '2027-06-18', 'sch-1', ''],
      ['r-t-2', '', '', 't-2', 'primary', 'teacher', '', '', 'sch-1', ''],
      ['r-t-2-p', '', '', 't-2', 'secondary', 'principal', '2024-07-01', '', 'sch-1', ''],
      ['r-t-2-x', '', '', 't-2', 'secondary', 'teacher', '', '', 'sch-2', ''],
      ['r-a-1', '', '', 'a-1', 'primary', 'aide', '', '', 'sch-1', ''],
      ['r-adm-1', '', '', 'adm-1', 'primary', 'districtAdministrator', '', '', 'dist-1', ''],
      ...GUARDIANS.map((id) => [`r-${id}`, '', '', id, 'primary', 'guardian', '', '', 'sch-1', ''])],
    enrollments: [['sourcedId', 'status', 'dateLastModified', 'classSourcedId', 'schoolSourcedId', 'userSourcedId', 'role', 'primary', 'beginDate', 'endDate'],
      ...STUDENTS.map((id) => [`e-hr-${id}`, '', '', 'cls-hr', 'sch-1', id, 'student', 'false', '2026-08-20', '2027-06-18']),
      ...STUDENTS.map((id) => [`e-math-${id}`, '', '', 'cls-math', 'sch-1', id, 'student', 'false', '2026-08-20', '2027-01-15']),
      ['e-t1-hr', '', '', 'cls-hr', 'sch-1', 't-1', 'teacher', 'true', '2026-08-20', ''],
      ['e-t1-math', '', '', 'cls-math', 'sch-1', 't-1', 'teacher', 'true', '', ''],
      ['e-t2-read', '', '', 'cls-read', 'sch-1', 't-2', 'teacher', 'true', '', ''],
      ['e-t2-math', '', '', 'cls-math', 'sch-1', 't-2', 'teacher', 'false', '', ''],
      ['e-a1-read', '', '', 'cls-read', 'sch-1', 'a-1', 'aide', 'false', '', '']],
    demographics: [['sourcedId', 'status', 'dateLastModified', 'birthDate', 'sex', 'americanIndianOrAlaskaNative', 'asian', 'blackOrAfricanAmerican', 'nativeHawaiianOrOtherPacificIslander', 'white', 'demographicRaceTwoOrMoreRaces', 'hispanicOrLatinoEthnicity', 'countryOfBirthCode', 'stateOfBirthAbbreviation', 'cityOfBirth', 'publicSchoolResidenceStatus'],
      ...STUDENTS.slice(0, 6).map((id, i) => [id, '', '', `2018-0${i + 1}-15`, i % 2 === 0 ? 'female' : 'male', 'false', i === 1 ? 'true' : 'false', 'false', 'false', i === 1 ? 'false' : 'true', 'false', i === 3 ? 'true' : 'false', 'US', 'IL', 'Springfield', '01652']),
      ['t-1', '', '', '1970-04-01', 'female', '', '', '', '', '', '', '', '', '', '', '']]
  }
}

/** `<url>; rel="next"` of a Link header, as a path under the binding's base. */
function nextOf (link: unknown): string | undefined {
  const match = typeof link === 'string' ? /<([^>]*)>;\s*rel="next"/.exec(link) : null
  if (match === null) return undefined
  const url = new URL(match[1]!)
  return url.pathname.slice(BASE.length) + url.search
}

/** The envelope of a collection: its path's last segment, but for these. */
const ENVELOPE: Readonly<Record<string, string>> = { schools: 'orgs', students: 'users', teachers: 'users', terms: 'academicSessions', gradingPeriods: 'academicSessions' }
const envelopeOf = (path: string): string => { const last = path.split('/').at(-1)!; return ENVELOPE[last] ?? last }

/** The envelope of a single record, by its collection. */
const SINGULAR: Readonly<Record<string, string>> = {
  orgs: 'org',
  schools: 'org',
  students: 'user',
  teachers: 'user',
  users: 'user',
  academicSessions: 'academicSession',
  terms: 'academicSession',
  gradingPeriods: 'academicSession',
  courses: 'course',
  classes: 'class',
  enrollments: 'enrollment',
  demographics: 'demographics'
}

t.test('a consumer with a base URL and client credentials walks every endpoint of an imported export, every answer valid', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Springfield Elementary'))
  const summary = await importRoster(db, schoolId, districtExport(), { org: 'sch-1' })
  t.same([summary.students.created, summary.teachers.created, summary.agents.created, summary.classrooms.created, summary.skippedUsers],
    [12, 2, 4, 3, 2], 'the export imported: the aide and the district administrator skipped')

  const client = await seedClient(schoolId, ['roster.readonly', 'roster-demographics.readonly'], 'District SIS sync')
  const scope = ['roster.readonly', 'roster-core.readonly', 'roster-demographics.readonly'].map((s) => `https://purl.imsglobal.org/spec/or/v1p2/scope/${s}`).join(' ')
  const granted = await tokenRequest(app, { grant_type: 'client_credentials', scope }, { authorization: basic(client.clientId, client.secret) })
  t.equal(granted.statusCode, 200, 'a token for the full-form scopes')
  const token = granted.body.access_token as string

  const checked = checkedAnswers()
  // Each answer against 1EdTech's file too, when a copy is at hand.
  const theirs = oneEdTechFile === undefined ? undefined : oneEdTechValidator(oneEdTechFile)
  const departures: string[] = []
  let theirsChecked = 0
  const answers = {
    ...checked,
    get: async (...args: Parameters<typeof checked.get>) => {
      const res = await checked.get(...args)
      // An answer with `fields` leaves out the required fields not asked for, as the binding allows
      // and their schemas do not say: checked against the service's description only (validate.ts).
      if (theirs !== undefined && !args[1].includes('fields=')) {
        departures.push(...theirs(BASE + args[1], res.statusCode, res.body))
        theirsChecked += 1
      }
      return res
    }
  }
  /** Every record of a collection, page by page through Link's next; checks X-Total-Count against what the walk found. */
  const walk = async (path: string, envelope: string): Promise<Array<Record<string, any>>> => {
    const records: Array<Record<string, any>> = []
    let next: string | undefined = `${path}?limit=5`
    let total: unknown
    while (next !== undefined) {
      const res = await answers.get(app, next, token)
      if (res.statusCode !== 200) {
        t.fail(`GET ${next}: ${res.statusCode} ${JSON.stringify(res.body)}`)
        break
      }
      total = res.headers['x-total-count']
      records.push(...res.body[envelope])
      next = nextOf(res.headers.link)
    }
    t.equal(String(records.length), total, `${path}: ${records.length} records, as X-Total-Count says`)
    t.equal(new Set(records.map((r) => r.sourcedId)).size, records.length, `${path}: each record once`)
    return records
  }

  // The parents of the nested paths, by the name of the path's parameter, from the walk of their collections.
  const found = new Map<string, string[]>()
  const paths = Object.keys(oneRosterDescription.paths)
  const flat = paths.filter((path) => !path.includes('{'))
  for (const path of flat) {
    const records = await walk(path, envelopeOf(path))
    t.ok(records.length > 0, `${path} answers records`)
    found.set(path.slice(1), records.map((r) => r.sourcedId as string))
  }
  t.same(found.get('schools'), [schoolId], 'the school, by its id')
  t.same(found.get('users')!.slice().sort(), [...STUDENTS, ...GUARDIANS, 't-1', 't-2'].sort(), 'the users the service keeps')
  t.same(found.get('classes')!.slice().sort(), ['cls-hr', 'cls-math', 'cls-read'])
  const parameters: Readonly<Record<string, string[]>> = {
    schoolSourcedId: [schoolId],
    classSourcedId: found.get('classes')!,
    termSourcedId: found.get('terms')!,
    courseSourcedId: found.get('courses')!,
    studentSourcedId: found.get('students')!,
    teacherSourcedId: found.get('teachers')!,
    userSourcedId: found.get('users')!
  }

  let nested = 0
  for (const path of paths.filter((path) => path.includes('{'))) {
    const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!)
    if (names.length === 1 && names[0] === 'sourcedId') {
      // A record by its sourcedId: every one its collection holds.
      const collection = path.split('/')[1]!
      for (const sourcedId of found.get(collection)!) {
        const res = await answers.get(app, `/${collection}/${encodeURIComponent(sourcedId)}`, token)
        t.equal(res.statusCode, 200, `GET /${collection}/${sourcedId}`)
        t.equal(res.body[SINGULAR[collection]!]?.sourcedId, sourcedId)
      }
      refused(t, await answers.get(app, `/${collection}/no-such-record`, token), 404, 'unknownobject', `/${collection}/{sourcedId} of no record`)
      continue
    }
    // A nested collection: for every parent (every pair, for a class of the school).
    let combinations: Array<Record<string, string>> = [{}]
    for (const name of names) combinations = combinations.flatMap((c) => parameters[name]!.map((value) => ({ ...c, [name]: value })))
    for (const values of combinations) {
      const concrete = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name]!))
      await walk(concrete, envelopeOf(path))
      nested += 1
    }
  }
  t.ok(nested > 40, `${nested} nested collections walked`)

  // The roles of the export, as the consumer reads them: the school's only.
  const hoover = (await answers.get(app, '/users/t-2?fields=roles', token)).body.user
  t.same(hoover.roles.map((r: { roleType: string, role: string, beginDate?: string }) => [r.roleType, r.role, r.beginDate]),
    [['primary', 'teacher', undefined], ['secondary', 'principal', '2024-07-01']], "a teacher's roles in the school, not her role at sch-2")
  refused(t, await answers.get(app, `/users?filter=${encodeURIComponent("nickname='x'")}`, token), 400, 'invalid_filter_field', 'a filter on no field')

  t.ok(answers.count() > 150, `${answers.count()} answers`)
  t.same(answers.invalid, [], 'every answer validates against the description')
  if (theirs === undefined) {
    t.comment("ONEROSTER_OPENAPI_FILE names no copy of 1EdTech's onerosterv1p2rostersservice_openapi3_v1p0.json: the answers were not checked against it")
  } else {
    t.equal(theirsChecked, answers.count() - 1, "every answer checked against 1EdTech's file but the one with fields")
    t.same(departures, [], "every answer validates against 1EdTech's file")
  }
})
