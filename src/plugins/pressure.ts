// Load shedding: while the process is overloaded (event loop delay, heap or RSS above their
// thresholds, sampled every second by @fastify/under-pressure), requests are refused at once with
// 503 and Retry-After instead of queueing until every caller times out. GET /health still answers:
// the process is alive, and restarting it would not help.
import underPressure, { type FastifyUnderPressureOptions } from '@fastify/under-pressure'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { refusals } from '../graphql/errors.js'
import { isGraphQLRoute } from '../graphql/http.js'
import { HEALTH_PATH } from './operations.js'

const MB = 1024 * 1024

export default fp(async (app) => {
  const { pressureMaxEventLoopDelayMs, pressureMaxHeapMb, pressureMaxRssMb, pressureRetryAfter } = app.config
  await app.register(underPressure, {
    maxEventLoopDelay: pressureMaxEventLoopDelayMs,
    maxHeapUsedBytes: pressureMaxHeapMb * MB,
    maxRssBytes: pressureMaxRssMb * MB,
    // /health and /ready are the operations plugin's.
    exposeStatusRoute: false,
    // under-pressure sends what the handler returns, or lets the request go on when it returns
    // nothing (its types say void only).
    pressureHandler: ((request: FastifyRequest, reply: FastifyReply, type: string, value: number | undefined): unknown => {
      if (request.routeOptions.url === HEALTH_PATH) return undefined // go on
      request.log.warn({ type, value }, 'overloaded: request refused')
      void reply.code(503).header('retry-after', String(pressureRetryAfter))
      // The GraphQL endpoint answers in GraphQL's error format; other routes in Fastify's.
      const refused = refusals.overloaded(pressureRetryAfter)
      return isGraphQLRoute(request)
        ? refused
        : { statusCode: 503, error: 'Service Unavailable', message: refused.errors[0].message }
    }) as FastifyUnderPressureOptions['pressureHandler']
  })
}, { name: 'pressure', dependencies: ['config', 'cors', 'shutdown'] })
