// Rate limits of the GraphQL endpoint and the OneRoster routes, and login throttling.
//
// Requests per minute are counted per verified user or client and per school (a request counts on
// both); requests without a valid access token are counted per client address. A request over a limit is
// answered 429 with `Retry-After`; every counted response carries the IETF draft's `RateLimit-*`
// headers of the limit closest to exhaustion. Counters live in Redis when REDIS_URL is set, so every
// API node counts the same requests; otherwise in this process's memory (no round trip).
//
// A Redis outage must not take the API down: a limit whose counter cannot be read lets the request
// through (fail open), with a warning in the log and `sds_rate_limit_store_errors_total`.
import rateLimit, { normalizeIP } from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { Counter } from 'prom-client'
import { callerId, type Identity } from '../auth/identity.js'
import { createLoginThrottle, type LoginThrottle } from '../auth/login-throttle.js'
import { refusals } from '../graphql/errors.js'

export type LimitName = 'user' | 'client' | 'school' | 'address' | 'write' | 'login' | 'client-auth'

/** A request over a limit: the limit, its requests per minute, the seconds until it frees. */
export interface LimitRefusal { limit: LimitName, max: number, retryAfter: number }

declare module 'fastify' {
  interface FastifyInstance {
    limits: {
      login: LoginThrottle
      /** Failed authentications of clients at the token endpoint, throttled as logins are. */
      clientAuth: LoginThrottle
      /** Counts a refusal by a limit (the metric). */
      refused: (limit: LimitName) => void
      /**
       * The GraphQL endpoint's onRequest hook (src/plugins/graphql.ts): counts the request on its
       * limits and answers 429 over one; undefined when every limit is off. Health, readiness and
       * metrics stay answerable to probes.
       */
      checkRequest: ((request: FastifyRequest, reply: FastifyReply) => Promise<unknown>) | undefined
      /**
       * The same count for a route that answers a refusal in a form of its own (the OneRoster
       * routes, src/oneroster/plugin.ts): sets the `RateLimit-*` headers and, over a limit,
       * `Retry-After`, and answers the limit reached and the seconds to wait, else undefined;
       * undefined itself when every limit is off.
       */
      limitRequest: ((request: FastifyRequest, reply: FastifyReply) => Promise<LimitRefusal | undefined>) | undefined
      /**
       * Counts one record mutation of the request's caller (a user or a client) on the writes limit:
       * undefined while within it, else the refusal's message and seconds to wait. Called by each
       * mutation (src/graphql/resolvers/mutations.ts), as only execution knows one runs.
       */
      checkWrite: (request: FastifyRequest) => Promise<{ message: string, retryAfter: number } | undefined>
    }
  }
}

const WINDOW_MS = 60_000
/** Keys each in-memory limit keeps (least recently used first out). */
const MEMORY_KEYS = 50_000
const LOG_EVERY_MS = 30_000

type Check = ReturnType<FastifyInstance['createRateLimit']>
type Result = Awaited<ReturnType<Check>>
type Counted = Extract<Result, { isAllowed: false }>
interface Limit { name: LimitName, max: number, policy: string, check: Check }

export default fp(async (app) => {
  const config = app.config
  const refusalCount = new Counter({
    name: 'sds_rate_limit_refusals_total',
    help: 'Requests or logins refused by a rate limit or login throttling, by limit',
    labelNames: ['limit'],
    registers: [app.metrics.registry]
  })
  const storeErrors = new Counter({
    name: 'sds_rate_limit_store_errors_total',
    help: 'Failures of the shared (Redis) counters: rate limits let the request through, login throttling counts in memory',
    labelNames: ['use'],
    registers: [app.metrics.registry]
  })

  let lastWarned = 0
  const storeFailed = (use: 'rate_limit' | 'login', err: unknown): void => {
    storeErrors.inc({ use })
    const now = Date.now()
    if (now - lastWarned < LOG_EVERY_MS) return
    lastWarned = now
    app.log.warn({ err, use }, use === 'login'
      ? 'shared login-throttle counters unavailable; counting in this process until Redis answers'
      : 'shared rate-limit counters unavailable; letting requests through until Redis answers')
  }
  const refused = (limit: LimitName): void => { refusalCount.inc({ limit }) }

  // Each limit in a context of its own: its own counters (and Redis key space), one check per call.
  const limit = async (name: LimitName, max: number, key: (request: FastifyRequest) => string): Promise<Limit | null> => {
    if (max <= 0) return null
    let check: Check | undefined
    await app.register(async (child) => {
      await child.register(rateLimit, {
        global: false,
        max,
        timeWindow: WINDOW_MS,
        keyGenerator: key,
        redis: app.redis,
        nameSpace: `ratelimit:${name}:`,
        cache: MEMORY_KEYS,
        skipOnError: false
      })
      check = child.createRateLimit()
    })
    return { name, max, policy: `${max};w=${WINDOW_MS / 1000}`, check: check! }
  }
  // Each checked only for its kind of caller (below).
  const user = await limit('user', config.rateLimitUserPerMinute,
    (request) => (request.identity as Extract<Identity, { kind: 'user' }>).userId)
  const client = await limit('client', config.rateLimitClientPerMinute,
    (request) => (request.identity as Extract<Identity, { kind: 'client' }>).clientId)
  const school = await limit('school', config.rateLimitSchoolPerMinute,
    (request) => (request.identity as Extract<Identity, { kind: 'user' | 'client' }>).schoolId!)
  const address = await limit('address', config.rateLimitAddressPerMinute, (request) => normalizeIP(request.ip, 64))
  const write = await limit('write', config.rateLimitWritesPerMinute, (request) => callerId(request.identity) ?? normalizeIP(request.ip, 64))

  async function checkWrite (request: FastifyRequest): Promise<{ message: string, retryAfter: number } | undefined> {
    if (write === null) return undefined
    const result = await run(write, request)
    if (result === null || result[1].isAllowed || !result[1].isExceeded) return undefined
    refused('write')
    const retryAfter = Math.max(1, result[1].ttlInSeconds)
    return { message: `Too many writes: the write limit of ${write.max} mutations per minute is reached; retry in ${retryAfter} s`, retryAfter }
  }

  const run = async (limit: Limit, request: FastifyRequest): Promise<[Limit, Result] | null> => {
    try {
      return [limit, await limit.check(request)]
    } catch (err) {
      storeFailed('rate_limit', err)
      return null
    }
  }

  async function limitRequest (request: FastifyRequest, reply: FastifyReply): Promise<LimitRefusal | undefined> {
    const identity = request.identity
    const limits: Limit[] = []
    if (identity.kind === 'user' || identity.kind === 'client') {
      const own = identity.kind === 'user' ? user : client
      if (own !== null) limits.push(own)
      if (school !== null && identity.schoolId !== null) limits.push(school)
    } else if (address !== null) {
      limits.push(address)
    }
    if (limits.length === 0) return
    const results = limits.length === 1
      ? [await run(limits[0]!, request)]
      : await Promise.all(limits.map((limit) => run(limit, request)))

    // The refusing limit that frees last, else the one with the fewest requests left.
    let shown: { limit: Limit, r: Counted } | undefined
    for (const result of results) {
      if (result === null || result[1].isAllowed) continue
      const [limit, r] = result as [Limit, Counted]
      const s = shown?.r
      if (s === undefined || (r.isExceeded ? (!s.isExceeded || r.ttl > s.ttl) : (!s.isExceeded && r.remaining < s.remaining))) {
        shown = { limit, r }
      }
    }
    if (shown === undefined) return
    const { limit, r } = shown
    reply.header('ratelimit-limit', limit.max)
    reply.header('ratelimit-remaining', r.remaining)
    reply.header('ratelimit-reset', r.ttlInSeconds)
    reply.header('ratelimit-policy', limit.policy)
    if (!r.isExceeded) return
    refused(limit.name)
    const retryAfter = Math.max(1, r.ttlInSeconds)
    reply.header('retry-after', retryAfter)
    return { limit: limit.name, max: limit.max, retryAfter }
  }

  async function checkRequest (request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const refusal = await limitRequest(request, reply)
    if (refusal === undefined) return
    return reply.code(429).send(refusals.rateLimited(refusal.limit, refusal.max, refusal.retryAfter))
  }

  // Clients' authentications are throttled with the settings of logins, under keys of their own.
  const throttle = (prefix: 'login' | 'client-auth'): LoginThrottle => createLoginThrottle(app.redis, {
    accountMax: config.loginFailuresPerAccount,
    addressMax: config.loginFailuresPerAddress,
    windowMs: config.loginFailureWindow * 1000,
    lockMaxMs: config.loginLockMax * 1000,
    onStoreError: (err) => { storeFailed('login', err) },
    prefix
  })
  app.decorate('limits', {
    login: throttle('login'),
    clientAuth: throttle('client-auth'),
    refused,
    checkRequest: user === null && client === null && school === null && address === null ? undefined : checkRequest,
    limitRequest: user === null && client === null && school === null && address === null ? undefined : limitRequest,
    checkWrite
  })
}, { name: 'rate-limit', dependencies: ['config', 'cors', 'redis', 'auth', 'metrics'] })
