// The workloads of `npm run bench`: the GraphQL text each sends, how the body is built for a
// school, and what a correct answer is. Shared by the runner (bench/run.mjs) and the ceiling
// server (bench/ceiling.mjs), so both answer and are checked against the same requests.

// ---- Query texts: extend them here, in one place. -------------------------------------------

export const FLAT_QUERY = '{ students(limit: 20) { id fullName classroomName } }'

// A page of students with their classroom and the classroom's teachers (by full name). To change
// its shape, change `expectedStudentsNested` (below), the expected rows in bench/dataset.mjs and the
// ceiling's NESTED_STUDENTS_SQL with it.
export const NESTED_STUDENTS_QUERY =
  '{ students(limit: 100) { id fullName classroom { id name teachers { id fullName } } } }'

export const NESTED_TEACHERS_QUERY = '{ teachers(limit: 100) { id fullName classrooms { id name } } }'

// A page deep in a school's students (after the deepPagePosition()-th, by id), as a sync job pages
// through a school: keyset paging reads only the page, however deep.
export const DEEP_PAGE_QUERY =
  'query DeepPage($after: String!) { studentsPage(limit: 100, after: $after) { nodes { id fullName classroomName } pageInfo { endCursor hasNextPage } } }'

export const LOGIN_MUTATION =
  'mutation Login($username: String!, $password: String!) { login(username: $username, password: $password) { accessToken refreshToken } }'

// The scopes of each school's bench client: the roster without demographics, as a teacher's.
export const CLIENT_SCOPES = ['roster-core.readonly']

export const REFRESH_MUTATION =
  'mutation Refresh($refreshToken: String!) { refreshToken(refreshToken: $refreshToken) { accessToken } }'

// Page sizes of the queries above, for the expected answers.
export const FLAT_LIMIT = 20
export const NESTED_STUDENTS_LIMIT = 100
export const NESTED_TEACHERS_LIMIT = 100
export const DEEP_PAGE_LIMIT = 100

// OneRoster's REST binding (issue 37): a client's page of students, and the same page through
// GraphQL with the fields the REST answer carries for roster-core.readonly (no identifier, no
// email): sourcedId, status, dateLastModified, enabledUser, names, grades. roles and primaryOrg are
// the caller's school, which the GraphQL caller knows already.
export const ONEROSTER_STUDENTS_PATH = '/ims/oneroster/rostering/v1p2/students'
export const REST_MAX_LIMIT = 1000
const CLIENT_STUDENT_FIELDS = 'id sourcedId givenName familyName preferredName gradeLevel status updatedAt'
export const clientStudentsQuery = (limit) => `{ students(limit: ${limit}) { ${CLIENT_STUDENT_FIELDS} } }`
// The full walk's GraphQL form: keyset pages of the same size.
export const WALK_PAGE_QUERY =
  `query Walk($after: String) { studentsPage(limit: ${REST_MAX_LIMIT}, after: $after) { nodes { ${CLIENT_STUDENT_FIELDS} } pageInfo { endCursor hasNextPage } } }`

// The other collections a OneRoster sync walks (bench/oneroster-data.mjs puts them in the data
// set), a page of REST_PAGE_LIMIT each: classes beside the GraphQL classrooms of the same page
// (by id), demographics beside the students' dates of birth (GraphQL's only demographic field; as
// the administrator, whose role holds roster-demographics.readonly, as the client does not), and
// enrollments, academic sessions and courses, which have no GraphQL equivalent.
export const ONEROSTER_PATH = '/ims/oneroster/rostering/v1p2'
export const REST_PAGE_LIMIT = 100
export const CLASSROOMS_QUERY = `{ classrooms(limit: ${REST_PAGE_LIMIT}, orderBy: { field: ID }) { id sourcedId name updatedAt } }`
export const BIRTH_DATES_QUERY = `{ students(limit: ${REST_PAGE_LIMIT}) { id sourcedId dateOfBirth } }`

/** Students before the deep page: 1,500 of the default 2,000, fewer in a smaller data set. */
export function deepPagePosition (studentsPerSchool) {
  return Math.max(1, Math.min(1500, studentsPerSchool - 2 * DEEP_PAGE_LIMIT))
}

// The API's cursor of the students list in its default order (by id): base64url JSON of the list,
// the order, the direction and the sort key. The runner builds the `after` of each school with it
// and the expected `endCursor`; the ceiling decodes and encodes it as the service does. A change to
// the service's cursor format shows as a wrong answer.
export function studentCursor (id) {
  return Buffer.from(JSON.stringify({ l: 'students', o: 'ID', d: 'ASC', v: [id] })).toString('base64url')
}

/**
 * The answer to DEEP_PAGE_QUERY of a server that reads the page itself (the ceiling, the Prisma
 * floor): `readAfter(afterId)` returns up to DEEP_PAGE_LIMIT + 1 rows after that student, already
 * in the answer's shape (id, fullName, classroomName).
 */
export async function deepPageAnswer (variables, readAfter) {
  const after = studentCursorId(variables?.after)
  if (after === null) return { data: null, errors: [{ message: 'after is not a cursor of this API', extensions: { code: 'BAD_USER_INPUT' } }] }
  const rows = await readAfter(after)
  const nodes = rows.slice(0, DEEP_PAGE_LIMIT)
  const endCursor = nodes.length === 0 ? null : studentCursor(nodes.at(-1).id)
  return { data: { studentsPage: { nodes, pageInfo: { endCursor, hasNextPage: rows.length > DEEP_PAGE_LIMIT } } } }
}

/** The student id of a cursor made by `studentCursor`, or null. */
export function studentCursorId (cursor) {
  try {
    const body = JSON.parse(Buffer.from(String(cursor), 'base64url').toString('utf8'))
    return body.l === 'students' && body.o === 'ID' && body.d === 'ASC' && typeof body.v?.[0] === 'string' ? body.v[0] : null
  } catch {
    return null
  }
}

// ---- Workloads ---------------------------------------------------------------------------------
// kind 'read': sends `query` with the access token of the school's `caller` (default `admin`, the
//   school administrator; `teacher`, the school's teacher login; `client`, the school's client with
//   CLIENT_SCOPES); the answer must equal the expected page of that caller (computed from the
//   database before the load).
// kind 'login' / 'refresh': no access token; the answer must carry tokens of the right user.
// `ceiling`: whether bench/ceiling.mjs serves the same request (same body, same answer).
// `uncachedOnly`: runs on the service with the response cache off only (beside the administrator's
//   workload named by `besides` there, which it is compared with).

export const WORKLOADS = [
  { name: 'flat', kind: 'read', query: FLAT_QUERY, expected: 'flat', ceiling: true, rlsCompare: true },
  { name: 'nested', kind: 'read', query: NESTED_STUDENTS_QUERY, expected: 'nestedStudents', ceiling: true, rlsCompare: true },
  { name: 'nested-teachers', kind: 'read', query: NESTED_TEACHERS_QUERY, expected: 'nestedTeachers', ceiling: true, rlsCompare: false },
  // `variables`: the request's variables for a school (its `deepAfter` is set by the runner).
  { name: 'deep-page', kind: 'read', query: DEEP_PAGE_QUERY, expected: 'deepPage', ceiling: true, rlsCompare: true, variables: (school) => ({ after: school.deepAfter }) },
  { name: 'login', kind: 'login', query: LOGIN_MUTATION, ceiling: false, rlsCompare: false },
  { name: 'refresh', kind: 'refresh', query: REFRESH_MUTATION, ceiling: false, rlsCompare: false },
  // The flat and nested pages as a teacher (their two classrooms' students only) and as a client
  // (roster-core.readonly), each beside the administrator's page of the same query.
  { name: 'teacher-flat', kind: 'read', caller: 'teacher', query: FLAT_QUERY, expected: 'teacherFlat', ceiling: false, rlsCompare: false, uncachedOnly: true, besides: 'flat' },
  { name: 'client-flat', kind: 'read', caller: 'client', query: FLAT_QUERY, expected: 'flat', ceiling: false, rlsCompare: false, uncachedOnly: true, besides: 'flat' },
  { name: 'teacher-nested', kind: 'read', caller: 'teacher', query: NESTED_STUDENTS_QUERY, expected: 'teacherNested', ceiling: false, rlsCompare: false, uncachedOnly: true, besides: 'nested' },
  { name: 'client-nested', kind: 'read', caller: 'client', query: NESTED_STUDENTS_QUERY, expected: 'nestedStudents', ceiling: false, rlsCompare: false, uncachedOnly: true, besides: 'nested' },
  // OneRoster REST (kind 'rest': GET `path`, the answer checked against the binding's expected
  // page): a page of 100 and of the maximum, each interleaved with the same page through GraphQL
  // (`graphql`), all as the school's client. `limit`: the page's size, for the expected answers;
  // `connections`: the maximum pages' load, 4 connections (30 trip the service's load shedding).
  { name: 'rest-users-100', kind: 'rest', caller: 'client', path: `${ONEROSTER_STUDENTS_PATH}?limit=100`, limit: 100, ceiling: false, rlsCompare: false, uncachedOnly: true, graphql: 'graphql-users-100' },
  { name: 'graphql-users-100', kind: 'read', caller: 'client', query: clientStudentsQuery(100), expected: 'clientStudents100', limit: 100, ceiling: false, rlsCompare: false, uncachedOnly: true, restPeer: true },
  { name: 'rest-users-max', kind: 'rest', caller: 'client', path: `${ONEROSTER_STUDENTS_PATH}?limit=${REST_MAX_LIMIT}`, limit: REST_MAX_LIMIT, connections: 4, ceiling: false, rlsCompare: false, uncachedOnly: true, graphql: 'graphql-users-max' },
  { name: 'graphql-users-max', kind: 'read', caller: 'client', query: clientStudentsQuery(REST_MAX_LIMIT), expected: 'clientStudentsMax', limit: REST_MAX_LIMIT, connections: 4, ceiling: false, rlsCompare: false, uncachedOnly: true, restPeer: true },
  // The other collections of a sync, a page of REST_PAGE_LIMIT each (`envelope`: the answer's list;
  // the answer must hold the school's first records of the collection, by sourcedId, in the
  // binding's order). `graphql`: the nearest GraphQL equivalent, where one exists.
  { name: 'rest-classes-100', roster: true, kind: 'rest', caller: 'client', path: `${ONEROSTER_PATH}/classes?limit=${REST_PAGE_LIMIT}`, envelope: 'classes', limit: REST_PAGE_LIMIT, ceiling: false, rlsCompare: false, uncachedOnly: true, graphql: 'graphql-classrooms-100' },
  { name: 'graphql-classrooms-100', kind: 'read', caller: 'client', query: CLASSROOMS_QUERY, expected: 'classrooms100', limit: REST_PAGE_LIMIT, ceiling: false, rlsCompare: false, uncachedOnly: true, restPeer: true },
  { name: 'rest-enrollments-100', roster: true, kind: 'rest', caller: 'client', path: `${ONEROSTER_PATH}/enrollments?limit=${REST_PAGE_LIMIT}`, envelope: 'enrollments', limit: REST_PAGE_LIMIT, ceiling: false, rlsCompare: false, uncachedOnly: true },
  { name: 'rest-sessions-100', roster: true, kind: 'rest', caller: 'client', path: `${ONEROSTER_PATH}/academicSessions?limit=${REST_PAGE_LIMIT}`, envelope: 'academicSessions', limit: REST_PAGE_LIMIT, ceiling: false, rlsCompare: false, uncachedOnly: true },
  { name: 'rest-courses-100', roster: true, kind: 'rest', caller: 'client', path: `${ONEROSTER_PATH}/courses?limit=${REST_PAGE_LIMIT}`, envelope: 'courses', limit: REST_PAGE_LIMIT, ceiling: false, rlsCompare: false, uncachedOnly: true },
  { name: 'rest-demographics-100', roster: true, kind: 'rest', caller: 'admin', path: `${ONEROSTER_PATH}/demographics?limit=${REST_PAGE_LIMIT}`, envelope: 'demographics', limit: REST_PAGE_LIMIT, ceiling: false, rlsCompare: false, uncachedOnly: true, graphql: 'graphql-birthdates-100' },
  { name: 'graphql-birthdates-100', roster: true, kind: 'read', caller: 'admin', query: BIRTH_DATES_QUERY, expected: 'birthDates100', limit: REST_PAGE_LIMIT, ceiling: false, rlsCompare: false, uncachedOnly: true, restPeer: true }
  // Another read workload: its query above, an expected page per school in bench/dataset.mjs
  // (expectedPages), and for the ceiling a SQL handler keyed by the same query text.
]

/** The access token a read workload sends for one school: its caller's. */
export function accessTokenOf (workload, school) {
  switch (workload.caller ?? 'admin') {
    case 'admin': return school.accessToken
    case 'teacher': return school.teacher.accessToken
    case 'client': return school.client.accessToken
    default: throw new Error(`unknown caller ${workload.caller}`)
  }
}

/** The JSON body a workload sends for one school. */
export function requestBody (workload, school) {
  switch (workload.kind) {
    case 'rest': return undefined
    case 'read': return JSON.stringify(workload.variables === undefined ? { query: workload.query } : { query: workload.query, variables: workload.variables(school) })
    case 'login': return JSON.stringify({ query: workload.query, variables: { username: school.username, password: school.password } })
    case 'refresh': return JSON.stringify({ query: workload.query, variables: { refreshToken: school.refreshToken } })
    default: throw new Error(`unknown workload kind ${workload.kind}`)
  }
}

// ---- Expected answers -----------------------------------------------------------------------
// Built from rows read directly from the database (as the superuser), in the field order of the
// queries, so a correct body is usually byte-equal to JSON.stringify of the expected object.

/** rows: { id, full_name, classroom_id, classroom_name } ordered by id. */
export function expectedFlat (rows) {
  return { data: { students: rows.slice(0, FLAT_LIMIT).map((r) => ({ id: r.id, fullName: r.full_name, classroomName: r.classroom_name })) } }
}

/** rows as for expectedFlat, plus classroom_teachers: [{ id, full_name }] by full name, then id. */
export function expectedStudentsNested (rows) {
  return {
    data: {
      students: rows.slice(0, NESTED_STUDENTS_LIMIT).map((r) => ({
        id: r.id,
        fullName: r.full_name,
        classroom: r.classroom_id === null
          ? null
          : {
              id: r.classroom_id,
              name: r.classroom_name,
              teachers: r.classroom_teachers.map((t) => ({ id: t.id, fullName: t.full_name }))
            }
      }))
    }
  }
}

/** rows: { id, full_name, classrooms: [{ id, name }] } ordered by id, classrooms by name. */
export function expectedTeachersNested (rows) {
  return {
    data: {
      teachers: rows.slice(0, NESTED_TEACHERS_LIMIT).map((r) => ({
        id: r.id,
        fullName: r.full_name,
        classrooms: r.classrooms.map((c) => ({ id: c.id, name: c.name }))
      }))
    }
  }
}

/**
 * rows: { id, full_name, classroom_name } ordered by id, from just after the deep page's `after`
 * cursor, with one row more than the page when another page follows.
 */
export function expectedDeepPage (rows) {
  const nodes = rows.slice(0, DEEP_PAGE_LIMIT).map((r) => ({ id: r.id, fullName: r.full_name, classroomName: r.classroom_name }))
  return {
    data: {
      studentsPage: {
        nodes,
        pageInfo: { endCursor: nodes.length === 0 ? null : studentCursor(nodes.at(-1).id), hasNextPage: rows.length > DEEP_PAGE_LIMIT }
      }
    }
  }
}

/**
 * rows: { id, sourced_id, given_name, family_name, preferred_name, grade_level, status, updated_at }
 * ordered by id. The GraphQL page of clientStudentsQuery.
 */
export function expectedClientStudents (rows, limit) {
  return {
    data: {
      students: rows.slice(0, limit).map((r) => ({
        id: r.id,
        sourcedId: r.sourced_id,
        givenName: r.given_name,
        familyName: r.family_name,
        preferredName: r.preferred_name,
        gradeLevel: r.grade_level,
        status: r.status,
        updatedAt: r.updated_at
      }))
    }
  }
}

/**
 * The same rows as the binding's users for a roster-core.readonly client of the school, whose
 * answers' org references start with `origin` (the URL the request came to). The bench data set
 * has no grade levels (CEDS codes would need the service's table).
 */
export function expectedRestStudents (rows, limit, schoolId, origin) {
  const org = { href: `${origin}/ims/oneroster/rostering/v1p2/orgs/${encodeURIComponent(schoolId)}`, sourcedId: schoolId, type: 'org' }
  return {
    users: rows.slice(0, limit).map((r) => {
      if (r.grade_level !== null) throw new Error('the bench data set has no grade levels')
      return {
        sourcedId: r.sourced_id ?? r.id,
        status: 'active',
        dateLastModified: r.updated_at,
        enabledUser: String(r.status === 'ACTIVE'),
        givenName: r.given_name,
        familyName: r.family_name,
        ...(r.preferred_name === null ? {} : { preferredFirstName: r.preferred_name }),
        roles: [{ roleType: 'primary', role: 'student', org }],
        primaryOrg: org,
        grades: []
      }
    })
  }
}

/** rows: { id, sourced_id, name, updated_at } of classrooms by id: the page of CLASSROOMS_QUERY. */
export function expectedClassrooms (rows) {
  return { data: { classrooms: rows.map((r) => ({ id: r.id, sourcedId: r.sourced_id, name: r.name, updatedAt: r.updated_at })) } }
}

/** rows: { id, sourced_id, date_of_birth (YYYY-MM-DD) } of students by id: the page of BIRTH_DATES_QUERY. */
export function expectedBirthDates (rows) {
  return { data: { students: rows.map((r) => ({ id: r.id, sourcedId: r.sourced_id, dateOfBirth: r.date_of_birth })) } }
}

/**
 * Checks a OneRoster answer of another collection (`envelope`) against the school's expected
 * sourcedIds in order (the first page of the collection, read from the database): a record of
 * another school, a missing or extra one, or another order is reported.
 */
export function checkRestKeys (body, envelope, keys, school) {
  const { parsed, problem } = parseAnswer(body, false)
  if (problem !== undefined) return problem
  const list = parsed[envelope]
  if (!Array.isArray(list)) return `no ${envelope} list: ${body.slice(0, 200)}`
  const seen = list.map((record) => record.sourcedId)
  const at = seen.findIndex((key, i) => key !== keys[i])
  if (at === -1 && seen.length === keys.length) return null
  return at === -1
    ? `${seen.length} ${envelope} instead of ${keys.length} for ${school.tag}`
    : `${envelope}[${at}]: ${JSON.stringify(seen[at])} instead of ${JSON.stringify(keys[at])}, the school's (${school.tag}) in the binding's order`
}

/** Checks a OneRoster users answer against the expected page (as checkRead, for the binding's envelope). */
export function checkRest (body, expectedText, expected, school) {
  if (body === expectedText) return null
  const { parsed, problem } = parseAnswer(body, false)
  if (problem !== undefined) return problem
  if (!Array.isArray(parsed.users)) return `no users list: ${body.slice(0, 200)}`
  if (parsed.users.length !== expected.users.length) return `${parsed.users.length} users instead of ${expected.users.length}`
  for (const user of parsed.users) {
    if (typeof user.givenName !== 'string' || !user.givenName.startsWith(school.tag + ' ')) return `tenant leak: user "${user.givenName}" in an answer for ${school.tag}`
  }
  const diff = firstDifference(parsed, expected, '')
  return diff === null ? null : `answer differs from the expected page at ${diff}`
}

// ---- Checking answers -----------------------------------------------------------------------

/** An answer's body parsed, or the problem to report: not JSON, or (`graphql`) a GraphQL errors list. */
function parseAnswer (body, graphql) {
  let parsed
  try {
    parsed = JSON.parse(body)
  } catch {
    return { problem: `not JSON: ${body.slice(0, 200)}` }
  }
  if (graphql && parsed.errors !== undefined) return { problem: `errors: ${JSON.stringify(parsed.errors).slice(0, 300)}` }
  return { parsed }
}

/**
 * Checks a read answer against the expected page of `school`. Returns null when correct, or a
 * message. The fast path is a string comparison; on a difference the body is parsed to say what
 * is wrong (and to accept the same JSON with another key order or spacing). `reach`: for a
 * teacher, the names of their classrooms; a student of another is reported as a reach leak.
 */
export function checkRead (body, expectedText, expected, school, reach) {
  if (body === expectedText) return null
  const { parsed, problem } = parseAnswer(body, true)
  if (problem !== undefined) return problem
  const [field] = Object.keys(expected.data)
  // A list, or a page of one (`nodes`).
  const paged = !Array.isArray(expected.data[field])
  const list = paged ? parsed.data?.[field]?.nodes : parsed.data?.[field]
  if (!Array.isArray(list)) return `no data.${field}${paged ? '.nodes' : ''} list: ${body.slice(0, 200)}`
  const want = paged ? expected.data[field].nodes : expected.data[field]
  if (list.length !== want.length) return `${list.length} ${field} instead of ${want.length}`
  for (const item of list) {
    // Names encode the school (`S07 Student 0123`): a row of another school is a tenant leak.
    if (typeof item.fullName === 'string' && !item.fullName.startsWith(school.tag + ' ')) {
      return `tenant leak: ${field} "${item.fullName}" in an answer for ${school.tag}`
    }
    const rooms = item.classrooms ?? (item.classroom ? [item.classroom] : [])
    for (const room of rooms) {
      if (!room.name.startsWith(school.tag + ' ')) return `tenant leak: classroom "${room.name}" in an answer for ${school.tag}`
      for (const teacher of room.teachers ?? []) {
        if (!teacher.fullName.startsWith(school.tag + ' ')) return `tenant leak: teacher "${teacher.fullName}" in an answer for ${school.tag}`
      }
    }
    if (typeof item.classroomName === 'string' && !item.classroomName.startsWith(school.tag + ' ')) {
      return `tenant leak: classroom "${item.classroomName}" in an answer for ${school.tag}`
    }
    const roomName = item.classroom !== undefined ? item.classroom?.name : item.classroomName
    if (reach !== undefined && !reach.includes(roomName)) {
      return `reach leak: ${field} "${item.fullName}" of classroom ${JSON.stringify(roomName)} in an answer for the teacher of ${school.tag}, who teaches ${reach.join(', ')}`
    }
  }
  const diff = firstDifference(parsed, expected, '')
  return diff === null ? null : `answer differs from the expected page at ${diff}`
}

function firstDifference (actual, expected, path) {
  if (expected === null || typeof expected !== 'object') {
    return actual === expected ? null : `${path || '.'}: ${JSON.stringify(actual)} instead of ${JSON.stringify(expected)}`
  }
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual) !== Array.isArray(expected)) {
    return `${path || '.'}: ${JSON.stringify(actual)?.slice(0, 100)} instead of an ${Array.isArray(expected) ? 'array' : 'object'}`
  }
  const keys = new Set([...Object.keys(actual), ...Object.keys(expected)])
  for (const key of keys) {
    const d = firstDifference(actual[key], expected[key], `${path}.${key}`)
    if (d !== null) return d
  }
  return null
}

/**
 * Checks a login or refresh answer: tokens present, the access token signed with `verifySignature`
 * and issued to the school's user (`caller`: `admin`, or `teacher`, whose token names the role and
 * the teacher record) with the school's id.
 */
export function checkTokens (body, field, school, verifySignature, wantRefreshToken, caller = 'admin') {
  const { parsed, problem } = parseAnswer(body, true)
  if (problem !== undefined) return problem
  const payload = parsed.data?.[field]
  if (payload === undefined || payload === null || typeof payload.accessToken !== 'string') {
    return `no data.${field}.accessToken: ${body.slice(0, 200)}`
  }
  if (wantRefreshToken && !/^[A-Za-z0-9_-]{43}$/.test(payload.refreshToken ?? '')) return 'no well-formed refreshToken'
  const claims = verifySignature(payload.accessToken)
  if (claims === null) return 'access token with a bad signature'
  const user = caller === 'teacher' ? school.teacher : { userId: school.userId }
  if (claims.sub !== user.userId || claims.school !== school.id) {
    return `access token for sub=${claims.sub} school=${claims.school} instead of the ${caller} of ${school.tag}`
  }
  if (caller === 'teacher' ? claims.role !== 'teacher' || claims.teacher !== user.teacherId : claims.role !== undefined || claims.teacher !== undefined) {
    return `access token with role=${claims.role} teacher=${claims.teacher} for the ${caller} of ${school.tag}`
  }
  return null
}

/**
 * Checks an answer of POST /oauth/token: an access token signed with `verifySignature`, of the
 * school's client, for the school, with CLIENT_SCOPES.
 */
export function checkClientToken (status, body, school, verifySignature) {
  let parsed
  try {
    parsed = JSON.parse(body)
  } catch {
    return `HTTP ${status}, not JSON: ${body.slice(0, 200)}`
  }
  if (status !== 200 || typeof parsed.access_token !== 'string') return `HTTP ${status}: ${body.slice(0, 300)}`
  const claims = verifySignature(parsed.access_token)
  if (claims === null) return 'access token with a bad signature'
  const { clientId } = school.client
  if (claims.sub !== clientId || claims.client_id !== clientId || claims.school !== school.id || claims.scope !== CLIENT_SCOPES.join(' ')) {
    return `access token for sub=${claims.sub} client_id=${claims.client_id} school=${claims.school} scope=${claims.scope} instead of the client of ${school.tag}`
  }
  return null
}
