// The GraphQL endpoint's hooks live in its plugin's encapsulated context (src/plugins/graphql.ts):
// its route runs them, in the order written there; no other route does.
import t from 'tap'
import { build } from './helper.js'

/** Each route's hooks by lifecycle stage, from Fastify's printRoutes. */
function routeHooks (printed: string): Map<string, Map<string, string[]>> {
  const routes = new Map<string, Map<string, string[]>>()
  let current: Map<string, string[]> | undefined
  for (const line of printed.split('\n')) {
    const hook = /• \((\w+)\) (\[.*\])$/.exec(line)
    if (hook !== null) {
      current?.set(hook[1]!, (JSON.parse(hook[2]!) as string[]).map((name) => name.replace(/\(\)$/, '')))
      continue
    }
    const route = /([^\s─│├└]+) \(([A-Z, ]+)\)$/.exec(line)
    if (route !== null) routes.set(`${route[2]} ${route[1]}`, current = new Map())
  }
  return routes
}

t.test("the GraphQL endpoint's hooks run on its route only", async (t) => {
  const app = await build(t, { rateLimitAddressPerMinute: 100, responseCacheTtl: 60 })
  await app.ready()
  const routes = routeHooks(app.printRoutes({ includeHooks: true, commonPrefix: false }))
  const graphql = routes.get('GET, POST /')
  t.ok(graphql, 'the endpoint is listed')
  t.same(graphql?.get('preHandler'), ['logGraphQLRequest', 'anonymous', 'scope'], 'debug log, response cache, audit scope, in that order')
  t.ok(graphql?.get('onRequest')?.includes('checkRequest'), 'the rate limits')
  t.equal(graphql?.get('preValidation')?.length, 1, 'the parameters check')
  for (const [route, hooks] of routes) {
    if (route.endsWith(' /')) continue
    t.notOk(hooks.has('preValidation'), `${route}: no parameters check`)
    t.notOk(hooks.has('preHandler'), `${route}: no debug log, cache or audit scope`)
    t.notOk(hooks.get('onRequest')?.includes('checkRequest'), `${route}: no rate limit`)
  }
})
