// Login throttling per account and per client address: every attempt counts (aliased and repeated
// login fields too), locks grow, a success forgets the account's failures only; counters in memory
// or in Redis (shared by every app on it).
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import type { Config } from '../src/config.js'
import { metricsText, REDIS_URL, redisPrefix } from './fixtures/shared-state.js'
import { build, LOGIN, PASSWORD, seedSchool, type GraphQLResponse } from './helper.js'

const WRONG = 'not the password at all'

async function attempt (app: FastifyInstance, username: string, password: string, remoteAddress = '127.0.0.1'): Promise<GraphQLResponse> {
  const res = await app.inject({ method: 'POST', url: '/', remoteAddress, payload: { query: LOGIN, variables: { username, password } } })
  return { statusCode: res.statusCode, headers: res.headers, body: res.json() }
}

const code = (res: GraphQLResponse): unknown => res.body.errors?.[0]?.extensions?.code

const variants: Array<[string, () => Partial<Config>]> = [
  ['memory', () => ({})],
  ['redis', () => ({ redisUrl: REDIS_URL, redisKeyPrefix: redisPrefix() })]
]

for (const [store, storeConfig] of variants) {
  const throttled = (overrides: Partial<Config> = {}): Partial<Config> => ({
    loginFailuresPerAccount: 3,
    loginFailuresPerAddress: 1000,
    ...storeConfig(),
    ...overrides
  })

  t.test(`${store}: after the failures allowed, an account is locked for 1 s, then 2 s, then 4 s`, async (t) => {
    const app = await build(t, throttled())
    const { username } = await seedSchool('Lock School')
    for (let i = 1; i <= 3; i++) t.equal(code(await attempt(app, username, WRONG)), 'INVALID_CREDENTIALS', `failure ${i} is checked`)

    const refused = await attempt(app, username, PASSWORD)
    t.equal(refused.statusCode, 429, 'the right password too is refused while locked')
    t.equal(refused.headers['retry-after'], '1')
    t.equal(code(refused), 'TOO_MANY_REQUESTS')
    t.same(refused.body.errors![0]!.path, ['login'])
    t.equal(refused.body.errors![0]!.extensions!.retryAfter, 1)
    t.equal(refused.body.data, null)

    await sleep(1100)
    t.equal(code(await attempt(app, username, WRONG)), 'INVALID_CREDENTIALS', 'checked again once the lock ends')
    t.equal((await attempt(app, username, WRONG)).headers['retry-after'], '2', 'the next lock is twice as long')
    await sleep(2100)
    t.equal(code(await attempt(app, username, WRONG)), 'INVALID_CREDENTIALS')
    t.equal((await attempt(app, username, WRONG)).headers['retry-after'], '4')
  })

  t.test(`${store}: aliased and repeated login fields each count, and none is checked`, async (t) => {
    const app = await build(t, throttled())
    const { username } = await seedSchool('Alias School')
    const args = `(username: ${JSON.stringify(username)}, password: ${JSON.stringify(PASSWORD)})`
    const res = await app.inject({
      method: 'POST',
      url: '/',
      payload: { query: `mutation { a: login${args} { accessToken } b: login${args} { accessToken } ...more } fragment more on Mutation { c: login${args} { accessToken } }` }
    })
    const body = res.json()
    t.equal(body.data, null, 'no tokens, even with the right password')
    t.same(body.errors.map((e: { extensions: { code: string } }) => e.extensions.code), ['BAD_USER_INPUT'],
      'the first refused field nulls the (non-null) result')

    // Three counted attempts lock the account: a single login with the right password is refused.
    const after = await attempt(app, username, PASSWORD)
    t.equal(after.statusCode, 429)
    t.equal(code(after), 'TOO_MANY_REQUESTS')
  })

  t.test(`${store}: a success forgets the account's failures`, async (t) => {
    const app = await build(t, throttled())
    const { username } = await seedSchool('Reset School')
    for (let round = 0; round < 2; round++) {
      t.equal(code(await attempt(app, username, WRONG)), 'INVALID_CREDENTIALS')
      t.equal(code(await attempt(app, username, WRONG)), 'INVALID_CREDENTIALS')
      const ok = await attempt(app, username, PASSWORD)
      t.type(ok.body.data?.login?.accessToken, 'string', `success in round ${round + 1}`)
    }
    t.equal(code(await attempt(app, username, WRONG)), 'INVALID_CREDENTIALS', 'four failures in all, yet not locked')
  })

  t.test(`${store}: an address is locked after its failures over any accounts; a success there does not reset it`, async (t) => {
    const app = await build(t, throttled({ loginFailuresPerAccount: 0, loginFailuresPerAddress: 3 }))
    const one = await seedSchool('Address School 1')
    const two = await seedSchool('Address School 2')
    const three = await seedSchool('Address School 3')
    const address = '203.0.113.7'
    t.equal(code(await attempt(app, one.username, WRONG, address)), 'INVALID_CREDENTIALS')
    t.equal(code(await attempt(app, two.username, WRONG, address)), 'INVALID_CREDENTIALS')
    t.type((await attempt(app, three.username, PASSWORD, address)).body.data?.login?.accessToken, 'string')
    t.equal(code(await attempt(app, 'nobody-at-all', WRONG, address)), 'INVALID_CREDENTIALS', 'the third failure')
    const refused = await attempt(app, three.username, PASSWORD, address)
    t.equal(refused.statusCode, 429, 'the address is locked for every account')
    t.type((await attempt(app, three.username, PASSWORD, '198.51.100.9')).body.data?.login?.accessToken, 'string',
      'another address is not')
  })
}

t.test('redis: two app instances on one Redis share the counts', async (t) => {
  const shared = { loginFailuresPerAccount: 3, loginFailuresPerAddress: 1000, redisUrl: REDIS_URL, redisKeyPrefix: redisPrefix() }
  const first = await build(t, shared)
  const second = await build(t, shared)
  const { username } = await seedSchool('Shared School')
  t.equal(code(await attempt(first, username, WRONG)), 'INVALID_CREDENTIALS')
  t.equal(code(await attempt(second, username, WRONG)), 'INVALID_CREDENTIALS')
  t.equal(code(await attempt(first, username, WRONG)), 'INVALID_CREDENTIALS')
  t.equal((await attempt(second, username, PASSWORD)).statusCode, 429, 'the other instance sees the lock')
})

t.test('memory: two app instances count on their own', async (t) => {
  const first = await build(t, { loginFailuresPerAccount: 3, loginFailuresPerAddress: 1000 })
  const second = await build(t, { loginFailuresPerAccount: 3, loginFailuresPerAddress: 1000 })
  const { username } = await seedSchool('Apart School')
  for (let i = 0; i < 3; i++) await attempt(first, username, WRONG)
  t.equal((await attempt(first, username, PASSWORD)).statusCode, 429)
  t.type((await attempt(second, username, PASSWORD)).body.data?.login?.accessToken, 'string')
})

t.test('with Redis unreachable, login stays available and is throttled in memory', async (t) => {
  const app = await build(t, { loginFailuresPerAccount: 2, loginFailuresPerAddress: 1000, redisUrl: 'redis://127.0.0.1:1', redisKeyPrefix: 'sds-test-down:' })
  const { username } = await seedSchool('Down School')
  t.type((await attempt(app, username, PASSWORD)).body.data?.login?.accessToken, 'string', 'login works')
  t.equal(code(await attempt(app, username, WRONG)), 'INVALID_CREDENTIALS')
  t.equal(code(await attempt(app, username, WRONG)), 'INVALID_CREDENTIALS')
  t.equal((await attempt(app, username, PASSWORD)).statusCode, 429, 'and still throttled')
  if (app.hasDecorator('metrics')) {
    const text = await metricsText(app)
    t.match(text, /sds_rate_limit_store_errors_total\{use="login"\} [1-9]/, 'the failures are counted')
    t.match(text, /sds_rate_limit_refusals_total\{limit="login"\} 1/)
  }
})

t.test('throttling off: any number of failures is checked', async (t) => {
  const app = await build(t)
  const { username } = await seedSchool('Off School')
  for (let i = 0; i < 6; i++) await attempt(app, username, WRONG)
  t.type((await attempt(app, username, PASSWORD)).body.data?.login?.accessToken, 'string')
})
