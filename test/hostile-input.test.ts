// Input a client decodes into SQL values (cursors, filters, ids, credentials), malformed or forged:
// every one is refused with BAD_USER_INPUT (or answered), never INTERNAL_SERVER_ERROR. Cursors are
// generated (fast-check) for every list, ordering and direction, and for the change feed; a text
// with a NUL for every text argument and input field of every operation of the schema. A `query`
// that is not a GraphQL document, on every cache and persisted-document path, is a request error.
import fc from 'fast-check'
import {
  astFromValue, getNamedType, getNullableType, isCompositeType, isEnumType, isInputObjectType, isListType, isNonNullType, isScalarType, parse, print,
  type GraphQLField, type GraphQLInputType, type GraphQLSchema
} from 'graphql'
import t from 'tap'
import { buildApp } from '../src/app.js'
import type { Config } from '../src/config.js'
import { requirementOf } from '../src/auth/scopes.js'
import { documentHash } from '../src/graphql/document-manifest.js'
import { build, gql, login, seedSchool, testConfig, testDatabase, type GraphQLResponse } from './helper.js'

const LISTS = {
  students: ['FAMILY_NAME', 'GIVEN_NAME', 'CREATED_AT', 'UPDATED_AT', 'ID'],
  teachers: ['FAMILY_NAME', 'GIVEN_NAME', 'CREATED_AT', 'UPDATED_AT', 'ID'],
  classrooms: ['NAME', 'CREATED_AT', 'UPDATED_AT', 'ID'],
  contacts: ['FAMILY_NAME', 'GIVEN_NAME', 'CREATED_AT', 'UPDATED_AT', 'ID']
} as const
type List = keyof typeof LISTS
const TYPE: Record<List, string> = { students: 'Student', teachers: 'Teacher', classrooms: 'Classroom', contacts: 'Contact' }

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
      fc.record({ l: fc.constantFrom('students', 'teachers', 'classrooms', 'contacts', 'x'), o: fc.string(), d: fc.string(), v: fc.anything() }).map(cursor)
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

// Issue 35: a text with a NUL, which PostgreSQL cannot store, reached the database from a
// mutation's input (a 500). Every text argument and input field of every operation, enumerated from
// the schema served (a field added later is enumerated too), gets one: refused with BAD_USER_INPUT
// naming its path, before anything is written or logged.

type Step = string | number
/** Scalars whose values are text a client chooses; the others cannot carry a NUL past coercion. */
const TEXT_SCALARS = new Set(['String', 'ID'])
const OTHER_SCALARS = new Set(['Int', 'Float', 'Boolean', 'Date', 'DateTime'])
/** A valid value of each scalar, for the arguments around the NUL. */
const SAMPLE: Record<string, unknown> = {
  String: 'Room 1', ID: '00000000-0000-4000-8000-000000000000', Int: 1, Float: 1.5, Boolean: true, Date: '2020-09-01', DateTime: '2020-09-01T08:00:00.000Z'
}

/** The paths of the text positions in a value of `type` (a list's at index 1: a valid item comes first). */
function textPositions (type: GraphQLInputType, path: Step[], seen: ReadonlySet<string> = new Set()): Step[][] {
  const inner = getNullableType(type)
  if (isListType(inner)) return textPositions(inner.ofType, [...path, 1], seen)
  if (isInputObjectType(inner)) {
    if (seen.has(inner.name)) return []
    return Object.values(inner.getFields()).flatMap((field) => textPositions(field.type, [...path, field.name], new Set([...seen, inner.name])))
  }
  if (isScalarType(inner)) {
    if (TEXT_SCALARS.has(inner.name)) return [path]
    if (OTHER_SCALARS.has(inner.name)) return []
    throw new Error(`A new scalar ${inner.name}: say here whether it carries text (TEXT_SCALARS) or not`)
  }
  return [] // an enum
}

/** A valid value of `type` with `text` at each of `targets` (paths inside it) and the required fields filled. */
function valueOf (type: GraphQLInputType, targets: Step[][], text: string): unknown {
  const inner = getNullableType(type)
  if (targets.some((target) => target.length === 0)) return text
  if (isListType(inner)) {
    const item = inner.ofType
    return targets.length === 0 ? [valueOf(item, [], text)] : [valueOf(item, [], text), valueOf(item, targets.map((target) => target.slice(1)), text)]
  }
  if (isInputObjectType(inner)) {
    const value: Record<string, unknown> = {}
    for (const field of Object.values(inner.getFields())) {
      const within = targets.filter((target) => target[0] === field.name).map((target) => target.slice(1))
      if (within.length > 0 || (isNonNullType(field.type) && field.defaultValue === undefined)) value[field.name] = valueOf(field.type, within, text)
    }
    return value
  }
  if (isEnumType(inner)) return inner.getValues()[0]!.name
  return SAMPLE[(inner).name]
}

interface TextPosition { operation: 'query' | 'mutation', field: GraphQLField<unknown, unknown>, path: Step[] }

/** Every text argument and input field of every operation of `schema`. */
function everyTextPosition (schema: GraphQLSchema): TextPosition[] {
  const roots = [['query', schema.getQueryType()], ['mutation', schema.getMutationType()]] as const
  return roots.flatMap(([operation, type]) => Object.values(type?.getFields() ?? {}).flatMap((field) =>
    field.args.flatMap((arg) => textPositions(arg.type, [arg.name]).map((path) => ({ operation, field, path })))))
}

/** The field as one request: its required arguments and those `targets` (paths from the argument) put `text` in. */
function requestOf (operation: string, field: GraphQLField<unknown, unknown>, targets: Step[][], text: string, inline: boolean): { query: string, variables: Record<string, unknown> } {
  const args = field.args.filter((arg) => targets.some((target) => target[0] === arg.name) || (isNonNullType(arg.type) && arg.defaultValue === undefined))
  const values = args.map((arg) => valueOf(arg.type, targets.filter((target) => target[0] === arg.name).map((target) => target.slice(1)), text))
  const selection = isCompositeType(getNamedType(field.type)) ? ' { __typename }' : ''
  const list = (parts: string[]): string => parts.length === 0 ? '' : `(${parts.join(', ')})`
  if (inline) {
    const parts = args.map((arg, i) => `${arg.name}: ${print(astFromValue(values[i], arg.type)!)}`)
    return { query: `${operation} { r: ${field.name}${list(parts)}${selection} }`, variables: {} }
  }
  const declared = args.map((arg, i) => `$v${i}: ${String(arg.type)}`)
  const parts = args.map((arg, i) => `${arg.name}: $v${i}`)
  return {
    query: `${operation} ${list(declared)} { r: ${field.name}${list(parts)}${selection} }`,
    variables: Object.fromEntries(values.map((value, i) => [`v${i}`, value]))
  }
}

/** A text with at least one NUL, anywhere in it. */
const withNul = fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), fc.nat({ max: 2 }))
  .map(([before, after, more]) => `${before}\u0000${'\u0000'.repeat(more)}${after}`)

t.test('a text with a NUL in any argument or input field of any operation, inline or in a variable, is BAD_USER_INPUT naming its path; nothing is written or logged', async (t) => {
  const logged: string[] = []
  const app = await buildApp(testConfig(), {
    database: await testDatabase(),
    logger: { level: 'error', stream: { write (line: string) { logged.push(line) } } }
  })
  t.teardown(() => app.close())
  const school = await seedSchool('Hostile Text School', [['Ada Lovelace', 'Room 1']])
  const { accessToken } = await login(app, school.username)
  const db = await testDatabase()
  const tenant = db.forSchool(school.schoolId)
  const written = async (): Promise<unknown> => ({
    students: await tenant.student.findMany({ select: { id: true, version: true } }),
    teachers: await tenant.teacher.count(),
    classrooms: await tenant.classroom.count(),
    changes: await tenant.change.count(),
    idempotencyKeys: await db.prisma.idempotencyKey.count(),
    refreshTokens: await db.prisma.refreshToken.count({ where: { revokedAt: null } })
  })
  const before = await written()

  const positions = everyTextPosition(app.graphql.schema)
  const named = (position: TextPosition): string => `${position.field.name}(${position.path.join('.')})`
  t.ok(positions.some((p) => named(p) === 'createStudent(input.fullName)') && positions.some((p) => named(p) === 'upsertStudents(items.1.sourcedId)') &&
    positions.some((p) => named(p) === 'students(filter.search)') && positions.some((p) => named(p) === 'login(password)'),
  `${positions.length} text positions enumerated from the schema, the issue's among them`)

  const same = (a: Step[][], b: Step[][]): boolean => JSON.stringify(a.map((path) => JSON.stringify(path)).sort()) === JSON.stringify(b.map((path) => JSON.stringify(path)).sort())
  /** Sends the field with `text` at `targets`; throws unless refused with exactly those paths. */
  async function refused (operation: string, field: GraphQLField<unknown, unknown>, targets: Step[][], text: string, inline: boolean): Promise<true> {
    const { query, variables } = requestOf(operation, field, targets, text, inline)
    // The fields that take credentials of their own are sent as a client of them does: with no token.
    const token = requirementOf(operation === 'query' ? 'Query' : 'Mutation', field.name) === 'none' ? undefined : accessToken
    const res = await gql(app, query, { token, variables })
    const [error, ...others] = res.body.errors ?? []
    const invalid = (error?.extensions?.invalid as Array<{ path: Step[], message: string }> | undefined) ?? []
    const ok = res.statusCode === 200 && others.length === 0 && error?.extensions?.code === 'BAD_USER_INPUT' &&
      JSON.stringify(error.path) === '["r"]' && (res.body.data?.r ?? null) === null &&
      same(invalid.map((f) => f.path), targets) &&
      invalid.every((f) => f.message === `${f.path.join('.')} must not contain a NUL character (U+0000)`)
    if (!ok) throw new Error(`${query} ${JSON.stringify(variables)}: ${res.statusCode} ${JSON.stringify(res.body).slice(0, 600)}`)
    return true
  }

  let requests = 0
  for (const position of positions) {
    for (const inline of [true, false]) {
      // Twice the same document with variables: the second runs compiled (graphql-jit).
      await fc.assert(fc.asyncProperty(withNul, async (text) => {
        requests += 1
        return await refused(position.operation, position.field, [position.path], text, inline)
      }), { numRuns: 2 })
    }
  }
  t.ok(requests >= positions.length * 4, `${requests} requests, each refused with its path`)

  // Every text of one field at once: each named.
  const fields = new Map<GraphQLField<unknown, unknown>, TextPosition[]>()
  for (const position of positions) fields.set(position.field, [...fields.get(position.field) ?? [], position])
  for (const [field, all] of fields) {
    await refused(all[0]!.operation, field, all.map((position) => position.path), 'a\u0000b', false)
  }
  t.pass(`${fields.size} fields, each with a NUL in every text at once, refused with every path`)

  t.same(await written(), before, 'nothing was written (records, versions, change feed, idempotency keys, refresh tokens)')
  t.same(logged, [], 'nothing logged at level error')
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
