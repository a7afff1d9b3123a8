// GraphQL over HTTP conformance: every audit of graphql-http's serverAudits (the GraphQL Foundation's
// conformance suite, MUST, SHOULD and MAY alike) against the app listening on a free port.
import type { FastifyInstance } from 'fastify'
import { serverAudits } from 'graphql-http'
import t from 'tap'
import { build } from './helper.js'

async function audit (app: FastifyInstance): Promise<Map<string, string>> {
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  const failures = new Map<string, string>()
  for (const { id, name, fn } of serverAudits({ url: `http://127.0.0.1:${port}/` })) {
    const result = await fn()
    if (result.status !== 'ok') failures.set(id, `${name}: ${result.status}: ${result.reason}`)
  }
  return failures
}

t.test('the sandbox passes every audit of the GraphQL-over-HTTP conformance suite', async (t) => {
  const app = await build(t)
  const failures = await audit(app)
  t.same([...failures.values()], [], 'no audit fails or warns')
  t.ok(serverAudits({ url: 'http://127.0.0.1/' }).length >= 60, 'the whole suite ran (61 audits in graphql-http 1.23.1)')
})

/**
 * In production introspection is off (a validation error, docs/api/limits.md#query-limits): the audits whose
 * query reads `__type` and which want an answer without errors get that refusal instead.
 */
const INTROSPECTION_AUDITS = [
  '2EA1', // SHOULD allow map {variables} when accepting application/graphql-response+json: 400
  '28B9', // MUST allow map {variables} when accepting application/json: 200 with errors
  'D6D5', // MAY allow URL-encoded JSON {variables} in GETs (application/graphql-response+json): 400
  '6A70' // MAY allow URL-encoded JSON {variables} in GETs (application/json): 200 with errors
]

t.test('production passes every audit but those that introspection\'s refusal answers', async (t) => {
  const app = await build(t, { env: 'production' })
  const failures = await audit(app)
  t.same([...failures.keys()].sort(), [...INTROSPECTION_AUDITS].sort(), [...failures.values()].join('\n'))
  // What those audits got: the documented refusal of introspection, and nothing else.
  const res = await app.inject({
    method: 'POST',
    url: '/',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    payload: { query: 'query Type($name: String!) { __type(name: $name) { name } }', variables: { name: 'sometype' } }
  })
  t.equal(res.statusCode, 400)
  t.same(res.json(), { errors: [{ message: 'GraphQL introspection has been disabled, but the requested query contained the field "__type".', locations: [{ line: 1, column: 30 }] }] })
})
