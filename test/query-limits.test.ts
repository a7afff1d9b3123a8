// Query limits and request rules of the GraphQL endpoint (issue 5, point 3): each abuse is sent to
// the running service, and each refusal comes before any resolver runs.
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, gql as post, login, seedSchool, type GraphQLResponse } from './helper.js'

const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json'

/**
 * Requests as today's clients (Apollo Client 4, urql) send them, asking for
 * application/graphql-response+json: a request error is a 400 (under application/json, a 200).
 */
const gql = async (app: FastifyInstance, query: string, options: Parameters<typeof post>[2] = {}): Promise<GraphQLResponse> =>
  await post(app, query, { accept: GRAPHQL_RESPONSE_JSON, ...options })

/** `{ classrooms { students { classroom { ... } } } }` with `depth` levels of fields in all. */
function chain (depth: number): string {
  const levels = ['classrooms', 'students', 'classroom', 'students', 'classroom', 'students', 'classroom', 'students']
  let inner = 'id'
  for (let i = depth - 2; i >= 0; i--) inner = `${levels[i]} { ${inner} }`
  return `{ ${inner} }`
}

function refusedBy (t: Test, res: GraphQLResponse, limit: string, message: RegExp): void {
  t.equal(res.statusCode, 400, `${limit}: 400`)
  t.notOk('data' in res.body, `${limit}: no data`)
  t.match(res.headers['content-type'], /^application\/graphql-response\+json/)
  t.equal(res.body.errors?.length, 1, `${limit}: one error`)
  const [error] = res.body.errors!
  t.match(error!.message, message)
  t.same(error!.extensions, { code: 'QUERY_LIMIT_EXCEEDED', limit })
}

let token: string
let app: Awaited<ReturnType<typeof build>>

t.before(async () => {
  app = await build(t)
  const school = await seedSchool('Limits School', [['Ada Lovelace', 'Room 1']])
  token = (await login(app, school.username)).accessToken
})

t.test('legitimate nested queries pass: depth 6, the bench\'s nested query, fragments', async (t) => {
  const six = await gql(app, chain(6), { token })
  t.equal(six.statusCode, 200)
  t.notOk(six.body.errors, JSON.stringify(six.body.errors))
  t.equal(six.body.data!.classrooms[0].students[0].classroom.students[0].classroom.id.length, 36)

  const bench = await gql(app, '{ students(limit: 100) { id fullName classroom { id name teachers { id fullName } } } }', { token })
  t.equal(bench.statusCode, 200)
  t.notOk(bench.body.errors)

  // Fragments count for the fields they hold, not as levels of their own.
  const fragments = await gql(app, `{ classrooms { ...Room } }
    fragment Room on Classroom { students { ... on Student { classroom { ...Inner } } } }
    fragment Inner on Classroom { students { classroom { id } } }`, { token })
  t.equal(fragments.statusCode, 200, JSON.stringify(fragments.body.errors))
})

t.test('depth 7 is refused before any resolver runs, also through fragments', async (t) => {
  // No token: had a resolver run, the answer would hold UNAUTHENTICATED.
  const res = await gql(app, chain(7))
  refusedBy(t, res, 'depth', /^Query depth limit of 6 exceeded, found 7\.$/)
  t.same(res.body.errors![0]!.locations, [{ line: 1, column: 1 }])

  const viaFragment = await gql(app, `{ classrooms { ...Deep } }
    fragment Deep on Classroom { students { classroom { students { classroom { students { id } } } } } }`, { token })
  refusedBy(t, viaFragment, 'depth', /^Query depth limit of 6 exceeded, found 7\.$/)
})

t.test('more than 15 aliases are refused', async (t) => {
  const aliases = (n: number): string => `{ ${Array.from({ length: n }, (_, i) => `s${i}: school { id }`).join(' ')} }`
  const fifteen = await gql(app, aliases(15), { token })
  t.equal(fifteen.statusCode, 200, JSON.stringify(fifteen.body.errors))
  refusedBy(t, await gql(app, aliases(16), { token }), 'aliases', /^Aliases limit of 15 exceeded, found 16\.$/)
  // Aliases inside a fragment count at every spread.
  const spread = await gql(app, '{ school { ...A } s: school { ...A } } fragment A on School { a: id b: id c: id d: id e: id f: id g: id h: id }', { token })
  refusedBy(t, spread, 'aliases', /^Aliases limit of 15 exceeded, found 17\.$/)
})

t.test('more than 50 directives are refused', async (t) => {
  const directives = (n: number): string => `{ school { ${'id @include(if: true) '.repeat(n)} } }`
  t.equal((await gql(app, directives(50), { token })).statusCode, 200)
  refusedBy(t, await gql(app, directives(51), { token }), 'directives', /^Directives limit of 50 exceeded, found 51\.$/)
})

t.test('more than 1000 tokens are refused by the parser', async (t) => {
  // 124 operations of 8 tokens (`query Q1 { school { id } }`), then one of 8 or 9 tokens to run.
  // (One operation of ~1000 fields would trip graphql-js's own guard on field comparisons first.)
  const tokens = (n: 1000 | 1001): Promise<GraphQLResponse> => {
    const query = Array.from({ length: 124 }, (_, i) => `query Q${i} { school { id } }`).join('\n') +
      (n === 1000 ? '\nquery Run { school { id } }' : '\nquery Run { school { id id } }')
    return app.inject({ method: 'POST', url: '/', headers: { authorization: `Bearer ${token}`, accept: GRAPHQL_RESPONSE_JSON }, payload: { query, operationName: 'Run' } })
      .then((res) => ({ statusCode: res.statusCode, headers: res.headers, body: res.json() }))
  }
  const under = await tokens(1000)
  t.equal(under.statusCode, 200, JSON.stringify(under.body.errors))
  t.equal(under.body.data!.school.id.length, 36)
  const res = await tokens(1001)
  refusedBy(t, res, 'tokens', /^Token limit of 1000 exceeded\.$/)
  t.ok(res.body.errors![0]!.locations, 'with the position where parsing stopped')
})

t.test('a query costing more than 5000 is refused (a wide fragment spread deep down)', async (t) => {
  const wide = `fragment Wide on Classroom { ${'id name '.repeat(50)} }`
  const query = (spreads: number): string =>
    `{ classrooms { students { classroom { students { classroom { ${'...Wide '.repeat(spreads)} } } } } } } ${wide}`
  t.equal((await gql(app, query(1), { token })).statusCode, 200)
  refusedBy(t, await gql(app, query(3), { token }), 'cost', /^Query Cost limit of 5000 exceeded, found [\d.]+\.$/)
})

t.test('a query text over 15000 bytes is refused before it is parsed', async (t) => {
  // A comment: no tokens, so only the size limit applies. Multi-byte characters count as bytes.
  const query = (bytes: number): string => `#${'é'.repeat(Math.ceil((bytes - 14) / 2))}\n{ school { id } }`
  const res = await gql(app, query(15_001), { token })
  refusedBy(t, res, 'size', /^Query size limit of 15000 bytes exceeded, found 1500\d\.$/)
  t.equal((await gql(app, query(14_990), { token })).statusCode, 200)
})

t.test('the limits are settings', async (t) => {
  const deeper = await build(t, { queryMaxDepth: 7, queryMaxAliases: 20 })
  const deepToken = (await login(deeper, (await seedSchool('Deeper School', [['Grace Hopper', 'Lab']])).username)).accessToken
  const res = await gql(deeper, chain(7), { token: deepToken })
  t.equal(res.statusCode, 200, JSON.stringify(res.body.errors))
  t.equal((await gql(deeper, chain(8), { token: deepToken })).statusCode, 400)
})

t.test('a query sent as a JSON document (AST) is refused, so it cannot pass around the token limit', async (t) => {
  const ast = JSON.stringify({ kind: 'Document', definitions: [] })
  const res = await gql(app, ast, { token })
  t.equal(res.statusCode, 400)
  // The parser's own error, as for any text that is not a GraphQL document.
  t.match(res.body.errors![0], { message: 'Syntax Error: Expected Name, found String "kind".', locations: [{ line: 1, column: 2 }] })
})

t.test('batched operations are refused', async (t) => {
  const res = await app.inject({
    method: 'POST',
    url: '/',
    headers: { authorization: `Bearer ${token}` },
    payload: [{ query: '{ school { id } }' }, { query: '{ school { name } }' }]
  })
  t.equal(res.statusCode, 400)
  t.notOk('data' in res.json(), 'nothing executed')
  t.equal(res.json().errors[0].extensions.code, 'BAD_REQUEST')
})

t.test('GET runs queries (no preflight header needed: bearer tokens only), never mutations', async (t) => {
  // What a cross-site <img src> or link would send, a simple request with no custom header, would
  // carry no credentials: the API reads bearer tokens only, never cookies.
  const url = '/?query=' + encodeURIComponent('{ school { id } }')
  const ok = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } })
  t.equal(ok.statusCode, 200)
  t.equal(ok.json().data.school.id.length, 36)

  const mutation = '/?query=' + encodeURIComponent('mutation { logout(refreshToken: "x") }')
  const refused = await app.inject({ method: 'GET', url: mutation, headers: { authorization: `Bearer ${token}`, accept: GRAPHQL_RESPONSE_JSON } })
  t.equal(refused.statusCode, 405)
  t.equal(refused.headers.allow, 'POST')
  t.match(refused.headers['content-type'], /^application\/graphql-response\+json/)
  t.same(refused.json(), { errors: [{ message: 'Only queries can be sent with GET; send mutations with POST', extensions: { code: 'METHOD_NOT_ALLOWED' } }] })
})

t.test('a query limit under application/json: 200 with the errors and no data (GraphQL over HTTP, legacy clients)', async (t) => {
  const res = await post(app, chain(7), { token })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.notOk('data' in res.body)
  t.same(res.body.errors![0]!.extensions, { code: 'QUERY_LIMIT_EXCEEDED', limit: 'depth' })
})

t.test('only application/json bodies: form, text, multipart and application/graphql get 415', async (t) => {
  const bodies: Array<[string, string]> = [
    ['text/plain', '{"query":"{ school { id } }"}'],
    ['application/x-www-form-urlencoded', 'query=%7B%20school%20%7B%20id%20%7D%20%7D'],
    ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="query"\r\n\r\n{ school { id } }\r\n--x--\r\n'],
    ['application/graphql', '{ school { id } }']
  ]
  for (const [type, payload] of bodies) {
    const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': type, authorization: `Bearer ${token}` }, payload })
    t.equal(res.statusCode, 415, type)
    t.same(res.json(), { errors: [{ message: 'Unsupported Content-Type: send application/json', extensions: { code: 'UNSUPPORTED_MEDIA_TYPE' } }] }, type)
  }
  const missing = await app.inject({ method: 'POST', url: '/', headers: { authorization: `Bearer ${token}` }, payload: '{"query":"{ school { id } }"}' })
  t.equal(missing.statusCode, 415, 'no Content-Type')
  const json = await app.inject({
    method: 'POST',
    url: '/',
    headers: { 'content-type': 'application/json; charset=utf-8', authorization: `Bearer ${token}` },
    payload: '{"query":"{ school { id } }"}'
  })
  t.equal(json.statusCode, 200)
})

t.test('introspection and field suggestions: on in the sandbox, off in production', async (t) => {
  const production = await build(t, { env: 'production' })
  const prodToken = (await login(production, (await seedSchool('Production School')).username)).accessToken
  const introspection = '{ __schema { queryType { name } } }'

  const sandboxSchema = await gql(app, introspection, { token })
  t.equal(sandboxSchema.statusCode, 200)
  t.equal(sandboxSchema.body.data!.__schema.queryType.name, 'Query')
  const prodSchema = await gql(production, introspection, { token: prodToken })
  t.equal(prodSchema.statusCode, 400)
  t.match(prodSchema.body.errors![0]!.message, /introspection has been disabled/)
  t.equal((await gql(production, '{ __type(name: "Student") { name } }', { token: prodToken })).statusCode, 400)
  t.equal((await gql(production, '{ school { __typename } }', { token: prodToken })).statusCode, 200, '__typename stays')

  const typo = '{ studnts(limit: 1) { id } }'
  const sandboxTypo = await gql(app, typo, { token })
  t.match(sandboxTypo.body.errors![0]!.message, /Did you mean "students"/)
  const prodTypo = await gql(production, typo, { token: prodToken })
  t.equal(prodTypo.statusCode, 400)
  t.equal(prodTypo.body.errors![0]!.message, 'Cannot query field "studnts" on type "Query".')
  const argTypo = await gql(production, '{ students(limt: 1) { id } }', { token: prodToken })
  t.notMatch(argTypo.body.errors![0]!.message, /Did you mean/)
})
