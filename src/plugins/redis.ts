// The Redis client shared by the API nodes (REDIS_URL): rate-limit and login-throttle counters live
// there so that every node counts the same requests. Without REDIS_URL `app.redis` is undefined and
// those counters are kept in each process's memory.
//
// A Redis outage must not stall requests: no offline queue (a command fails at once while the
// connection is down), one retry per command, a short command timeout; the callers decide what a
// failure means (rate limits let the request through, login throttling falls back to this
// process's own counters).
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'

declare module 'fastify' {
  interface FastifyInstance {
    /** The shared Redis client, or undefined when REDIS_URL is not set. */
    redis: Redis | undefined
  }
}

/** How long start-up waits for Redis before serving without it (it keeps reconnecting). */
const CONNECT_TIMEOUT_MS = 2000
/** A command that takes longer counts as a failure, so a request never waits on a stuck Redis. */
const COMMAND_TIMEOUT_MS = 500
/** Errors of a connection that stays down are logged at most this often. */
const LOG_EVERY_MS = 30_000

export default fp(async (app) => {
  const { redisUrl, redisKeyPrefix } = app.config
  if (redisUrl === undefined) {
    app.decorate('redis', undefined)
    return
  }
  // Loaded only when used: a node without REDIS_URL starts without it.
  const { Redis } = await import('ioredis')
  const redis = new Redis(redisUrl, {
    lazyConnect: false,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    // Commands of one tick (a request's two rate limits) go out in one write.
    enableAutoPipelining: true,
    keyPrefix: redisKeyPrefix,
    retryStrategy: (times) => Math.min(times * 200, 2000)
  })
  let lastLogged = 0
  redis.on('error', (err: Error) => {
    const now = Date.now()
    if (now - lastLogged < LOG_EVERY_MS) return
    lastLogged = now
    app.log.warn({ err }, 'redis connection failed; shared rate-limit counters unavailable')
  })
  redis.on('ready', () => {
    if (lastLogged !== 0) app.log.info('redis connection restored')
    lastLogged = 0
  })
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { cleanup(); reject(new Error('timed out')) }, CONNECT_TIMEOUT_MS)
      const onReady = (): void => { cleanup(); resolve() }
      const onEnd = (): void => { cleanup(); reject(new Error('connection closed')) }
      const cleanup = (): void => {
        clearTimeout(timer)
        redis.off('ready', onReady)
        redis.off('end', onEnd)
      }
      redis.once('ready', onReady)
      redis.once('end', onEnd)
    })
  } catch (err) {
    // Serve anyway: limits fail open and login throttling counts locally until Redis is back.
    app.log.warn({ err }, 'redis not reachable at start; continuing without it until it is')
  }
  app.decorate('redis', redis)
  app.addHook('onClose', async () => {
    if (redis.status === 'ready') {
      await redis.quit().catch(() => redis.disconnect())
    } else {
      redis.disconnect()
    }
  })
}, { name: 'redis', dependencies: ['config'] })
