// The OpenAPI description of the OneRoster endpoints (src/oneroster/openapi.ts): a valid OpenAPI 3.0
// document; the answer validator of test/oneroster/validate.ts, shown to accept each kind of answer
// and to refuse the wrong ones; and, when ONEROSTER_OPENAPI_FILE names a copy of 1EdTech's OpenAPI
// file of the rostering service, the description's paths, parameters and schemas compared with it.
// No database: these are documents and hand-made answers.
import { readFile } from 'node:fs/promises'
import SwaggerParser from '@apidevtools/swagger-parser'
import type { OpenAPIV3 } from 'openapi-types'
import t from 'tap'
import { narrowings, oneRosterDescription } from '../src/oneroster/openapi.js'
import { basePath, resolve, validateAnswer, type Answer } from './oneroster/validate.js'

const JSON_TYPE = 'application/json; charset=utf-8'
const origin = 'https://sds.example' + basePath
const ref = (type: string, collection: string, sourcedId: string): object => ({ href: `${origin}/${collection}/${sourcedId}`, sourcedId, type })
const orgRef = (sourcedId: string): object => ref('org', 'orgs', sourcedId)

const district = {
  sourcedId: 'district-1',
  status: 'active',
  dateLastModified: '2026-09-01T08:00:00.000Z',
  name: 'Springfield Public Schools',
  type: 'district',
  identifier: '1712345',
  children: [orgRef('school-1')]
}
const school = {
  sourcedId: 'school-1',
  status: 'active',
  dateLastModified: '2026-09-01T08:00:00.000Z',
  name: 'Springfield Elementary',
  type: 'school',
  identifier: '171234500123',
  parent: orgRef('district-1')
}
const student = {
  sourcedId: 'student-1',
  status: 'active',
  dateLastModified: '2026-11-02T14:05:09.120Z',
  username: 'lisa.simpson',
  userIds: [{ type: 'studentNumber', identifier: 'S-1042' }],
  enabledUser: 'true',
  givenName: 'Lisa',
  familyName: 'Simpson',
  middleName: 'Marie',
  roles: [{ roleType: 'primary', role: 'student', org: orgRef('school-1'), beginDate: '2026-09-01', endDate: '2027-07-01' }],
  primaryOrg: orgRef('school-1'),
  identifier: 'S-1042',
  email: 'lisa.simpson@springfield.example',
  agents: [ref('user', 'users', 'guardian-1')],
  grades: ['02']
}
const teacher = {
  sourcedId: 'teacher-1',
  status: 'tobedeleted',
  dateLastModified: '2026-11-20T09:00:00Z',
  enabledUser: 'false',
  givenName: 'Elizabeth',
  familyName: 'Hoover',
  roles: [{ roleType: 'primary', role: 'teacher', org: orgRef('school-1') }]
}

const sessionRef = (sourcedId: string): object => ref('academicSession', 'academicSessions', sourcedId)
const term = {
  sourcedId: 'term-1',
  status: 'active',
  dateLastModified: '2026-08-01T07:30:00.000Z',
  title: 'Fall',
  startDate: '2026-08-20',
  endDate: '2027-01-15',
  type: 'term',
  parent: sessionRef('year-2027'),
  children: [sessionRef('quarter-1'), sessionRef('quarter-2')],
  schoolYear: '2027'
}
const schoolYear = {
  sourcedId: 'year-2027',
  status: 'tobedeleted',
  dateLastModified: '2026-08-01T07:30:00Z',
  title: '2026-2027',
  startDate: '2026-08-20',
  endDate: '2027-06-18',
  type: 'schoolYear',
  schoolYear: '2027'
}
const course = {
  sourcedId: 'course-1',
  status: 'active',
  dateLastModified: '2026-08-01T07:30:00.000Z',
  title: 'Algebra I',
  schoolYear: sessionRef('year-2027'),
  courseCode: 'MATH-101',
  grades: ['09', '10'],
  subjects: ['Mathematics'],
  org: orgRef('school-1'),
  subjectCodes: ['02052']
}

const klass = {
  sourcedId: 'class-1',
  status: 'active',
  dateLastModified: '2026-08-01T07:30:00.000Z',
  title: 'Algebra I - P1',
  classCode: 'ALG-1',
  classType: 'scheduled',
  location: 'Room 19',
  grades: ['09'],
  subjects: ['Mathematics'],
  course: ref('course', 'courses', 'course-1'),
  school: orgRef('school-1'),
  terms: [sessionRef('term-1')],
  subjectCodes: ['02052'],
  periods: ['1', '3']
}

const enrollment = {
  sourcedId: 'enrollment-1',
  status: 'active',
  dateLastModified: '2026-08-01T07:30:00.000Z',
  user: ref('user', 'users', 'teacher-1'),
  class: ref('class', 'classes', 'class-1'),
  school: orgRef('school-1'),
  role: 'teacher',
  primary: 'true',
  beginDate: '2026-08-20',
  endDate: '2027-06-18'
}

const demographics = {
  sourcedId: 'student-1',
  status: 'active',
  dateLastModified: '2026-08-01T07:30:00.000Z',
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
}

/** The records of a sample answer, by the envelope's property (the demographics' one record by its schema: both envelopes are `demographics`). */
const RECORDS: Record<string, unknown> = {
  orgs: [district, school],
  org: school,
  users: [student, teacher],
  user: student,
  academicSessions: [schoolYear, term],
  academicSession: term,
  courses: [course, { sourcedId: 'course-2', status: 'active', dateLastModified: '2026-08-01T07:30:00.000Z', title: 'Homeroom', courseCode: 'HR', grades: [], subjects: [], org: orgRef('school-1'), subjectCodes: [] }],
  course,
  classes: [klass, { ...klass, sourcedId: 'class-2', classType: 'ext:lab', terms: [sessionRef('term-1'), sessionRef('term-2')] }],
  class: klass,
  enrollments: [enrollment, { sourcedId: 'enrollment-2', status: 'active', dateLastModified: '2026-08-01T07:30:00.000Z', user: ref('user', 'users', 'student-1'), class: ref('class', 'classes', 'class-1'), school: orgRef('school-1'), role: 'student' }],
  enrollment,
  demographics: [demographics, { sourcedId: 'student-2', status: 'active', dateLastModified: '2026-08-01T07:30:00.000Z', sex: 'ext:nonbinary' }]
}
const SINGLE_RECORDS: Record<string, unknown> = { '#/components/schemas/SingleDemographicsDType': demographics }

const failure = (codeMinor: string, description: string): object => ({
  imsx_codeMajor: 'failure',
  imsx_severity: 'error',
  imsx_description: description,
  imsx_CodeMinor: { imsx_codeMinorField: [{ imsx_codeMinorFieldName: 'TargetEndSystem', imsx_codeMinorFieldValue: codeMinor }] }
})

/** Each failure a read may answer; 404 and 503 go by `default` where an operation does not list them. */
const FAILURES: Array<[number, object]> = [
  [400, failure('invalid_filter_field', "The filter names no field of users: 'shoeSize'.")],
  [401, failure('unauthorisedrequest', 'The access token has expired.')],
  [403, failure('forbidden', 'The access token lacks the scope roster.readonly.')],
  [404, failure('unknownobject', 'No school has the sourcedId school-9.')],
  [429, failure('server_busy', 'Too many requests: retry after 3 seconds.')],
  [500, failure('internal_server_error', 'Something went wrong.')],
  [503, failure('server_busy', 'The database is out of reach: retry after 5 seconds.')]
]

const operations = Object.entries(oneRosterDescription.paths).map(([template, item]) => ({
  template,
  path: basePath + template.replace(/\{[^}]+\}/g, (name) => name === '{schoolSourcedId}' ? 'school-1' : name === '{termSourcedId}' ? 'term-1' : 'student-1'),
  operation: item!.get!
}))

/** The sample answer of an operation: a page of two records or one record, as its 200 says. */
function success (operation: OpenAPIV3.OperationObject, path: string): Answer {
  const response = resolve(operation.responses['200']!)
  const schema = resolve(response.content!['application/json']!.schema!)
  const [key] = Object.keys(schema.properties!)
  const records = SINGLE_RECORDS[(response.content!['application/json']!.schema as OpenAPIV3.ReferenceObject).$ref] ?? RECORDS[key!]
  const pages = `<${origin}${path.slice(basePath.length).split('?')[0]!}?limit=2&offset=2>; rel="next", <${origin}${path.slice(basePath.length).split('?')[0]!}?limit=2&offset=56>; rel="last"`
  const headers = Array.isArray(records) ? { 'content-type': JSON_TYPE, 'x-total-count': '57', link: pages } : { 'content-type': JSON_TYPE }
  return { method: 'GET', path, status: 200, headers, body: { [key!]: records } }
}

t.test('the description is a valid OpenAPI 3.0 document', async (t) => {
  // swagger-parser validates against OpenAPI 3.0's JSON schema and resolves every $ref; it changes
  // what it is given, so a copy.
  await t.resolves(SwaggerParser.validate(structuredClone(oneRosterDescription)))
  t.same(JSON.parse(JSON.stringify(oneRosterDescription)), oneRosterDescription, 'it is JSON as it is, to be served as JSON')

  const noInfo: Partial<OpenAPIV3.Document> = structuredClone(oneRosterDescription)
  delete noInfo.info
  await t.rejects(SwaggerParser.validate(noInfo as OpenAPIV3.Document), /info/, 'the validator refuses a document without info')
  const dangling = structuredClone(oneRosterDescription)
  delete dangling.components!.schemas!.RoleDType
  await t.rejects(SwaggerParser.validate(dangling), /RoleDType/, 'and one that refers to a schema it lacks')

  // What OpenAPI 3.0 requires beyond its JSON schema, which swagger-parser checks for Swagger 2.0 only.
  const operationIds = operations.map(({ operation }) => operation.operationId)
  t.same(new Set(operationIds).size, operationIds.length, 'the operationIds are unique')
  for (const { template, operation } of operations) {
    const declared = (operation.parameters ?? []).map((parameter) => resolve(parameter)).filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name)
    t.same(declared, [...template.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]), `${template} declares its path parameters`)
  }
  // As 1EdTech's file does: each tag an operation names is one the document declares, once.
  const tags = (oneRosterDescription.tags ?? []).map((tag) => tag.name)
  t.same(new Set(tags).size, tags.length, 'the tags are declared once each')
  t.same([...new Set(operations.flatMap(({ operation }) => operation.tags ?? []))].filter((tag) => !tags.includes(tag)), [], 'every tag of an operation is declared')
})

t.test('every operation serves its envelope and the binding\'s errors', async (t) => {
  t.equal(operations.length, 41)
  for (const { template, path, operation } of operations) {
    t.same(validateAnswer(success(operation, path)), [], `${template} 200`)
    t.same(validateAnswer(success(operation, path + '?limit=2&offset=0&sort=familyName&orderBy=asc')), [], `${template} 200 with paging`)
    for (const [status, body] of FAILURES) {
      t.same(validateAnswer({ method: 'GET', path, status, headers: { 'content-type': JSON_TYPE }, body }), [], `${template} ${status}`)
    }
  }
})

t.test('an answer with `fields` carries the selected fields, required or not', async (t) => {
  const path = `${basePath}/users?fields=sourcedId,givenName,email`
  const selected = { users: [{ sourcedId: 'student-1', givenName: 'Lisa', email: 'lisa.simpson@springfield.example' }, { sourcedId: 'teacher-1', givenName: 'Elizabeth' }] }
  t.same(validateAnswer({ method: 'GET', path, status: 200, headers: { 'content-type': JSON_TYPE, 'x-total-count': '2' }, body: selected }), [])
  t.same(validateAnswer({ method: 'GET', path: `${basePath}/orgs/school-1?fields=name`, status: 200, headers: { 'content-type': JSON_TYPE }, body: { org: { name: school.name } } }), [])
})

interface Refusal {
  name: string
  answer: Answer
  /** What one of the errors says. */
  error: RegExp
}

const page = (users: unknown[], path = `${basePath}/users`, headers: Answer['headers'] = { 'content-type': JSON_TYPE, 'x-total-count': '57' }): Answer =>
  ({ method: 'GET', path, status: 200, headers, body: { users } })
const one = (org: unknown): Answer => ({ method: 'GET', path: `${basePath}/orgs/school-1`, status: 200, headers: { 'content-type': JSON_TYPE }, body: { org } })
const without = <T extends object>(record: T, key: keyof T): Partial<T> => Object.fromEntries(Object.entries(record).filter(([name]) => name !== key)) as Partial<T>
const refused = (status: number, body: unknown): Answer => ({ method: 'GET', path: `${basePath}/users/nobody`, status, headers: { 'content-type': JSON_TYPE }, body })

const REFUSALS: Refusal[] = [
  { name: 'a status outside the enumeration', answer: page([{ ...student, status: 'inactive' }]), error: /\/users\/0\/status must be one of "active", "tobedeleted"/ },
  { name: 'an org type outside the enumeration', answer: one({ ...school, type: 'college' }), error: /\/org\/type must be one of "department"/ },
  { name: 'a role outside the enumeration (nor ext:)', answer: page([{ ...student, roles: [{ ...student.roles[0], role: 'pupil' }] }]), error: /\/users\/0\/roles\/0\/role must be one of/ },
  { name: 'enabledUser as a boolean, not "true"', answer: page([{ ...student, enabledUser: true }]), error: /\/users\/0\/enabledUser must be string/ },
  { name: 'an imsx_codeMinorFieldValue outside the enumeration', answer: refused(404, failure('not_found', 'No such user.')), error: /imsx_codeMinorFieldValue must be one of/ },
  { name: 'a user without givenName', answer: page([without(student, 'givenName')]), error: /\/users\/0 lacks the required property "givenName"/ },
  { name: 'a user without roles', answer: page([without(teacher, 'roles')]), error: /\/users\/0 lacks the required property "roles"/ },
  { name: 'a user with no role at all', answer: page([{ ...teacher, roles: [] }]), error: /\/users\/0\/roles must NOT have fewer than 1 items/ },
  { name: 'an org without identifier', answer: one(without(school, 'identifier')), error: /\/org lacks the required property "identifier"/ },
  { name: 'a course without courseCode', answer: { method: 'GET', path: `${basePath}/courses/course-1`, status: 200, headers: { 'content-type': JSON_TYPE }, body: { course: without(course, 'courseCode') } }, error: /\/course lacks the required property "courseCode"/ },
  { name: 'a session type outside the enumeration', answer: { method: 'GET', path: `${basePath}/terms`, status: 200, headers: { 'content-type': JSON_TYPE, 'x-total-count': '1' }, body: { academicSessions: [{ ...term, type: 'quarter' }] } }, error: /\/academicSessions\/0\/type must be one of "gradingPeriod"/ },
  { name: 'a session day with a time', answer: { method: 'GET', path: `${basePath}/terms/term-1`, status: 200, headers: { 'content-type': JSON_TYPE }, body: { academicSession: { ...term, endDate: '2027-01-15T00:00:00Z' } } }, error: /\/academicSession\/endDate must match format "date"/ },
  { name: 'a school year as a number', answer: { method: 'GET', path: `${basePath}/terms/term-1`, status: 200, headers: { 'content-type': JSON_TYPE }, body: { academicSession: { ...term, schoolYear: 2027 } } }, error: /\/academicSession\/schoolYear must be string/ },
  { name: 'a session with an org (AcademicSessionDType has none)', answer: { method: 'GET', path: `${basePath}/academicSessions/term-1`, status: 200, headers: { 'content-type': JSON_TYPE }, body: { academicSession: { ...term, org: orgRef('school-1') } } }, error: /\/academicSession has the property "org"/ },
  { name: 'a session reference of another type', answer: { method: 'GET', path: `${basePath}/courses/course-1`, status: 200, headers: { 'content-type': JSON_TYPE }, body: { course: { ...course, schoolYear: { ...sessionRef('year-2027'), type: 'term' } } } }, error: /\/course\/schoolYear\/type must be one of "academicSession"/ },
  { name: 'a single answer without its envelope', answer: one(undefined), error: /the body lacks the required property "org"/ },
  { name: 'an error without imsx_severity', answer: refused(401, without(failure('unauthorisedrequest', 'No token.') as Record<string, unknown>, 'imsx_severity')), error: /lacks the required property "imsx_severity"/ },
  { name: 'dateLastModified as a date alone', answer: page([{ ...student, dateLastModified: '2026-11-02' }]), error: /\/users\/0\/dateLastModified must match format "date-time"/ },
  { name: 'dateLastModified as a local date', answer: page([{ ...student, dateLastModified: '02/11/2026 14:05' }]), error: /dateLastModified must match format "date-time"/ },
  { name: 'a role beginDate with a time', answer: page([{ ...student, roles: [{ ...student.roles[0], beginDate: '2026-09-01T00:00:00Z' }] }]), error: /\/users\/0\/roles\/0\/beginDate must match format "date"/ },
  { name: 'a reference whose href is relative', answer: one({ ...school, parent: { ...district.children[0], href: `${basePath}/orgs/district-1` } }), error: /\/org\/parent\/href must match format "uri"/ },
  { name: 'a property the user schema does not have', answer: page([{ ...student, fullName: 'Lisa Simpson' }]), error: /\/users\/0 has the property "fullName"/ },
  { name: 'a property the reference schema does not have', answer: one({ ...school, parent: { ...orgRef('district-1'), name: 'Springfield Public Schools' } }), error: /\/org\/parent has the property "name"/ },
  { name: 'a property beside the envelope', answer: { ...page([student]), body: { users: [student], next: 2 } }, error: /the body has the property "next"/ },
  { name: 'a property the error schema does not have', answer: refused(404, { ...failure('unknownobject', 'No such user.'), message: 'not found' }), error: /the body has the property "message"/ },
  { name: 'a null for an absent optional field', answer: page([{ ...student, middleName: null }]), error: /\/users\/0\/middleName must be string/ },
  { name: 'a field the request did not select', answer: page([{ sourcedId: 'student-1', givenName: 'Lisa' }], `${basePath}/users?fields=sourcedId`), error: /\/users\/0 has the property "givenName", which the request's fields did not select/ },
  { name: 'a collection without X-Total-Count', answer: page([student], `${basePath}/users`, { 'content-type': JSON_TYPE }), error: /X-Total-Count is missing/ },
  { name: 'an X-Total-Count that is not a count', answer: page([student], `${basePath}/users`, { 'content-type': JSON_TYPE, 'x-total-count': 'many' }), error: /X-Total-Count is "many"/ },
  { name: 'an X-Total-Count below the page', answer: page([student, teacher], `${basePath}/users`, { 'content-type': JSON_TYPE, 'x-total-count': '1' }), error: /X-Total-Count is 1, fewer than the 2 records/ },
  {
    name: 'a Link to a page of another collection',
    answer: page([student], `${basePath}/users?limit=1`, { 'content-type': JSON_TYPE, 'x-total-count': '2', link: `<${origin}/students?limit=1&offset=1>; rel="next"` }),
    error: /Link's next page <.*\/students\?limit=1&offset=1> is not a page of \/ims\/oneroster\/rostering\/v1p2\/users/
  },
  { name: 'a Link with another relation', answer: page([student], `${basePath}/users?limit=1`, { 'content-type': JSON_TYPE, 'x-total-count': '2', link: `<${origin}/users?limit=1&offset=1>; rel="following"` }), error: /Link has rel="following"/ },
  { name: 'a body that is not JSON by its type', answer: page([student], `${basePath}/users`, { 'content-type': 'text/html', 'x-total-count': '1' }), error: /content-type is text\/html/ },
  { name: 'a status the operation does not list', answer: { ...one(school), status: 201 }, error: /status 201 is not one that getOrg lists/ },
  { name: 'a success no operation lists, not taken as the default', answer: { ...page([student]), status: 206 }, error: /status 206 is not one that getAllUsers lists/ },
  { name: 'a path the description does not have', answer: { ...page([student]), path: `${basePath}/guardians` }, error: /the description has no operation for this path/ }
]

t.test('the validator refuses answers the binding does not allow', async (t) => {
  for (const { name, answer, error } of REFUSALS) {
    const errors = validateAnswer(answer)
    t.ok(errors.some((message) => error.test(message)), name, { errors })
  }
})

// ---- The comparison with 1EdTech's file.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** A schema or parameter without its prose (description, summary): the facts compared. */
function facts (value: Json, inProperties = false): Json {
  if (Array.isArray(value)) return value.map((item) => facts(item))
  if (typeof value !== 'object' || value === null) return value
  // Under `properties` the keys are property names (UserProfileDType has one named description).
  return Object.fromEntries(Object.entries(value)
    .filter(([key]) => inProperties || (key !== 'description' && key !== 'summary'))
    .map(([key, item]) => [key, facts(item, !inProperties && key === 'properties')]))
}

/** Where two JSON values differ, by JSON pointer. */
function differences (ours: Json | undefined, theirs: Json | undefined, at: string): string[] {
  if (JSON.stringify(ours) === JSON.stringify(theirs)) return []
  if (typeof ours !== 'object' || typeof theirs !== 'object' || ours === null || theirs === null || Array.isArray(ours) !== Array.isArray(theirs)) {
    return [`${at}: ours ${JSON.stringify(ours)}, 1EdTech's ${JSON.stringify(theirs)}`]
  }
  const keys = new Set([...Object.keys(ours), ...Object.keys(theirs)])
  return [...keys].flatMap((key) => differences((ours as Record<string, Json>)[key], (theirs as Record<string, Json>)[key], `${at}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`))
}

const pointer = (...steps: string[]): string => steps.map((step) => '/' + step.replaceAll('~', '~0').replaceAll('/', '~1')).join('')

/** The component schemas an operation uses, with those they use in turn. */
function schemasUsed (document: any, value: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((item) => schemasUsed(document, item, found))
  else if (typeof value === 'object' && value !== null) {
    const reference = (value as { $ref?: unknown }).$ref
    if (typeof reference === 'string' && reference.startsWith('#/components/schemas/')) {
      const name = reference.slice('#/components/schemas/'.length)
      if (!found.has(name)) {
        found.add(name)
        schemasUsed(document, document.components?.schemas?.[name], found)
      }
    } else Object.values(value).forEach((item) => schemasUsed(document, item, found))
  }
  return found
}

/**
 * Where the description departs from 1EdTech's file: for each of its operations, the path and
 * method, operationId, tags, parameters (by location and name), security, the statuses with their
 * schemas and 1EdTech's headers; and every component schema it uses, the scopes and the names of
 * the document's tags. Prose is not
 * compared; nor are what 1EdTech's file leaves to each service (server, token URL) and what this
 * description adds to a response (headers the service sends besides 1EdTech's, the page links).
 */
function compare (ours: any, theirs: any): string[] {
  const found: string[] = []
  for (const [template, item] of Object.entries<any>(ours.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      const at = pointer('paths', template, method)
      const their = theirs.paths?.[template]?.[method]
      if (their === undefined) {
        found.push(`${at}: 1EdTech's file has no ${method.toUpperCase()} ${template}`)
        continue
      }
      found.push(...differences(operation.operationId, their.operationId, at + '/operationId'))
      found.push(...differences(operation.tags, their.tags, at + '/tags'))
      const byName = (parameters: any[] = []): Record<string, Json> =>
        Object.fromEntries(parameters.map((parameter) => [`${parameter.in} ${parameter.name}`, facts(parameter)]))
      found.push(...differences(byName(operation.parameters), byName(their.parameters), at + '/parameters'))
      found.push(...differences(operation.security, their.security, at + '/security'))
      const statuses = (responses: object): string => Object.keys(responses).sort().join(', ')
      found.push(...differences(statuses(operation.responses), statuses(their.responses), at + '/responses'))
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        const theirResponse = their.responses?.[status]
        if (theirResponse === undefined) continue
        found.push(...differences(response.content, theirResponse.content, pointer('paths', template, method, 'responses', status, 'content')))
        for (const [name, header] of Object.entries<any>(theirResponse.headers ?? {})) {
          found.push(...differences(facts(response.headers?.[name]), facts(header), pointer('paths', template, method, 'responses', status, 'headers', name)))
        }
      }
    }
  }
  for (const name of [...schemasUsed(ours, ours.paths)].sort()) {
    found.push(...differences(facts(ours.components.schemas[name]), facts(theirs.components?.schemas?.[name]), pointer('components', 'schemas', name)))
  }
  const scopes = (document: any): Json => Object.keys(document.components?.securitySchemes?.OAuth2CC?.flows?.clientCredentials?.scopes ?? {}).sort()
  found.push(...differences(scopes(ours), scopes(theirs), '/components/securitySchemes/OAuth2CC/flows/clientCredentials/scopes'))
  // The document's tags: the same names (their order and prose are not compared).
  const tagNames = (document: any): string[] => (document.tags ?? []).map((tag: { name: string }) => tag.name)
  for (const name of tagNames(ours).filter((name) => !tagNames(theirs).includes(name))) found.push(`/tags: ours declares ${name}, 1EdTech's file does not`)
  for (const name of tagNames(theirs).filter((name) => !tagNames(ours).includes(name))) found.push(`/tags: 1EdTech's file declares ${name}, ours does not`)
  return found.filter((difference) => !Object.keys(narrowings).some((narrowed) => difference.startsWith(narrowed + '/') || difference.startsWith(narrowed + ':')))
}

t.test('the comparison finds a departure from the file it is given', async (t) => {
  const description = JSON.parse(JSON.stringify(oneRosterDescription))
  t.same(compare(description, description), [], 'none against itself')
  const other = structuredClone(description)
  other.components.schemas.UserDType.properties.enabledUser.enum = ['true', 'false', 'unknown']
  other.paths['/users'].get.parameters[0].schema.maximum = 1000
  delete other.paths['/users/{sourcedId}']
  other.components.schemas.RoleDType.properties.description = { type: 'string' }
  other.paths['/users'].get.tags = ['StudentsManagement']
  other.tags = other.tags.filter((tag: { name: string }) => tag.name !== 'ClassesManagement')
  t.same(compare(description, other), [
    "/paths/~1users/get/tags/0: ours \"UsersManagement\", 1EdTech's \"StudentsManagement\"",
    "/paths/~1users/get/parameters/query limit/schema/maximum: ours undefined, 1EdTech's 1000",
    "/paths/~1users~1{sourcedId}/get: 1EdTech's file has no GET /users/{sourcedId}",
    "/components/schemas/RoleDType/properties/description: ours undefined, 1EdTech's {\"type\":\"string\"}",
    "/components/schemas/UserDType/properties/enabledUser/enum/2: ours undefined, 1EdTech's \"unknown\"",
    "/tags: ours declares ClassesManagement, 1EdTech's file does not"
  ])
})

const oneEdTechFile = process.env.ONEROSTER_OPENAPI_FILE || undefined

t.test("the description follows 1EdTech's OpenAPI file of the rostering service", {
  skip: oneEdTechFile === undefined ? "ONEROSTER_OPENAPI_FILE names no copy of 1EdTech's onerosterv1p2rostersservice_openapi3_v1p0.json" : false
}, async (t) => {
  const theirs = JSON.parse(await readFile(oneEdTechFile!, 'utf8'))
  t.match(theirs.info, { title: 'OneRoster OpenAPI (JSON) Definition', version: '1.2' }, "the file is 1EdTech's rostering service")
  t.same(compare(JSON.parse(JSON.stringify(oneRosterDescription)), theirs), [], 'no departure but the listed narrowings')
})
