// The GraphQL endpoint's hooks live in its plugin's encapsulated context (src/plugins/graphql.ts):
// its route runs them, in the order written there; no other route does (the OneRoster routes and
// the subscriptions' WebSocket route take the rate limits by hooks of their own plugins).
import t from 'tap'
import { routeHooks } from './fixtures/route-hooks.js'
import { build } from './helper.js'

t.test("the GraphQL endpoint's hooks run on its route only", async (t) => {
  const app = await build(t, { rateLimitAddressPerMinute: 100, responseCacheTtl: 60 })
  await app.ready()
  const routes = routeHooks(app)
  const graphql = routes.get('GET, POST /')
  t.ok(graphql, 'the endpoint is listed')
  t.same(graphql?.get('preHandler'), ['logGraphQLRequest', 'anonymous', 'scope'], 'debug log, response cache, audit scope, in that order')
  t.ok(graphql?.get('onRequest')?.includes('checkRequest'), 'the rate limits')
  t.equal(graphql?.get('preValidation')?.length, 1, 'the parameters check')
  let oneRoster = 0
  for (const [route, hooks] of routes) {
    if (route.endsWith(' /')) continue
    if (hooks.get('onRequest')?.includes('limitOneRosterRequest')) {
      // The OneRoster routes (src/oneroster/plugin.ts): the same limits and audit scope, hooks of their own plugin.
      oneRoster += 1
      t.same(hooks.get('preHandler'), ['scope'], `${route}: the audit scope alone`)
      t.notOk(hooks.has('preValidation') || hooks.get('onRequest')?.includes('checkRequest'), `${route}: none of the GraphQL endpoint's own hooks`)
      continue
    }
    if (route.endsWith(' subscriptions')) {
      // The WebSocket endpoint (src/plugins/subscriptions.ts): the upgrade counts on the same rate
      // limits, by hooks of its own plugin; its one preHandler keeps the reply for each subscribe's
      // rate-limit check; the endpoint's debug log, cache and audit scope are not there.
      t.ok(hooks.get('onRequest')?.includes('checkRequest'), `${route}: the rate limits`)
      t.same(hooks.get('preHandler'), ['anonymous'], `${route}: its own preHandler only`)
      t.notOk(hooks.has('preValidation'), `${route}: no parameters check`)
      continue
    }
    t.notOk(hooks.has('preValidation'), `${route}: no parameters check`)
    t.notOk(hooks.has('preHandler'), `${route}: no debug log, cache or audit scope`)
    t.notOk(hooks.get('onRequest')?.includes('checkRequest'), `${route}: no rate limit`)
  }
  t.ok(oneRoster >= 10, `the OneRoster routes count on the rate limits (${oneRoster} routes)`)
})
