// GET /schema.graphql: the SDL of the schema the GraphQL endpoint serves (descriptions and
// @specifiedBy included), for consumers' code generators, in production too, where introspection
// is off. No token: the schema is the API's public documentation and holds no school's data.
// Text that changes only with a deploy: cacheable, revalidated with its ETag (a 304 when unchanged).
import etag from '@fastify/etag'
import fp from 'fastify-plugin'
import { printSchema } from 'graphql'

export const SDL_PATH = '/schema.graphql'

export default fp(async (app) => {
  // This plugin's routes only (encapsulated): answers 304 to a matching If-None-Match.
  await app.register(etag)
  let sdl = ''
  // Printed once, from the schema Mercurius serves, with the resolvers in.
  app.addHook('onReady', async () => { sdl = printSchema(app.graphql.schema) })
  app.get(SDL_PATH, { logLevel: 'warn' }, async (_request, reply) => {
    return await reply
      .type('text/plain; charset=utf-8')
      // Stored by browsers, proxies and CDNs, revalidated on every use: never stale after a deploy.
      .header('cache-control', 'public, no-cache')
      .send(sdl)
  })
}, { name: 'schema-sdl', dependencies: ['graphql'], encapsulate: true })
