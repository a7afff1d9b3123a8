// The GraphQL endpoint: Mercurius with the schema and resolvers, the one error formatter,
// the response cache, and the request rules of a public GraphQL API over HTTP (src/graphql/http.ts):
// answers in the media type `Accept` negotiates, well-formed parameters only, query limits checked
// on the parsed document before any resolver runs, the caller's scopes checked the same way,
// application/json bodies only, no batches, GET for queries only, and no introspection or field
// suggestions in production.
//
// Every hook of the endpoint lives in this plugin's encapsulated context, added below in the order
// they run: other routes (health, readiness, metrics, the SDL) never run them.
//
// GET needs no CSRF preflight header: the API authenticates by bearer token only, never by cookie,
// so a request a page of another site makes a browser send carries no one's credentials; and GET
// runs queries only.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { GraphQLError, Kind, NoSchemaIntrospectionCustomRule, OperationTypeNode, parse, type OperationDefinitionNode, type ValidationRule } from 'graphql'
import mercurius from 'mercurius'
import { accessOf } from '../auth/identity.js'
import { buildContext } from '../graphql/context.js'
import { createErrorFormatter, outOfScope, refusals, subscriptionsOverWebSocket } from '../graphql/errors.js'
import { documentErrorStatus, GRAPHQL_PATH, invalidParameters, responseMediaType } from '../graphql/http.js'
import { limitRules, queryLimitsOf, sizeLimitError, type QueryLimits } from '../graphql/limits.js'
import { persistedQueryProvider } from '../graphql/persisted-documents.js'
import { registerResponseCache } from '../graphql/response-cache.js'
import { buildResolvers } from '../graphql/resolvers/index.js'
import { buildSdlSchema } from '../graphql/schema.js'
import { executing } from '../graphql/operation.js'
import { outOfScopeFields } from '../graphql/scope-check.js'
import { logGraphQLRequest } from './logging.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Whether the executed operation's result held errors, and of which kind; `rejected`: a request
     * error, nothing ran (set by the error formatter, src/graphql/errors.ts).
     */
    graphqlOutcome?: 'ok' | 'error' | 'internal_error' | 'rejected'
  }
}

/**
 * The service's own failures, not the caller's: a bug, or the database out of reach. onResolution
 * sees the errors as formatted for the client (src/graphql/errors.ts).
 */
function isInternal (error: { extensions?: Record<string, unknown> }): boolean {
  return error.extensions?.code === 'INTERNAL_SERVER_ERROR' || error.extensions?.code === 'SERVICE_UNAVAILABLE'
}

/** Where any JSON text can begin (after JSON's whitespace): a value that is not an object, or an object. */
const JSON_START = /^[ \t\n\r]*(?:[-\d"[]|\{[ \t\n\r]*["}]|true|false|null)/

function unsupportedMediaType (): Error {
  return Object.assign(new Error('Unsupported Content-Type'), { statusCode: 415, code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' })
}

export default fp(async (app) => {
  // The endpoint in a context of its own; the rest of the app (the SDL route, tests) reaches
  // Mercurius as app.graphql.
  await app.register(async (endpoint) => {
    await registerEndpoint(endpoint)
    app.decorate('graphql', endpoint.graphql)
  })
}, { name: 'graphql', dependencies: ['config', 'database', 'auth', 'redis', 'metrics', 'rate-limit', 'access-audit'] })

async function registerEndpoint (app: FastifyInstance): Promise<void> {
  const config = app.config
  const production = config.env === 'production'
  const limits: QueryLimits = queryLimitsOf(config)
  const validationRules: ValidationRule[] = limitRules(limits)
  if (production) validationRules.push(NoSchemaIntrospectionCustomRule)

  // onRequest: the rate limits, then the media type of the body.
  if (app.limits.checkRequest !== undefined) app.addHook('onRequest', app.limits.checkRequest)
  // Only JSON bodies: no form or text body (which a browser sends cross-site without a preflight),
  // no application/graphql.
  app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    if (request.method !== 'POST') {
      done()
      return
    }
    const type = request.headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase()
    if (type !== 'application/json') done(unsupportedMediaType())
    else done()
  })

  // Before Mercurius's own schema, whose coercion would make `{"query": 5}` the document "5" and
  // `"variables": false` null: the parameters as sent, then the size of the text before anything
  // parses it (the response cache parses ahead of Mercurius). An early answer stops the hook chain
  // (done is not called).
  app.addHook('preValidation', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const params = request.method === 'POST' ? request.body : request.query
    const invalid = invalidParameters(request.method, params)
    if (invalid !== undefined) {
      request.graphqlOutcome = 'rejected'
      void reply.code(400).send(refusals.badRequest(invalid))
      return
    }
    const source = params as { query?: unknown, extensions?: unknown }
    // null is "no extensions" (GraphQL over HTTP); Mercurius's schema wants an object or nothing.
    if (source.extensions === null) delete source.extensions
    const error = typeof source.query === 'string' ? sizeLimitError(source.query, limits) : undefined
    if (error !== undefined) {
      request.graphqlOutcome = 'rejected'
      void reply.code(documentErrorStatus(request)).send({ errors: [error] })
      return
    }
    done()
  })

  // Every answer of the endpoint (results, refusals by any plugin, cached answers) in the media type
  // the request's Accept negotiates; caches keep answers apart by Accept.
  app.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    const type = reply.getHeader('content-type')
    if (typeof type === 'string' && type.startsWith('application/json')) {
      reply.header('content-type', `${responseMediaType(request)}; charset=utf-8`)
    }
    const vary = reply.getHeader('vary')
    reply.header('vary', vary === undefined ? 'Accept' : `${String(vary)}, Accept`)
    done(null, payload)
  })

  // preHandler: the debug log line, the response cache's lookup (a hit is answered there), then
  // the access audit's tally around the resolvers.
  app.addHook('preHandler', logGraphQLRequest)
  const { responseCacheTtl, responseCacheMb } = config
  if (responseCacheTtl > 0) {
    await registerResponseCache(app, { ttlMs: responseCacheTtl * 1000, maxBytes: responseCacheMb * 1024 * 1024 })
  }
  app.addHook('preHandler', app.audit.scope)

  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    app.metrics.graphqlAnswered(request, reply)
    done()
  })

  const schema = buildSdlSchema()
  await app.register(mercurius, {
    schema,
    resolvers: buildResolvers(schema) as mercurius.IResolvers,
    path: GRAPHQL_PATH,
    context: (request) => buildContext(app, request),
    errorFormatter: createErrorFormatter({ production, bodyLimitBytes: config.bodyLimitBytes }),
    validationRules,
    graphql: {
      parseOptions: { maxTokens: limits.maxTokens },
      // graphql-js 16.15's option; Mercurius passes validateOptions through but does not type it.
      validateOptions: { hideSuggestions: production } as { maxErrors?: number }
    },
    // Compile a query to JavaScript once it has been seen twice.
    jit: 1,
    allowBatchedQueries: false,
    persistedQueryProvider: persistedQueryProvider({
      trustedDocuments: config.trustedDocuments,
      ttlSeconds: config.persistedQueryTtl,
      maxDocuments: config.persistedQueryMaxDocuments,
      maxBytes: limits.maxBytes,
      redis: app.redis,
      log: app.log
    }),
    csrfPrevention: false,
    graphiql: false
  })

  // Mercurius takes any `query` that graphql-js cannot parse but JSON.parse can for a document's
  // AST: `"5"`, `"true"`, `"[]"` or `"{\"kind\":...}"` would reach validation as the number 5, a
  // boolean, an array or an object (a 500), or pass around the token limit. No JSON text is a
  // GraphQL document, so such a query gets the parser's own syntax error, as any other text that
  // does not parse. Only text that begins as JSON does (`{` then a quote or `}`, never a selection
  // set) is tried: ordinary queries pay for one regular expression.
  app.graphql.addHook('preParsing', async (_schema, source) => {
    if (!JSON_START.test(source)) return
    try {
      JSON.parse(source)
    } catch {
      return // not JSON: GraphQL's parser answers it
    }
    parse(source, { maxTokens: limits.maxTokens }) // throws the syntax error
    throw new GraphQLError('Syntax Error: the query must be GraphQL text, not a JSON document') // unreached
  })

  // The operation of each request: named for its log line and metrics, then checked against the
  // caller's scopes (scope-check.ts): a field outside them refuses the whole operation before it
  // runs. (The response cache, which answers before this hook, keys answers by the caller's scopes.)
  app.graphql.addHook('preExecution', async (schema, document, context) => {
    const request = context.reply.request
    const params = (request.method === 'GET' ? request.query : request.body) as { operationName?: unknown } | undefined
    const wanted = typeof params?.operationName === 'string' ? params.operationName : undefined
    let operation: OperationDefinitionNode | undefined
    for (const definition of document.definitions) {
      if (definition.kind !== Kind.OPERATION_DEFINITION) continue
      if (wanted === undefined || definition.name?.value === wanted) {
        operation = definition
        break
      }
    }
    if (operation === undefined) return // graphql-js answers it
    executing(request, operation)
    // graphql-js would run a subscription over HTTP as a query of its fields' resolvers.
    if (operation.operation === OperationTypeNode.SUBSCRIPTION) throw subscriptionsOverWebSocket()
    // Without a valid token the resolvers answer (login, refreshToken; UNAUTHENTICATED elsewhere).
    const access = accessOf(request.identity)
    if (access === null) return
    const refused = outOfScopeFields(schema, document, operation, access)
    if (refused.length > 0) throw outOfScope(refused)
  })
  app.graphql.addHook('onResolution', async (execution, context) => {
    const errors = execution.errors as ReadonlyArray<{ extensions?: Record<string, unknown> }> | undefined
    context.reply.request.graphqlOutcome = errors === undefined || errors.length === 0
      ? 'ok'
      : errors.some(isInternal) ? 'internal_error' : 'error'
  })
}
