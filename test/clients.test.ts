// Real GraphQL clients with their default transport settings (only the URL and the Authorization
// header given) against the app listening on a free port: Apollo Client 4 (HttpLink, and its
// persisted-query link), urql 6 (fetchExchange, which sends queries as GET) and graphql-request 7.
// Each logs in, runs a query, pages through studentsPage to the end, and reads coded errors the way
// it exposes them to an application: a field error, a query limit (a request error: 400 under
// application/graphql-response+json) and a rate limit's 429 with extensions.retryAfter. With the
// database cut off (PostgreSQL behind a TCP proxy), the retries of docs/api/clients.md: Apollo's
// RetryLink retries a query on SERVICE_UNAVAILABLE and gets its answer once the database is back;
// urql's retryExchange retries a query on it with the page's retryIf and gets its answer once the
// database is back; graphql-request rejects with the 503.
import { createHash } from 'node:crypto'
import { ApolloClient, ApolloLink, CombinedGraphQLErrors, HttpLink, InMemoryCache, gql } from '@apollo/client'
import { createPersistedQueryLink } from '@apollo/client/link/persisted-queries'
import { RetryLink } from '@apollo/client/link/retry'
import { Client, CombinedError, cacheExchange, fetchExchange, type Operation } from '@urql/core'
import { retryExchange } from '@urql/exchange-retry'
import type { FastifyInstance } from 'fastify'
import { OperationTypeNode } from 'graphql'
import { ClientError, GraphQLClient } from 'graphql-request'
import { map } from 'rxjs'
import t, { type Test } from 'tap'
import { buildApp } from '../src/app.js'
import type { Config } from '../src/config.js'
import { TcpProxy } from './fixtures/tcp-proxy.js'
import { LOGIN, PASSWORD, build, seedSchool, serverUrl, testConfig, testDatabaseUrl, type SeededSchool } from './helper.js'

const SCHOOL = 'query School { school { name } }'
const PAGE = `query StudentsPage($after: String) {
  studentsPage(limit: 3, after: $after) { nodes { id fullName } pageInfo { endCursor hasNextPage } }
}`
const STUDENT = 'query Student($id: ID!) { student(id: $id) { id fullName } }'
// Depth 7, one over the default limit of 6.
const TOO_DEEP = 'query TooDeep { classrooms { students { classroom { students { classroom { students { id } } } } } } }'

interface Exchange { method: string, accept: string | undefined, hasQuery: boolean, status: number, contentType: string | undefined }
interface Server { url: string, exchanges: Exchange[] }

/** The app (by default one on this file's database) on a free port of 127.0.0.1, recording each exchange of the GraphQL endpoint. */
async function serve (t: Test, overrides: Partial<Config> = {}, given?: FastifyInstance): Promise<Server> {
  const app: FastifyInstance = given ?? await build(t, overrides)
  const exchanges: Exchange[] = []
  app.addHook('onResponse', (request, reply, done) => {
    if (request.routeOptions.url === '/') {
      const params = (request.method === 'POST' ? request.body : request.query) as { query?: unknown } | undefined
      exchanges.push({
        method: request.method,
        accept: request.headers.accept,
        hasQuery: typeof params?.query === 'string',
        status: reply.statusCode,
        contentType: reply.getHeader('content-type') as string | undefined
      })
    }
    done()
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}/`, exchanges }
}

const seeded = async (name: string): Promise<SeededSchool> =>
  seedSchool(name, Array.from({ length: 7 }, (_, i): [string] => [`${name} Student ${i + 1}`]))

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })

interface Page { studentsPage: { nodes: Array<{ id: string, fullName: string }>, pageInfo: { endCursor: string | null, hasNextPage: boolean } } }

/** Every page, following endCursor while hasNextPage; the ids in the order read. */
async function pageThrough (t: Test, fetchPage: (after: string | null) => Promise<Page>): Promise<string[]> {
  const ids: string[] = []
  let after: string | null = null
  let pages = 0
  for (;;) {
    const { studentsPage } = await fetchPage(after)
    pages += 1
    ids.push(...studentsPage.nodes.map((n) => n.id))
    if (!studentsPage.pageInfo.hasNextPage) break
    after = studentsPage.pageInfo.endCursor
    if (pages > 10) throw new Error('paging does not end')
  }
  t.equal(pages, 3, '7 students in pages of 3')
  return ids
}

function sameStudents (t: Test, ids: string[], school: SeededSchool): void {
  t.equal(ids.length, school.studentIds.length, 'no student twice')
  t.same([...ids].sort(), [...school.studentIds].sort(), 'every student seen once')
}

t.test('Apollo Client 4 (HttpLink, default fetch)', async (t) => {
  const server = await serve(t)
  const school = await seeded('Apollo School')
  const link = (token?: string): HttpLink => new HttpLink({ uri: server.url, headers: token === undefined ? {} : bearer(token) })
  const anonymous = new ApolloClient({ link: link(), cache: new InMemoryCache() })
  const login = await anonymous.mutate<{ login: { accessToken: string } }>({ mutation: gql(LOGIN), variables: { username: school.username, password: PASSWORD } })
  const token = login.data!.login.accessToken
  t.ok(token, 'logged in')

  const client = new ApolloClient({ link: link(token), cache: new InMemoryCache() })
  const { data } = await client.query<{ school: { name: string } }>({ query: gql(SCHOOL) })
  t.equal(data?.school.name, 'Apollo School')
  t.match(server.exchanges.at(-1), { method: 'POST', accept: 'application/graphql-response+json,application/json;q=0.9', status: 200 })

  const ids = await pageThrough(t, async (after) => (await client.query<Page>({ query: gql(PAGE), variables: { after } })).data!)
  sameStudents(t, ids, school)

  // A field error: errorPolicy "none" (the default) rejects with CombinedGraphQLErrors.
  const fieldError = await client.query({ query: gql(STUDENT), variables: { id: 'not-a-uuid' } }).then(() => undefined, (e: unknown) => e)
  t.ok(CombinedGraphQLErrors.is(fieldError), `CombinedGraphQLErrors, got ${String(fieldError)}`)
  if (CombinedGraphQLErrors.is(fieldError)) t.equal(fieldError.errors[0]?.extensions?.code, 'BAD_USER_INPUT')

  // A request error answered 400 under application/graphql-response+json: still the server's
  // GraphQL errors, not an opaque ServerError.
  const limit = await client.query({ query: gql(TOO_DEEP) }).then(() => undefined, (e: unknown) => e)
  t.match(server.exchanges.at(-1), { status: 400, contentType: 'application/graphql-response+json; charset=utf-8' })
  t.ok(CombinedGraphQLErrors.is(limit), `CombinedGraphQLErrors, got ${String(limit)}`)
  if (CombinedGraphQLErrors.is(limit)) {
    t.equal(limit.errors[0]?.extensions?.code, 'QUERY_LIMIT_EXCEEDED')
    t.equal(limit.errors[0]?.extensions?.limit, 'depth')
    t.equal(limit.data, undefined, 'no data: nothing ran')
  }
})

t.test('Apollo Client 4: a mutation with an Idempotency-Key header, retried, runs once and answers the same; another body is IDEMPOTENCY_KEY_REUSED', async (t) => {
  const server = await serve(t)
  const school = await seeded('Apollo Writing School')
  const anonymous = new ApolloClient({ link: new HttpLink({ uri: server.url }), cache: new InMemoryCache() })
  const token = (await anonymous.mutate<{ login: { accessToken: string } }>({ mutation: gql(LOGIN), variables: { username: school.username, password: PASSWORD } })).data!.login.accessToken
  const client = new ApolloClient({ link: new HttpLink({ uri: server.url, headers: bearer(token) }), cache: new InMemoryCache() })
  const ENROL = gql('mutation Enrol($input: StudentInput!) { createStudent(input: $input) { id fullName version } }')
  const enrol = async (fullName: string): Promise<unknown> => await client.mutate({
    mutation: ENROL,
    variables: { input: { sourcedId: 'apollo-1', fullName } },
    context: { headers: { 'Idempotency-Key': 'apollo-key-1' } }
  }).then((r) => r.data, (e: unknown) => e)
  const first = await enrol('Apollo Student') as { createStudent: { id: string, version: number } }
  t.equal(first.createStudent.version, 1)
  t.same(await enrol('Apollo Student'), first, 'the retry: the first answer again')
  const reused = await enrol('Another Student')
  t.ok(CombinedGraphQLErrors.is(reused), `CombinedGraphQLErrors, got ${String(reused)}`)
  if (CombinedGraphQLErrors.is(reused)) t.equal(reused.errors[0]?.extensions?.code, 'IDEMPOTENCY_KEY_REUSED')
  const { data } = await client.query<{ students: Array<{ id: string }> }>({ query: gql('query Enrolled { students(filter: { search: "Apollo Student" }) { id } }'), fetchPolicy: 'network-only' })
  t.same(data?.students.map((s) => s.id), [first.createStudent.id], 'enrolled once')
})

t.test('Apollo Client 4: a rate limit is a CombinedGraphQLErrors with TOO_MANY_REQUESTS and retryAfter', async (t) => {
  const server = await serve(t, { rateLimitUserPerMinute: 3 })
  const school = await seeded('Apollo Limited School')
  const anonymous = new ApolloClient({ link: new HttpLink({ uri: server.url }), cache: new InMemoryCache() })
  const token = (await anonymous.mutate<{ login: { accessToken: string } }>({ mutation: gql(LOGIN), variables: { username: school.username, password: PASSWORD } })).data!.login.accessToken
  const client = new ApolloClient({ link: new HttpLink({ uri: server.url, headers: bearer(token) }), cache: new InMemoryCache() })
  for (let i = 0; i < 3; i++) await client.query({ query: gql(SCHOOL), fetchPolicy: 'network-only' })
  const refused = await client.query({ query: gql(SCHOOL), fetchPolicy: 'network-only' }).then(() => undefined, (e: unknown) => e)
  t.equal(server.exchanges.at(-1)?.status, 429)
  t.ok(CombinedGraphQLErrors.is(refused), `CombinedGraphQLErrors, got ${String(refused)}`)
  if (CombinedGraphQLErrors.is(refused)) {
    t.equal(refused.errors[0]?.extensions?.code, 'TOO_MANY_REQUESTS')
    const retryAfter = refused.errors[0]?.extensions?.retryAfter
    t.ok(typeof retryAfter === 'number' && retryAfter >= 1 && retryAfter <= 60, `retryAfter ${String(retryAfter)}`)
  }
})

t.test('Apollo Client 4 persisted-query link: the first query registers its hash, the next runs by hash alone', async (t) => {
  const server = await serve(t)
  const school = await seeded('Apollo APQ School')
  const anonymous = new ApolloClient({ link: new HttpLink({ uri: server.url }), cache: new InMemoryCache() })
  const token = (await anonymous.mutate<{ login: { accessToken: string } }>({ mutation: gql(LOGIN), variables: { username: school.username, password: PASSWORD } })).data!.login.accessToken
  const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex')
  const client = (): ApolloClient => new ApolloClient({
    link: ApolloLink.from([createPersistedQueryLink({ sha256 }), new HttpLink({ uri: server.url, headers: bearer(token) })]),
    cache: new InMemoryCache()
  })
  const before = server.exchanges.length
  const first = await client().query<{ school: { name: string } }>({ query: gql(SCHOOL) })
  t.equal(first.data?.school.name, 'Apollo APQ School')
  t.match(server.exchanges.slice(before), [
    { method: 'POST', hasQuery: false, status: 400 }, // PERSISTED_QUERY_NOT_FOUND
    { method: 'POST', hasQuery: true, status: 200 } // registered
  ])
  const second = await client().query<{ school: { name: string } }>({ query: gql(SCHOOL) })
  t.equal(second.data?.school.name, 'Apollo APQ School')
  t.match(server.exchanges.slice(before + 2), [{ method: 'POST', hasQuery: false, status: 200 }], 'the hash alone ran it')
  t.equal(server.exchanges.length, before + 3)
})

t.test('urql 6 (fetchExchange: queries as GET)', async (t) => {
  const server = await serve(t)
  const school = await seeded('Urql School')
  const anonymous = new Client({ url: server.url, exchanges: [cacheExchange, fetchExchange] })
  const login = await anonymous.mutation<{ login: { accessToken: string } }>(LOGIN, { username: school.username, password: PASSWORD }).toPromise()
  t.notOk(login.error)
  t.equal(server.exchanges.at(-1)?.method, 'POST', 'a mutation goes by POST')
  const token = login.data!.login.accessToken

  const client = new Client({ url: server.url, exchanges: [cacheExchange, fetchExchange], fetchOptions: { headers: bearer(token) } })
  const result = await client.query<{ school: { name: string } }>(SCHOOL, {}).toPromise()
  t.notOk(result.error)
  t.equal(result.data?.school.name, 'Urql School')
  t.match(server.exchanges.at(-1), { method: 'GET', hasQuery: true, status: 200, contentType: 'application/graphql-response+json; charset=utf-8', accept: /^application\/graphql-response\+json, / })

  const ids = await pageThrough(t, async (after) => {
    const page = await client.query<Page>(PAGE, { after }).toPromise()
    if (page.error !== undefined) throw page.error
    return page.data!
  })
  t.ok(server.exchanges.slice(-3).every((e) => e.method === 'GET'), 'every page by GET')
  sameStudents(t, ids, school)

  const fieldError = await client.query(STUDENT, { id: 'not-a-uuid' }).toPromise()
  t.type(fieldError.error, CombinedError)
  t.equal(fieldError.error?.graphQLErrors[0]?.extensions.code, 'BAD_USER_INPUT')

  const limit = await client.query(TOO_DEEP, {}).toPromise()
  t.match(server.exchanges.at(-1), { method: 'GET', status: 400 })
  t.equal(limit.error?.networkError, undefined, 'not a network error')
  t.equal(limit.error?.graphQLErrors[0]?.extensions.code, 'QUERY_LIMIT_EXCEEDED')
  t.equal(limit.error?.response?.status, 400)
})

t.test('urql 6: a rate limit is a CombinedError with TOO_MANY_REQUESTS and retryAfter', async (t) => {
  const server = await serve(t, { rateLimitUserPerMinute: 3 })
  const school = await seeded('Urql Limited School')
  const anonymous = new Client({ url: server.url, exchanges: [cacheExchange, fetchExchange] })
  const token = (await anonymous.mutation<{ login: { accessToken: string } }>(LOGIN, { username: school.username, password: PASSWORD }).toPromise()).data!.login.accessToken
  const client = new Client({ url: server.url, exchanges: [cacheExchange, fetchExchange], fetchOptions: { headers: bearer(token) } })
  for (let i = 0; i < 3; i++) t.notOk((await client.query(SCHOOL, {}, { requestPolicy: 'network-only' }).toPromise()).error)
  const refused = await client.query(SCHOOL, {}, { requestPolicy: 'network-only' }).toPromise()
  t.match(server.exchanges.at(-1), { method: 'GET', status: 429 })
  t.equal(refused.error?.graphQLErrors[0]?.extensions.code, 'TOO_MANY_REQUESTS', String(refused.error))
  const retryAfter = refused.error?.graphQLErrors[0]?.extensions.retryAfter
  t.ok(typeof retryAfter === 'number' && retryAfter >= 1 && retryAfter <= 60, `retryAfter ${String(retryAfter)}`)
  t.equal(refused.error?.response?.status, 429)
  t.ok(Number(refused.error?.response?.headers.get('retry-after')) >= 1, 'Retry-After readable too')
})

t.test('graphql-request 7', async (t) => {
  const server = await serve(t)
  const school = await seeded('Request School')
  const anonymous = new GraphQLClient(server.url)
  const { login } = await anonymous.request<{ login: { accessToken: string } }>(LOGIN, { username: school.username, password: PASSWORD })
  const client = new GraphQLClient(server.url, { headers: bearer(login.accessToken) })
  const { school: mine } = await client.request<{ school: { name: string } }>(SCHOOL)
  t.equal(mine.name, 'Request School')
  t.match(server.exchanges.at(-1), { method: 'POST', accept: 'application/graphql-response+json, application/json', status: 200 })

  const ids = await pageThrough(t, async (after) => client.request<Page>(PAGE, { after }))
  sameStudents(t, ids, school)

  const fieldError = await client.request(STUDENT, { id: 'not-a-uuid' }).then(() => undefined, (e: unknown) => e)
  t.type(fieldError, ClientError)
  if (fieldError instanceof ClientError) {
    t.equal(fieldError.response.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT')
    t.same(fieldError.response.data, { student: null }, 'with data: it ran')
  }

  const limit = await client.request(TOO_DEEP).then(() => undefined, (e: unknown) => e)
  t.equal(server.exchanges.at(-1)?.status, 400)
  t.type(limit, ClientError)
  if (limit instanceof ClientError) {
    t.equal(limit.response.status, 400)
    t.equal(limit.response.errors?.[0]?.extensions?.code, 'QUERY_LIMIT_EXCEEDED')
  }
})

t.test('graphql-request 7: a rate limit is a ClientError with TOO_MANY_REQUESTS and retryAfter', async (t) => {
  const server = await serve(t, { rateLimitUserPerMinute: 3 })
  const school = await seeded('Request Limited School')
  const { login } = await new GraphQLClient(server.url).request<{ login: { accessToken: string } }>(LOGIN, { username: school.username, password: PASSWORD })
  const client = new GraphQLClient(server.url, { headers: bearer(login.accessToken) })
  for (let i = 0; i < 3; i++) await client.request(SCHOOL)
  const refused = await client.request(SCHOOL).then(() => undefined, (e: unknown) => e)
  t.type(refused, ClientError)
  if (refused instanceof ClientError) {
    t.equal(refused.response.status, 429)
    t.equal(refused.response.errors?.[0]?.extensions?.code, 'TOO_MANY_REQUESTS')
    const retryAfter = refused.response.errors?.[0]?.extensions?.retryAfter
    t.ok(typeof retryAfter === 'number' && retryAfter >= 1 && retryAfter <= 60, `retryAfter ${String(retryAfter)}`)
    t.ok(Number(refused.response.headers.get('retry-after')) >= 1, 'Retry-After readable too')
  }
})

t.test('plain fetch: POST a login, GET the pages with variables, a request error by its status and code', async (t) => {
  const server = await serve(t)
  const school = await seeded('Fetch School')
  const login = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: LOGIN, variables: { username: school.username, password: PASSWORD } })
  })
  t.equal(login.headers.get('content-type'), 'application/json; charset=utf-8', 'no Accept: application/json')
  const { accessToken } = ((await login.json()) as { data: { login: { accessToken: string } } }).data.login
  const get = async (query: string, variables: Record<string, unknown> = {}): Promise<Response> =>
    fetch(`${server.url}?${new URLSearchParams({ query, variables: JSON.stringify(variables) }).toString()}`, {
      headers: { ...bearer(accessToken), accept: 'application/graphql-response+json' }
    })
  const ids = await pageThrough(t, async (after) => {
    const res = await get(PAGE, { after })
    t.equal(res.status, 200)
    return ((await res.json()) as { data: Page }).data
  })
  sameStudents(t, ids, school)
  const limit = await get(TOO_DEEP)
  t.equal(limit.status, 400)
  t.equal(limit.headers.get('content-type'), 'application/graphql-response+json; charset=utf-8')
  const body = (await limit.json()) as { data?: unknown, errors: Array<{ extensions: { code: string } }> }
  t.equal(body.errors[0]?.extensions.code, 'QUERY_LIMIT_EXCEEDED')
  t.notOk('data' in body)
})

/** The app on this file's PostgreSQL database through a TCP proxy, which cuts the database off. */
async function behindProxy (t: Test): Promise<{ server: Server, proxy: TcpProxy }> {
  const url = (await testDatabaseUrl())!
  const target = new URL(url)
  const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) })
  await proxy.open()
  t.teardown(() => proxy.cut())
  // Cut off, connections are refused at once: the connect timeout stays generous for a loaded machine.
  const app = await buildApp(testConfig({ databaseUrl: proxy.url(url) }), { logger: false })
  t.teardown(() => app.close())
  return { server: await serve(t, {}, app), proxy }
}

const onServer = serverUrl === undefined ? 'needs PostgreSQL (the embedded database cannot be cut off over a network)' : false

// docs/api/clients.md, "When the database is out of reach", as written there (Apollo Client 4).
/** Seconds to wait before retrying `error`, or undefined when it is not worth retrying. */
function retryAfter (error: unknown): number | undefined {
  if (!CombinedGraphQLErrors.is(error)) return undefined
  const unavailable = error.errors.find((e) => e.extensions?.code === 'SERVICE_UNAVAILABLE')
  return unavailable === undefined ? undefined : Number(unavailable.extensions?.retryAfter ?? 1)
}
// HttpLink hands a 503 in application/graphql-response+json on as a result with errors, and
// RetryLink retries errors only: this link makes SERVICE_UNAVAILABLE one.
const unavailableAsError = new ApolloLink((operation, forward) => forward(operation).pipe(map((result) => {
  if (result.errors?.some((e) => e.extensions?.code === 'SERVICE_UNAVAILABLE')) throw new CombinedGraphQLErrors(result)
  return result
})))
const retryOptions: RetryLink.Options = {
  // Queries, and mutations sent with an Idempotency-Key (run once however often sent); 5 tries in all.
  attempts: (attempt, operation, error) => attempt < 5 && retryAfter(error) !== undefined &&
    (operation.operationType === OperationTypeNode.QUERY || operation.getContext().headers?.['Idempotency-Key'] !== undefined),
  delay: (_attempt, _operation, error) => (retryAfter(error) ?? 1) * 1000
}
// docs/api/clients.md, the same for urql 6's retryExchange (@urql/exchange-retry): its retryIf.
const urqlRetryIf = (error: CombinedError, operation: Operation): boolean =>
  operation.kind === 'query' && error.graphQLErrors.some((e) => e.extensions.code === 'SERVICE_UNAVAILABLE')

t.test('Apollo Client 4: RetryLink retries a query on SERVICE_UNAVAILABLE after its retryAfter, and it succeeds once the database is back', { skip: onServer }, async (t) => {
  const { server, proxy } = await behindProxy(t)
  const school = await seeded('Apollo Outage School')
  const http = (token?: string): HttpLink => new HttpLink({ uri: server.url, headers: token === undefined ? {} : bearer(token) })
  const anonymous = new ApolloClient({ link: http(), cache: new InMemoryCache() })
  const token = (await anonymous.mutate<{ login: { accessToken: string } }>({ mutation: gql(LOGIN), variables: { username: school.username, password: PASSWORD } })).data!.login.accessToken
  await proxy.cut()

  // The page's options, but for the wait (taken note of, not waited) and the database coming back
  // while the client would wait.
  const waits: number[] = []
  const tries: Array<{ operationType: string, retried: boolean }> = []
  const retry = new RetryLink({
    attempts: async (attempt, operation, error) => {
      const retried = await (retryOptions.attempts as RetryLink.AttemptsFunction)(attempt, operation, error)
      tries.push({ operationType: operation.operationType, retried })
      if (retried && tries.filter((one) => one.retried).length === 1) await proxy.open()
      return retried
    },
    delay: (attempt, operation, error) => {
      waits.push((retryOptions.delay as RetryLink.DelayFunction)(attempt, operation, error))
      return 0
    }
  })
  const client = new ApolloClient({ link: ApolloLink.from([retry, unavailableAsError, http(token)]), cache: new InMemoryCache() })

  // A mutation without an idempotency key is not retried: the refusal reaches the application.
  const before = server.exchanges.length
  const write = await client.mutate({ mutation: gql('mutation Room { createClassroom(input: { name: "Room 1" }) { id } }') }).then(() => undefined, (e: unknown) => e)
  t.equal(retryAfter(write), 5, `SERVICE_UNAVAILABLE with retryAfter 5, got ${String(write)}`)
  t.same(tries, [{ operationType: 'mutation', retried: false }])
  t.match(server.exchanges.slice(before), [{ method: 'POST', status: 503, contentType: 'application/graphql-response+json; charset=utf-8' }], 'sent once')

  const { data } = await client.query<{ school: { name: string } }>({ query: gql(SCHOOL), fetchPolicy: 'network-only' })
  t.equal(data?.school.name, 'Apollo Outage School', 'answered once the database is back')
  t.same(tries.slice(1), [{ operationType: 'query', retried: true }])
  t.same(waits, [5_000], 'after the retryAfter the service named')
  t.match(server.exchanges.slice(before + 1), [{ status: 503 }, { status: 200 }])
})

t.test('urql 6: SERVICE_UNAVAILABLE is a CombinedError with the code, retryAfter and the 503, which the page\'s retryIf retries for queries only; graphql-request 7: a ClientError with the 503', { skip: onServer }, async (t) => {
  const { server, proxy } = await behindProxy(t)
  const school = await seeded('Urql Outage School')
  const anonymous = new Client({ url: server.url, exchanges: [cacheExchange, fetchExchange] })
  const token = (await anonymous.mutation<{ login: { accessToken: string } }>(LOGIN, { username: school.username, password: PASSWORD }).toPromise()).data!.login.accessToken
  const client = new Client({ url: server.url, exchanges: [cacheExchange, fetchExchange], fetchOptions: { headers: bearer(token) } })
  await proxy.cut()

  const refused = await client.query(SCHOOL, {}, { requestPolicy: 'network-only' }).toPromise()
  t.match(server.exchanges.at(-1), { method: 'GET', status: 503 })
  t.equal(refused.error?.networkError, undefined, 'not a network error: the server\'s GraphQL errors')
  t.equal(refused.error?.graphQLErrors[0]?.extensions.code, 'SERVICE_UNAVAILABLE', String(refused.error))
  t.equal(refused.error?.graphQLErrors[0]?.extensions.retryAfter, 5)
  t.equal(refused.error?.response?.status, 503)
  t.equal(refused.error?.response?.headers.get('retry-after'), '5', 'Retry-After readable too')
  t.ok(urqlRetryIf(refused.error!, refused.operation), 'a query: retried')

  const write = await client.mutation('mutation Room { createClassroom(input: { name: "Room 1" }) { id } }', {}).toPromise()
  t.equal(write.error?.graphQLErrors[0]?.extensions.code, 'SERVICE_UNAVAILABLE')
  t.notOk(urqlRetryIf(write.error!, write.operation), 'a mutation: not retried')

  const fieldError = await client.query(STUDENT, { id: 'not-a-uuid' }).toPromise()
  t.notOk(urqlRetryIf(fieldError.error!, fieldError.operation), 'another error: not retried')

  // The page's retryExchange, but for its delays (a few milliseconds, not the retryAfter) and the
  // database brought back at the first retry: the query is sent again until it is answered.
  const retried: string[] = []
  let back: Promise<void> | undefined
  const retrying = new Client({
    url: server.url,
    exchanges: [cacheExchange, retryExchange({
      initialDelayMs: 5,
      maxDelayMs: 20,
      randomDelay: false,
      // Bounded by the attempts (at most 20 ms each), not by a guess of how soon the proxy listens.
      maxNumberAttempts: 1000,
      retryIf: (error, operation) => {
        const retry = urqlRetryIf(error, operation)
        retried.push(`${operation.kind}:${String(retry)}`)
        back ??= proxy.open()
        return retry
      }
    }), fetchExchange],
    fetchOptions: { headers: bearer(token) }
  })
  const before = server.exchanges.length
  const answered = await retrying.query(SCHOOL, {}, { requestPolicy: 'network-only' }).toPromise()
  await back
  t.equal(answered.error, undefined, String(answered.error))
  t.equal((answered.data as { school: { name: string } } | undefined)?.school.name, 'Urql Outage School', 'answered once the database is back')
  t.ok(retried.length >= 1 && retried.every((one) => one === 'query:true'), `retried on SERVICE_UNAVAILABLE only: ${retried.join(', ')}`)
  const sent = server.exchanges.slice(before)
  t.same(sent.map((one) => one.status), [...sent.slice(0, -1).map(() => 503), 200], 'refused with 503 until the database was back, then answered')
  await proxy.cut()

  // graphql-request 7: a ClientError with the 503 and Retry-After, as the page says.
  const refusedToo = await new GraphQLClient(server.url, { headers: bearer(token) }).request(SCHOOL).then(() => undefined, (e: unknown) => e)
  t.type(refusedToo, ClientError)
  if (refusedToo instanceof ClientError) {
    t.equal(refusedToo.response.status, 503)
    t.equal(refusedToo.response.errors?.[0]?.extensions?.code, 'SERVICE_UNAVAILABLE')
    t.equal(refusedToo.response.headers.get('retry-after'), '5')
  }
})
