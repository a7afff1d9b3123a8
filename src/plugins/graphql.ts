import fp from 'fastify-plugin'
import mercurius from 'mercurius'
import { buildContext } from '../graphql/context.js'
import { errorFormatter } from '../graphql/errors.js'
import { registerResponseCache } from '../graphql/response-cache.js'
import { loaders, resolvers } from '../graphql/resolvers/index.js'
import { loadSchema } from '../graphql/schema.js'

export default fp(async (app) => {
  await app.register(mercurius, {
    schema: loadSchema(),
    resolvers: resolvers as mercurius.IResolvers,
    loaders,
    path: '/',
    context: (request) => buildContext(app, request),
    errorFormatter,
    // Compile a query to JavaScript once it has been seen twice.
    jit: 1,
    allowBatchedQueries: false,
    graphiql: false
  })
  const { responseCacheTtl, responseCacheMb } = app.config
  if (responseCacheTtl > 0) {
    await registerResponseCache(app, { ttlMs: responseCacheTtl * 1000, maxBytes: responseCacheMb * 1024 * 1024 })
  }
}, { name: 'graphql', dependencies: ['config', 'database', 'auth'] })
