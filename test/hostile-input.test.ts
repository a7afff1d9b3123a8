// Input a client decodes into SQL values (cursors, filters, ids, credentials), malformed or forged:
// every one is refused with BAD_USER_INPUT (or answered), never INTERNAL_SERVER_ERROR. Cursors are
// generated (fast-check) for every list, ordering and direction, and for the change feed. A `query`
// that is not a GraphQL document, on every cache and persisted-document path, is a request error.
import fc from 'fast-check'
import { parse } from 'graphql'
import t from 'tap'
import { buildApp } from '../src/app.js'
import type { Config } from '../src/config.js'
import { documentHash } from '../src/graphql/document-manifest.js'
import { build, gql, login, seedSchool, testConfig, testDatabase, type GraphQLResponse } from './helper.js'

const LISTS = {
  students: ['FAMILY_NAME', 'GIVEN_NAME', 'CREATED_AT', 'UPDATED_AT', 'ID'],
  teachers: ['FAMILY_NAME', 'GIVEN_NAME', 'CREATED_AT', 'UPDATED_AT', 'ID'],
  classrooms: ['NAME', 'CREATED_AT', 'UPDATED_AT', 'ID']
} as const
type List = keyof typeof LISTS
const TYPE: Record<List, string> = { students: 'Student', teachers: 'Teacher', classrooms: 'Classroom' }

const cursor = (body: unknown): string => Buffer.from(JSON.stringify(body)).toString('base64url')

/** What a forged cursor value may be: any text, the odd characters PostgreSQL refuses, other JSON. */
const value = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', '\u0000', 'a\u0000b', '\ud800', 'not-a-uuid', '00000000-0000-4000-8000-00000000000g',
    '2026-13-45T99:99:99.000Z', '+275760-09-13T00:00:00.000Z', '-271821-04-20T00:00:00.000Z', '0001-01-01T00:00:00.000Z',
    '9999-12-31T23:59:59.999Z', '1', 'NaN', 'Infinity', 'null', "' OR 1=1 --", 'x'.repeat(20_000)),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 })
)

/** A cursor of one of our lists with forged values, or a cursor that is not one of ours at all. */
function cursorArb (list: List): fc.Arbitrary<{ text: string, order: string, direction: string }> {
  const orders = LISTS[list]
  const body = fc.record({
    order: fc.constantFrom(...orders),
    direction: fc.constantFrom('ASC', 'DESC'),
    values: fc.array(value, { minLength: 0, maxLength: 4 })
  }).map(({ order, direction, values }) => ({ text: cursor({ l: list, o: order, d: direction, v: values }), order, direction }))
  const foreign = fc.record({
    order: fc.constantFrom(...orders),
    direction: fc.constantFrom('ASC', 'DESC'),
    text: fc.oneof(
      fc.string(),
      fc.base64String(),
      fc.jsonValue().map(cursor),
      fc.record({ l: fc.constantFrom('students', 'teachers', 'classrooms', 'x'), o: fc.string(), d: fc.string(), v: fc.anything() }).map(cursor)
    )
  })
  return fc.oneof({ arbitrary: body, weight: 4 }, { arbitrary: foreign, weight: 1 })
}

/** Throws (failing the property with the answer) unless `res` is data or BAD_USER_INPUT alone. */
function refusedOrAnswered (res: GraphQLResponse, what: string): true {
  const codes = (res.body.errors ?? []).map((error) => error.extensions?.code)
  const ok = res.statusCode === 200 && codes.every((code) => code === 'BAD_USER_INPUT') && (codes.length > 0 || res.body.data != null)
  if (!ok) throw new Error(`${what}: ${res.statusCode} ${JSON.stringify(res.body).slice(0, 500)}`)
  return ok
}

t.test('a malformed or forged cursor of any list, ordering and direction is BAD_USER_INPUT', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Hostile Cursor School', [['Ada Lovelace', 'Room 1'], ['Alan Turing', 'Room 2']])
  const { accessToken } = await login(app, school.username)
  for (const list of Object.keys(LISTS) as List[]) {
    let runs = 0
    await fc.assert(fc.asyncProperty(cursorArb(list), fc.boolean(), async ({ text, order, direction }, page) => {
      runs++
      const field = page ? `${list}Page` : list
      const selection = page ? '{ nodes { id } pageInfo { endCursor } }' : '{ id }'
      const res = await gql(app, `query ($after: String, $order: ${TYPE[list]}OrderField!, $direction: SortDirection) {
        r: ${field}(after: $after, orderBy: { field: $order, direction: $direction }) ${selection}
      }`, { token: accessToken, variables: { after: text, order, direction } })
      return refusedOrAnswered(res, `${field}(after: ${text.slice(0, 200)}, ${order} ${direction})`)
    }), { numRuns: 150 })
    t.ok(runs >= 150, `${list}: ${runs} generated cursors, each refused or answered`)
  }
})

t.test('the issue\'s forged cursors are BAD_USER_INPUT', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Forged Cursor Examples')
  const { accessToken } = await login(app, school.username)
  const cases: Record<string, string> = {
    'an ID cursor whose key is not a UUID': 'studentsPage(after: "eyJsIjoic3R1ZGVudHMiLCJvIjoiSUQiLCJkIjoiQVNDIiwidiI6WyJub3QtYS11dWlkIl19") { nodes { id } }',
    'a name cursor whose last value is not a UUID': `teachersPage(after: "${cursor({ l: 'teachers', o: 'FAMILY_NAME', d: 'ASC', v: ['Hopper', 'Grace', 'nope'] })}", orderBy: { field: FAMILY_NAME }) { nodes { id } }`,
    'a name cursor with a NUL byte': `studentsPage(after: "${cursor({ l: 'students', o: 'GIVEN_NAME', d: 'DESC', v: ['A\u0000', 'B', '00000000-0000-4000-8000-000000000000'] })}", orderBy: { field: GIVEN_NAME, direction: DESC }) { nodes { id } }`,
    'a date cursor out of PostgreSQL\'s range': `classroomsPage(after: "${cursor({ l: 'classrooms', o: 'CREATED_AT', d: 'ASC', v: ['-271821-04-20T00:00:00.000Z', '00000000-0000-4000-8000-000000000000'] })}", orderBy: { field: CREATED_AT }) { nodes { id } }`,
    'a date cursor that is not ISO 8601': `classroomsPage(after: "${cursor({ l: 'classrooms', o: 'UPDATED_AT', d: 'ASC', v: ['Tuesday', '00000000-0000-4000-8000-000000000000'] })}", orderBy: { field: UPDATED_AT }) { nodes { id } }`
  }
  for (const [name, field] of Object.entries(cases)) {
    const res = await gql(app, `{ ${field} }`, { token: accessToken })
    t.equal(res.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', `${name}: ${res.body.errors?.[0]?.message}`)
  }
})

t.test('a malformed or forged change-feed cursor is BAD_USER_INPUT', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Hostile Feed School', [['Grace Hopper']])
  const { accessToken } = await login(app, school.username)
  const feedCursor = (text: string): string => Buffer.from(text).toString('base64url')
  const since = fc.oneof(
    fc.string(),
    fc.string().map(feedCursor),
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((n) => feedCursor(`changes:${n}`)),
    fc.constantFrom('9223372036854775807', '9223372036854775808', '9999999999999999999', '0', '00', '-1', '1e3', ' 1')
      .map((n) => feedCursor(`changes:${n}`))
  )
  await fc.assert(fc.asyncProperty(since, async (text) => {
    const res = await gql(app, 'query ($since: String) { changes(since: $since) { nextCursor changes { id } } }', { token: accessToken, variables: { since: text } })
    return refusedOrAnswered(res, `changes(since: ${text.slice(0, 100)})`)
  }), { numRuns: 300 })
  const largest = await gql(app, 'query ($since: String) { changes(since: $since) { nextCursor } }', { token: accessToken, variables: { since: feedCursor('changes:9999999999999999999') } })
  t.equal(largest.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', 'a seq beyond PostgreSQL\'s bigint')
})

t.test('filters, ids and credentials with text PostgreSQL cannot hold are refused, never a 500', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Hostile Filter School', [['Ada Lovelace', 'Room 1']])
  const { accessToken } = await login(app, school.username)
  const nul = 'a\u0000b'
  const cases: Array<[string, string, Record<string, unknown>]> = [
    ['student search', 'query ($v: String) { students(filter: { search: $v }) { id } }', { v: nul }],
    ['teacher search', 'query ($v: String) { teachersPage(filter: { search: $v }) { nodes { id } } }', { v: nul }],
    ['classroom search', 'query ($v: String) { classrooms(filter: { search: $v }) { id } }', { v: nul }],
    ['classroom subject', 'query ($v: String) { classrooms(filter: { subject: $v }) { id } }', { v: nul }],
    ['student id', 'query ($v: ID!) { student(id: $v) { id } }', { v: nul }],
    ['classroom id filter', 'query ($v: ID) { students(filter: { classroomId: $v }) { id } }', { v: `${school.studentIds[0]}\u0000` }]
  ]
  for (const [name, query, variables] of cases) {
    const res = await gql(app, query, { token: accessToken, variables })
    t.equal(res.body.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', `${name}: ${res.body.errors?.[0]?.message}`)
  }
  const credentials: Array<[string, string, Record<string, unknown>, string]> = [
    ['username', 'mutation ($u: String!) { login(username: $u, password: "x") { accessToken } }', { u: `${school.username}\u0000` }, 'INVALID_CREDENTIALS'],
    ['refresh token', 'mutation ($r: String!) { refreshToken(refreshToken: $r) { accessToken } }', { r: 'a\u0000'.repeat(30) }, 'INVALID_REFRESH_TOKEN']
  ]
  for (const [name, query, variables, code] of credentials) {
    const res = await gql(app, query, { variables })
    t.equal(res.body.errors?.[0]?.extensions?.code, code, `${name} with a NUL byte: ${res.body.errors?.[0]?.message}`)
  }
})

// Issue 27: Mercurius took any `query` that graphql-js could not parse but JSON.parse could for a
// document's AST, so `"5"` reached validation as the number 5 (a 500). Any JSON value or short
// string as `query`, on every path a query takes before it runs (the response cache's lookup, the
// persisted-document providers, GET), is answered as the parser answers it: a request error.
t.test('any JSON value or short string as query is a request error with the parser\'s message, never a 500, on every cache and persisted-document path', async (t) => {
  const school = await seedSchool('Hostile Query School', [['Ada Lovelace', 'Room 1']])
  // Logged in where text runs (trusted-documents mode refuses it); the token holds on every app.
  const { accessToken } = await login(await build(t), school.username)
  const WELL_FORMED = '{ __typename }'
  const modes: Array<[string, Partial<Config>]> = [
    ['automatic persisted queries (default), response cache on', { responseCacheTtl: 60 }],
    ['persisted queries off', { persistedQueryTtl: 0 }],
    ['trusted documents', { trustedDocuments: new Map([[documentHash(WELL_FORMED), WELL_FORMED]]) }]
  ]
  // Texts that begin as JSON (the class of the defect), other short texts, and names of the keys
  // the caches on the way use.
  const text = fc.oneof(
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.jsonValue().map((v) => JSON.stringify(v, null, 2)),
    fc.string({ maxLength: 6 }),
    fc.string({ maxLength: 6, unit: 'binary' }),
    fc.constantFrom('5', '0', '-1', '1e3', '5.5', 'true', 'false', 'null', '[]', '{}', '""', '"x"', ' 5', '\n[1]',
      '{"kind":"Document","definitions":[]}', '__proto__', 'constructor', 'toString', documentHash(WELL_FORMED),
      `sha256:${documentHash(WELL_FORMED)}`, 'query', '{', '}', '#', '\u0000', '\ufeff5')
  )
  for (const [mode, overrides] of modes) {
    const errors: string[] = []
    const app = await buildApp(testConfig(overrides), {
      database: await testDatabase(),
      logger: { level: 'error', stream: { write (line: string) { errors.push(line) } } }
    })
    t.teardown(() => app.close())
    const headers = { authorization: `Bearer ${accessToken}`, accept: 'application/graphql-response+json' }
    let runs = 0
    await fc.assert(fc.asyncProperty(text, fc.constantFrom('POST', 'POST+APQ', 'GET'), async (query, how) => {
      runs++
      const persisted = { persistedQuery: { version: 1, sha256Hash: documentHash(query) } }
      const res = how === 'GET'
        ? await app.inject({ method: 'GET', url: `/?query=${encodeURIComponent(query)}`, headers })
        : await app.inject({ method: 'POST', url: '/', headers, payload: { query, ...(how === 'POST+APQ' && { extensions: persisted }) } })
      const body = res.json<{ data?: unknown, errors?: Array<{ message: string, extensions?: { code?: string } }> }>()
      const what = `${mode}, ${how} ${JSON.stringify(query)}: ${res.statusCode} ${res.body.slice(0, 300)}`
      if (res.statusCode >= 500 || body.errors?.some((e) => e.extensions?.code === 'INTERNAL_SERVER_ERROR')) throw new Error(what)
      let parserMessage: string | undefined
      try { parse(query) } catch (err) { parserMessage = (err as Error).message }
      if (parserMessage === undefined || query === '') return true // a document (or no query): answered as such
      const codes = body.errors?.map((e) => e.extensions?.code) ?? []
      // Text alone in trusted-documents mode is refused before it is parsed.
      if (overrides.trustedDocuments !== undefined && how !== 'POST+APQ') {
        if (codes[0] !== 'TRUSTED_DOCUMENT_REQUIRED') throw new Error(what)
        return true
      }
      if (overrides.trustedDocuments !== undefined && codes[0] === 'PERSISTED_QUERY_NOT_FOUND') return true
      if (res.statusCode !== 400 || body.data !== undefined || body.errors?.[0]?.message !== parserMessage) throw new Error(`${what} (the parser says ${parserMessage})`)
      return true
    }), { numRuns: 300 })
    t.ok(runs >= 300, `${mode}: ${runs} queries, each a request error or answered`)
    t.same(errors, [], `${mode}: nothing logged at level error`)
    // The well-formed document still runs after them (nothing hostile was cached as a document).
    const ok = await app.inject({ method: 'POST', url: '/', headers, payload: { query: WELL_FORMED, ...(overrides.trustedDocuments !== undefined && { documentId: `sha256:${documentHash(WELL_FORMED)}`, query: undefined }) } })
    t.same(ok.json(), { data: { __typename: 'Query' } }, `${mode}: a document still runs`)
  }
})
