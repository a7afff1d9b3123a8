// The application factory: builds the Fastify instance and registers the plugins. It never
// listens; src/server.ts does.
import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import auditPlugin from './audit/plugin.js'
import type { Config } from './config.js'
import type { Database } from './db/client.js'
import { frameworkErrors } from './oneroster/malformed.js'
import oneRosterPlugin from './oneroster/plugin.js'
import authPlugin from './plugins/auth.js'
import configPlugin from './plugins/config.js'
import corsPlugin from './plugins/cors.js'
import databasePlugin from './plugins/database.js'
import graphiqlPlugin from './plugins/graphiql.js'
import graphqlPlugin from './plugins/graphql.js'
import handlerTimeoutPlugin from './plugins/handler-timeout.js'
import { loggerOptions, RequestLog } from './plugins/logging.js'
import metricsPlugin from './plugins/metrics.js'
import oauthPlugin from './plugins/oauth.js'
import operationsPlugin from './plugins/operations.js'
import pressurePlugin from './plugins/pressure.js'
import rateLimitPlugin from './plugins/rate-limit.js'
import redisPlugin from './plugins/redis.js'
import schemaSdlPlugin from './plugins/schema-sdl.js'
import shutdownPlugin from './plugins/shutdown.js'
import subscriptionsPlugin from './plugins/subscriptions.js'

export interface BuildOptions {
  /** An open database owned by the caller; by default the app opens (and closes) its own. */
  database?: Database
  logger?: FastifyServerOptions['logger']
  /**
   * The time in milliseconds since the epoch, as Date.now (the default), by which access and
   * refresh tokens are issued and expire: tests pass a clock they move instead of sleeping.
   */
  now?: () => number
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/

export async function buildApp (config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(config, options.logger),
    logController: new RequestLog(),
    // X-Forwarded-For counts only from the proxies TRUST_PROXY names (request.ip, throttling).
    trustProxy: config.trustProxy,
    // Keep a caller's request id when it looks like one, so logs can be joined across services.
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    requestIdHeader: false,
    // The router's refusals (a URL that is not valid percent-encoding): in the OneRoster binding's
    // form under its prefix, Fastify's elsewhere.
    frameworkErrors,
    // A request that arrives while the app closes is the shutdown plugin's to refuse (coded).
    return503OnClosing: false,
    // Opening a new embedded database applies every migration: seconds, more on a busy machine.
    pluginTimeout: 120_000,
    // HTTP bounds (docs/api/limits.md): body size, time to receive a request; the time to answer it
    // is the handler-timeout plugin's (one sweep, not Fastify's timer and signal per request).
    bodyLimit: config.bodyLimitBytes,
    requestTimeout: config.requestTimeoutMs,
    // Node needs requestTimeout (and a headersTimeout no longer) when the server is created, and
    // checks them every 30 s by default: often enough for the bound to hold.
    http: config.requestTimeoutMs > 0
      ? {
          requestTimeout: config.requestTimeoutMs,
          headersTimeout: Math.min(60_000, config.requestTimeoutMs),
          connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(config.requestTimeoutMs / 2)))
        }
      : {}
  })

  // Callback style, no promise per request (BENCHMARKS.md, "What changed since `1b26f99`", Hooks: no figure of its own).
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id)
    done(null, payload)
  })

  // Errors outside GraphQL (bad JSON, wrong content type, 404...): 4xx keep their message,
  // 5xx are logged and answered generically.
  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    const statusCode = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500
    if (statusCode >= 500) {
      request.log.error({ err: error }, 'request failed')
      return reply.code(statusCode).send({ statusCode, error: 'Internal Server Error', message: 'Internal server error', requestId: request.id })
    }
    return reply.code(statusCode).send({ statusCode, error: error.name, message: error.message })
  })

  // In an order each plugin's `dependencies` allow (fastify-plugin checks them at registration): CORS
  // before anything that may refuse a request, so that refusals carry its headers; the shutdown's
  // refusal next; the database before what uses it, and closed after it (test/plugin-order.test.ts).
  await app.register(configPlugin, { config })
  await app.register(corsPlugin)
  await app.register(shutdownPlugin)
  await app.register(handlerTimeoutPlugin)
  await app.register(pressurePlugin)
  await app.register(databasePlugin, { database: options.database })
  await app.register(metricsPlugin)
  await app.register(redisPlugin)
  await app.register(authPlugin, { now: options.now ?? Date.now })
  await app.register(auditPlugin)
  await app.register(rateLimitPlugin)
  await app.register(graphqlPlugin)
  await app.register(subscriptionsPlugin, { now: options.now ?? Date.now })
  await app.register(oneRosterPlugin)
  await app.register(oauthPlugin)
  await app.register(schemaSdlPlugin)
  await app.register(operationsPlugin)
  // GraphiQL sends query text, which trusted-documents mode refuses: not served then.
  if (config.env !== 'production' && config.trustedDocuments === undefined) await app.register(graphiqlPlugin)
  return app
}
