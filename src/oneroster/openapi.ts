// The OpenAPI 3.0 description of what this service serves of OneRoster 1.2's rostering REST binding,
// served as JSON beside the endpoints (docs/api/oneroster.md). Written from 1EdTech's OpenAPI file of
// the rostering service (onerosterv1p2rostersservice_openapi3_v1p0.json), which stays outside this
// repository: the paths, operationIds, parameters, status codes, scopes and component schemas below
// are 1EdTech's, unchanged (test/oneroster-openapi.test.ts compares them with that file when it is at
// hand); the prose is ours, and only the operations this service serves are listed. A response that
// leaves out fields it may omit still validates; nothing is loosened so that ours would.
import type { OpenAPIV3 } from 'openapi-types'
import { fullScopeName, parseScope, type Scope } from '../auth/scopes.js'
import { TOKEN_PATH } from '../auth/token-request.js'
import { ONEROSTER_ROLES } from '../import/user-details.js'

/** Where the binding is served. */
export const ONEROSTER_PATH = '/ims/oneroster/rostering/v1p2'

/** Where this description is served, beside the binding (no token needed). */
export const DESCRIPTION_PATH = `${ONEROSTER_PATH}/openapi.json`

type Schema = OpenAPIV3.SchemaObject
type Reference = OpenAPIV3.ReferenceObject

const schemaRef = (name: string): Reference => ({ $ref: `#/components/schemas/${name}` })

// 1EdTech's file lists both scopes in one requirement for the core reads (either grants them, as
// docs/api/access.md says), and the full roster scope alone for the nested collections.
const CORE_READ: OpenAPIV3.SecurityRequirementObject[] = [
  { OAuth2CC: [fullScopeName('roster.readonly'), fullScopeName('roster-core.readonly')] }
]
const ROSTER_READ: OpenAPIV3.SecurityRequirementObject[] = [{ OAuth2CC: [fullScopeName('roster.readonly')] }]
// The demographics: their scope alone, as 1EdTech's file gives it.
const DEMOGRAPHICS_READ: OpenAPIV3.SecurityRequirementObject[] = [{ OAuth2CC: [fullScopeName('roster-demographics.readonly')] }]

// ---- Parameters, as 1EdTech's file writes them in every operation.

const queryParameter = (name: string, description: string, schema: Schema): OpenAPIV3.ParameterObject => ({
  name, in: 'query', description, required: false, schema, style: 'form', allowEmptyValue: false
})

const pathParameter = (name: string, description: string): OpenAPIV3.ParameterObject => ({
  name, in: 'path', description, required: true, schema: { type: 'string' }, style: 'simple'
})

const FIELDS = queryParameter('fields',
  'The fields to send of each record (the binding writes them comma-separated: `fields=sourcedId,givenName`); an unknown field answers 400 invalid_selection_field.',
  { type: 'array', items: { type: 'string' } })

const PAGING: OpenAPIV3.ParameterObject[] = [
  queryParameter('limit', 'The most records in one answer.', { type: 'integer', format: 'int32', default: 100, minimum: 1 }),
  queryParameter('offset', 'The number of records skipped before the first one sent.', { type: 'integer', format: 'int32', default: 0, minimum: 0 }),
  queryParameter('sort', 'The field the records are sorted by (with orderBy).', { type: 'string' }),
  queryParameter('orderBy', 'The order of sort: ascending or descending.', { type: 'string', enum: ['asc', 'desc'] }),
  queryParameter('filter',
    "The binding's filter, e.g. `dateLastModified>'2026-01-01T00:00:00Z'`; an unknown field answers 400 invalid_filter_field.",
    { type: 'string' }),
  FIELDS
]

// ---- Responses.

const json = (schema: Reference): OpenAPIV3.ResponseObject['content'] => ({ 'application/json': { schema } })

const statusInfo = (description: string): OpenAPIV3.ResponseObject => ({
  description, content: json(schemaRef('imsx_StatusInfoDType'))
})

// Every refusal is an imsx_StatusInfo with imsx_codeMajor `failure` and imsx_severity `error`.
const ERRORS = {
  default: statusInfo('Any other failure.'),
  400: statusInfo('A bad filter (invalid_filter_field) or an unknown field in `fields` (invalid_selection_field).'),
  401: statusInfo('No access token, or one that is expired or revoked (unauthorisedrequest).'),
  403: statusInfo("The access token lacks the operation's scope (forbidden)."),
  422: statusInfo('A well-formed request that cannot be carried out (invaliddata).'),
  429: {
    ...statusInfo('Too many requests (server_busy): retry after the seconds of Retry-After.'),
    headers: { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } } }
  },
  500: statusInfo('An unexpected failure (internal_server_error).')
} satisfies OpenAPIV3.ResponsesObject

const UNKNOWN_OBJECT = { 404: statusInfo('No such record for this caller (unknownobject).') } satisfies OpenAPIV3.ResponsesObject

// 1EdTech's links name `$request.path.limit`; limit and offset are query parameters.
const pageLinks = (operationId: string): Record<string, OpenAPIV3.LinkObject> => {
  const parameters = { limit: '$request.query.limit', offset: '$request.query.offset' }
  return {
    next: { description: 'The next page: offset + limit.', operationId, parameters },
    last: { description: 'The last page.', operationId, parameters },
    first: { description: 'The first page: offset 0.', operationId, parameters },
    prev: { description: 'The previous page: offset - limit.', operationId, parameters }
  }
}

const page = (operationId: string, schema: string): OpenAPIV3.ResponseObject => ({
  description: 'A page of the collection (empty when nothing matches or the offset is past the end).',
  headers: {
    'X-Total-Count': { description: 'The number of records of the whole collection, every page together.', schema: { type: 'integer' } },
    Link: { description: 'The pages next to this one (RFC 8288): `rel` next, prev, first and last.', schema: { type: 'string' } }
  },
  content: json(schemaRef(schema)),
  links: pageLinks(operationId)
})

// ---- Operations.

interface Collection {
  operationId: string
  tag: string
  description: string
  /** The Set schema of the answer, e.g. UserSetDType. */
  schema: string
  security: OpenAPIV3.SecurityRequirementObject[]
  /** The parent's identifier of a nested collection (e.g. a school's students). */
  parent?: OpenAPIV3.ParameterObject
}

const collection = ({ operationId, tag, description, schema, security, parent }: Collection): OpenAPIV3.PathItemObject => ({
  get: {
    operationId,
    summary: `${operationId}: a page of the collection.`,
    tags: [tag],
    description,
    parameters: parent === undefined ? PAGING : [parent, ...PAGING],
    security,
    responses: { ...ERRORS, 200: page(operationId, schema) }
  }
})

interface Single {
  operationId: string
  tag: string
  /** What the record is, for the prose: "org", "school", "user" ... */
  kind: string
  /** The Single schema of the answer, e.g. SingleUserDType. */
  schema: string
  /** The core read scopes when undefined. */
  security?: OpenAPIV3.SecurityRequirementObject[]
}

const single = ({ operationId, tag, kind, schema, security = CORE_READ }: Single): OpenAPIV3.PathItemObject => ({
  get: {
    operationId,
    summary: `${operationId}: one ${kind} by its sourcedId.`,
    tags: [tag],
    description: `Reads the ${kind} of this sourcedId; one this caller cannot read, or that does not exist, answers 404 unknownobject.`,
    parameters: [pathParameter('sourcedId', `The sourcedId of the ${kind}.`), FIELDS],
    security,
    responses: {
      ...ERRORS,
      ...UNKNOWN_OBJECT,
      200: { description: `The ${kind}.`, content: json(schemaRef(schema)) }
    }
  }
})

const school = pathParameter('schoolSourcedId', 'The sourcedId of the school.')
const term = pathParameter('termSourcedId', 'The sourcedId of the term.')

const classParent = pathParameter('classSourcedId', 'The sourcedId of the class.')

/** A nested collection of classes, or of a class's users (roster.readonly alone, as 1EdTech's nested reads). */
const nested = (operationId: string, tag: string, schema: string, parents: OpenAPIV3.ParameterObject[], description: string): OpenAPIV3.PathItemObject => {
  const item = collection({ operationId, tag, schema, security: ROSTER_READ, description })
  return { get: { ...item.get!, parameters: [...parents, ...PAGING] } }
}

// The classes: classrooms with a course and terms (docs/api/oneroster.md).
const CLASS_PATHS: OpenAPIV3.PathsObject = {
  '/classes': collection({ operationId: 'getAllClasses', tag: 'ClassesManagement', description: 'Reads the classes: the classrooms with a course and terms.', schema: 'ClassSetDType', security: CORE_READ }),
  '/classes/{sourcedId}': single({ operationId: 'getClass', tag: 'ClassesManagement', kind: 'class', schema: 'SingleClassDType' }),
  '/schools/{schoolSourcedId}/classes': nested('getClassesForSchool', 'SchoolsManagement', 'ClassSetDType', [school],
    'Reads the classes of a school; a school this caller cannot read answers 404 unknownobject.'),
  '/terms/{termSourcedId}/classes': nested('getClassesForTerm', 'TermsManagement', 'ClassSetDType', [term],
    'Reads the classes taught in a term; a term this caller cannot read answers 404 unknownobject.'),
  '/courses/{courseSourcedId}/classes': nested('getClassesForCourse', 'CoursesManagement', 'ClassSetDType', [pathParameter('courseSourcedId', 'The sourcedId of the course.')],
    'Reads the classes of a course; a course this caller cannot read answers 404 unknownobject.'),
  '/students/{studentSourcedId}/classes': nested('getClassesForStudent', 'StudentsManagement', 'ClassSetDType', [pathParameter('studentSourcedId', 'The sourcedId of the student.')],
    "Reads the student's class (their classroom); a student this caller cannot read answers 404 unknownobject."),
  '/teachers/{teacherSourcedId}/classes': nested('getClassesForTeacher', 'TeachersManagement', 'ClassSetDType', [pathParameter('teacherSourcedId', 'The sourcedId of the teacher.')],
    'Reads the classes the teacher is assigned to; a teacher this caller cannot read answers 404 unknownobject.'),
  '/users/{userSourcedId}/classes': nested('getClassesForUser', 'UsersManagement', 'ClassSetDType', [pathParameter('userSourcedId', 'The sourcedId of the user.')],
    "Reads a student's class or a teacher's classes; a user this caller cannot read answers 404 unknownobject."),
  '/classes/{classSourcedId}/students': nested('getStudentsForClass', 'ClassesManagement', 'UserSetDType', [classParent],
    'Reads the students of a class; a class this caller cannot read answers 404 unknownobject.'),
  '/classes/{classSourcedId}/teachers': nested('getTeachersForClass', 'ClassesManagement', 'UserSetDType', [classParent],
    'Reads the teachers of a class; a class this caller cannot read answers 404 unknownobject.'),
  '/schools/{schoolSourcedId}/classes/{classSourcedId}/students': nested('getStudentsForClassInSchool', 'SchoolsManagement', 'UserSetDType', [school, classParent],
    'Reads the students of a class of a school; a school or class this caller cannot read answers 404 unknownobject.'),
  '/schools/{schoolSourcedId}/classes/{classSourcedId}/teachers': nested('getTeachersForClassInSchool', 'SchoolsManagement', 'UserSetDType', [school, classParent],
    'Reads the teachers of a class of a school; a school or class this caller cannot read answers 404 unknownobject.')
}

// The enrollments: students' classrooms and teachers' assignments to classes (docs/api/oneroster.md).
const ENROLLMENT_PATHS: OpenAPIV3.PathsObject = {
  '/enrollments': collection({
    operationId: 'getAllEnrollments', tag: 'EnrollmentsManagement', description: "Reads the enrollments: the students' classes and the teachers' assignments to classes.", schema: 'EnrollmentSetDType', security: CORE_READ
  }),
  '/enrollments/{sourcedId}': single({ operationId: 'getEnrollment', tag: 'EnrollmentsManagement', kind: 'enrollment', schema: 'SingleEnrollmentDType' }),
  '/schools/{schoolSourcedId}/enrollments': nested('getEnrollmentsForSchool', 'SchoolsManagement', 'EnrollmentSetDType', [school],
    'Reads the enrollments of a school; a school this caller cannot read answers 404 unknownobject.'),
  '/schools/{schoolSourcedId}/classes/{classSourcedId}/enrollments': nested('getEnrollmentsForClassInSchool', 'SchoolsManagement', 'EnrollmentSetDType', [school, classParent],
    'Reads the enrollments of a class of a school; a school or class this caller cannot read answers 404 unknownobject.')
}

// A student's or a teacher's demographics (docs/api/oneroster.md), under their own scope.
const DEMOGRAPHICS_PATHS: OpenAPIV3.PathsObject = {
  '/demographics': collection({
    operationId: 'getAllDemographics', tag: 'DemographicsManagement', description: "Reads the demographics: the students' and teachers' that have any.", schema: 'DemographicsSetDType', security: DEMOGRAPHICS_READ
  }),
  '/demographics/{sourcedId}': single({ operationId: 'getDemographics', tag: 'DemographicsManagement', kind: 'demographics', schema: 'SingleDemographicsDType', security: DEMOGRAPHICS_READ })
}

const PATHS: OpenAPIV3.PathsObject = {
  '/orgs': collection({ operationId: 'getAllOrgs', tag: 'OrgsManagement', description: 'Reads the orgs this caller may read.', schema: 'OrgSetDType', security: CORE_READ }),
  '/orgs/{sourcedId}': single({ operationId: 'getOrg', tag: 'OrgsManagement', kind: 'org', schema: 'SingleOrgDType' }),
  '/schools': collection({ operationId: 'getAllSchools', tag: 'SchoolsManagement', description: 'Reads the orgs of type school.', schema: 'OrgSetDType', security: CORE_READ }),
  '/schools/{sourcedId}': single({ operationId: 'getSchool', tag: 'SchoolsManagement', kind: 'school', schema: 'SingleOrgDType' }),
  '/schools/{schoolSourcedId}/students': collection({
    operationId: 'getStudentsForSchool',
    tag: 'SchoolsManagement',
    schema: 'UserSetDType',
    security: ROSTER_READ,
    parent: school,
    description: 'Reads the students of a school; a school this caller cannot read answers 404 unknownobject.'
  }),
  '/schools/{schoolSourcedId}/teachers': collection({
    operationId: 'getTeachersForSchool',
    tag: 'SchoolsManagement',
    schema: 'UserSetDType',
    security: ROSTER_READ,
    parent: school,
    description: 'Reads the teachers of a school; a school this caller cannot read answers 404 unknownobject.'
  }),
  '/students': collection({ operationId: 'getAllStudents', tag: 'StudentsManagement', description: 'Reads the users whose role is student.', schema: 'UserSetDType', security: CORE_READ }),
  '/students/{sourcedId}': single({ operationId: 'getStudent', tag: 'StudentsManagement', kind: 'student', schema: 'SingleUserDType' }),
  '/teachers': collection({ operationId: 'getAllTeachers', tag: 'TeachersManagement', description: 'Reads the users whose role is teacher.', schema: 'UserSetDType', security: CORE_READ }),
  '/teachers/{sourcedId}': single({ operationId: 'getTeacher', tag: 'TeachersManagement', kind: 'teacher', schema: 'SingleUserDType' }),
  '/users': collection({ operationId: 'getAllUsers', tag: 'UsersManagement', description: 'Reads the users: students, teachers and students\' agents (guardians, parents, relatives).', schema: 'UserSetDType', security: CORE_READ }),
  '/users/{sourcedId}': single({ operationId: 'getUser', tag: 'UsersManagement', kind: 'user', schema: 'SingleUserDType' }),
  '/academicSessions': collection({
    operationId: 'getAllAcademicSessions', tag: 'AcademicSessionsManagement', description: 'Reads the academic sessions: school years, terms, grading periods, semesters.', schema: 'AcademicSessionSetDType', security: CORE_READ
  }),
  '/academicSessions/{sourcedId}': single({ operationId: 'getAcademicSession', tag: 'AcademicSessionsManagement', kind: 'academic session', schema: 'SingleAcademicSessionDType' }),
  '/terms': collection({ operationId: 'getAllTerms', tag: 'TermsManagement', description: 'Reads the academic sessions of type term.', schema: 'AcademicSessionSetDType', security: CORE_READ }),
  '/terms/{sourcedId}': single({ operationId: 'getTerm', tag: 'TermsManagement', kind: 'term', schema: 'SingleAcademicSessionDType' }),
  '/terms/{termSourcedId}/gradingPeriods': collection({
    operationId: 'getGradingPeriodsForTerm',
    tag: 'TermsManagement',
    schema: 'AcademicSessionSetDType',
    security: ROSTER_READ,
    parent: term,
    description: 'Reads the grading periods whose parent is the term; a term this caller cannot read answers 404 unknownobject.'
  }),
  '/gradingPeriods': collection({
    operationId: 'getAllGradingPeriods', tag: 'GradingPeriodsManagement', description: 'Reads the academic sessions of type gradingPeriod.', schema: 'AcademicSessionSetDType', security: CORE_READ
  }),
  '/gradingPeriods/{sourcedId}': single({ operationId: 'getGradingPeriod', tag: 'GradingPeriodsManagement', kind: 'grading period', schema: 'SingleAcademicSessionDType' }),
  '/courses': collection({ operationId: 'getAllCourses', tag: 'CoursesManagement', description: 'Reads the courses.', schema: 'CourseSetDType', security: CORE_READ }),
  '/courses/{sourcedId}': single({ operationId: 'getCourse', tag: 'CoursesManagement', kind: 'course', schema: 'SingleCourseDType' }),
  '/schools/{schoolSourcedId}/courses': collection({
    operationId: 'getCoursesForSchool',
    tag: 'SchoolsManagement',
    schema: 'CourseSetDType',
    security: ROSTER_READ,
    parent: school,
    description: 'Reads the courses of a school; a school this caller cannot read answers 404 unknownobject.'
  }),
  '/schools/{schoolSourcedId}/terms': collection({
    operationId: 'getTermsForSchool',
    tag: 'SchoolsManagement',
    schema: 'AcademicSessionSetDType',
    security: ROSTER_READ,
    parent: school,
    description: 'Reads the terms of a school; a school this caller cannot read answers 404 unknownobject.'
  }),
  ...CLASS_PATHS,
  ...ENROLLMENT_PATHS,
  ...DEMOGRAPHICS_PATHS
}

// ---- Component schemas: 1EdTech's, keyword for keyword.

const string: Schema = { type: 'string' }
const dateTime: Schema = { type: 'string', format: 'date-time', description: 'UTC, e.g. 2026-11-28T06:42:04.000Z.' }
const date: Schema = { type: 'string', format: 'date', description: 'YYYY-MM-DD.' }
const trueOrFalse: Schema = { type: 'string', enum: ['true', 'false'] }
const listOf = (items: Schema | Reference, minItems = 0): Schema => ({ type: 'array', minItems, items })

/** An enumeration that admits extensions, `ext:` followed by a name, as 1EdTech writes them. */
const extensible = (values: string[]): Schema => ({
  anyOf: [
    { type: 'string', enum: values },
    { type: 'string', pattern: '(ext:)[a-zA-Z0-9\\.\\-_]+', description: 'An extension: ext:name.' }
  ]
})

/** The reference to another record: its URL, sourcedId and type. */
const guidRef = (type: string): Schema => ({
  description: `A reference to a ${type}.`,
  type: 'object',
  properties: {
    href: { type: 'string', format: 'uri', description: `The ${type}'s URL.` },
    sourcedId: string,
    type: { type: 'string', enum: [type] }
  },
  required: ['href', 'sourcedId', 'type'],
  additionalProperties: false
})

/** The fields every record starts with. */
const BASE: Record<string, Schema | Reference> = {
  sourcedId: string,
  status: { type: 'string', enum: ['active', 'tobedeleted'], description: 'tobedeleted: deleted since the time a delta asked from.' },
  dateLastModified: dateTime,
  metadata: schemaRef('MetadataDType')
}

const SCHEMAS: Record<string, Schema> = {
  MetadataDType: { description: 'Extensions.', type: 'object', properties: {}, additionalProperties: true },
  OrgDType: {
    description: 'An org: a school, a district, or another body above them.',
    type: 'object',
    properties: {
      ...BASE,
      name: string,
      type: extensible(['department', 'district', 'local', 'national', 'school', 'state']),
      identifier: { type: 'string', description: 'A human-readable identifier, e.g. the NCES id.' },
      parent: schemaRef('OrgGUIDRefDType'),
      children: listOf(schemaRef('OrgGUIDRefDType'))
    },
    required: ['sourcedId', 'status', 'dateLastModified', 'name', 'type', 'identifier'],
    additionalProperties: false
  },
  OrgGUIDRefDType: guidRef('org'),
  OrgSetDType: {
    description: 'A page of orgs.',
    type: 'object',
    properties: { orgs: listOf(schemaRef('OrgDType')) },
    additionalProperties: false
  },
  SingleOrgDType: {
    description: 'One org.',
    type: 'object',
    properties: { org: schemaRef('OrgDType') },
    required: ['org'],
    additionalProperties: false
  },
  UserDType: {
    description: 'A user: a student, a teacher, or another person of the roster.',
    type: 'object',
    properties: {
      ...BASE,
      userMasterIdentifier: string,
      username: string,
      userIds: listOf(schemaRef('UserIdDType')),
      enabledUser: trueOrFalse,
      givenName: string,
      familyName: string,
      middleName: string,
      preferredFirstName: string,
      preferredMiddleName: string,
      preferredLastName: string,
      pronouns: string,
      roles: listOf(schemaRef('RoleDType'), 1),
      userProfiles: listOf(schemaRef('UserProfileDType')),
      primaryOrg: schemaRef('OrgGUIDRefDType'),
      identifier: string,
      email: string,
      sms: string,
      phone: string,
      agents: listOf(schemaRef('UserGUIDRefDType')),
      grades: listOf(string),
      password: string,
      resources: listOf(schemaRef('ResourceGUIDRefDType'))
    },
    required: ['sourcedId', 'status', 'dateLastModified', 'enabledUser', 'givenName', 'familyName', 'roles'],
    additionalProperties: false
  },
  UserGUIDRefDType: guidRef('user'),
  ResourceGUIDRefDType: guidRef('resource'),
  UserIdDType: {
    description: 'Another identifier of the user, with its kind.',
    type: 'object',
    properties: { type: string, identifier: string },
    required: ['type', 'identifier'],
    additionalProperties: false
  },
  RoleDType: {
    description: 'A role of the user in an org.',
    type: 'object',
    properties: {
      roleType: { type: 'string', enum: ['primary', 'secondary'] },
      role: extensible([...ONEROSTER_ROLES]),
      org: schemaRef('OrgGUIDRefDType'),
      userProfile: { type: 'string', format: 'uri' },
      beginDate: date,
      endDate: date
    },
    required: ['roleType', 'role', 'org'],
    additionalProperties: false
  },
  UserProfileDType: {
    description: "An account of the user's in some system.",
    type: 'object',
    properties: {
      profileId: { type: 'string', format: 'uri' },
      profileType: string,
      vendorId: string,
      applicationId: string,
      description: string,
      credentials: listOf(schemaRef('CredentialDType'))
    },
    required: ['profileId', 'profileType', 'vendorId'],
    additionalProperties: false
  },
  CredentialDType: {
    description: 'The credentials of a profile.',
    type: 'object',
    properties: { type: string, username: string, password: string },
    required: ['type', 'username'],
    additionalProperties: true
  },
  UserSetDType: {
    description: 'A page of users.',
    type: 'object',
    properties: { users: listOf(schemaRef('UserDType')) },
    additionalProperties: false
  },
  SingleUserDType: {
    description: 'One user.',
    type: 'object',
    properties: { user: schemaRef('UserDType') },
    required: ['user'],
    additionalProperties: false
  },
  AcadSessionGUIDRefDType: guidRef('academicSession'),
  AcademicSessionDType: {
    description: 'An academic session: a school year, a term, a grading period or a semester.',
    type: 'object',
    properties: {
      ...BASE,
      title: string,
      startDate: { ...date, description: 'The day the session starts (in it), YYYY-MM-DD.' },
      endDate: { ...date, description: 'The day the session ends, YYYY-MM-DD, as the school gave it.' },
      type: extensible(['gradingPeriod', 'semester', 'schoolYear', 'term']),
      parent: schemaRef('AcadSessionGUIDRefDType'),
      children: listOf(schemaRef('AcadSessionGUIDRefDType')),
      schoolYear: { type: 'string', description: 'The school year the session belongs to, by the year it ends in: YYYY.' }
    },
    required: ['sourcedId', 'status', 'dateLastModified', 'title', 'startDate', 'endDate', 'type', 'schoolYear'],
    additionalProperties: false
  },
  AcademicSessionSetDType: {
    description: 'A page of academic sessions.',
    type: 'object',
    properties: { academicSessions: listOf(schemaRef('AcademicSessionDType')) },
    additionalProperties: false
  },
  SingleAcademicSessionDType: {
    description: 'One academic session.',
    type: 'object',
    properties: { academicSession: schemaRef('AcademicSessionDType') },
    required: ['academicSession'],
    additionalProperties: false
  },
  CourseDType: {
    description: 'A course: what a school teaches, of which classes are sections.',
    type: 'object',
    properties: {
      ...BASE,
      title: string,
      schoolYear: schemaRef('AcadSessionGUIDRefDType'),
      courseCode: string,
      grades: listOf(string),
      subjects: listOf(string),
      org: schemaRef('OrgGUIDRefDType'),
      subjectCodes: listOf(string),
      resources: listOf(schemaRef('ResourceGUIDRefDType'))
    },
    required: ['sourcedId', 'status', 'dateLastModified', 'title', 'courseCode'],
    additionalProperties: false
  },
  CourseSetDType: {
    description: 'A page of courses.',
    type: 'object',
    properties: { courses: listOf(schemaRef('CourseDType')) },
    additionalProperties: false
  },
  SingleCourseDType: {
    description: 'One course.',
    type: 'object',
    properties: { course: schemaRef('CourseDType') },
    required: ['course'],
    additionalProperties: false
  },
  ClassDType: {
    description: 'A class: a classroom of the school, a section of a course taught in terms.',
    type: 'object',
    properties: {
      ...BASE,
      title: string,
      classCode: string,
      classType: extensible(['homeroom', 'scheduled']),
      location: string,
      grades: listOf(string),
      subjects: listOf(string),
      course: schemaRef('CourseGUIDRefDType'),
      school: schemaRef('OrgGUIDRefDType'),
      terms: listOf(schemaRef('AcadSessionGUIDRefDType'), 1),
      subjectCodes: listOf(string),
      periods: listOf(string),
      resources: listOf(schemaRef('ResourceGUIDRefDType'))
    },
    required: ['sourcedId', 'status', 'dateLastModified', 'title', 'course', 'school', 'terms'],
    additionalProperties: false
  },
  ClassSetDType: {
    description: 'A page of classes.',
    type: 'object',
    properties: { classes: listOf(schemaRef('ClassDType')) },
    additionalProperties: false
  },
  SingleClassDType: {
    description: 'One class.',
    type: 'object',
    properties: { class: schemaRef('ClassDType') },
    required: ['class'],
    additionalProperties: false
  },
  CourseGUIDRefDType: guidRef('course'),
  EnrollmentDType: {
    description: "An enrollment: a student's classroom, or a teacher's assignment, in a class.",
    type: 'object',
    properties: {
      ...BASE,
      user: schemaRef('UserGUIDRefDType'),
      class: schemaRef('ClassGUIDRefDType'),
      school: schemaRef('OrgGUIDRefDType'),
      role: extensible(['administrator', 'proctor', 'student', 'teacher']),
      primary: { type: 'string', enum: ['true', 'false'] },
      beginDate: date,
      endDate: date
    },
    required: ['sourcedId', 'status', 'dateLastModified', 'user', 'class', 'school', 'role'],
    additionalProperties: false
  },
  EnrollmentSetDType: {
    description: 'A page of enrollments.',
    type: 'object',
    properties: { enrollments: listOf(schemaRef('EnrollmentDType')) },
    additionalProperties: false
  },
  SingleEnrollmentDType: {
    description: 'One enrollment.',
    type: 'object',
    properties: { enrollment: schemaRef('EnrollmentDType') },
    required: ['enrollment'],
    additionalProperties: false
  },
  ClassGUIDRefDType: guidRef('class'),
  imsx_StatusInfoDType: {
    description: 'Why a request failed.',
    type: 'object',
    properties: {
      imsx_codeMajor: { type: 'string', enum: ['success', 'processing', 'failure', 'unsupported'] },
      imsx_severity: { type: 'string', enum: ['status', 'warning', 'error'] },
      imsx_description: string,
      imsx_CodeMinor: schemaRef('imsx_CodeMinorDType')
    },
    required: ['imsx_codeMajor', 'imsx_severity'],
    additionalProperties: false
  },
  imsx_CodeMinorDType: {
    description: 'The precise reasons.',
    type: 'object',
    properties: { imsx_codeMinorField: listOf(schemaRef('imsx_CodeMinorFieldDType'), 1) },
    required: ['imsx_codeMinorField'],
    additionalProperties: false
  },
  DemographicsDType: {
    description: "A user's demographics, after the Common Educational Data Standards (CEDS); their sourcedId is the user's.",
    type: 'object',
    properties: {
      ...BASE,
      birthDate: { ...date, description: 'The date of birth, YYYY-MM-DD.' },
      sex: extensible(['male', 'female', 'unspecified', 'other']),
      americanIndianOrAlaskaNative: trueOrFalse,
      asian: trueOrFalse,
      blackOrAfricanAmerican: trueOrFalse,
      nativeHawaiianOrOtherPacificIslander: trueOrFalse,
      white: trueOrFalse,
      demographicRaceTwoOrMoreRaces: trueOrFalse,
      hispanicOrLatinoEthnicity: trueOrFalse,
      countryOfBirthCode: string,
      stateOfBirthAbbreviation: string,
      cityOfBirth: string,
      publicSchoolResidenceStatus: string
    },
    required: ['sourcedId', 'status', 'dateLastModified'],
    additionalProperties: false
  },
  DemographicsSetDType: {
    description: 'A page of demographics.',
    type: 'object',
    properties: { demographics: listOf(schemaRef('DemographicsDType')) },
    additionalProperties: false
  },
  SingleDemographicsDType: {
    description: "One user's demographics.",
    type: 'object',
    properties: { demographics: schemaRef('DemographicsDType') },
    required: ['demographics'],
    additionalProperties: false
  },
  imsx_CodeMinorFieldDType: {
    description: 'One reason.',
    type: 'object',
    properties: {
      imsx_codeMinorFieldName: { type: 'string', default: 'TargetEndSystem' },
      imsx_codeMinorFieldValue: {
        type: 'string',
        enum: ['fullsuccess', 'invalid_filter_field', 'invalid_selection_field', 'invaliddata', 'unauthorisedrequest', 'forbidden',
          'server_busy', 'unknownobject', 'internal_server_error']
      }
    },
    required: ['imsx_codeMinorFieldName', 'imsx_codeMinorFieldValue'],
    additionalProperties: false
  }
}

/**
 * Where a schema or parameter of this description is deliberately narrower than 1EdTech's, by JSON
 * pointer into the description, with the reason. The comparison with 1EdTech's file accepts a
 * difference there and nowhere else. None so far: every schema above is 1EdTech's as it is.
 */
export const narrowings: Readonly<Record<string, string>> = {}

export const oneRosterDescription: OpenAPIV3.Document = {
  openapi: '3.0.3',
  info: {
    title: 'School Data Service: OneRoster 1.2 rostering (REST)',
    version: '1.2',
    description: "The operations of OneRoster 1.2's rostering REST binding that this service serves, read-only, " +
      "with 1EdTech's paths, parameters, scopes and schemas."
  },
  servers: [{ url: ONEROSTER_PATH, description: 'Relative to the service.' }],
  // 1EdTech's tags, in its order: every tag an operation names is declared here.
  tags: [
    { name: 'AcademicSessionsManagement', description: 'Academic sessions: school years, terms, grading periods, semesters.' },
    { name: 'ClassesManagement', description: 'Classes (classrooms with a course and terms), and their students and teachers.' },
    { name: 'CoursesManagement', description: 'Courses, and their classes.' },
    { name: 'DemographicsManagement', description: "Demographics: the students' and teachers' date of birth, sex, race and ethnicity, place of birth, residence status." },
    { name: 'EnrollmentsManagement', description: "Enrollments: students' classes and teachers' assignments to classes." },
    { name: 'GradingPeriodsManagement', description: 'Grading periods (academic sessions of type gradingPeriod).' },
    { name: 'OrgsManagement', description: 'Orgs: schools and the bodies above them.' },
    { name: 'SchoolsManagement', description: 'Schools (orgs of type school), and their students, teachers, courses, terms, classes and enrollments.' },
    { name: 'StudentsManagement', description: 'Students (users whose role is student), and their classes.' },
    { name: 'TeachersManagement', description: 'Teachers (users whose role is teacher), and their classes.' },
    { name: 'TermsManagement', description: 'Terms (academic sessions of type term), and their grading periods and classes.' },
    { name: 'UsersManagement', description: 'Users: students, teachers and agents, and their classes.' }
  ],
  paths: PATHS,
  components: {
    securitySchemes: {
      OAuth2CC: {
        type: 'oauth2',
        description: 'OAuth 2.0 client credentials, with the same clients and access tokens as the GraphQL API (docs/api/access.md).',
        flows: {
          clientCredentials: {
            tokenUrl: TOKEN_PATH,
            scopes: {
              [fullScopeName('roster.readonly')]: 'Every read of the roster (but demographics).',
              [fullScopeName('roster-core.readonly')]: 'The core reads: orgs, schools, users, students, teachers, academic sessions, terms, grading periods, courses.',
              [fullScopeName('roster-demographics.readonly')]: 'Demographics.'
            }
          }
        }
      }
    },
    schemas: SCHEMAS
  }
}

/**
 * The scopes of which a caller must hold one to call `operationId`, as the description's security
 * requirement lists them (1EdTech's): the routes take them from here, so that what a route asks and
 * what the description says are one fact.
 */
export function scopesOf (operationId: string): readonly Scope[] {
  for (const item of Object.values(oneRosterDescription.paths)) {
    const operation = item?.get
    if (operation?.operationId !== operationId) continue
    return (operation.security ?? []).flatMap((requirement) => Object.values(requirement).flat()).map((name) => {
      const scope = parseScope(name)
      if (scope === undefined) throw new Error(`${operationId}: ${name} is not a scope of this service`)
      return scope
    })
  }
  throw new Error(`${operationId} is not an operation of the OneRoster description`)
}
