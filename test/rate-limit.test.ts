// Rate limits per user, per school and (without a valid token) per client address: 429 with
// Retry-After and the RateLimit headers; counters in memory or in Redis, shared by every app on it;
// a Redis outage lets requests through. Every refusal by any limit, of any path, is a 429 whose
// Retry-After is the retryAfter its body names.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createUser } from '../src/admin/users.js'
import type { Config } from '../src/config.js'
import { basic, clientToken, seedClient, tokenRequest } from './fixtures/oauth.js'
import { metricsText, REDIS_URL, redisPrefix } from './fixtures/shared-state.js'
import { build, gql, LOGIN, login, PASSWORD, seedSchool, testDatabase, unique, type GraphQLResponse } from './helper.js'

const SCHOOL = '{ school { id } }'

async function ask (app: FastifyInstance, token?: string, remoteAddress = '127.0.0.1'): Promise<GraphQLResponse> {
  const res = await app.inject({
    method: 'POST',
    url: '/',
    remoteAddress,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    payload: { query: SCHOOL }
  })
  return { statusCode: res.statusCode, headers: res.headers, body: res.json() }
}

const variants: Array<[string, () => Partial<Config>]> = [
  ['memory', () => ({})],
  ['redis', () => ({ redisUrl: REDIS_URL, redisKeyPrefix: redisPrefix() })]
]

for (const [store, storeConfig] of variants) {
  t.test(`${store}: a user over the limit gets 429 with Retry-After and RateLimit headers`, async (t) => {
    const app = await build(t, { rateLimitUserPerMinute: 3, ...storeConfig() })
    const school = await seedSchool('User Limit School')
    const { accessToken } = await login(app, school.username)
    for (let left = 2; left >= 0; left--) {
      const res = await ask(app, accessToken)
      t.equal(res.statusCode, 200)
      t.equal(res.headers['ratelimit-limit'], '3')
      t.equal(res.headers['ratelimit-remaining'], String(left))
      t.equal(res.headers['ratelimit-policy'], '3;w=60')
      t.ok(Number(res.headers['ratelimit-reset']) > 0 && Number(res.headers['ratelimit-reset']) <= 60)
    }
    const refused = await ask(app, accessToken)
    t.equal(refused.statusCode, 429)
    const retryAfter = Number(refused.headers['retry-after'])
    t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`)
    t.equal(refused.headers['ratelimit-remaining'], '0')
    t.notOk('data' in refused.body, 'refused before execution: no data')
    t.equal(refused.body.errors![0]!.extensions!.code, 'TOO_MANY_REQUESTS')
    t.equal(refused.body.errors![0]!.extensions!.limit, 'user')
    t.ok(refused.headers['x-request-id'], 'an answer like any other')

    const other = await seedSchool('User Limit School 2')
    t.equal((await ask(app, (await login(app, other.username)).accessToken)).statusCode, 200, 'another user is not limited')
    t.equal((await app.inject({ url: '/health' })).statusCode, 200, 'probes are never limited')
  })

  t.test(`${store}: the users of one school share the school's limit`, async (t) => {
    const app = await build(t, { rateLimitUserPerMinute: 100, rateLimitSchoolPerMinute: 4, ...storeConfig() })
    const school = await seedSchool('School Limit School')
    const first = (await login(app, school.username)).accessToken
    const secondName = unique('second')
    await createUser(await testDatabase(), { username: secondName, password: PASSWORD, schoolId: school.schoolId })
    const second = (await login(app, secondName)).accessToken
    t.equal((await ask(app, first)).statusCode, 200)
    t.equal((await ask(app, second)).statusCode, 200)
    t.equal((await ask(app, first)).statusCode, 200)
    const last = await ask(app, second)
    t.equal(last.statusCode, 200)
    t.equal(last.headers['ratelimit-remaining'], '0', 'the headers show the limit closest to exhaustion')
    t.equal(last.headers['ratelimit-limit'], '4')
    const refused = await ask(app, first)
    t.equal(refused.statusCode, 429)
    t.equal(refused.body.errors![0]!.extensions!.limit, 'school')

    const elsewhere = await seedSchool('School Limit School 2')
    t.equal((await ask(app, (await login(app, elsewhere.username)).accessToken)).statusCode, 200, 'another school is not limited')
  })

  t.test(`${store}: requests without a valid token count per client address`, async (t) => {
    const app = await build(t, { rateLimitAddressPerMinute: 2, ...storeConfig() })
    const address = '203.0.113.5'
    t.equal((await ask(app, undefined, address)).statusCode, 200, 'answered (UNAUTHENTICATED in the body)')
    t.equal((await ask(app, 'not-a-token', address)).statusCode, 200)
    const refused = await ask(app, undefined, address)
    t.equal(refused.statusCode, 429)
    t.equal(refused.body.errors![0]!.extensions!.limit, 'address')
    t.equal((await ask(app, undefined, '198.51.100.1')).statusCode, 200, 'another address is not limited')
  })
}

t.test('redis: two app instances on one Redis share a user\'s count', async (t) => {
  const shared = { rateLimitUserPerMinute: 3, redisUrl: REDIS_URL, redisKeyPrefix: redisPrefix() }
  const first = await build(t, shared)
  const second = await build(t, shared)
  const school = await seedSchool('Shared Limit School')
  const { accessToken } = await login(first, school.username)
  t.equal((await ask(first, accessToken)).statusCode, 200)
  t.equal((await ask(second, accessToken)).statusCode, 200)
  t.equal((await ask(first, accessToken)).headers['ratelimit-remaining'], '0')
  t.equal((await ask(second, accessToken)).statusCode, 429, 'the fourth request, on the other instance')
})

t.test('memory: two app instances count on their own', async (t) => {
  const first = await build(t, { rateLimitUserPerMinute: 2 })
  const second = await build(t, { rateLimitUserPerMinute: 2 })
  const school = await seedSchool('Apart Limit School')
  const { accessToken } = await login(first, school.username)
  await ask(first, accessToken)
  await ask(first, accessToken)
  t.equal((await ask(first, accessToken)).statusCode, 429)
  t.equal((await ask(second, accessToken)).statusCode, 200)
})

t.test('with Redis unreachable, requests go through (fail open) and the failures are counted', async (t) => {
  const app = await build(t, { rateLimitUserPerMinute: 1, rateLimitAddressPerMinute: 1, redisUrl: 'redis://127.0.0.1:1', redisKeyPrefix: 'sds-test-down:' })
  const school = await seedSchool('Down Limit School')
  const { accessToken } = await login(app, school.username)
  for (let i = 0; i < 3; i++) {
    const res = await ask(app, accessToken)
    t.equal(res.statusCode, 200)
    t.equal(res.body.data?.school?.id, school.schoolId)
  }
  if (app.hasDecorator('metrics')) {
    t.match(await metricsText(app), /sds_rate_limit_store_errors_total\{use="rate_limit"\} [4-9]/)
  }
})

t.test('refusals are counted by limit in the metrics', async (t) => {
  const app = await build(t, { rateLimitAddressPerMinute: 1 })
  if (!app.hasDecorator('metrics')) { t.pass('no metrics plugin registered'); return }
  await ask(app)
  await ask(app)
  await ask(app)
  t.match(await metricsText(app), /sds_rate_limit_refusals_total\{limit="address"\} 2/)
})

t.test('limits off (0): no counting, no headers', async (t) => {
  const app = await build(t)
  const res = await ask(app)
  t.equal(res.statusCode, 200)
  t.notOk(res.headers['ratelimit-limit'])
})

/** A refusal as the client sees it: its status, its Retry-After header and the seconds its body names. */
interface Refusal { statusCode: number, header: unknown, named: unknown }

const graphqlRefusal = (res: GraphQLResponse): Refusal => ({
  statusCode: res.statusCode,
  header: res.headers['retry-after'],
  named: res.body.errors?.find((e) => e.extensions?.code === 'TOO_MANY_REQUESTS')?.extensions?.retryAfter
})

/** Each path that answers TOO_MANY_REQUESTS (or the token endpoint's 429): set up, then the refused request. */
const LIMITED: Array<[string, Partial<Config>, (app: FastifyInstance) => Promise<Refusal>]> = [
  ['a user\'s requests', { rateLimitUserPerMinute: 1 }, async (app) => {
    const { accessToken } = await login(app, (await seedSchool(unique('User Path'))).username)
    await ask(app, accessToken)
    return graphqlRefusal(await ask(app, accessToken))
  }],
  ['a client\'s requests', { rateLimitClientPerMinute: 1 }, async (app) => {
    const token = await clientToken(app, await seedClient((await seedSchool(unique('Client Path'))).schoolId, ['roster-core.readonly']))
    await ask(app, token)
    return graphqlRefusal(await ask(app, token))
  }],
  ['a school\'s requests', { rateLimitSchoolPerMinute: 1 }, async (app) => {
    const { accessToken } = await login(app, (await seedSchool(unique('School Path'))).username)
    await ask(app, accessToken)
    return graphqlRefusal(await ask(app, accessToken))
  }],
  ['an address\'s requests', { rateLimitAddressPerMinute: 1 }, async (app) => {
    await ask(app, undefined, '203.0.113.77')
    return graphqlRefusal(await ask(app, undefined, '203.0.113.77'))
  }],
  ['a caller\'s writes', { rateLimitWritesPerMinute: 1 }, async (app) => {
    const { accessToken } = await login(app, (await seedSchool(unique('Write Path'))).username)
    const write = async (): Promise<GraphQLResponse> => await gql(app, `mutation { createClassroom(input: { name: "${unique('Room')}" }) { id } }`, { token: accessToken })
    await write()
    return graphqlRefusal(await write())
  }],
  // Failures until the account is locked: each one past the first locks it longer (1 s, 2 s, ...),
  // so a slow machine whose lock ends between two attempts only gets a longer one.
  ['a locked login', { loginFailuresPerAccount: 1, loginFailuresPerAddress: 0 }, async (app) => {
    const { username } = await seedSchool(unique('Login Path'))
    return await untilLocked(async () => await gql(app, LOGIN, { variables: { username, password: 'not the password at all' } }), (res) => res.statusCode, graphqlRefusal)
  }],
  ['a locked client at the token endpoint', { loginFailuresPerAccount: 1, loginFailuresPerAddress: 0 }, async (app) => {
    const client = await seedClient((await seedSchool(unique('Token Path'))).schoolId, ['roster-core.readonly'])
    return await untilLocked(async () => await tokenRequest(app, { grant_type: 'client_credentials' }, { authorization: basic(client.clientId, 'A'.repeat(43)) }),
      (res) => res.statusCode, (res) => {
        const named = /retry in (\d+) s$/.exec(String(res.body.error_description))?.[1]
        return { statusCode: res.statusCode, header: res.headers['retry-after'], named: named === undefined ? undefined : Number(named) }
      })
  }]
]

async function untilLocked<R> (attempt: () => Promise<R>, status: (res: R) => number, refusal: (res: R) => Refusal): Promise<Refusal> {
  for (let i = 0; i < 8; i++) {
    const res = await attempt()
    if (status(res) === 429) return refusal(res)
  }
  throw new Error('never locked')
}

t.test('every refusal by a limit is a 429 whose Retry-After header is the retryAfter it names', async (t) => {
  for (const [path, config, refused] of LIMITED) {
    const app = await build(t, config)
    const { statusCode, header, named } = await refused(app)
    t.equal(statusCode, 429, `${path}: 429`)
    t.ok(typeof named === 'number' && named >= 1, `${path}: names the seconds to wait (${String(named)})`)
    t.equal(header, String(named), `${path}: Retry-After ${String(header)}`)
  }
})
