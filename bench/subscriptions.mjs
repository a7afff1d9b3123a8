// The subscriptions row of `npm run bench` (`npm run bench -- --subscriptions` alone): the built
// service in production mode on a fresh PostgreSQL database, as the unprivileged service role (both
// walls), one school followed by BENCH_SUBSCRIBERS (default 1,000) subscribers, each on a socket of
// its own (graphql-ws's client, as an application holds it):
//
//   - memory: the server's resident memory with the subscribers held idle, less before, per subscriber;
//   - push latency at 1, 100 and 1,000 subscribers: from the moment a write is sent (a
//     createStudent mutation of the school's administrator) to each subscriber's receipt of its
//     change, median and p99 over BENCH_PUSH_WRITES writes (default 20), beside the write's own
//     round trip (the push's share is the difference);
//   - beside them, what following the feed by polling costs instead: one `changes(since)` with
//     nothing new, its median time and the server's CPU per poll.
//
// Every push is checked: each subscriber gets each change once, in order; a wrong one fails the run.
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createClient } from 'graphql-ws'
import WebSocket from 'ws'
import { SERVICE_ROLE, databaseUrl, migrate, prepareServiceRole, recreateDatabase } from './dataset.mjs'
import { freePort, procCpuSeconds, schoolDataCli, startNode, stopNode, waitReady } from './processes.mjs'

const FOLLOW = 'subscription ($since: String) { changes(since: $since) { cursor id } }'
const CREATE = 'mutation ($n: String!) { createStudent(input: { fullName: $n }) { id } }'

/** The resident memory of a process, in bytes. */
function rssBytes (pid) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))
  return Number(line.split(/\s+/)[1]) * 1024
}

const quantile = (sorted, q) => sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]

export async function runSubscriptions ({ adminUrl, projectDir, subscribers = 1000, writes = 20, polls = 200, log = (line) => process.stderr.write(line + '\n') }) {
  const database = 'sds_subscriptions_bench'
  const password = randomBytes(18).toString('base64url')
  const ownerUrl = databaseUrl(adminUrl, database)
  await recreateDatabase(adminUrl, database)
  await migrate(projectDir, ownerUrl)
  await prepareServiceRole(adminUrl, ownerUrl, password)
  const serviceUrl = databaseUrl(adminUrl, database, SERVICE_ROLE, password)
  const { cli } = schoolDataCli(projectDir, ownerUrl)
  const school = cli(['school', 'create', '--name', 'Subscriptions Bench High'])
  const userPassword = randomBytes(12).toString('base64url')
  cli(['user', 'create', '--username', 'bench-follower', '--school', school], userPassword + '\n')

  const port = await freePort()
  const env = {
    ...process.env,
    SCHOOL_DATA_ENV: 'production',
    NODE_ENV: 'production',
    DATABASE_URL: serviceUrl,
    JWT_SECRET: randomBytes(48).toString('base64url'),
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    // One caller holds every subscriber here; the bounds have tests of their own.
    SUBSCRIPTIONS_PER_CALLER: String(subscribers),
    RATE_LIMIT_USER_PER_MINUTE: '0',
    RATE_LIMIT_SCHOOL_PER_MINUTE: '0',
    RATE_LIMIT_ADDRESS_PER_MINUTE: '0',
    RATE_LIMIT_WRITES_PER_MINUTE: '0',
    SHUTDOWN_DRAIN_MS: '0'
  }
  delete env.DATA_DIR
  const server = startNode('subscriptions', [join('dist', 'server.js')], { cwd: projectDir, env })
  const failures = []
  const clients = []
  try {
    await waitReady(server, port)
    const http = `http://127.0.0.1:${port}/`
    const post = async (query, variables, token) => {
      const res = await fetch(http, { method: 'POST', headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) }, body: JSON.stringify({ query, variables }) })
      const body = await res.json()
      if (res.status !== 200 || body.errors !== undefined) throw new Error(`${res.status} ${JSON.stringify(body).slice(0, 500)}`)
      return body.data
    }
    const token = (await post('mutation ($u: String!, $p: String!) { login(username: $u, password: $p) { accessToken } }', { u: 'bench-follower', p: userPassword })).login.accessToken
    const since = (await post('{ latestChangeCursor }', {}, token)).latestChangeCursor

    // Polling, for comparison: a `changes(since)` with nothing new.
    const pollCpu0 = procCpuSeconds(server.pid)
    const pollTimes = []
    for (let i = 0; i < polls; i++) {
      const t0 = performance.now()
      const { changes } = await post('query ($since: String) { changes(since: $since) { nextCursor hasMore } }', { since }, token)
      pollTimes.push(performance.now() - t0)
      if (changes.nextCursor !== since) failures.push(`poll ${i}: moved to ${changes.nextCursor}`)
    }
    const pollCpuUs = (procCpuSeconds(server.pid) - pollCpu0) / polls * 1e6
    pollTimes.sort((a, b) => a - b)

    // Subscribers, each on its own socket; `waiting` resolves a subscriber's next receipt of an id.
    const followers = []
    const follow = () => {
      const client = createClient({ url: `ws://127.0.0.1:${port}/subscriptions`, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { token } })
      clients.push(client)
      const follower = { ids: [], at: new Map(), waiting: new Map() }
      client.subscribe({ query: FOLLOW, variables: { since } }, {
        next ({ data }) {
          const now = performance.now()
          follower.ids.push(data.changes.id)
          follower.at.set(data.changes.id, now)
          follower.waiting.get(data.changes.id)?.(now)
        },
        error (err) { failures.push(`subscriber: ${JSON.stringify(err?.code ?? err)}`) },
        complete () {}
      })
      followers.push(follower)
      return follower
    }
    /** When each subscriber received the change of `id` (known once the write answers: it may have come before). */
    const receipts = (id) => followers.map((follower) => follower.at.has(id)
      ? Promise.resolve(follower.at.get(id))
      : new Promise((resolve) => follower.waiting.set(id, resolve)))

    const rssBefore = rssBytes(server.pid)
    const levels = [1, 100, subscribers].filter((n, i, all) => n <= subscribers && all.indexOf(n) === i)
    const figures = { levels: [] }
    let name = 0
    for (const level of levels) {
      while (followers.length < level) follow()
      // Every subscriber live: one write each of them gets (not measured).
      const warm = (await post(CREATE, { n: `Warm ${name++}` }, token)).createStudent.id
      await Promise.all(receipts(warm))
      if (level === subscribers) figures.rssPerSubscriberBytes = (rssBytes(server.pid) - rssBefore) / level
      const latencies = []
      const roundTrips = []
      for (let w = 0; w < writes; w++) {
        const t0 = performance.now()
        const id = (await post(CREATE, { n: `Pushed ${name++}` }, token)).createStudent.id
        roundTrips.push(performance.now() - t0)
        const pending = receipts(id)
        for (const at of await Promise.all(pending)) latencies.push(at - t0)
      }
      latencies.sort((a, b) => a - b)
      roundTrips.sort((a, b) => a - b)
      figures.levels.push({
        subscribers: level,
        deliveries: latencies.length,
        medianMs: quantile(latencies, 0.5),
        p99Ms: quantile(latencies, 0.99),
        writeMedianMs: quantile(roundTrips, 0.5)
      })
      log(`subscriptions: ${level} subscribers, push median ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ${quantile(latencies, 0.99).toFixed(1)} ms`)
    }
    // Each subscriber got each change once, in order.
    const expected = followers[0].ids
    for (const [i, follower] of followers.entries()) {
      const tail = expected.slice(expected.length - follower.ids.length)
      if (new Set(follower.ids).size !== follower.ids.length || follower.ids.join() !== tail.join()) failures.push(`subscriber ${i}: duplicated or out of order`)
    }
    figures.poll = { medianMs: quantile(pollTimes, 0.5), serverCpuUs: pollCpuUs }
    return { subscribers, writes, polls, figures, failures }
  } finally {
    await Promise.all(clients.map((client) => client.dispose()))
    await stopNode(server)
  }
}
