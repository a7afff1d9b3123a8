// Prometheus metrics at GET /metrics: requests and latency by operation and outcome, HTTP requests
// by route and status, the PostgreSQL pool's use, and Node's default process metrics. Each app has
// a registry of its own (tests build many apps in one process); other plugins add their metrics to
// `app.metrics.registry`. Node's process metrics come from one registry per process.
//
// /metrics is protected by METRICS_TOKEN (a bearer token) when it is set; in production it is
// served only then, since the API's port faces clients.
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { isGraphQLRoute } from '../graphql/http.js'
import { operationOf } from '../graphql/operation.js'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: {
      registry: Registry
      /** Counts an answer of the GraphQL endpoint (its onResponse hook, src/plugins/graphql.ts). */
      graphqlAnswered (request: FastifyRequest, reply: FastifyReply): void
    }
  }
}

/** Distinct operation names kept as labels; later ones count as "other" (bounded cardinality). */
export const MAX_OPERATION_LABELS = 100

/** A GraphQL request: a POST or GET of the endpoint (not its HEAD). */
export function isGraphQLRequest (request: FastifyRequest): boolean {
  return isGraphQLRoute(request) && (request.method === 'POST' || request.method === 'GET')
}

function outcomeOf (request: FastifyRequest, reply: FastifyReply): string {
  if (reply.statusCode >= 500) return 'internal_error'
  if (reply.statusCode >= 400) return 'rejected'
  return request.graphqlOutcome ?? 'ok'
}

// Node's process metrics belong to the process, not to an app: collected once per process, however
// many apps it builds (tests build many; each collector keeps a timer and an observer running).
let processRegistry: Registry | undefined
function processMetrics (): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

function sameSecret (given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest()
  const b = createHash('sha256').update(expected).digest()
  return timingSafeEqual(a, b)
}

export default fp(async (app) => {
  const registry = new Registry()
  const processRegistry = processMetrics()
  const httpRequests = new Counter({
    name: 'sds_http_requests_total',
    help: 'HTTP requests answered, by route and status code',
    labelNames: ['route', 'status'] as const,
    registers: [registry]
  })
  const graphqlDuration = new Histogram({
    name: 'sds_graphql_request_duration_seconds',
    help: 'Time to answer a GraphQL request, by operation name and outcome (ok, error, internal_error, rejected)',
    labelNames: ['operation', 'outcome'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry]
  })
  // Read from the pool when scraped: nothing on the request path.
  const poolGauge = (name: string, help: string, read: (stats: NonNullable<ReturnType<typeof app.db.poolStats>>) => number): void => {
    // eslint-disable-next-line no-new
    new Gauge({
      name,
      help,
      registers: [registry],
      collect () {
        const stats = app.db.poolStats()
        if (stats !== null) this.set(read(stats))
      }
    })
  }
  poolGauge('sds_db_pool_connections', 'Open PostgreSQL connections of the pool (busy or idle)', (s) => s.total)
  poolGauge('sds_db_pool_idle_connections', 'Idle PostgreSQL connections of the pool', (s) => s.idle)
  poolGauge('sds_db_pool_waiting_requests', 'Callers waiting for a PostgreSQL connection', (s) => s.waiting)
  poolGauge('sds_db_pool_max_connections', 'Size limit of the PostgreSQL pool (DATABASE_POOL_SIZE)', (s) => s.max)

  // eslint-disable-next-line no-new
  new Gauge({
    name: 'sds_http_requests_in_flight',
    help: 'HTTP requests received and not yet answered',
    registers: [registry],
    collect () { this.set(app.requestsInFlight()) }
  })

  const operations = new Set<string>()
  function operationLabel (name: string): string {
    if (operations.has(name)) return name
    if (operations.size >= MAX_OPERATION_LABELS) return 'other'
    operations.add(name)
    return name
  }

  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched'
    httpRequests.inc({ route, status: reply.statusCode })
    done()
  })

  app.decorate('metrics', {
    registry,
    graphqlAnswered (request: FastifyRequest, reply: FastifyReply): void {
      if (request.method !== 'POST' && request.method !== 'GET') return
      graphqlDuration.observe({ operation: operationLabel(operationOf(request)), outcome: outcomeOf(request, reply) }, reply.elapsedTime / 1000)
    }
  })

  const { metricsToken, env } = app.config
  if (metricsToken === undefined && env === 'production') return
  app.get('/metrics', { logLevel: 'warn' }, async (request, reply) => {
    if (metricsToken !== undefined) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')
      if (match === null || !sameSecret(match[1]!, metricsToken)) {
        return await reply.code(401).header('www-authenticate', 'Bearer').send({ statusCode: 401, error: 'Unauthorized', message: 'Send "Authorization: Bearer <METRICS_TOKEN>"' })
      }
    }
    return await reply.type(registry.contentType).send(await processRegistry.metrics() + await registry.metrics())
  })
}, { name: 'metrics', dependencies: ['config', 'database', 'handler-timeout'] })
