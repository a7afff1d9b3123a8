// The three clients of docs/api/subscriptions.md follow a school's changes through a token expiry:
// plain graphql-ws (its own reconnect, the same payload object carrying the last cursor), Apollo
// Client's GraphQLWsLink and urql's subscriptionExchange (the application subscribing again from
// its last cursor), each with `connectionParams` a function that refreshes the token. The socket
// closes with 4440 when the app's clock passes the token's expiry; what each client applied is the
// feed exactly, nothing lost or twice across the reconnect, during writes.
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createStudent } from '../src/records/students.js'
import { Applied, followers, type Change } from './fixtures/subscription-clients.js'
import { build, gql, login, seedSchool, testClock, testDatabase, unique } from './helper.js'

const REFRESH = 'mutation ($t: String!) { refreshToken(refreshToken: $t) { accessToken } }'

async function serve (t: { teardown: (fn: () => unknown) => void }, now: () => number): Promise<{ app: FastifyInstance, url: string }> {
  const app = await build(t, {}, { now })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, url: `ws://127.0.0.1:${(app.server.address() as AddressInfo).port}/subscriptions` }
}

for (const [name, follow] of Object.entries(followers)) {
  t.test(`${name} follows the feed through a token expiry, reconnecting with a refreshed token`, async (t) => {
    const clock = testClock()
    const { app, url } = await serve(t, clock.now)
    const db = await testDatabase()
    const school = await seedSchool(unique('Client School'))
    const { accessToken, refreshToken } = await login(app, school.username)
    const since = (await gql(app, '{ latestChangeCursor }', { token: accessToken })).body.data!.latestChangeCursor as string
    let connections = 0
    let reconnected: () => void = () => {}
    // As an application would: a fresh access token for each connection.
    const connectionParams = async (): Promise<Record<string, unknown>> => {
      connections += 1
      if (connections === 2) reconnected()
      const res = await gql(app, REFRESH, { variables: { t: refreshToken } })
      return { authorization: `Bearer ${res.body.data!.refreshToken.accessToken as string}` }
    }
    const applied = new Applied()
    const stop = follow({ url, connectionParams, since, applied })
    t.teardown(stop)

    const write = async (from: number, to: number): Promise<void> => {
      for (let i = from; i < to; i++) await createStudent(db, { schoolId: school.schoolId, fullName: `${name} ${i}` })
    }
    await write(0, 5)
    await applied.until(5)
    // The token expires on the app's clock: the socket closes (4440) within a second, the client reconnects.
    const again = new Promise<void>((resolve) => { reconnected = resolve })
    clock.advance(900_000)
    await write(5, 10)
    await again
    await write(10, 15)
    await applied.until(15)
    t.equal(connections, 2, 'reconnected once')
    const feed = await gql(app, 'query ($since: String) { changes(since: $since, limit: 1000) { changes { cursor } } }', {
      token: (await login(app, school.username)).accessToken,
      variables: { since }
    })
    t.same(applied.changes.map((c) => c.cursor), feed.body.data!.changes.changes.map((c: Change) => c.cursor), 'the feed, none lost or twice')
  })
}
