// A revoked client loses its access on every API node within a second: two real API processes on
// one database; the revocation is a write to the clients table (as `school-data client revoke`
// makes it), heard by each node through the access-change notifications.
import t from 'tap'
import { createClient, revokeClient } from '../src/admin/clients.js'
import { createSchool } from '../src/admin/schools.js'
import { createStudent } from '../src/records/students.js'
import { post, productionNodes, refusedEverywhere, type Node } from './fixtures/api-nodes.js'
import { basic, FORM } from './fixtures/oauth.js'
import { createTestDatabase, serverUrl } from './helper.js'

const STUDENTS = '{ students { fullName } }'

async function token (node: Node, clientId: string, secret: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${node.port}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': FORM, authorization: basic(clientId, secret) },
    body: 'grant_type=client_credentials'
  })
  const body = await res.json() as { access_token?: string }
  if (body.access_token === undefined) throw new Error(`no token: ${JSON.stringify(body)}`)
  return body.access_token
}

const skip = serverUrl === undefined ? 'several API processes share a PostgreSQL server (set TEST_DATABASE_URL)' : false

t.test('two API nodes refuse a revoked client within a second', { skip }, async (t) => {
  const db = await createTestDatabase()
  const nodes = await productionNodes(t, 'url' in db.migrationTarget ? db.migrationTarget.url : '')

  const schoolId = await createSchool(db, 'Revocation School')
  await createStudent(db, { schoolId, fullName: 'Kept Student' })
  const client = await createClient(db, { schoolId, name: 'Leaving integration', scopes: ['roster-core.readonly'] })
  const bystander = await createClient(db, { schoolId, name: 'Staying integration', scopes: ['roster-core.readonly'] })
  // A token from each node, each used on both.
  const tokens = [await token(nodes[0]!, client.clientId, client.secret), await token(nodes[1]!, client.clientId, client.secret)]
  const other = await token(nodes[0]!, bystander.clientId, bystander.secret)
  for (const node of nodes) {
    for (const bearer of [...tokens, other]) {
      t.same((await post(node, STUDENTS, {}, bearer)).body.data?.students, [{ fullName: 'Kept Student' }], `control: node ${node.port} answers before`)
    }
  }

  await revokeClient(db, client.clientId)
  const revoked = Date.now()
  const after: number[] = []
  for (const bearer of tokens) after.push(...await refusedEverywhere(t, nodes, STUDENTS, bearer, revoked, "the revoked client's token"))
  const slowest = Math.max(...after)
  t.ok(slowest < 1000, `refused on both nodes within a second (${slowest} ms after the revocation)`)
  const refused = await fetch(`http://127.0.0.1:${nodes[1]!.port}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': FORM, authorization: basic(client.clientId, client.secret) },
    body: 'grant_type=client_credentials'
  })
  t.equal(refused.status, 401, 'and no new token')
  for (const node of nodes) {
    t.same((await post(node, STUDENTS, {}, other)).body.data?.students, [{ fullName: 'Kept Student' }], 'another client of the school keeps its access')
  }
})
