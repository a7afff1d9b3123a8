// Structured logs (pino, JSON lines). Every line written while a request runs carries its `reqId`
// (Fastify's child logger). One line per request at `info` when it ends: who (userId, schoolId),
// what (GraphQL operation, outcome), and how it went (statusCode, responseTime in ms). Secrets never
// reach a log: the Authorization and Cookie headers, and passwords and tokens in GraphQL variables,
// are redacted; the request line carries the path without its query string (a GET query's variables).
import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import type { Config } from '../config.js'
import { operationOf } from '../graphql/operation.js'
import { isGraphQLRequest } from './metrics.js'

const SECRET_FIELDS = ['password', 'newPassword', 'refreshToken', 'accessToken', 'token', 'secret']

/** Paths pino redacts in every line (also below `variables` of a logged GraphQL request). */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  'authorization',
  ...SECRET_FIELDS,
  ...SECRET_FIELDS.map((field) => `variables.${field}`),
  ...SECRET_FIELDS.map((field) => `variables.*.${field}`),
  ...SECRET_FIELDS.map((field) => `body.variables.${field}`)
]

type LoggerOption = FastifyServerOptions['logger']

/**
 * The app's logger options: the configured level and the redaction and serializers above; a
 * caller's options (tests: a `stream` to read the lines, a level) are applied on top of them.
 */
export function loggerOptions (config: Config, given?: LoggerOption): LoggerOption {
  if (given === false) return false
  const base = {
    level: config.logLevel,
    redact: { paths: REDACT_PATHS, censor: '[Redacted]' },
    serializers: {
      req: (req: { method?: string, url?: string, ip?: string }) => ({
        method: req.method,
        url: pathOnly(req.url),
        remoteAddress: req.ip
      })
    }
  }
  if (given === undefined || given === true) return base
  return { ...base, ...given }
}

function pathOnly (url: string | undefined): string | undefined {
  if (url === undefined) return undefined
  const query = url.indexOf('?')
  return query === -1 ? url : url.slice(0, query)
}

function enabled (request: FastifyRequest, level: 'info' | 'debug'): boolean {
  const log = request.log as FastifyRequest['log'] & { isLevelEnabled?: (level: string) => boolean }
  return log.isLevelEnabled?.(level) ?? true
}

/** Who asked, what, and how it ended: the one line per request. */
function summary (request: FastifyRequest, reply: FastifyReply): Record<string, unknown> {
  const line: Record<string, unknown> = {
    method: request.method,
    url: pathOnly(request.url),
    statusCode: reply.statusCode,
    responseTime: Math.round(reply.elapsedTime * 100) / 100
  }
  // The auth plugin's (every app has it). Verified tokens are cached: a lookup, not a signature check.
  const identity = request.identity
  if (identity.kind === 'user') {
    line.userId = identity.userId
    line.schoolId = identity.schoolId
  } else if (identity.kind === 'client') {
    line.clientId = identity.clientId
    line.schoolId = identity.schoolId
  }
  if (isGraphQLRequest(request)) {
    line.operation = operationOf(request)
    if (request.graphqlOutcome !== undefined) line.outcome = request.graphqlOutcome
  }
  return line
}

/** Fastify's request lines replaced: `debug` on arrival, one `info` summary when answered. */
export class RequestLog extends LogController {
  override incomingRequest (request: FastifyRequest): void {
    if (enabled(request, 'debug')) request.log.debug({ req: request }, 'incoming request')
  }

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error !== null && error !== undefined) {
      reply.log.error({ ...summary(request, reply), err: error }, 'request errored')
    } else if (enabled(request, 'info')) {
      reply.log.info(summary(request, reply), 'request completed')
    }
  }
}

/** At `debug`, each GraphQL request's operation and variables (secrets redacted): a preHandler of the endpoint. */
export function logGraphQLRequest (request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  if (isGraphQLRequest(request) && enabled(request, 'debug')) {
    const body = request.body as { variables?: unknown } | undefined
    request.log.debug({ operation: operationOf(request), variables: body?.variables }, 'graphql request')
  }
  done()
}
