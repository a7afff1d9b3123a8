// Persisted queries (issue 15, point 4): Apollo's automatic persisted queries over POST and GET,
// shared through Redis by every API node, and the trusted-documents mode of TRUSTED_DOCUMENTS.
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { loadConfig } from '../src/config.js'
import { APPLICATION_JSON, GRAPHQL_RESPONSE_JSON } from '../src/graphql/http.js'
import { REDIS_URL, redisPrefix } from './fixtures/shared-state.js'
import { LOGIN, PASSWORD, build, login, seedSchool } from './helper.js'

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex')

const SCHOOL = 'query School { school { name } }'

interface Answer { statusCode: number, body: { data?: any, errors?: Array<{ message: string, extensions?: Record<string, unknown> }> } }

/** A GraphQL request with any body fields; GET sends them as query parameters (JSON where not text). */
async function send (app: FastifyInstance, body: Record<string, unknown>, { token, method = 'POST', accept = GRAPHQL_RESPONSE_JSON }: { token?: string, method?: 'GET' | 'POST', accept?: string } = {}): Promise<Answer> {
  // Apollo's HttpLink asks for application/graphql-response+json: refusals are then a 400 (a 200
  // under application/json, docs/api/graphql-over-http.md).
  const headers: Record<string, string> = { accept, ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) }
  const res = method === 'POST'
    ? await app.inject({ method, url: '/', headers, payload: body })
    : await app.inject({
      method,
      url: '/?' + new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)])).toString(),
      headers
    })
  return { statusCode: res.statusCode, body: res.json() }
}

const apq = (query: string, hash = sha256(query)): Record<string, unknown> =>
  ({ extensions: { persistedQuery: { version: 1, sha256Hash: hash } } })

function refused (t: Test, res: Answer, code: string, message?: string | RegExp): void {
  t.equal(res.statusCode, 400, `${code}: 400`)
  t.notOk(res.body.data, `${code}: no data`)
  t.equal(res.body.errors?.length, 1, `${code}: one error`)
  t.equal(res.body.errors?.[0]?.extensions?.code, code, JSON.stringify(res.body.errors))
  if (message !== undefined) t.match(res.body.errors?.[0]?.message, message)
}

let schoolName: string
let username: string
let token: string

t.before(async () => {
  schoolName = `Persisted School ${process.pid}`
  const school = await seedSchool(schoolName)
  username = school.username
  const app = await build(t)
  token = (await login(app, username)).accessToken
})

t.test('APQ over POST: an unknown hash is PERSISTED_QUERY_NOT_FOUND, the document sent with it registers, then the hash alone runs', async (t) => {
  const app = await build(t)
  const query = `${SCHOOL} # ${t.name}`
  const miss = await send(app, apq(query), { token })
  // What Apollo's link looks for to send the document: this message, or this code.
  refused(t, miss, 'PERSISTED_QUERY_NOT_FOUND', /^PersistedQueryNotFound$/)
  const missJson = await send(app, apq(query), { token, accept: APPLICATION_JSON })
  t.equal(missJson.statusCode, 200, 'a 200 under application/json')
  t.equal(missJson.body.errors?.[0]?.extensions?.code, 'PERSISTED_QUERY_NOT_FOUND')

  const registered = await send(app, { query, ...apq(query) }, { token })
  t.equal(registered.statusCode, 200, JSON.stringify(registered.body))
  t.equal(registered.body.data.school.name, schoolName)

  const hit = await send(app, { ...apq(query), operationName: 'School' }, { token })
  t.equal(hit.statusCode, 200, JSON.stringify(hit.body))
  t.equal(hit.body.data.school.name, schoolName)
  t.notOk(hit.body.errors)

  // Plain queries are untouched, and a request with no query at all still says what to send.
  const plain = await send(app, { query: SCHOOL }, { token })
  t.equal(plain.body.data.school.name, schoolName)
  const empty = await send(app, {}, { token })
  t.equal(empty.statusCode, 400)
  t.match(empty.body.errors?.[0]?.message, /^Missing query/)
})

t.test('APQ over GET (Apollo\'s useGETForHashedQueries): miss, registration, then the hash alone', async (t) => {
  const app = await build(t)
  const query = `${SCHOOL} # ${t.name}`
  refused(t, await send(app, apq(query), { token, method: 'GET' }), 'PERSISTED_QUERY_NOT_FOUND', /^PersistedQueryNotFound$/)
  const registered = await send(app, { query, ...apq(query) }, { token, method: 'GET' })
  t.equal(registered.statusCode, 200, JSON.stringify(registered.body))
  const hit = await send(app, apq(query), { token, method: 'GET' })
  t.equal(hit.statusCode, 200, JSON.stringify(hit.body))
  t.equal(hit.body.data.school.name, schoolName)

  // A mutation registered over POST still cannot be run by hash over GET.
  const mutation = 'mutation Out($t: String!) { logout(refreshToken: $t) }'
  await send(app, { query: mutation, variables: { t: 'x' }, ...apq(mutation) }, { token })
  const viaGet = await send(app, { variables: { t: 'x' }, ...apq(mutation) }, { token, method: 'GET' })
  t.equal(viaGet.statusCode, 405)
})

t.test('a hash that is not the document\'s is refused, and nothing is registered under it', async (t) => {
  const app = await build(t)
  const query = `${SCHOOL} # ${t.name}`
  const wrong = sha256('{ __typename }')
  refused(t, await send(app, { query, ...apq(query, wrong) }, { token }), 'PERSISTED_QUERY_HASH_MISMATCH')
  refused(t, await send(app, { query, ...apq(query, 'not-a-hash') }, { token }), 'PERSISTED_QUERY_HASH_MISMATCH')
  refused(t, await send(app, apq(query, wrong), { token }), 'PERSISTED_QUERY_NOT_FOUND')
  refused(t, await send(app, apq(query), { token }), 'PERSISTED_QUERY_NOT_FOUND')
})

t.test('a document over a query limit is refused at registration and not registered', async (t) => {
  const app = await build(t)
  const deep = '{ classrooms { students { classroom { students { classroom { students { id } } } } } } }'
  const big = `{ school { name } } # ${'x'.repeat(16_000)}`
  const tokens = `{ school { ${'name '.repeat(1_000)}} }`
  for (const [query, limit] of [[deep, 'depth'], [big, 'size'], [tokens, 'tokens']] as const) {
    const res = await send(app, { query, ...apq(query) }, { token })
    refused(t, res, 'QUERY_LIMIT_EXCEEDED')
    t.equal(res.body.errors?.[0]?.extensions?.limit, limit)
    refused(t, await send(app, apq(query), { token }), 'PERSISTED_QUERY_NOT_FOUND', /^PersistedQueryNotFound$/)
  }
  // A syntax error is not registered either.
  const broken = '{ school { name }'
  t.equal((await send(app, { query: broken, ...apq(broken) }, { token })).statusCode, 400)
  refused(t, await send(app, apq(broken), { token }), 'PERSISTED_QUERY_NOT_FOUND')
})

t.test('a persisted query of another version or a hash of another algorithm is PERSISTED_QUERY_NOT_SUPPORTED', async (t) => {
  const app = await build(t)
  refused(t, await send(app, { extensions: { persistedQuery: { version: 2, sha256Hash: sha256(SCHOOL) } } }, { token }), 'PERSISTED_QUERY_NOT_SUPPORTED', /^PersistedQueryNotSupported$/)
  refused(t, await send(app, { documentId: `sha1:${createHash('sha1').update(SCHOOL).digest('hex')}` }, { token }), 'PERSISTED_QUERY_NOT_SUPPORTED')
})

t.test('PERSISTED_QUERY_TTL=0 turns APQ off: a hash alone is PERSISTED_QUERY_NOT_SUPPORTED, text runs', async (t) => {
  const app = await build(t, { persistedQueryTtl: 0 })
  refused(t, await send(app, apq(SCHOOL), { token }), 'PERSISTED_QUERY_NOT_SUPPORTED', /^PersistedQueryNotSupported$/)
  const plain = await send(app, { query: SCHOOL }, { token })
  t.equal(plain.body.data.school.name, schoolName)
})

t.test('two API nodes sharing one Redis run each other\'s registered documents; the keys have the prefix and a TTL', async (t) => {
  const prefix = redisPrefix()
  const nodeA = await build(t, { redisUrl: REDIS_URL, redisKeyPrefix: prefix, persistedQueryTtl: 600 })
  const nodeB = await build(t, { redisUrl: REDIS_URL, redisKeyPrefix: prefix, persistedQueryTtl: 600 })
  const query = `${SCHOOL} # ${t.name}`
  refused(t, await send(nodeB, apq(query), { token }), 'PERSISTED_QUERY_NOT_FOUND')
  t.equal((await send(nodeA, { query, ...apq(query) }, { token })).statusCode, 200)
  const onB = await send(nodeB, apq(query), { token })
  t.equal(onB.statusCode, 200, JSON.stringify(onB.body))
  t.equal(onB.body.data.school.name, schoolName)

  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.quit())
  t.equal(await redis.hget(`${prefix}pq:documents`, sha256(query)), query)
  for (const key of ['documents', 'registered']) {
    const ttl = await redis.ttl(`${prefix}pq:${key}`)
    t.ok(ttl > 0 && ttl <= 600, `${key} ttl ${ttl}`)
  }

  // A refused document is not written to Redis either.
  const deep = '{ classrooms { students { classroom { students { classroom { students { id } } } } } } }'
  refused(t, await send(nodeA, { query: deep, ...apq(deep) }, { token }), 'QUERY_LIMIT_EXCEEDED')
  t.equal(await redis.hexists(`${prefix}pq:documents`, sha256(deep)), 0)
  // A value under a hash that is not its document's is not run.
  const forged = `${SCHOOL} # forged`
  await redis.hset(`${prefix}pq:documents`, sha256(forged), '{ school { id } }')
  refused(t, await send(nodeB, apq(forged), { token }), 'PERSISTED_QUERY_NOT_FOUND')
})

t.test('PERSISTED_QUERY_MAX_DOCUMENTS bounds the documents kept in Redis: the oldest registrations go first', async (t) => {
  const prefix = redisPrefix()
  const options = { redisUrl: REDIS_URL, redisKeyPrefix: prefix, persistedQueryMaxDocuments: 2 }
  const nodeA = await build(t, options)
  const nodeB = await build(t, options)
  const queries = [1, 2, 3].map((i) => `${SCHOOL} # ${i}`)
  for (const query of queries) {
    t.equal((await send(nodeA, { query, ...apq(query) }, { token })).statusCode, 200)
  }
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.quit())
  t.equal(await redis.hlen(`${prefix}pq:documents`), 2)
  t.equal(await redis.zcard(`${prefix}pq:registered`), 2)
  refused(t, await send(nodeB, apq(queries[0]!), { token }), 'PERSISTED_QUERY_NOT_FOUND')
  for (const query of queries.slice(1)) t.equal((await send(nodeB, apq(query), { token })).statusCode, 200)
  // The memory of each process is bounded the same way.
  refused(t, await send(nodeA, apq(queries[0]!), { token }), 'PERSISTED_QUERY_NOT_FOUND')
})

t.test('PERSISTED_QUERY_TTL bounds their age: a registration drops documents registered longer ago', async (t) => {
  const prefix = redisPrefix()
  const app = await build(t, { redisUrl: REDIS_URL, redisKeyPrefix: prefix, persistedQueryTtl: 1 })
  const [first, second] = [`${SCHOOL} # first`, `${SCHOOL} # second`]
  t.equal((await send(app, { query: first, ...apq(first) }, { token })).statusCode, 200)
  await new Promise((resolve) => setTimeout(resolve, 1_100))
  t.equal((await send(app, { query: second, ...apq(second) }, { token })).statusCode, 200)
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.quit())
  t.equal(await redis.hexists(`${prefix}pq:documents`, sha256(first)), 0)
  t.equal(await redis.hexists(`${prefix}pq:documents`, sha256(second)), 1)
  refused(t, await send(app, apq(first), { token }), 'PERSISTED_QUERY_NOT_FOUND')
})

t.test('with the response cache on, a registration is not answered from the cache (it would never register)', async (t) => {
  const app = await build(t, { responseCacheTtl: 60 })
  const query = `${SCHOOL} # ${t.name}`
  await send(app, { query }, { token })
  t.equal((await send(app, { query }, { token })).body.data.school.name, schoolName)
  refused(t, await send(app, apq(query), { token }), 'PERSISTED_QUERY_NOT_FOUND')
  t.equal((await send(app, { query, ...apq(query) }, { token })).statusCode, 200)
  const hit = await send(app, apq(query), { token })
  t.equal(hit.statusCode, 200, JSON.stringify(hit.body))
  t.equal(hit.body.data.school.name, schoolName)
})

/** A manifest file as the client preset writes it, and the configuration that loads it. */
function manifest (t: Test, documents: Record<string, string> | string): string {
  const dir = mkdtempSync(join(tmpdir(), 'sds-trusted-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'persisted-documents.json')
  writeFileSync(file, typeof documents === 'string' ? documents : JSON.stringify(documents, null, 2))
  return file
}

const configWith = (t: Test, path: string) => loadConfig({ DATA_DIR: join(tmpdir(), 'sds-trusted-unused'), JWT_SECRET: 'x'.repeat(32), TRUSTED_DOCUMENTS: path })

t.test('trusted documents: manifest operations run by hash; text, unknown hashes and registrations are refused', async (t) => {
  const login = 'mutation Login($username: String!, $password: String!) { login(username: $username, password: $password) { accessToken } }'
  // Keys as client preset 6 writes them (`sha256:<hex>`, GraphQL over HTTP's document identifier) or bare.
  const file = manifest(t, { [`sha256:${sha256(SCHOOL)}`]: SCHOOL, [sha256(login)]: login })
  const { trustedDocuments } = configWith(t, file)
  t.equal(trustedDocuments?.size, 2)
  const app = await build(t, { trustedDocuments })

  // The client preset's documentId, bare or prefixed, and Apollo's extension.
  const loggedIn = await send(app, { documentId: sha256(login), variables: { username, password: PASSWORD } })
  t.equal(loggedIn.statusCode, 200, JSON.stringify(loggedIn.body))
  const trustedToken = loggedIn.body.data.login.accessToken as string
  for (const body of [{ documentId: sha256(SCHOOL) }, { documentId: `sha256:${sha256(SCHOOL)}` }, apq(SCHOOL)]) {
    const res = await send(app, body, { token: trustedToken })
    t.equal(res.statusCode, 200, JSON.stringify(res.body))
    t.equal(res.body.data.school.name, schoolName)
  }
  const viaGet = await send(app, { documentId: sha256(SCHOOL) }, { token: trustedToken, method: 'GET' })
  t.equal(viaGet.statusCode, 200, JSON.stringify(viaGet.body))
  t.equal(viaGet.body.data.school.name, schoolName)

  refused(t, await send(app, { query: SCHOOL }, { token: trustedToken }), 'TRUSTED_DOCUMENT_REQUIRED', /trusted documents/)
  refused(t, await send(app, { query: LOGIN, variables: { username, password: PASSWORD } }), 'TRUSTED_DOCUMENT_REQUIRED')
  refused(t, await send(app, { query: SCHOOL }, { token: trustedToken, method: 'GET' }), 'TRUSTED_DOCUMENT_REQUIRED')
  const other = '{ school { id } }'
  refused(t, await send(app, { documentId: sha256(other) }, { token: trustedToken }), 'PERSISTED_QUERY_NOT_FOUND')
  // Registration as APQ does not add to the manifest.
  refused(t, await send(app, { query: other, ...apq(other) }, { token: trustedToken }), 'PERSISTED_QUERY_NOT_FOUND')
  refused(t, await send(app, apq(other), { token: trustedToken }), 'PERSISTED_QUERY_NOT_FOUND')
  // Text sent with a manifest hash must be that document.
  refused(t, await send(app, { query: other, documentId: sha256(SCHOOL) }, { token: trustedToken }), 'PERSISTED_QUERY_HASH_MISMATCH')
  // GraphiQL sends text: not served in this mode.
  t.equal((await app.inject({ method: 'GET', url: '/graphiql' })).statusCode, 404)
})

t.test('a bad TRUSTED_DOCUMENTS manifest stops start-up with a message naming the variable', async (t) => {
  const cases: Array<[string, string | Record<string, string>, RegExp]> = [
    ['missing file', '', /cannot read/],
    ['not JSON', '{ "abc": ', /is not JSON/],
    ['not an object', '["{ school { name } }"]', /must be a JSON object/],
    ['empty', '{}', /holds no documents/],
    ['hash of another document', { [sha256('{ school { id } }')]: SCHOOL }, /is not the SHA-256 hash of its document/],
    ['sha1 keys', { [createHash('sha1').update(SCHOOL).digest('hex')]: SCHOOL }, /not a SHA-256 hash/],
    ['another prefix', { [`sha512:${sha256(SCHOOL)}`]: SCHOOL }, /not a SHA-256 hash/],
    ['prefixed hash of another document', { [`sha256:${sha256('{ school { id } }')}`]: SCHOOL }, /is not the SHA-256 hash of its document/],
    ['a document that is not text', '{ "x": 1 }', /must be a non-empty string/]
  ]
  for (const [name, documents, reason] of cases) {
    const file = name === 'missing file' ? join(tmpdir(), `sds-no-such-manifest-${process.pid}.json`) : manifest(t, documents)
    t.throws(() => configWith(t, file), { name: 'ConfigError', message: /^Invalid configuration: TRUSTED_DOCUMENTS: / }, name)
    t.throws(() => configWith(t, file), { message: reason }, name)
  }
})
