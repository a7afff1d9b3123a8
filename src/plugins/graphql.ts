// The GraphQL endpoint: Mercurius with the schema, resolvers and loaders, the one error formatter,
// the response cache, and the request rules of a public GraphQL API: query limits checked on the
// parsed document before any resolver runs, application/json bodies only, CSRF prevention, no
// batches, GET for queries only, and no introspection or field suggestions in production.
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import {
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  type ExecutionResult,
  type FormattedExecutionResult,
  type GraphQLFormattedError,
  type ValidationRule
} from 'graphql'
import mercurius, { type MercuriusContext } from 'mercurius'
import { buildContext } from '../graphql/context.js'
import { errorFormatter } from '../graphql/errors.js'
import { limitRules, sizeLimitError, tokenLimitError, type QueryLimits } from '../graphql/limits.js'
import { registerResponseCache } from '../graphql/response-cache.js'
import { buildResolvers, loaders } from '../graphql/resolvers/index.js'
import { buildSdlSchema } from '../graphql/schema.js'

const GRAPHQL_PATH = '/'

/**
 * Headers a browser cannot send cross-origin without a CORS preflight: a GET must carry one, so a
 * page of another site cannot make a visitor's browser run a query (Mercurius's names and Apollo's).
 */
const PREFLIGHT_HEADERS = ['x-mercurius-operation-name', 'mercurius-require-preflight', 'x-apollo-operation-name', 'apollo-require-preflight']

interface RequestError { statusCode: number, message: string, code?: string }

/** Errors that answer with a status of their own, with the message a client sees. */
function requestErrors (bodyLimitBytes: number): Record<string, RequestError> {
  return {
    FST_ERR_CTP_BODY_TOO_LARGE: { statusCode: 413, message: `Request body is too large: at most ${bodyLimitBytes} bytes` },
    // HANDLER_TIMEOUT_MS (plugins/handler-timeout.ts).
    FST_ERR_HANDLER_TIMEOUT: { statusCode: 503, message: 'The request took too long and was stopped; retry later', code: 'TIMEOUT' },
    MER_ERR_METHOD_NOT_ALLOWED: { statusCode: 405, message: 'Only queries can be sent with GET; send mutations with POST' }
  }
}

/** Removes graphql-js's "Did you mean ...?" hints, which tell a prober the schema's names. */
function withoutSuggestions (error: GraphQLFormattedError): GraphQLFormattedError {
  const message = error.message.replace(/ ?Did you mean .*\?$/s, '')
  return message === error.message ? error : { ...error, message }
}

function formatter (production: boolean, bodyLimitBytes: number) {
  const known = requestErrors(bodyLimitBytes)
  return (
    execution: ExecutionResult & Required<Pick<ExecutionResult, 'errors'>>,
    context: MercuriusContext
  ): { statusCode: number, response: FormattedExecutionResult } => {
    for (const error of execution.errors) {
      const request = known[(error.originalError as { code?: string } | undefined)?.code ?? '']
      if (request !== undefined) {
        return {
          statusCode: request.statusCode,
          response: { data: null, errors: [{ message: request.message, ...(request.code && { extensions: { code: request.code } }) }] }
        }
      }
    }
    const { statusCode, response } = errorFormatter(execution, context)
    let errors = (response.errors ?? []).map((error) => tokenLimitError(error) ?? error)
    if (production) errors = errors.map(withoutSuggestions)
    return { statusCode, response: { ...response, errors } }
  }
}

function unsupportedMediaType (): Error {
  return Object.assign(new Error('Unsupported Content-Type'), { statusCode: 415, code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' })
}

export default fp(async (app) => {
  const config = app.config
  const production = config.env === 'production'
  const limits: QueryLimits = {
    maxDepth: config.queryMaxDepth,
    maxAliases: config.queryMaxAliases,
    maxDirectives: config.queryMaxDirectives,
    maxTokens: config.queryMaxTokens,
    maxCost: config.queryMaxCost,
    maxBytes: config.queryMaxBytes
  }
  const validationRules: ValidationRule[] = limitRules(limits)
  if (production) validationRules.push(NoSchemaIntrospectionCustomRule)

  // Only JSON bodies: no form or text body (which a browser sends cross-site without a preflight),
  // no application/graphql. Runs before Mercurius's own CSRF check, so that such a body is a 415.
  app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    if (request.method !== 'POST' || request.routeOptions.url !== GRAPHQL_PATH) {
      done()
      return
    }
    const type = request.headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase()
    if (type !== 'application/json') done(unsupportedMediaType())
    else done()
  })

  // The size of the text before anything parses it (the response cache parses ahead of Mercurius).
  app.addHook('preValidation', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const source = request.routeOptions.url === GRAPHQL_PATH
      ? (request.method === 'GET' ? request.query : request.body) as { query?: unknown } | undefined
      : undefined
    const error = typeof source?.query === 'string' ? sizeLimitError(source.query, limits) : undefined
    // An early answer: the hook chain stops here (done is not called).
    if (error !== undefined) void reply.code(400).send({ data: null, errors: [error] })
    else done()
  })

  const schema = buildSdlSchema()
  await app.register(mercurius, {
    schema,
    resolvers: buildResolvers(schema) as mercurius.IResolvers,
    loaders,
    path: GRAPHQL_PATH,
    context: (request) => buildContext(app, request),
    errorFormatter: formatter(production, config.bodyLimitBytes),
    validationRules,
    graphql: {
      parseOptions: { maxTokens: limits.maxTokens },
      // graphql-js 16.15's option; Mercurius passes validateOptions through but does not type it.
      validateOptions: { hideSuggestions: production } as { maxErrors?: number }
    },
    // Compile a query to JavaScript once it has been seen twice.
    jit: 1,
    allowBatchedQueries: false,
    csrfPrevention: { allowedContentTypes: ['application/json'], requiredHeaders: PREFLIGHT_HEADERS },
    graphiql: false
  })

  // Mercurius takes a `query` that graphql-js cannot parse for a JSON-encoded document (AST), which
  // would pass around the token limit: a query is GraphQL text only.
  app.graphql.addHook('preParsing', async (_schema, source) => {
    if (!/^\s*\{\s*"/.test(source)) return
    try {
      JSON.parse(source)
    } catch {
      return // not JSON: GraphQL's parser answers it
    }
    throw new GraphQLError('Syntax Error: the query must be GraphQL text, not a JSON document')
  })

  const { responseCacheTtl, responseCacheMb } = config
  if (responseCacheTtl > 0) {
    await registerResponseCache(app, { ttlMs: responseCacheTtl * 1000, maxBytes: responseCacheMb * 1024 * 1024, maxTokens: limits.maxTokens })
  }
}, { name: 'graphql', dependencies: ['config', 'database', 'auth'] })
