// The GraphQL endpoint: Mercurius with the schema, resolvers and loaders, the one error formatter,
// the response cache, and the request rules of a public GraphQL API over HTTP (src/graphql/http.ts):
// answers in the media type `Accept` negotiates, well-formed parameters only, query limits checked
// on the parsed document before any resolver runs, application/json bodies only, no batches, GET
// for queries only, and no introspection or field suggestions in production.
//
// GET needs no CSRF preflight header: the API authenticates by bearer token only, never by cookie,
// so a request a page of another site makes a browser send carries no one's credentials; and GET
// runs queries only.
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { GraphQLError, NoSchemaIntrospectionCustomRule, type ValidationRule } from 'graphql'
import mercurius from 'mercurius'
import { buildContext } from '../graphql/context.js'
import { createErrorFormatter, refusals } from '../graphql/errors.js'
import { documentErrorStatus, GRAPHQL_PATH, invalidParameters, responseMediaType } from '../graphql/http.js'
import { limitRules, sizeLimitError, type QueryLimits } from '../graphql/limits.js'
import { persistedQueryProvider } from '../graphql/persisted-documents.js'
import { registerResponseCache } from '../graphql/response-cache.js'
import { buildResolvers, loaders } from '../graphql/resolvers/index.js'
import { buildSdlSchema } from '../graphql/schema.js'

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
  // no application/graphql.
  app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    if (request.method !== 'POST' || request.routeOptions.url !== GRAPHQL_PATH) {
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
    if (request.routeOptions.url !== GRAPHQL_PATH) {
      done()
      return
    }
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
    if (request.routeOptions.url === GRAPHQL_PATH) {
      const type = reply.getHeader('content-type')
      if (typeof type === 'string' && type.startsWith('application/json')) {
        reply.header('content-type', `${responseMediaType(request)}; charset=utf-8`)
      }
      const vary = reply.getHeader('vary')
      reply.header('vary', vary === undefined ? 'Accept' : `${String(vary)}, Accept`)
    }
    done(null, payload)
  })

  const schema = buildSdlSchema()
  await app.register(mercurius, {
    schema,
    resolvers: buildResolvers(schema) as mercurius.IResolvers,
    loaders,
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
}, { name: 'graphql', dependencies: ['config', 'database', 'auth', 'redis'] })
