// GraphQL over HTTP beyond the conformance suite: every refusal of the endpoint is a coded GraphQL
// error in the media type the client negotiated; malformed requests are coded 400s that never
// reach the error log; cached answers keep the negotiated type; CORS for the listed origins only.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { buildApp } from '../src/app.js'
import { build, login, seedSchool, testConfig, testDatabase } from './helper.js'

const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json'
const GRAPHQL_TYPE = /^application\/graphql-response\+json; charset=utf-8$/
const JSON_TYPE = /^application\/json; charset=utf-8$/

type Headers = Record<string, string>

async function send (app: FastifyInstance, payload: string, headers: Headers = {}) {
  return await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json', ...headers }, payload })
}

t.test('Accept negotiates the media type of every answer; application/json when absent, */* or neither', async (t) => {
  const app = await build(t)
  const body = JSON.stringify({ query: '{ __typename }' })
  const cases: Array<[string | undefined, RegExp]> = [
    [undefined, JSON_TYPE],
    ['*/*', JSON_TYPE],
    ['application/json', JSON_TYPE],
    [GRAPHQL_RESPONSE_JSON, GRAPHQL_TYPE],
    // Apollo Client 4 and urql 6 send these.
    ['application/graphql-response+json,application/json;q=0.9', GRAPHQL_TYPE],
    ['application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed', GRAPHQL_TYPE],
    ['application/json, application/graphql-response+json;q=0.5', JSON_TYPE],
    ['text/html', JSON_TYPE]
  ]
  for (const [accept, type] of cases) {
    const res = await send(app, body, accept === undefined ? {} : { accept })
    t.equal(res.statusCode, 200, String(accept))
    t.match(res.headers['content-type'], type, String(accept))
    t.match(res.headers.vary, /Accept/, 'caches keep the types apart')
    t.same(res.json(), { data: { __typename: 'Query' } })
  }
})

t.test('malformed requests are coded 400s, never a 500 nor an error log line', async (t) => {
  const lines: string[] = []
  const app = await buildApp(testConfig(), { database: await testDatabase(), logger: { level: 'info', stream: { write (line: string) { lines.push(line) } } } })
  t.teardown(() => app.close())
  const bodies: Array<[string, RegExp]> = [
    ['{"query": 5}', /"query" must be a string/],
    ['{"query": {"kind": "Document"}}', /"query" must be a string/],
    ['{"query": false}', /"query" must be a string/],
    ['{"query": ["{ __typename }"]}', /"query" must be a string/],
    ['true', /must be a JSON object/],
    ['"5"', /must be a JSON object/],
    ['5', /must be a JSON object/],
    ['null', /must be a JSON object/],
    ['[{"query": "{ __typename }"}]', /Batched operations/],
    ['{"query": "{ __typename }", "operationName": 0}', /"operationName" must be a string or null/],
    ['{"query": "{ __typename }", "operationName": {}}', /"operationName" must be a string or null/],
    ['{"query": "{ __typename }", "variables": "{}"}', /"variables" must be an object or null/],
    ['{"query": "{ __typename }", "variables": false}', /"variables" must be an object or null/],
    ['{"query": "{ __typename }", "variables": []}', /"variables" must be an object or null/],
    ['{"query": "{ __typename }", "extensions": 0}', /"extensions" must be an object or null/],
    ['{"query": ', /not valid JSON/],
    ['{}', /^Missing query/],
    ['{"notquery": "{ __typename }"}', /^Missing query/]
  ]
  for (const [payload, message] of bodies) {
    for (const accept of [GRAPHQL_RESPONSE_JSON, 'application/json']) {
      const res = await send(app, payload, { accept })
      t.equal(res.statusCode, 400, `${payload} (${accept})`)
      t.match(res.headers['content-type'], accept === GRAPHQL_RESPONSE_JSON ? GRAPHQL_TYPE : JSON_TYPE)
      const json = res.json()
      t.notOk('data' in json, 'nothing ran: no data')
      t.match(json.errors, [{ message, extensions: { code: 'BAD_REQUEST' } }], payload)
    }
  }
  const empty = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json', accept: GRAPHQL_RESPONSE_JSON } })
  t.equal(empty.statusCode, 400, 'no body')
  t.equal(empty.json().errors[0].extensions.code, 'BAD_REQUEST')
  const nulls = await send(app, '{"query": "{ __typename }", "operationName": null, "variables": null, "extensions": null}')
  t.same(nulls.json(), { data: { __typename: 'Query' } }, 'null parameters are no parameters')

  const get = async (query: string) => await app.inject({ method: 'GET', url: `/?${query}`, headers: { accept: GRAPHQL_RESPONSE_JSON } })
  for (const query of ['query={__typename}&variables=5', 'query={__typename}&variables=%7B', 'query={__typename}&extensions=%5B%5D', 'query=a&query=b']) {
    const res = await get(query)
    t.equal(res.statusCode, 400, query)
    t.equal(res.json().errors[0].extensions.code, 'BAD_REQUEST', query)
  }
  t.same((await get('query=%7B__typename%7D&variables=null')).json(), { data: { __typename: 'Query' } })

  const logged = lines.map((line) => JSON.parse(line) as { level: number, msg: string })
  t.same(logged.filter((line) => line.level >= 50), [], 'no error log line')
})

t.test('GET runs queries with variables; a document error under GET has no data either', async (t) => {
  const app = await build(t)
  const query = encodeURIComponent('query Q($n: String!) { __type(name: $n) { name } }')
  const ok = await app.inject({ method: 'GET', url: `/?query=${query}&variables=${encodeURIComponent('{"n":"Student"}')}&operationName=Q` })
  t.equal(ok.statusCode, 200)
  t.same(ok.json(), { data: { __type: { name: 'Student' } } })
  const invalid = await app.inject({ method: 'GET', url: `/?query=${encodeURIComponent('{ nope }')}`, headers: { accept: GRAPHQL_RESPONSE_JSON } })
  t.equal(invalid.statusCode, 400)
  t.notOk('data' in invalid.json())
})

t.test('every refusal is a coded GraphQL error in application/graphql-response+json when asked for', async (t) => {
  const app = await build(t, { rateLimitAddressPerMinute: 4 })
  const asked = { accept: GRAPHQL_RESPONSE_JSON }
  const refusals: Array<[string, () => Promise<Awaited<ReturnType<typeof send>>>, number, string]> = [
    ['malformed JSON', async () => await send(app, '{"query', asked), 400, 'BAD_REQUEST'],
    ['a query limit', async () => await send(app, JSON.stringify({ query: '{ classrooms { students { classroom { students { classroom { students { id } } } } } } }' }), asked), 400, 'QUERY_LIMIT_EXCEEDED'],
    ['a form body', async () => await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/x-www-form-urlencoded', ...asked }, payload: 'query=x' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['a mutation over GET', async () => await app.inject({ method: 'GET', url: '/?query=' + encodeURIComponent('mutation { logout(refreshToken: "x") }'), headers: asked }), 405, 'METHOD_NOT_ALLOWED'],
    ['a fifth request of this address in the minute', async () => await send(app, JSON.stringify({ query: '{ __typename }' }), asked), 429, 'TOO_MANY_REQUESTS']
  ]
  for (const [what, request, status, code] of refusals) {
    const res = await request()
    t.equal(res.statusCode, status, what)
    t.match(res.headers['content-type'], GRAPHQL_TYPE, what)
    const json = res.json()
    t.notOk('data' in json, `${what}: no data`)
    t.equal(json.errors[0].extensions.code, code, what)
    t.type(json.errors[0].message, 'string')
  }
})

t.test('a rate-limit refusal keeps its headers and says when to retry', async (t) => {
  const app = await build(t, { rateLimitAddressPerMinute: 1 })
  const body = JSON.stringify({ query: '{ __typename }' })
  t.equal((await send(app, body)).statusCode, 200)
  const res = await send(app, body, { accept: GRAPHQL_RESPONSE_JSON })
  t.equal(res.statusCode, 429)
  t.match(res.headers['content-type'], GRAPHQL_TYPE)
  t.equal(res.headers['ratelimit-limit'], '1')
  t.equal(res.headers['ratelimit-remaining'], '0')
  t.ok(Number(res.headers['retry-after']) > 0)
  t.match(res.json(), { errors: [{ message: /^Too many requests: the address limit of 1 requests per minute is reached/, extensions: { code: 'TOO_MANY_REQUESTS', limit: 'address', retryAfter: Number(res.headers['retry-after']) } }] })
  t.notOk('data' in res.json())
})

t.test('a cached answer carries the negotiated media type', async (t) => {
  const app = await build(t, { responseCacheTtl: 60 })
  const school = await seedSchool('Media Type School', [['Ada Lovelace']])
  const { accessToken } = await login(app, school.username)
  const body = JSON.stringify({ query: '{ students { fullName } }' })
  const headers = (accept?: string): Headers => ({ authorization: `Bearer ${accessToken}`, ...(accept !== undefined && { accept }) })
  const first = await send(app, body, headers(GRAPHQL_RESPONSE_JSON))
  t.equal(first.headers['x-cache'], 'miss')
  t.match(first.headers['content-type'], GRAPHQL_TYPE)
  for (const [accept, type] of [[GRAPHQL_RESPONSE_JSON, GRAPHQL_TYPE], ['application/json', JSON_TYPE], [undefined, JSON_TYPE]] as const) {
    const hit = await send(app, body, headers(accept))
    t.equal(hit.headers['x-cache'], 'hit', String(accept))
    t.match(hit.headers['content-type'], type, String(accept))
    t.same(hit.json(), first.json())
  }
})

const ORIGIN = 'https://app.example.org'

t.test('CORS: a listed origin gets a cached preflight and the headers it may read', async (t) => {
  const app = await build(t, { corsOrigins: [ORIGIN, 'http://localhost:5173'], rateLimitAddressPerMinute: 300 })
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/',
    headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' }
  })
  t.equal(preflight.statusCode, 204)
  t.equal(preflight.headers['access-control-allow-origin'], ORIGIN)
  t.equal(preflight.headers['access-control-allow-methods'], 'GET, POST')
  for (const header of ['Authorization', 'Content-Type', 'Accept', 'apollographql-client-name', 'apollo-require-preflight']) {
    t.match(preflight.headers['access-control-allow-headers'], header)
  }
  t.equal(preflight.headers['access-control-max-age'], '7200')
  t.notOk(preflight.headers['access-control-allow-credentials'], 'no credentials mode: bearer tokens only')

  const res = await send(app, JSON.stringify({ query: '{ __typename }' }), { origin: ORIGIN })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['access-control-allow-origin'], ORIGIN)
  t.match(res.headers.vary, /Origin/)
  const exposed = String(res.headers['access-control-expose-headers']).split(/,\s*/)
  for (const header of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After', 'X-Request-Id']) t.ok(exposed.includes(header), header)
  t.equal(res.headers['ratelimit-limit'], '300', 'the counted headers are there to read')
})

t.test('CORS: an origin not listed gets no CORS header, nor does anyone without CORS_ORIGINS', async (t) => {
  const app = await build(t, { corsOrigins: [ORIGIN] })
  const none = await build(t)
  for (const [server, origin] of [[app, 'https://evil.example'], [app, 'https://app.example.org.evil.example'], [none, ORIGIN]] as const) {
    const preflight = await server.inject({ method: 'OPTIONS', url: '/', headers: { origin, 'access-control-request-method': 'POST' } })
    t.equal(preflight.statusCode, 404, `${origin}: no preflight`)
    const res = await send(server, JSON.stringify({ query: '{ __typename }' }), { origin })
    t.equal(res.statusCode, 200, 'the request itself is served (a browser keeps the answer from the page)')
    t.same(Object.keys({ ...preflight.headers, ...res.headers }).filter((h) => h.startsWith('access-control-')), [], `${origin}: no CORS header`)
  }
})

t.test('CORS: a refusal (429) carries the CORS headers, so the browser app can read it', async (t) => {
  const app = await build(t, { corsOrigins: [ORIGIN], rateLimitAddressPerMinute: 1 })
  const body = JSON.stringify({ query: '{ __typename }' })
  await send(app, body, { origin: ORIGIN })
  const res = await send(app, body, { origin: ORIGIN, accept: GRAPHQL_RESPONSE_JSON })
  t.equal(res.statusCode, 429)
  t.equal(res.headers['access-control-allow-origin'], ORIGIN)
  t.match(res.headers['access-control-expose-headers'], /Retry-After/)
  t.match(res.headers['content-type'], GRAPHQL_TYPE)
  t.equal(res.json().errors[0].extensions.code, 'TOO_MANY_REQUESTS')
})

t.test('HEAD is GET without the body', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'HEAD', url: '/?query=' + encodeURIComponent('{ __typename }') })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], JSON_TYPE)
  t.equal(res.payload, '')
})
