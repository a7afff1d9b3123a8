// SIGTERM to a real server process under load: the requests in flight finish, every acknowledged
// write is in the database, new requests are refused, and the process exits 0; a request that
// never ends makes it exit 1 after SHUTDOWN_TIMEOUT_MS. A connection the server's kernel accepted
// is never reset while its request may be on the way: under keep-alive clients that reconnect
// after each `Connection: close`, with connections the kernel queued while the process could not
// accept them (the process stopped across the end of the drain), with a keep-alive connection's
// next request arriving then, or a first request after the listener closed, every request gets a
// whole answer (served, or a coded 503) with `Connection: close`; a connection that sends nothing
// is closed after the grace. Runs the built server (npm run build).
import { spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { LOGIN, PASSWORD, serverUrl, testDatabase, testDatabaseUrl, unique } from './helper.js'

const SERVER = fileURLToPath(new URL('../dist/server.js', import.meta.url))
const skip = serverUrl === undefined
  ? 'needs PostgreSQL (a second process cannot open the in-memory embedded database of the test)'
  : !existsSync(SERVER) ? 'needs the built server: npm run build' : false
const skipStop = process.platform !== 'linux' ? 'needs Linux (SIGSTOP, and /proc to see the process stopped)' : false

interface Server {
  child: ChildProcess
  port: number
  lines: Array<Record<string, any>>
  /** Resolves when a log line matches. */
  logged (match: (line: Record<string, any>) => boolean): Promise<void>
  exit: Promise<number | null>
}

async function startServer (env: Record<string, string>): Promise<Server> {
  const child = spawn(process.execPath, [SERVER], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'debug', RESPONSE_CACHE_TTL: '0', JWT_SECRET: 'sigterm-test-secret-0123456789-abcdefghij', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const lines: Array<Record<string, any>> = []
  const waiters: Array<{ match: (line: Record<string, any>) => boolean, resolve: () => void }> = []
  let buffer = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk
    let end
    while ((end = buffer.indexOf('\n')) !== -1) {
      const text = buffer.slice(0, end)
      buffer = buffer.slice(end + 1)
      let line: Record<string, any>
      try { line = JSON.parse(text) } catch { continue }
      lines.push(line)
      for (const waiter of [...waiters]) {
        if (waiter.match(line)) {
          waiters.splice(waiters.indexOf(waiter), 1)
          waiter.resolve()
        }
      }
    }
  })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => { resolve(code) }))
  const logged = (match: (line: Record<string, any>) => boolean): Promise<void> => {
    if (lines.some(match)) return Promise.resolve()
    return new Promise((resolve, reject) => {
      waiters.push({ match, resolve })
      exit.then((code) => { reject(new Error(`the server exited (${code}) first: ${stderr}`)) }, reject)
    })
  }
  await logged((l) => typeof l.msg === 'string' && l.msg.startsWith('Server listening at '))
  const listening = lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('Server listening at '))!
  const port = Number(/:(\d+)$/.exec(listening.msg)![1])
  return { child, port, lines, logged, exit }
}

interface Answer { status?: number, connection?: string, body?: any, error?: string }

/** One request: on a connection of its own, or on a keep-alive connection of `agent`. */
function post (port: number, payload: object, agent: Agent | false = false): Promise<Answer> {
  return new Promise((resolve) => {
    const body = JSON.stringify(payload)
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (c: string) => { text += c }).on('end', () => {
        let parsed: unknown
        try { parsed = JSON.parse(text) } catch { parsed = text }
        resolve({ status: res.statusCode, connection: res.headers.connection, body: parsed })
      })
    })
    req.on('error', (err: NodeJS.ErrnoException) => { resolve({ error: err.code ?? err.message }) })
    req.end(body)
  })
}

/** Resolves once the process is stopped: a signal takes effect a moment after kill() returns. */
async function stopped (pid: number): Promise<void> {
  const state = (): string => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
  }
  while (state() !== 'T') await new Promise((resolve) => setImmediate(resolve))
}

const REQUEST_BODY = JSON.stringify({ query: '{ __typename }' })
const REQUEST = `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(REQUEST_BODY)}\r\n\r\n${REQUEST_BODY}`

interface RawAnswer { status: number, headers: Record<string, string>, body: any }

interface RawConnection {
  /** Resolves once the TCP handshake is done (by the server's kernel: the process may not know yet). */
  connected: Promise<void>
  /** Writes one `{ __typename }` request. */
  send: () => void
  /** The next whole answer; or, when the connection ends without one, why (`ECONNRESET`...). */
  next: () => Promise<RawAnswer | { error: string }>
}

/** A connection of its own, written by hand: answers are read whole (by Content-Length) in order. */
function rawConnection (port: number): RawConnection {
  const socket = connect(port, '127.0.0.1')
  // One character per byte: Content-Length counts bytes.
  let buffer = ''
  let error: string | undefined
  let ended = false
  let wake = (): void => {}
  socket.setEncoding('latin1').on('data', (chunk: string) => { buffer += chunk; wake() })
  socket.on('error', (err: NodeJS.ErrnoException) => { error = err.code ?? err.message })
  socket.on('close', () => { ended = true; wake() })
  const connected = new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  const take = (): RawAnswer | undefined => {
    const end = buffer.indexOf('\r\n\r\n')
    if (end === -1) return undefined
    const [statusLine = '', ...lines] = buffer.slice(0, end).split('\r\n')
    const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
    const length = Number(headers['content-length'])
    if (buffer.length < end + 4 + length) return undefined
    const body = buffer.slice(end + 4, end + 4 + length)
    buffer = buffer.slice(end + 4 + length)
    return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) }
  }
  const next = async (): Promise<RawAnswer | { error: string }> => {
    for (;;) {
      const answer = take()
      if (answer !== undefined) return answer
      if (ended) return { error: error ?? (buffer === '' ? 'closed without an answer' : `closed in the middle of an answer: ${buffer}`) }
      await new Promise<void>((resolve) => { wake = resolve })
    }
  }
  return { connected, send: () => { socket.write(REQUEST) }, next }
}

/** A whole answer closing its connection: served, or refused with a coded 503. */
const answeredWhole = (answer: RawAnswer | { error: string }): boolean =>
  'status' in answer && answer.headers.connection === 'close' && (
    (answer.status === 200 && answer.body?.data?.__typename === 'Query') ||
    (answer.status === 503 && answer.body?.errors?.[0]?.extensions?.code === 'SERVICE_UNAVAILABLE'))

const describe = (answer: RawAnswer | { error: string }): string =>
  'status' in answer ? `${answer.status} ${answer.body?.errors?.[0]?.extensions?.code ?? ''}, connection: ${answer.headers.connection}` : answer.error

t.test('SIGTERM under load: in-flight requests finish, acknowledged writes are kept, new requests are refused, exit 0', { skip }, async (t) => {
  const db = await testDatabase()
  const schoolId = await createSchool(db, 'Shutdown School')
  const usernames: string[] = []
  for (let i = 0; i < 24; i++) {
    const username = unique('sigterm')
    await createUser(db, { username, password: PASSWORD, schoolId })
    usernames.push(username)
  }
  const server = await startServer({ DATABASE_URL: (await testDatabaseUrl())!, SHUTDOWN_TIMEOUT_MS: '30000', SHUTDOWN_DRAIN_MS: '200' })
  t.teardown(() => { server.child.kill('SIGKILL') })

  // Logins write a refresh token each: the acknowledged writes. Password hashing makes them slow.
  const before = server.lines.length
  let answered = 0
  const inFlight = usernames.map(async (username) => {
    const answer = await post(server.port, { query: LOGIN, variables: { username, password: PASSWORD } })
    answered += 1
    return answer
  })
  // Every request has reached the server (its arrival is logged) before the signal.
  await server.logged(() => server.lines.slice(before).filter((l) => l.msg === 'incoming request').length >= usernames.length)
  t.ok(answered < usernames.length, `requests in flight at SIGTERM (${usernames.length - answered})`)
  server.child.kill('SIGTERM')
  await server.logged((l) => l.msg === 'refusing new requests')

  // New requests after the signal: refused (connection refused, or 503 on a connection already open).
  const late = await Promise.all(Array.from({ length: 5 }, async () => await post(server.port, { query: '{ __typename }' })))
  for (const answer of late) {
    t.ok(answer.error === 'ECONNREFUSED' || answer.status === 503, `a new request is refused (${answer.error ?? answer.status})`)
  }

  const answers = await Promise.all(inFlight)
  t.equal(await server.exit, 0, 'exit status 0')
  t.ok(server.lines.some((l) => l.msg === 'shut down'))
  const tokens: string[] = []
  for (const answer of answers) {
    t.equal(answer.status, 200, `an in-flight request finished (${answer.error ?? JSON.stringify(answer.body)})`)
    const token = answer.body?.data?.login?.refreshToken
    t.type(token, 'string')
    tokens.push(token)
  }
  // Every acknowledged write is in the database.
  const stored = await db.prisma.refreshToken.count({
    where: { tokenHash: { in: tokens.map((token) => new Uint8Array(createHash('sha256').update(token).digest())) } }
  })
  t.equal(stored, usernames.length, 'every issued refresh token is stored')
})

t.test('SIGTERM under keep-alive clients that reconnect: every request sent is answered whole, none is reset; readiness fails first', { skip }, async (t) => {
  const server = await startServer({
    DATABASE_URL: (await testDatabaseUrl())!,
    SHUTDOWN_DRAIN_MS: '1500',
    SHUTDOWN_TIMEOUT_MS: '20000',
    LOG_LEVEL: 'info',
    RATE_LIMIT_ADDRESS_PER_MINUTE: '0'
  })
  t.teardown(() => { server.child.kill('SIGKILL') })
  const CLIENTS = 50
  const agents = Array.from({ length: CLIENTS }, () => new Agent({ keepAlive: true, maxSockets: 1 }))
  t.teardown(() => { for (const agent of agents) agent.destroy() })
  let signalled = false
  const sent = { before: 0, after: 0 }
  let warmedUp: () => void
  const warm = new Promise<void>((resolve) => { warmedUp = resolve })
  const answers: Answer[] = []
  // Each client sends back to back. After an answer with Connection: close it opens a new
  // connection at once and goes on, as real clients do: through the drain the node sees a stream of
  // new connections, some always waiting in its kernel's queue. It stops when refused (503: a client
  // behind a load balancer goes to another node) or when the port is closed (nothing was sent).
  const clients = agents.map(async (agent): Promise<string> => {
    for (;;) {
      const after = signalled
      const answer = await post(server.port, { query: '{ __typename }' }, agent)
      if (answer.error === 'ECONNREFUSED') return 'connection refused'
      if (after) sent.after++
      else if (++sent.before === CLIENTS * 5) warmedUp()
      if (after) answers.push(answer)
      if (answer.error !== undefined) return answer.error
      if (answer.status === 503) return 'refused'
    }
  })
  await warm
  signalled = true
  server.child.kill('SIGTERM')
  await server.logged((l) => l.msg === 'draining: readiness fails, every answer closes its connection')
  const ready = await fetch(`http://127.0.0.1:${server.port}/ready`)
  t.equal(ready.status, 503, 'readiness fails while draining')
  t.match(await ready.json(), { reason: 'shutting down' })

  // A request being sent as the node stops listening: its headers begin before and end after; the
  // connection is busy, so it is answered (a coded 503), not cut.
  const late = connect(server.port, '127.0.0.1')
  let lateAnswer = ''
  late.setEncoding('utf8').on('data', (chunk: string) => { lateAnswer += chunk })
  const lateClosed = new Promise((resolve) => { late.on('close', resolve) })
  late.on('error', () => {})
  late.write('POST / HTTP/1.1\r\nHost: x\r\n')
  await server.logged((l) => l.msg === 'stopped listening')
  late.write('Content-Type: application/json\r\nContent-Length: 25\r\n\r\n{"query":"{ __typename }"}')
  await lateClosed
  t.match(lateAnswer, /^HTTP\/1\.1 503 /, 'a request arriving after the listener closed is refused with 503')
  t.match(lateAnswer, /\r\nconnection: close\r\n/i, 'and Connection: close')
  t.match(lateAnswer, /"code":"SERVICE_UNAVAILABLE"/, 'coded')

  const ends = await Promise.all(clients)
  t.equal(await server.exit, 0, 'exit status 0')
  t.same(ends.filter((end) => end !== 'refused' && end !== 'connection refused'), [], 'every client was refused, or found the port closed')
  t.ok(ends.includes('refused'), `clients refused: ${ends.filter((end) => end === 'refused').length} of ${CLIENTS}`)
  t.ok(sent.after > CLIENTS, `requests sent after SIGTERM: ${sent.after}`)
  const reset = answers.filter((a) => a.error !== undefined)
  t.same(reset, [], 'no request sent was reset or left unanswered')
  for (const answer of answers) {
    if (answer.status === 200) t.same(answer.body, { data: { __typename: 'Query' } })
    else t.match(answer, { status: 503, connection: 'close', body: { errors: [{ extensions: { code: 'SERVICE_UNAVAILABLE' } }] } }, 'a refusal is coded')
  }
})

t.test('SIGTERM: connections the kernel queued while the process could not accept them, and a keep-alive connection\'s next request, at the end of the drain: answered whole, none reset', { skip: skip || skipStop }, async (t) => {
  const DRAIN_MS = 1000
  const server = await startServer({ DATABASE_URL: (await testDatabaseUrl())!, SHUTDOWN_DRAIN_MS: String(DRAIN_MS), SHUTDOWN_TIMEOUT_MS: '20000', LOG_LEVEL: 'info' })
  t.teardown(() => { server.child.kill('SIGKILL') })
  // Answered before the signal, and kept alive: idle since.
  const idle = rawConnection(server.port)
  await idle.connected
  idle.send()
  const first = await idle.next()
  t.match(first, { status: 200, body: { data: { __typename: 'Query' } } }, 'served before the signal')
  t.not('headers' in first && first.headers.connection, 'close', 'and kept alive')

  server.child.kill('SIGTERM')
  await server.logged((l) => l.msg === 'draining: readiness fails, every answer closes its connection')
  // The process stops, waiting for events; only its kernel goes on. It completes the handshakes of
  // new connections and queues them, as it does while the event loop is busy, and keeps the bytes
  // sent to the process.
  server.child.kill('SIGSTOP')
  await stopped(server.child.pid!)
  idle.send()
  const queued = Array.from({ length: 5 }, () => rawConnection(server.port))
  await Promise.all(queued.map(async (connection) => { await connection.connected }))
  for (const connection of queued) connection.send()
  // A stopped process writes no log line to wait for: this wait outlasts the drain, which began
  // before its line was written. Resumed, the process finds the drain's end overdue and runs it
  // before it reads or accepts anything: the moment the unfixed server closed its listener (and
  // the idle connections) with these connections queued.
  await sleep(DRAIN_MS + 100)
  server.child.kill('SIGCONT')

  const idleAnswer = await idle.next()
  t.ok(answeredWhole(idleAnswer), `the idle keep-alive connection's next request is answered whole (${describe(idleAnswer)})`)
  for (const connection of queued) {
    const answer = await connection.next()
    t.ok(answeredWhole(answer), `a queued connection's request is answered whole (${describe(answer)})`)
  }
  t.equal(await server.exit, 0, 'exit status 0')
})

t.test('SIGTERM: a connection accepted during the drain is answered whenever its first request comes; one that sends nothing is closed after the grace; exit 0', { skip }, async (t) => {
  const server = await startServer({ DATABASE_URL: (await testDatabaseUrl())!, SHUTDOWN_DRAIN_MS: '1000', SHUTDOWN_TIMEOUT_MS: '20000', LOG_LEVEL: 'info' })
  t.teardown(() => { server.child.kill('SIGKILL') })
  server.child.kill('SIGTERM')
  await server.logged((l) => l.msg === 'draining: readiness fails, every answer closes its connection')
  const waiting = Array.from({ length: 3 }, () => rawConnection(server.port))
  const silent = rawConnection(server.port)
  await Promise.all([...waiting, silent].map(async (connection) => { await connection.connected }))
  // The process has accepted them: the kernel hands connections over in order, and one opened
  // after them is answered.
  const after = await post(server.port, { query: '{ __typename }' })
  t.ok(after.status === 200 || after.status === 503, `a connection opened after them is answered (${after.error ?? after.status})`)

  // Sent as the line arrives: well inside the 500 ms a connection that has sent nothing is kept.
  await server.logged((l) => l.msg === 'stopped listening')
  for (const connection of waiting) connection.send()
  for (const connection of waiting) {
    const answer = await connection.next()
    t.match(answer, { status: 503, headers: { connection: 'close' }, body: { errors: [{ extensions: { code: 'SERVICE_UNAVAILABLE' } }] } }, 'a first request after the listener closed: a whole coded 503')
  }
  t.same(await silent.next(), { error: 'closed without an answer' }, 'a connection that sends nothing is closed, not reset')
  t.equal(await server.exit, 0, 'exit status 0')
  t.ok(server.lines.some((l) => l.msg === 'closed connections that sent nothing' && l.connections === 1), 'after the grace')
})

t.test('a request that never ends: the process still exits, with status 1, after SHUTDOWN_TIMEOUT_MS', { skip }, async (t) => {
  const server = await startServer({ DATABASE_URL: (await testDatabaseUrl())!, SHUTDOWN_TIMEOUT_MS: '1000', SHUTDOWN_DRAIN_MS: '0' })
  t.teardown(() => { server.child.kill('SIGKILL') })
  // Headers announce a body that never comes.
  const socket = connect(server.port, '127.0.0.1')
  socket.on('error', () => {})
  t.teardown(() => socket.destroy())
  socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"query":')
  await server.logged((l) => l.msg === 'incoming request')
  server.child.kill('SIGTERM')
  t.equal(await server.exit, 1, 'exit status 1')
  t.ok(server.lines.some((l) => l.msg === 'shutdown did not finish in time; exiting'))
})
