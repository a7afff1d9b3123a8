// The three clients of docs/api/subscriptions.md follow a school's changes through a token expiry:
// plain graphql-ws (its own reconnect, the same payload object carrying the last cursor), Apollo
// Client's GraphQLWsLink and urql's subscriptionExchange (the application subscribing again from
// its last cursor), each with `connectionParams` a function that refreshes the token. The socket
// closes with 4440 when the app's clock passes the token's expiry; what each client applied is the
// feed exactly, nothing lost or twice across the reconnect, during writes.
import type { AddressInfo } from 'node:net'
import { ApolloClient, gql as apolloGql, InMemoryCache } from '@apollo/client'
import { GraphQLWsLink } from '@apollo/client/link/subscriptions'
import { Client as UrqlClient, fetchExchange, subscriptionExchange } from '@urql/core'
import type { FastifyInstance } from 'fastify'
import { createClient, type Client } from 'graphql-ws'
import t from 'tap'
import { pipe, subscribe } from 'wonka'
import WebSocket from 'ws'
import { createStudent } from '../src/records/students.js'
import { build, gql, login, seedSchool, testClock, testDatabase, unique } from './helper.js'

const FOLLOW = 'subscription ($since: String) { changes(since: $since) { cursor type recordType id } }'
const REFRESH = 'mutation ($t: String!) { refreshToken(refreshToken: $t) { accessToken } }'

interface Change { cursor: string, id: string }

/** What a follower applied, and a way to wait for a condition on it. */
class Applied {
  readonly changes: Change[] = []
  private readonly waiters: Array<() => void> = []
  add (change: Change): void {
    this.changes.push(change)
    for (const wake of this.waiters.splice(0)) wake()
  }

  async until (n: number): Promise<void> {
    while (this.changes.length < n) await new Promise<void>((resolve) => { this.waiters.push(resolve) })
  }
}

interface Follow {
  /** Starts following from `since`, applying each change; the returned function stops. */
  (options: { url: string, connectionParams: () => Promise<Record<string, unknown>>, since: string, applied: Applied }): () => void
}

const followers: Record<string, Follow> = {
  'plain graphql-ws': ({ url, connectionParams, since, applied }) => {
    // No wait between retries in the test (the library's default waits with a random back-off).
    const client = createClient({ url, webSocketImpl: WebSocket, connectionParams, retryAttempts: 5, retryWait: async () => {} })
    const payload = { query: FOLLOW, variables: { since } }
    const stop = client.subscribe<{ changes: Change }>(payload, {
      next ({ data }) {
        applied.add(data!.changes)
        payload.variables.since = data!.changes.cursor
      },
      error () {},
      complete () {}
    })
    return () => {
      stop()
      void client.dispose()
    }
  },

  'Apollo Client (GraphQLWsLink)': ({ url, connectionParams, since, applied }) => {
    const ws: Client = createClient({ url, webSocketImpl: WebSocket, connectionParams, retryAttempts: 0 })
    const apollo = new ApolloClient({ link: new GraphQLWsLink(ws), cache: new InMemoryCache() })
    const query = apolloGql(FOLLOW)
    let stopped = false
    let current: { unsubscribe: () => void } | undefined
    let last = since
    const follow = (): void => {
      current = apollo.subscribe<{ changes: Change }>({ query, variables: { since: last }, fetchPolicy: 'no-cache' }).subscribe({
        next (result) {
          if (result.data != null) {
            applied.add(result.data.changes)
            last = result.data.changes.cursor
          }
          if (result.error !== undefined && !stopped) follow()
        },
        error () { if (!stopped) follow() }
      })
    }
    follow()
    return () => {
      stopped = true
      current?.unsubscribe()
      void ws.dispose()
    }
  },

  'urql (subscriptionExchange)': ({ url, connectionParams, since, applied }) => {
    const ws: Client = createClient({ url, webSocketImpl: WebSocket, connectionParams, retryAttempts: 0 })
    const urql = new UrqlClient({
      url: url.replace(/^ws/, 'http').replace(/subscriptions$/, ''),
      exchanges: [fetchExchange, subscriptionExchange({
        forwardSubscription: (request) => ({
          subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? '' }, sink) })
        })
      })]
    })
    let stopped = false
    let current: { unsubscribe: () => void } | undefined
    let last = since
    const follow = (): void => {
      current = pipe(urql.subscription<{ changes: Change }>(FOLLOW, { since: last }), subscribe((result) => {
        if (result.error !== undefined) {
          if (!stopped) follow()
          return
        }
        applied.add(result.data!.changes)
        last = result.data!.changes.cursor
      }))
    }
    follow()
    return () => {
      stopped = true
      current?.unsubscribe()
      void ws.dispose()
    }
  }
}

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
