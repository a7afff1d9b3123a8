// `npm run bench`: builds a dataset on a real PostgreSQL, starts the built service in production
// mode, loads it with autocannon, checks every answer, measures the ceiling (bench/ceiling.mjs)
// on the same machine, and writes bench/results/latest.{json,md,svg}. See bench/README.md.
//
// Exit status: 0 when every response was correct (missed performance targets are reported, not
// fatal); 1 when any response was wrong, an error or a non-2xx; 2 when the run itself failed.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import pg from 'pg'
import {
  SERVICE_ROLE, connectionCount, databaseUrl, expectedPages, loadDataset, migrate, prepareServiceRole, withClient,
  recreateDatabase, rowLevelSecurity, serverInfo, distribute
} from './dataset.mjs'
import { UNCACHED, freePort, serviceEnv, startNode, stopNode, waitForQuiet, waitReady, watchProcess } from './processes.mjs'
import { summaryMarkdown } from './profile-summary.mjs'
import { renderMarkdown, renderSvg } from './report.mjs'
import { formatSpread, laneRow, roundRatios } from './rounds.mjs'
import { layerCosts } from './layers.mjs'
import { importRosterData } from './oneroster-data.mjs'
import { runSubscriptions } from './subscriptions.mjs'
import { runWrites } from './writes.mjs'
import { LOGIN_MUTATION, ONEROSTER_STUDENTS_PATH, REST_MAX_LIMIT, WALK_PAGE_QUERY, WORKLOADS, accessTokenOf, checkClientToken, checkRead, checkRest, checkRestKeys, checkTokens, requestBody } from './workloads.mjs'

const projectDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const resultsDir = join(projectDir, 'bench', 'results')

// ---- Settings (environment) --------------------------------------------------------------------

function intSetting (name, fallback, min = 1) {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min} (got ${raw})`)
  return n
}

// The fresh reads the targets are about: `npm run bench -- --profile` profiles these.
const FRESH_READS = ['flat', 'deep-page', 'nested']

/**
 * `--profile`, `--profile WORKLOADS` or `--profile=WORKLOADS` (comma-separated): undefined when
 * absent, null without workloads. (node:util's parseArgs has no option with an optional value.)
 */
function profileArgument (args) {
  let profile
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]
    if (arg === '--profile') {
      const next = args[i + 1]
      profile = next === undefined || next.startsWith('-') ? null : next
      if (profile !== null) i++
    } else if (arg.startsWith('--profile=')) {
      profile = arg.slice('--profile='.length)
    } else {
      throw new Error(`unknown argument ${arg} (known: --profile [WORKLOADS])`)
    }
  }
  return profile
}

function readSettings () {
  // `npm run bench -- --profile [WORKLOADS]`: the fresh reads (or WORKLOADS) alone, on the service
  // with the response cache off and its peers, each server CPU-profiled, its CPU split by layer.
  const profileArg = profileArgument(process.argv.slice(2))
  const profiling = profileArg !== undefined
  const listed = profiling ? profileArg ?? FRESH_READS.join(',') : process.env.BENCH_WORKLOADS ?? WORKLOADS.map((w) => w.name).join(',')
  const durationSeconds = intSetting('BENCH_DURATION', 10)
  const rounds = intSetting('BENCH_ROUNDS', 5)
  const settings = {
    adminUrl: process.env.BENCH_DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/postgres',
    database: process.env.BENCH_DATABASE || 'sds_bench',
    // BENCH_CITUS_WORKERS=host:port,...: BENCH_DATABASE_URL's server is a Citus coordinator with
    // these workers; the database is made on every node and distributed by school after loading.
    citusWorkers: (process.env.BENCH_CITUS_WORKERS ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    durationSeconds,
    // The interleaved comparison measures each server BENCH_ROUNDS times for about
    // BENCH_DURATION / BENCH_ROUNDS seconds (whole seconds: autocannon stops on a second's tick).
    rounds,
    roundSeconds: Math.max(1, Math.round(durationSeconds / rounds)),
    // The service takes seconds to reach its pace (V8 and the ORM's caches warm up): measured alone,
    // its first seconds run at a fraction of the rest.
    warmupSeconds: intSetting('BENCH_WARMUP', 5, 0),
    connections: intSetting('BENCH_CONNECTIONS', 30),
    poolSize: intSetting('BENCH_POOL_SIZE', 30),
    // Total seconds the run may wait, before measurements, for other programs to leave the CPU.
    quietWaitSeconds: intSetting('BENCH_QUIET_WAIT', 30, 0),
    // BENCH_PROFILE=1: each server writes a V8 CPU profile to bench/results/profiles/ (slows it down).
    profile: process.env.BENCH_PROFILE === '1' || profiling,
    // --profile: only the comparison of the fresh reads (no cached reads, superuser or scaling).
    profileOnly: profiling,
    nodes: intSetting('BENCH_NODES', 2),
    workloads: listed.split(',').map((s) => s.trim()).filter(Boolean),
    sizes: {
      schools: intSetting('BENCH_SCHOOLS', 50),
      students: intSetting('BENCH_STUDENTS', 2000),
      teachers: intSetting('BENCH_TEACHERS', 100),
      classrooms: intSetting('BENCH_CLASSROOMS', 40),
      assignments: intSetting('BENCH_ASSIGNMENTS', 3)
    }
  }
  for (const name of settings.workloads) {
    if (!WORKLOADS.some((w) => w.name === name)) throw new Error(`${profiling ? '--profile' : 'BENCH_WORKLOADS'}: unknown workload ${name} (known: ${WORKLOADS.map((w) => w.name).join(', ')})`)
  }
  if (settings.sizes.students < 100 || settings.sizes.teachers < 100) {
    throw new Error('BENCH_STUDENTS and BENCH_TEACHERS must be at least 100 (the nested pages hold 100)')
  }
  return settings
}

// `--writes`: the write workload alone (bench/writes.mjs); without it, it runs after the reads
// unless BENCH_WRITES=0.
const writesOnly = process.argv.includes('--writes')
// `--subscriptions`: the subscriptions row alone (bench/subscriptions.mjs); without it, it runs
// after the writes unless BENCH_SUBSCRIPTIONS=0.
const subscriptionsOnly = process.argv.includes('--subscriptions')
process.argv = process.argv.filter((arg) => arg !== '--writes' && arg !== '--subscriptions')

let settings
try {
  settings = readSettings()
} catch (err) {
  process.stderr.write(`${err.message}\n`)
  process.exit(2)
}

/** The write workload: its figures into bench/results/writes.{json,md}; a wrong answer fails the run. */
async function writes () {
  log('write workload: bulk upserts, single changes and the CSV import of as many students')
  const result = await runWrites({
    adminUrl: settings.adminUrl,
    projectDir,
    students: intSetting('BENCH_WRITE_STUDENTS', 20_000),
    concurrency: intSetting('BENCH_WRITE_CONCURRENCY', 4),
    singles: intSetting('BENCH_WRITE_SINGLES', 2_000),
    log
  })
  const rows = Object.entries(result.figures).filter(([name]) => name !== 'target').map(([name, f]) =>
    `| ${name} | ${f.records} | ${f.wallSeconds.toFixed(1)} | ${f.recordsPerSecond.toFixed(0)} | ${f.clientCpuUsPerRecord.toFixed(0)} | ${f.postgresCpuUsPerRecord.toFixed(0)} | ${f.totalCpuUsPerRecord.toFixed(0)} |`)
  const markdown = [
    `Write workload (${new Date().toISOString()}, ${os.availableParallelism()} CPUs): ${result.students} students in batches of 1,000, ${result.singles} single changes ${result.concurrency} at once.`,
    '',
    '| Workload | Records | Seconds | Records/s | Server (import: CLI) CPU µs/record | PostgreSQL CPU µs/record | Total CPU µs/record |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `Bulk upsert (created) per record / CSV import per record, total CPU: ${result.figures.target.upsertOverImport.toFixed(2)} (target <= 1: ${result.figures.target.met ? 'met' : 'missed'}).`,
    ''
  ].join('\n')
  mkdirSync(resultsDir, { recursive: true })
  writeFileSync(join(resultsDir, 'writes.json'), JSON.stringify(result, null, 2) + '\n')
  writeFileSync(join(resultsDir, 'writes.md'), markdown)
  process.stdout.write('\n' + markdown)
  if (result.failures.length > 0) {
    log(`FAILED: ${result.failures.length} wrong write answer(s); first: ${result.failures[0]}`)
    process.exitCode = 1
  }
}

/** The subscriptions row: its figures into bench/results/subscriptions.{json,md}; a wrong push fails the run. */
async function subscriptions () {
  log('subscriptions: idle subscribers held, push latency at 1, 100 and 1,000 subscribers, beside polling')
  const result = await runSubscriptions({
    adminUrl: settings.adminUrl,
    projectDir,
    subscribers: intSetting('BENCH_SUBSCRIBERS', 1000),
    writes: intSetting('BENCH_PUSH_WRITES', 20),
    log
  })
  const { figures } = result
  const markdown = [
    `Subscriptions (${new Date().toISOString()}, ${os.availableParallelism()} CPUs): one school, each subscriber on its own socket; ${result.writes} writes per level.`,
    '',
    '| Subscribers | Push median ms | Push p99 ms | Write round trip median ms |',
    '|---|---|---|---|',
    ...figures.levels.map((l) => `| ${l.subscribers} | ${l.medianMs.toFixed(1)} | ${l.p99Ms.toFixed(1)} | ${l.writeMedianMs.toFixed(1)} |`),
    '',
    `Memory per idle subscriber (server RSS): ${(figures.rssPerSubscriberBytes / 1024).toFixed(1)} KiB. Polling instead: one \`changes(since)\` with nothing new, median ${figures.poll.medianMs.toFixed(2)} ms and ${figures.poll.serverCpuUs.toFixed(0)} µs of server CPU per poll, per poller.`,
    ''
  ].join('\n')
  mkdirSync(resultsDir, { recursive: true })
  writeFileSync(join(resultsDir, 'subscriptions.json'), JSON.stringify(result, null, 2) + '\n')
  writeFileSync(join(resultsDir, 'subscriptions.md'), markdown)
  process.stdout.write('\n' + markdown)
  if (result.failures.length > 0) {
    log(`FAILED: ${result.failures.length} wrong push(es); first: ${result.failures[0]}`)
    process.exitCode = 1
  }
}

// Other processes using more than this many cores during a measurement make its figures unreliable.
const DISTURBED_CORES = 0.25
// Full walks of every school per REST and GraphQL measurement (issue 37): BENCH_WALK_REPEATS.
const WALK_REPEATS = Math.max(1, Number(process.env.BENCH_WALK_REPEATS ?? 3))

let quietBudgetMs = settings.quietWaitSeconds * 1000

const log = (message) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// ---- The service's pool ------------------------------------------------------------------------

/**
 * The service's pool size: the configuration variable for it if the built service has one (a
 * `...POOL...` variable of its environment schema, ENV_SCHEMA of dist/config.js), otherwise the
 * default in dist/db/client.js. The peers get a pool of the same size.
 */
async function servicePool () {
  const { ENV_SCHEMA } = await import(pathToFileURL(join(projectDir, 'dist', 'config.js')).href)
  const variable = Object.keys(ENV_SCHEMA?.properties ?? {}).find((name) => /POOL/.test(name)) ?? null
  if (variable !== null) {
    return { variable, size: settings.poolSize, note: `the service's ${variable} is set to ${settings.poolSize}; the peers' pg.Pool has ${settings.poolSize} connections too.` }
  }
  const clientJs = readFileSync(join(projectDir, 'dist', 'db', 'client.js'), 'utf8')
  const fixed = Number(/poolSize\s*\?\?\s*(\d+)/.exec(clientJs)?.[1] ?? 10)
  return {
    variable: null,
    size: fixed,
    note: `the service has no pool-size setting, so its pool keeps its built-in ${fixed} connections` +
      (fixed === settings.poolSize ? '' : ` (not the ${settings.poolSize} wanted)`) +
      `; the peers' pg.Pool has ${fixed} too, to compare like with like.`
  }
}

// ---- Tokens ------------------------------------------------------------------------------------

function jwtVerifier (secret) {
  return (token) => {
    const [header, payload, signature] = token.split('.')
    if (signature === undefined) return null
    const want = createHmac('sha256', secret).update(`${header}.${payload}`).digest()
    const got = Buffer.from(signature, 'base64url')
    if (got.length !== want.length || !timingSafeEqual(got, want)) return null
    if (JSON.parse(Buffer.from(header, 'base64url').toString()).alg !== 'HS256') return null
    return JSON.parse(Buffer.from(payload, 'base64url').toString())
  }
}

async function graphql (port, body, accessToken) {
  const response = await fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(accessToken ? { authorization: `Bearer ${accessToken}` } : {}) },
    body: JSON.stringify(body)
  })
  return { status: response.status, body: await response.text() }
}

/**
 * One login per school through the service; keeps each school's access and refresh token. With
 * `callers`, also the teacher login's tokens (`teacher`) and the client's access token from
 * POST /oauth/token (`client`) of each school.
 */
async function loginAll (port, schools, verify, callers = new Set()) {
  // One at a time: argon2id takes 19 MiB per hash, and parallel logins would raise the RSS measured next.
  for (const school of schools) {
    const { status, body } = await graphql(port, { query: LOGIN_MUTATION, variables: { username: school.username, password: school.password } })
    const problem = status === 200 ? checkTokens(body, 'login', school, verify, true) : `HTTP ${status}: ${body.slice(0, 300)}`
    if (problem !== null) throw new Error(`login of ${school.username} failed: ${problem}`)
    const { accessToken, refreshToken } = JSON.parse(body).data.login
    Object.assign(school, { accessToken, refreshToken })
    if (callers.has('teacher')) {
      const { username } = school.teacher
      const teacher = await graphql(port, { query: LOGIN_MUTATION, variables: { username, password: school.password } })
      const wrong = teacher.status === 200 ? checkTokens(teacher.body, 'login', school, verify, true, 'teacher') : `HTTP ${teacher.status}: ${teacher.body.slice(0, 300)}`
      if (wrong !== null) throw new Error(`login of ${username} failed: ${wrong}`)
      school.teacher.accessToken = JSON.parse(teacher.body).data.login.accessToken
    }
    if (callers.has('client')) {
      // client_secret_post, as a program's OAuth library sends it.
      const { clientId, secret } = school.client
      const response = await fetch(`http://127.0.0.1:${port}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }).toString()
      })
      const text = await response.text()
      const wrong = checkClientToken(response.status, text, school, verify)
      if (wrong !== null) throw new Error(`client credentials of ${school.tag}'s client failed: ${wrong}`)
      school.client.accessToken = JSON.parse(text).access_token
    }
  }
}

// ---- Load --------------------------------------------------------------------------------------

/** The answer check of a workload against the server on `port`: returns null when the body is right for the school. */
function checker (workload, pages, verify, port) {
  switch (workload.kind) {
    case 'rest': return (body, school) => {
      // Users: the whole page; another collection (`envelope`): its records' sourcedIds in order.
      if (workload.envelope !== undefined) return checkRestKeys(body, workload.envelope, pages.get(school.id).restKeys[workload.envelope], school)
      const page = pages.get(school.id).restPage(workload.limit, `http://127.0.0.1:${port}`)
      return checkRest(body, page.text, page.value, school)
    }
    case 'read': return (body, school) => {
      const page = pages.get(school.id)[workload.expected]
      return checkRead(body, page.text, page.value, school, workload.caller === 'teacher' ? school.teacher.rooms : undefined)
    }
    case 'login': return (body, school) => checkTokens(body, 'login', school, verify, true)
    case 'refresh': return (body, school) => checkTokens(body, 'refreshToken', school, verify, false)
    default: throw new Error(`unknown workload kind ${workload.kind}`)
  }
}

/**
 * Runs autocannon for `seconds` against POST / on `port`. Requests rotate over the schools; each
 * response is checked against its request's school (autocannon keeps one request in flight per
 * connection, so the connection's context holds the school of the answer being read).
 */
// A workload's own `connections` (the maximum pages: fewer, below the service's load shedding) wins.
async function cannon (port, workload, schools, seconds, check, connections = workload.connections ?? settings.connections) {
  if (Array.isArray(port)) return await cannonMany(port, workload, schools, seconds, check)
  // A REST workload GETs its path (no body); the others POST their GraphQL body to /.
  const get = workload.kind === 'rest'
  const bodies = new Map(schools.map((s) => [s.id, get ? undefined : Buffer.from(requestBody(workload, s))]))
  const headers = new Map(schools.map((s) => [s.id, {
    ...(get ? {} : { 'content-type': 'application/json' }),
    ...(workload.kind === 'read' || get ? { authorization: `Bearer ${accessTokenOf(workload, s)}` } : {})
  }]))
  let next = 0
  let checked = 0
  let wrong = 0
  const examples = []
  const fail = (message) => {
    wrong++
    if (examples.length < 5) examples.push(message)
  }
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration: seconds,
    // autocannon stops at a tick of its sampling: a tenth of a second for a fraction of a second.
    ...(Number.isInteger(seconds) ? {} : { sampleInt: 100 }),
    timeout: 30,
    requests: [{
      method: get ? 'GET' : 'POST',
      path: get ? workload.path : '/',
      setupRequest (req, context) {
        const school = schools[next++ % schools.length]
        context.school = school
        req.headers = headers.get(school.id)
        if (!get) req.body = bodies.get(school.id)
        return req
      },
      onResponse (status, body, context) {
        checked++
        const school = context.school
        if (status !== 200) return fail(`HTTP ${status} for ${school.tag}: ${String(body).slice(0, 200)}`)
        const problem = check(body, school)
        if (problem !== null) fail(`${school.tag}: ${problem}`)
      }
    }]
  })
  return { result, checked, wrong, examples }
}

/**
 * The same load spread over several servers (API processes behind a load balancer): one autocannon
 * per server with its share of the connections, all at once. Requests and errors add up; p50 and
 * p90 are the request-weighted means of the servers', p99 and the maximum the worst server's.
 */
async function cannonMany (ports, workload, schools, seconds, check) {
  const share = Math.max(1, Math.round(settings.connections / ports.length))
  const parts = await Promise.all(ports.map((p) => cannon(p, workload, schools, seconds, check, share)))
  const results = parts.map((p) => p.result)
  const total = results.reduce((n, r) => n + r.requests.total, 0)
  const weighted = (key) => results.reduce((n, r) => n + r.latency[key] * r.requests.total, 0) / Math.max(1, total)
  const sum = (key) => results.reduce((n, r) => n + r[key], 0)
  return {
    result: {
      requests: { average: results.reduce((n, r) => n + r.requests.average, 0), total },
      latency: {
        p50: weighted('p50'),
        p90: weighted('p90'),
        p99: Math.max(...results.map((r) => r.latency.p99)),
        max: Math.max(...results.map((r) => r.latency.max))
      },
      errors: sum('errors'),
      timeouts: sum('timeouts'),
      non2xx: sum('non2xx')
    },
    checked: parts.reduce((n, p) => n + p.checked, 0),
    wrong: parts.reduce((n, p) => n + p.wrong, 0),
    examples: parts.flatMap((p) => p.examples).slice(0, 5)
  }
}

/** Several processes watched as one: CPU adds up, RSS is the largest process's (the per-process target). */
function watchMany (watches) {
  return {
    window () {
      const windows = watches.map((w) => w.window())
      return {
        end () {
          const usage = windows.map((w) => w.end())
          return {
            ...usage[0],
            peakRssMb: Math.max(...usage.map((u) => u.peakRssMb)),
            cpuCores: usage.reduce((n, u) => n + u.cpuCores, 0)
          }
        }
      }
    },
    peakRssMb: () => Math.max(...watches.map((w) => w.peakRssMb())),
    stop () { for (const w of watches) w.stop() }
  }
}

/**
 * Warm-up, then the measured run, with the server's RSS and CPU over the measured window. A
 * measurement that other programs disturbed is repeated while the quiet budget lasts (at most
 * twice), and the least disturbed attempt is kept; every attempt's answers are checked.
 */
async function measure (port, workload, target, schools, check, watch, probe) {
  const failures = []
  let checkedResponses = 0
  let best = null
  for (let attempt = 1; ; attempt++) {
    await waitQuiet()
    const m = await measureOnce(port, workload, target, schools, check, watch, probe)
    failures.push(...m.failures)
    checkedResponses += m.checkedResponses
    if (best === null || m.row.otherCores < best.otherCores) best = m.row
    best.attempts = attempt
    if (m.row.otherCores <= DISTURBED_CORES || attempt >= 3 || quietBudgetMs <= 0) return { row: best, failures, checkedResponses }
    log(`  other programs used ${m.row.otherCores.toFixed(2)} cores during this measurement: measuring again`)
    quietBudgetMs -= (settings.warmupSeconds + settings.durationSeconds) * 1000
  }
}

async function waitQuiet () {
  if (quietBudgetMs <= 0) return
  let told = false
  quietBudgetMs -= await waitForQuiet(DISTURBED_CORES, quietBudgetMs, (busy) => {
    if (!told) log(`other programs keep ${busy.toFixed(2)} cores busy; waiting for a quiet machine (up to ${(quietBudgetMs / 1000).toFixed(0)} s more in this run)`)
    told = true
  })
}

const errorSummary = (result) => result.errors + result.timeouts + result.non2xx > 0
  ? `${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx`
  : null

/** Microseconds of the monotonic clock, which V8's CPU profiles use too (bench/layers.mjs). */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)

/** Load that is checked but not measured (a warm-up, a round's lead-in). */
async function warm (port, workload, schools, seconds, check, label = 'warm-up') {
  if (seconds <= 0) return { failures: [], checkedResponses: 0 }
  const { result, checked, examples } = await cannon(port, workload, schools, seconds, check)
  const failures = examples.map((m) => `(${label}) ${m}`)
  const errors = errorSummary(result)
  if (errors !== null) failures.push(`(${label}) ${errors}`)
  return { failures, checkedResponses: checked }
}

/**
 * One measured window of `seconds`: the load's figures, the server's RSS and CPU, the PostgreSQL
 * backends' CPU, the load generator's and everyone else's, and the window itself (for the profile).
 */
async function segment (port, workload, target, schools, seconds, check, watch, probe) {
  const window = watch.window()
  probe?.start()
  const ownCpu = process.cpuUsage()
  const ownStart = performance.now()
  const startUs = monotonicUs()
  const { result, checked, wrong, examples } = await cannon(port, workload, schools, seconds, check)
  const endUs = monotonicUs()
  const usage = window.end()
  const own = process.cpuUsage(ownCpu)
  const loadGenCores = (own.user + own.system) / 1000 / (performance.now() - ownStart)
  const connections = probe === undefined ? undefined : await probe.stop()
  const failures = [...examples]
  const errors = errorSummary(result)
  if (errors !== null) failures.push(errors)
  const otherCores = usage.machineBusy * os.cpus().length - usage.cpuCores - (usage.postgresCores || 0) - loadGenCores
  const row = {
    workload: workload.name,
    target,
    rps: result.requests.average,
    requests: result.requests.total,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    maxLatency: result.latency.max,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    wrong,
    checked,
    peakRssMb: usage.peakRssMb,
    cpuCores: usage.cpuCores,
    loadGenCores,
    postgresCores: usage.postgresCores,
    // What each request costs, whatever the machine's load: CPU time over requests answered.
    serverCpuUsPerRequest: usage.cpuCores * usage.wallSeconds / result.requests.total * 1e6,
    postgresCpuUsPerRequest: usage.postgresCores * usage.wallSeconds / result.requests.total * 1e6,
    machineCpuBusy: usage.machineBusy,
    // CPU the machine spent on anything else (other programs, PostgreSQL's background processes).
    otherCores,
    disturbed: otherCores > DISTURBED_CORES,
    dbConnections: connections,
    windows: [[startUs, endUs]]
  }
  return { row, failures, checkedResponses: checked }
}

async function measureOnce (port, workload, target, schools, check, watch, probe) {
  log(`${target}: ${workload.name}: warm-up ${settings.warmupSeconds} s, then ${settings.durationSeconds} s`)
  const warmed = await warm(port, workload, schools, settings.warmupSeconds, check)
  const m = await segment(port, workload, target, schools, settings.durationSeconds, check, watch, probe)
  const { row } = m
  log(`${target}: ${workload.name}: ${row.rps.toFixed(0)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, ` +
    `errors ${row.errors + row.timeouts}, non-2xx ${row.non2xx}, wrong ${row.wrong}, RSS ${row.peakRssMb.toFixed(0)} MB, ` +
    `CPU cores: server ${row.cpuCores.toFixed(2)}, PostgreSQL ${row.postgresCores.toFixed(2)}, load generator ${row.loadGenCores.toFixed(2)}, other ${row.otherCores.toFixed(2)}; ` +
    `CPU per request: server ${row.serverCpuUsPerRequest.toFixed(0)} µs, PostgreSQL ${row.postgresCpuUsPerRequest.toFixed(0)} µs`)
  const failures = [...warmed.failures, ...m.failures]
  for (const f of failures) log(`  PROBLEM: ${f}`)
  return { row, failures, checkedResponses: warmed.checkedResponses + m.checkedResponses }
}

// Before each round of a lane: load, checked and not measured, so that the server's pool has its
// connections again (idle ones close between rounds) and the round measures its pace.
const ROUND_LEAD_SECONDS = 0.5
// After each round: the peers close idle connections after this (POOL_IDLE_MS), before the next
// server's round starts, so that at most two servers' pools are open (max_connections).
const PEER_POOL_IDLE_MS = 200

/**
 * The order of the lanes in round `round`, by the rows of a Williams design (0, 1, n-1, 2, n-2...,
 * each round adding 1 modulo n): over n rounds of n lanes (n even), every lane comes right after
 * every other lane once, so that no server always inherits the same one's tail.
 */
function roundOrder (lanes, round) {
  const n = lanes.length
  const first = Array.from({ length: n }, (_, i) => i === 0 ? 0 : i % 2 === 1 ? (i + 1) / 2 : n - i / 2)
  return first.map((i) => lanes[(i + round) % n])
}

// A server has settled when it and the bench database's backends use less than this many cores.
const SETTLED_CORES = 0.05
const SETTLE_MAX_MS = 2_000

/** Waits (at most SETTLE_MAX_MS) until `server` and the bench database's backends are idle. */
async function settle (server) {
  const started = performance.now()
  while (performance.now() - started < SETTLE_MAX_MS) {
    const window = server.watch.window()
    await sleep(100)
    const usage = window.end()
    if (usage.cpuCores < SETTLED_CORES && !(usage.postgresCores >= SETTLED_CORES)) return
  }
}

/**
 * The interleaved comparison of `lanes` ({ target, workload, server: { port, watch, probe } }):
 * each lane's warm-up, then settings.rounds rounds, each measuring every lane for
 * settings.roundSeconds after a lead-in, in an order that changes from round to round. Returns a
 * row per lane (bench/rounds.mjs: medians over the rounds, each round kept), the failures and the
 * answers checked.
 */
async function interleave (lanes, schools, pages, verify) {
  const failures = []
  let checkedResponses = 0
  const note = (lane, m) => {
    checkedResponses += m.checkedResponses
    failures.push(...m.failures.map((message) => ({ workload: lane.workload.name, target: lane.target, message })))
    for (const f of m.failures) log(`  PROBLEM: ${lane.target}: ${lane.workload.name}: ${f}`)
  }
  for (const lane of lanes) {
    lane.check = checker(lane.workload, pages, verify, lane.server.port)
    lane.rounds = []
    log(`${lane.target}: ${lane.workload.name}: warm-up ${settings.warmupSeconds} s`)
    note(lane, await warm(lane.server.port, lane.workload, schools, settings.warmupSeconds, lane.check))
    // The peers' idle connections close before the next server's load (PEER_POOL_IDLE_MS).
    await sleep(PEER_POOL_IDLE_MS + 100)
    await settle(lane.server)
  }
  let previous
  for (let round = 0; round < settings.rounds; round++) {
    await waitQuiet()
    for (const lane of roundOrder(lanes, round)) {
      const { port, watch, probe } = lane.server
      // The previous server's tail (its last answers, a collection, the audit's last batch) is not
      // this one's round.
      if (previous !== undefined) await settle(previous)
      note(lane, await warm(port, lane.workload, schools, ROUND_LEAD_SECONDS, lane.check, 'lead-in'))
      const m = await segment(port, lane.workload, lane.target, schools, settings.roundSeconds, lane.check, watch, probe)
      note(lane, m)
      lane.rounds.push(m.row)
      const { row } = m
      log(`round ${round + 1}/${settings.rounds}: ${lane.workload.name} on ${lane.target}: ${row.rps.toFixed(0)} req/s, ` +
        `CPU per request: server ${row.serverCpuUsPerRequest.toFixed(0)} µs, PostgreSQL ${row.postgresCpuUsPerRequest.toFixed(0)} µs` +
        (row.wrong > 0 ? `, ${row.wrong} wrong` : '') + (row.disturbed ? `; other programs ${row.otherCores.toFixed(2)} cores` : ''))
      await sleep(PEER_POOL_IDLE_MS + 100)
      previous = lane.server
    }
  }
  return { rows: lanes.map((lane) => laneRow(lane.rounds)), failures, checkedResponses }
}

/** Samples the number of connections `user` holds to the bench database every 200 ms. */
function connectionProbe (adminBenchUrl, user) {
  let client
  let timer
  let max = 0
  return {
    start () {
      client = new pg.Client({ connectionString: adminBenchUrl })
      const ready = client.connect()
      timer = setInterval(() => {
        ready.then(() => connectionCount(client, settings.database, user)).then((n) => { max = Math.max(max, n) }, () => {})
      }, 200)
    },
    async stop () {
      clearInterval(timer)
      await client.end().catch(() => {})
      return max
    }
  }
}

// ---- Main --------------------------------------------------------------------------------------

function gitInfo () {
  try {
    const git = (...args) => execFileSync('git', args, { cwd: projectDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    const commit = git('rev-parse', '--short', 'HEAD')
    const dirty = git('status', '--porcelain', '--', 'src', 'prisma', 'schema', 'package.json') !== ''
    return { commit, dirty }
  } catch {
    return { commit: 'unknown', dirty: false }
  }
}

const profilesDir = join(resultsDir, 'profiles')

/**
 * Each server's CPU profile summed by package over its measured windows, next to it as
 * NAME.summary.md (the layers are in the report).
 */
function summarizeProfiles (runs) {
  for (const file of readdirSync(profilesDir).filter((name) => name.endsWith('.cpuprofile')).sort()) {
    const target = file.replace(/\.cpuprofile$/, '')
    const windows = runs.filter((row) => row.target === target).flatMap((row) => row.windows ?? [])
    const summary = summaryMarkdown(join(profilesDir, file), projectDir, windows.length === 0 ? undefined : windows)
    writeFileSync(join(profilesDir, `${target}.summary.md`), `# ${file}\n\n${summary}`)
  }
  log(`wrote the profiles and their summaries by package to ${profilesDir}`)
}

/**
 * A full sync of every school as its client: all its students, REST by following Link rel="next"
 * from limit=REST_MAX_LIMIT, and GraphQL by studentsPage keyset pages of the same size; each walk
 * checked against the school's students in order (ids), WALK_REPEATS times over every school.
 * Reports wall time and server CPU per walk of one school.
 */
async function fullWalks (server, schools, adminUrl) {
  const ids = new Map()
  await (async () => {
    const client = new pg.Client({ connectionString: adminUrl })
    await client.connect()
    try {
      // The REST walk sees sourcedIds, the GraphQL walk ids: each checked against its own.
      for (const school of schools) {
        const rows = (await client.query('SELECT id, COALESCE(sourced_id, id::text) AS key FROM students WHERE school_id = $1 ORDER BY id', [school.id])).rows
        ids.set(school.id, { 'graphql-walk': rows.map((r) => r.id), 'rest-walk': rows.map((r) => r.key) })
      }
    } finally {
      await client.end()
    }
  })()
  const origin = `http://127.0.0.1:${server.port}`
  const restWalk = async (school) => {
    const seen = []
    let pagesRead = 0
    let next = `${origin}${ONEROSTER_STUDENTS_PATH}?limit=${REST_MAX_LIMIT}`
    while (next !== undefined) {
      const response = await fetch(next, { headers: { authorization: `Bearer ${school.client.accessToken}` } })
      const text = await response.text()
      if (response.status !== 200) throw new Error(`REST walk of ${school.tag}: HTTP ${response.status}: ${text.slice(0, 200)}`)
      pagesRead++
      for (const user of JSON.parse(text).users) seen.push(user.sourcedId)
      next = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1]
    }
    return { seen, pagesRead }
  }
  const graphqlWalk = async (school) => {
    const seen = []
    let pagesRead = 0
    let after = null
    for (;;) {
      const { status, body } = await graphql(server.port, { query: WALK_PAGE_QUERY, variables: { after } }, school.client.accessToken)
      const page = status === 200 ? JSON.parse(body).data?.studentsPage : undefined
      if (page == null) throw new Error(`GraphQL walk of ${school.tag}: HTTP ${status}: ${body.slice(0, 200)}`)
      pagesRead++
      for (const node of page.nodes) seen.push(node.id)
      if (!page.pageInfo.hasNextPage) return { seen, pagesRead }
      after = page.pageInfo.endCursor
    }
  }
  const rows = []
  for (const [name, walk] of [['rest-walk', restWalk], ['graphql-walk', graphqlWalk]]) {
    // One untimed walk of every school first (warm-up, and the answers checked).
    for (const school of schools) {
      const { seen } = await walk(school)
      const want = ids.get(school.id)[name]
      if (seen.length !== want.length || seen.some((id, i) => id !== want[i])) throw new Error(`${name} of ${school.tag}: ${seen.length} students, not the school's ${want.length} in order`)
    }
    await waitQuiet()
    const window = server.watch.window()
    const started = performance.now()
    let walked = 0
    let pagesRead = 0
    let students = 0
    for (let repeat = 0; repeat < WALK_REPEATS; repeat++) {
      for (const school of schools) {
        const m = await walk(school)
        walked++
        pagesRead += m.pagesRead
        students += m.seen.length
      }
    }
    const wallMs = performance.now() - started
    const usage = window.end()
    const row = {
      walk: name,
      walks: walked,
      studentsPerWalk: students / walked,
      pagesPerWalk: pagesRead / walked,
      wallMsPerWalk: wallMs / walked,
      serverCpuMsPerWalk: usage.cpuCores * usage.wallSeconds * 1000 / walked,
      postgresCpuMsPerWalk: usage.postgresCores * usage.wallSeconds * 1000 / walked
    }
    log(`${name}: ${walked} walks of ${row.studentsPerWalk} students in ${row.pagesPerWalk} pages: ${row.wallMsPerWalk.toFixed(0)} ms each, ` +
      `server CPU ${row.serverCpuMsPerWalk.toFixed(0)} ms, PostgreSQL ${row.postgresCpuMsPerWalk.toFixed(0)} ms per walk`)
    rows.push(row)
  }
  return rows
}

async function main () {
  const began = Date.now()
  // Profiles of this run only.
  if (settings.profile && existsSync(profilesDir)) rmSync(profilesDir, { recursive: true })
  const selected = WORKLOADS.filter((w) => settings.workloads.includes(w.name))
  const adminBenchUrl = databaseUrl(settings.adminUrl, settings.database)
  const rolePassword = randomBytes(18).toString('base64url')
  const serviceBenchUrl = databaseUrl(settings.adminUrl, settings.database, SERVICE_ROLE, rolePassword)
  const jwtSecret = randomBytes(48).toString('base64url')
  const verify = jwtVerifier(jwtSecret)
  const pool = await servicePool()

  const pgInfo = await serverInfo(settings.adminUrl)
  log(`PostgreSQL ${pgInfo.version}; recreating database ${settings.database}`)
  await recreateDatabase(settings.adminUrl, settings.database, settings.citusWorkers)
  log('migrating (school-data migrate)')
  await migrate(projectDir, adminBenchUrl)

  const { hashPassword } = await import(pathToFileURL(join(projectDir, 'dist', 'auth', 'passwords.js')).href)
  const password = randomBytes(12).toString('base64url')
  const passwordHash = await hashPassword(password)
  const { sizes } = settings
  log(`loading ${sizes.schools} schools x (${sizes.students} students, ${sizes.teachers} teachers, ${sizes.classrooms} classrooms)`)
  const t0 = Date.now()
  const dataset = await loadDataset(adminBenchUrl, sizes, passwordHash)
  log(`loaded in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${JSON.stringify(dataset.counts)}`)
  const schools = dataset.schools.map((s) => ({ ...s, password }))
  // The records a OneRoster sync reads beyond the users (the REST rows marked `roster`), by the
  // project's import: about 10 s a school, so only when such a row is selected.
  const t1 = Date.now()
  if (selected.some((w) => w.roster)) {
    await withClient(adminBenchUrl, async (client) => {
      await importRosterData(projectDir, adminBenchUrl, client, schools)
      // As after the load (dataset.mjs): the import rewrote every student, and a count or page read
      // right after it would fetch each row from the heap, as no table autovacuum has seen does.
      await client.query('VACUUM ANALYZE')
      const counts = (await client.query(`SELECT (SELECT count(*) FROM academic_sessions)::int AS academic_sessions, (SELECT count(*) FROM courses)::int AS courses,
        (SELECT count(*) FROM classrooms WHERE course_id IS NOT NULL)::int AS classes, (SELECT count(*) FROM students WHERE date_of_birth IS NOT NULL)::int AS student_demographics,
        (SELECT count(*) FROM teachers WHERE date_of_birth IS NOT NULL)::int AS teacher_demographics`)).rows[0]
      log(`imported the calendar, courses, classes and demographics (school-data import oneroster) in ${((Date.now() - t1) / 1000).toFixed(1)} s: ${JSON.stringify(counts)}`)
    })
  }
  if (settings.citusWorkers.length > 0) {
    log(`distributing by school over ${settings.citusWorkers.join(', ')} (school-data citus distribute)`)
    await distribute(projectDir, adminBenchUrl)
  }
  await prepareServiceRole(settings.adminUrl, adminBenchUrl, rolePassword, settings.citusWorkers)
  const rls = await rowLevelSecurity(adminBenchUrl)
  const rlsTables = rls.filter((t) => t.enabled)
  const rlsSummary = rlsTables.length === 0
    ? `not enabled on any table (${rls.length} tables, 0 policies): the service role and the superuser read the same way.`
    : `enabled on ${rlsTables.map((t) => `${t.table} (${t.policies} polic${t.policies === 1 ? 'y' : 'ies'}${t.forced ? ', forced' : ''})`).join(', ')}.`
  log(`row-level security: ${rlsSummary}`)
  const pages = await expectedPages(adminBenchUrl, schools, sizes.students, selected.some((w) => w.roster))
  for (const school of schools) school.deepAfter = pages.get(school.id).deepAfter
  log(`pool: ${pool.note}`)

  const runs = []
  const walks = []
  const comparisons = []
  const failures = []
  const ready = {}
  const peakRssMb = {}
  const modes = {}
  let checkedResponses = 0
  let loggedIn = false

  /** Starts a server with the first of `variants` ({ mode, env(port) }) that becomes ready. */
  async function start (target, args, variants) {
    const profileArgs = settings.profile
      ? ['--cpu-prof', `--cpu-prof-dir=${profilesDir}`, `--cpu-prof-name=${target}.cpuprofile`]
      : []
    for (let i = 0; ; i++) {
      const port = await freePort()
      const proc = startNode(target, [...profileArgs, ...args], { cwd: projectDir, env: variants[i].env(port) })
      const watch = watchProcess(proc.pid, settings.database)
      try {
        const readyMs = await waitReady(proc, port)
        return { proc, port, watch, readyMs, mode: variants[i].mode }
      } catch (err) {
        watch.stop()
        await stopNode(proc)
        if (i + 1 >= variants.length) throw err
        log(`${target}: refused to start in ${variants[i].mode} mode (${proc.tail.at(-1) ?? err.message}); trying ${variants[i + 1].mode} mode`)
      }
    }
  }

  /** Starts a server that stays up for several workloads; `stop()` it afterwards. */
  async function serve (target, args, variants, user) {
    const server = await start(target, args, variants)
    modes[target] = server.mode
    ready[target] = server.readyMs
    log(`${target}: ready ${server.readyMs.toFixed(0)} ms after the process started (${server.mode} mode, pid ${server.proc.pid}, port ${server.port})`)
    return {
      ...server,
      target,
      user,
      probe: connectionProbe(adminBenchUrl, user),
      async stop () {
        peakRssMb[target] = server.watch.peakRssMb()
        server.watch.stop()
        const exit = await stopNode(server.proc)
        if (exit.code !== 0 && exit.code !== null) log(`${target}: exited with ${exit.code}`)
      }
    }
  }

  /** Starts a server, runs `workloads` against it one long measurement each, stops it. */
  async function against (target, args, variants, workloads, user, before) {
    const server = await serve(target, args, variants, user)
    try {
      if (before !== undefined) await before(server.port)
      for (const workload of workloads) {
        const m = await measure(server.port, workload, target, schools, checker(workload, pages, verify, server.port), server.watch, server.probe)
        runs.push(m.row)
        checkedResponses += m.checkedResponses
        failures.push(...m.failures.map((message) => ({ workload: workload.name, target, message })))
        await sleep(300)
      }
    } finally {
      await server.stop()
    }
  }

  /** Logs in once per school (and each school's teacher and client when their workloads run). */
  async function logIn (port) {
    if (loggedIn) return
    log(`logging in once per school (${schools.length} users${callers.size > 0 ? `, and each school's ${[...callers].join(' and ')}` : ''})`)
    await loginAll(port, schools, verify, callers)
    loggedIn = true
  }

  /**
   * Runs the interleaved comparison of `lanes` (see interleave), keeps each lane's row with the
   * comparison's name, and the comparison itself: its reference lane's target and every lane's
   * rounds.
   */
  async function compare (name, reference, lanes) {
    log(`${name}: ${lanes[0].workload.name}: ${lanes.length} servers in ${settings.rounds} rounds of ${settings.roundSeconds} s (after ${settings.warmupSeconds} s of warm-up each)`)
    const m = await interleave(lanes, schools, pages, verify)
    checkedResponses += m.checkedResponses
    failures.push(...m.failures)
    for (const row of m.rows) row.comparison = name
    runs.push(...m.rows)
    comparisons.push({ name, workload: lanes[0].workload.name, reference, rows: m.rows })
  }

  // (a) The reported configuration: the service as a non-superuser role, so row-level security applies.
  // As the service is started in production (npm start, the Docker image): src/server-flags.ts.
  const { SERVER_NODE_FLAGS } = await import(pathToFileURL(join(projectDir, 'dist', 'server-flags.js')).href)
  const serviceArgs = [...SERVER_NODE_FLAGS, join('dist', 'server.js')]
  // The teacher logins and the clients get their tokens at the login too, when a workload of theirs runs.
  const callers = new Set(selected.map((w) => w.caller).filter(Boolean))
  // With --profile, only logins and refreshes (when asked for) run on the service with its cache on.
  const cachedWorkloads = selected.filter((w) => !w.uncachedOnly && (!settings.profileOnly || w.kind !== 'read'))
  if (cachedWorkloads.length > 0) {
    await against('service', serviceArgs, [{ mode: 'production', env: (port) => serviceEnv('production', serviceBenchUrl, port, jwtSecret, pool) }], cachedWorkloads, SERVICE_ROLE, logIn)
  }

  // (b) The fresh reads, interleaved: the service with the response cache off, so that every request
  // does the whole work (as the service role, with the teacher's and the client's reads beside the
  // administrator's flat page), against the ceiling, the Prisma floors and the Mercurius + pg peer,
  // in short rounds, each workload's servers in turn.
  const ceilingReads = selected.filter((w) => w.ceiling)
  const callerReads = selected.filter((w) => w.uncachedOnly && w.kind !== 'rest' && !w.restPeer)
  // OneRoster REST pages, each interleaved with its GraphQL peer (issue 37).
  const restReads = selected.filter((w) => w.kind === 'rest' || w.restPeer)
  const restWalk = selected.some((w) => w.kind === 'rest')
  const freshReads = [...ceilingReads, ...callerReads, ...restReads]
  const rlsWorkloads = settings.profileOnly ? [] : selected.filter((w) => w.rlsCompare)
  const superuser = new URL(settings.adminUrl).username || 'postgres'
  if (freshReads.length > 0) {
    const uncached = await serve('uncached', serviceArgs, [{
      mode: 'production',
      env: (port) => serviceEnv('production', serviceBenchUrl, port, jwtSecret, pool, UNCACHED)
    }], SERVICE_ROLE)
    const peers = []
    try {
      await logIn(uncached.port)
      // The peers: the ceiling (one SQL statement per request), the Prisma floor (one Prisma
      // operation), its raw-SQL form (the flat lists), the same GraphQL stack without Prisma and walls.
      const peerServers = [
        ['ceiling', 'ceiling.mjs', '', (w) => true],
        ['mercurius-pg', 'mercurius-pg.mjs', '', (w) => true],
        ['prisma', 'prisma-minimal.mjs', 'model', (w) => true],
        ['prisma-raw', 'prisma-minimal.mjs', 'raw', (w) => w.name === 'flat' || w.name === 'deep-page']
      ]
      for (const [target, script, floor, serves] of peerServers) {
        if (!ceilingReads.some(serves)) continue
        const server = await serve(target, [join('bench', script)], [{
          mode: 'production',
          env: (port) => ({
            ...process.env,
            CEILING_DATABASE_URL: adminBenchUrl,
            JWT_SECRET: jwtSecret,
            PORT: String(port),
            HOST: '127.0.0.1',
            POOL_SIZE: String(pool.size),
            POOL_IDLE_MS: String(PEER_POOL_IDLE_MS),
            PRISMA_FLOOR: floor,
            NODE_ENV: 'production'
          })
        }], superuser)
        // Their connections are the superuser's, as the bench's own probe: not counted.
        server.probe = undefined
        peers.push({ server, serves })
      }
      for (const workload of ceilingReads) {
        const lanes = [{ target: 'uncached', workload, server: uncached }]
        // A teacher's and a client's page beside the administrator's page of the same query, on the same server.
        for (const w of callerReads) if (w.besides === workload.name) lanes.push({ target: 'uncached', workload: w, server: uncached })
        for (const { server, serves } of peers) if (serves(workload)) lanes.push({ target: server.target, workload, server })
        await compare('peers', 'ceiling', lanes)
      }
      const alone = callerReads.filter((w) => !ceilingReads.some((c) => c.name === w.besides))
      if (alone.length > 0) await compare('callers', null, alone.map((workload) => ({ target: 'uncached', workload, server: uncached })))
      for (const { server } of peers) await server.stop()
      peers.length = 0

      // (b') OneRoster REST against GraphQL: the same page of students in both, round by round on
      // the same server, then a full walk of every school both ways.
      for (const rest of restReads.filter((w) => w.kind === 'rest')) {
        const lanes = [{ target: 'uncached', workload: rest, server: uncached }]
        const peer = restReads.find((w) => w.name === rest.graphql)
        if (peer !== undefined) lanes.push({ target: 'uncached', workload: peer, server: uncached })
        await compare('rest', null, lanes)
      }
      const lonePeers = restReads.filter((w) => w.restPeer && !restReads.some((r) => r.graphql === w.name))
      if (lonePeers.length > 0) await compare('rest', null, lonePeers.map((workload) => ({ target: 'uncached', workload, server: uncached })))
      if (restWalk) walks.push(...await fullWalks(uncached, schools, adminBenchUrl))

      // (c) Row-level security's cost: the same reads as the superuser (row-level security
      // bypassed), interleaved with the service role's. Production mode refuses the superuser (a
      // deliberate guard); sandbox mode then runs the same code.
      if (rlsWorkloads.length > 0) {
        const bypassing = await serve('superuser', serviceArgs, ['production', 'sandbox'].map((mode) => ({
          mode,
          env: (port) => serviceEnv(mode, adminBenchUrl, port, jwtSecret, pool, UNCACHED)
        })), superuser)
        bypassing.probe = undefined
        try {
          for (const workload of rlsWorkloads) {
            await compare('rls', 'superuser', [
              { target: 'uncached', workload, server: uncached },
              { target: 'superuser', workload, server: bypassing }
            ])
          }
        } finally {
          await bypassing.stop()
        }
      }
    } finally {
      for (const { server } of peers) await server.stop()
      await uncached.stop()
    }
  }

  // Two API processes against the one database (issue: scaling out), with the cache on and off,
  // beside the single process measured above.
  const flatWorkload = selected.filter((w) => w.name === 'flat')
  if (flatWorkload.length > 0 && settings.nodes > 1 && !settings.profile) {
    for (const [target, extra] of [['service-2', {}], ['uncached-2', UNCACHED]]) {
      const nodes = []
      try {
        for (let i = 0; i < settings.nodes; i++) {
          nodes.push(await start(target, serviceArgs, [{ mode: 'production', env: (port) => serviceEnv('production', serviceBenchUrl, port, jwtSecret, pool, extra) }]))
        }
        ready[target] = Math.max(...nodes.map((n) => n.readyMs))
        modes[target] = 'production'
        log(`${target}: ${nodes.length} processes ready on ports ${nodes.map((n) => n.port).join(', ')}`)
        const watch = watchMany(nodes.map((n) => n.watch))
        const m = await measure(nodes.map((n) => n.port), flatWorkload[0], target, schools, checker(flatWorkload[0], pages, verify), watch, connectionProbe(adminBenchUrl, SERVICE_ROLE))
        runs.push(m.row)
        checkedResponses += m.checkedResponses
        failures.push(...m.failures.map((message) => ({ workload: 'flat', target, message })))
        peakRssMb[target] = watch.peakRssMb()
      } finally {
        for (const n of nodes) {
          n.watch.stop()
          await stopNode(n.proc)
        }
      }
    }
  }

  // ---- Figures and targets ----
  const find = (workload, target, comparison) => runs.find((r) => r.workload === workload && r.target === target && (comparison === undefined || r.comparison === comparison))
  const comparisonOf = (name, workload) => comparisons.find((c) => c.name === name && c.workload === workload)
  const laneOf = (comparison, target, workload = comparison?.workload) => comparison?.rows.find((r) => r.target === target && r.workload === workload)
  // Within a comparison, each server against the reference of its own rounds: req/s and CPU.
  for (const c of comparisons) {
    const reference = laneOf(c, c.reference)
    if (reference === undefined) continue
    for (const row of c.rows) {
      if (row === reference || row.workload !== c.workload) continue
      row.versus = { target: c.reference, rps: roundRatios(row, reference), cpu: roundRatios(row, reference, (r) => r.serverCpuUsPerRequest) }
    }
  }
  // Against the ceiling: the median of the rounds' ratios when interleaved with it, else the ratio
  // to the ceiling's median (measured at another time).
  for (const row of runs) {
    if (row.target === 'ceiling') continue
    if (row.versus?.target === 'ceiling') {
      row.ceilingRatio = row.versus.rps.median
      continue
    }
    const ceiling = find(row.workload, 'ceiling')
    row.ceilingRatio = ceiling !== undefined ? row.rps / ceiling.rps : undefined
  }
  // Two processes against one: the throughput ratio of the same workload.
  const scaling = {}
  for (const [two, one] of [['service-2', 'service'], ['uncached-2', 'uncached']]) {
    const a = find('flat', two)
    const b = find('flat', one)
    if (a && b) scaling[two] = a.rps / b.rps
  }
  // Row-level security: 1 - the service role's req/s over the superuser's, round by round.
  const rlsCost = {}
  const rlsSpread = {}
  for (const w of rlsWorkloads) {
    const ratio = laneOf(comparisonOf('rls', w.name), 'uncached')?.versus?.rps
    if (ratio === undefined) continue
    rlsCost[w.name] = 1 - ratio.median
    rlsSpread[w.name] = { min: 1 - ratio.max, max: 1 - ratio.min, n: ratio.n }
  }
  const fmtRatio = (s) => formatSpread(s)
  const us = (n) => Number.isFinite(n) ? n.toFixed(0) : 'n/a'
  // Fresh reads (issues 16 and 29): the response cache off, both walls, the audit, the rate limits
  // and the request log on, against the ceiling of the same rounds.
  const fresh = (workload, ratio) => {
    const row = find(workload, 'uncached', 'peers')
    const ceiling = find(workload, 'ceiling', 'peers')
    const floor = find(workload, 'prisma', 'peers')
    const graphqlPeer = find(workload, 'mercurius-pg', 'peers')
    return target(`fresh ${workload} >= ${ratio} x ceiling (median of the rounds)`, row?.versus !== undefined, row?.versus?.rps.median >= ratio,
      `${fmtRatio(row?.versus?.rps)}; ${us(row?.rps)} req/s against the ceiling's ${us(ceiling?.rps)} (medians); ` +
      `server ${us(row?.serverCpuUsPerRequest)} µs and PostgreSQL ${us(row?.postgresCpuUsPerRequest)} µs of CPU per request (the ceiling's ${us(ceiling?.serverCpuUsPerRequest)} and ${us(ceiling?.postgresCpuUsPerRequest)})` +
      (graphqlPeer?.versus ? `; Mercurius + pg ${fmtRatio(graphqlPeer.versus.rps)}` : '') +
      (floor?.versus ? `; the Prisma floor ${fmtRatio(floor.versus.rps)}` : ''))
  }
  const freshCpu = (workload, times) => {
    const row = find(workload, 'uncached', 'peers')
    return target(`fresh ${workload}: server CPU per request <= ${times} x the ceiling's (median of the rounds)`, row?.versus !== undefined, row?.versus?.cpu.median <= times,
      `${fmtRatio(row?.versus?.cpu)}; ${us(row?.serverCpuUsPerRequest)} µs against the ceiling's ${us(find(workload, 'ceiling', 'peers')?.serverCpuUsPerRequest)} µs (medians)`)
  }
  // Least privilege (issues 17 and 36): a teacher's and a client's flat and nested pages against the
  // administrator's of the same query, all with the response cache off, round by round on the same server.
  const callerRatios = {}
  const callerRows = {}
  for (const workload of WORKLOADS.filter((w) => w.besides !== undefined)) {
    const comparison = comparisonOf('peers', workload.besides) ?? comparisons.find((c) => c.name === 'callers')
    const admin = laneOf(comparison, 'uncached', workload.besides)
    const row = laneOf(comparison, 'uncached', workload.name)
    if (row === undefined || admin === undefined) continue
    row.adminSpread = roundRatios(row, admin)
    row.adminCpu = roundRatios(row, admin, (r) => r.serverCpuUsPerRequest)
    row.adminRatio = callerRatios[workload.name] = row.adminSpread.median
    callerRows[workload.name] = { row, admin, besides: workload.besides }
  }
  const versusAdmin = (name) => {
    const { row, admin, besides } = callerRows[name] ?? {}
    return `${fmtRatio(row?.adminSpread)} of the administrator's uncached ${besides}, round by round; ${us(row?.rps)} req/s against ${us(admin?.rps)} (medians); ` +
      `server ${us(row?.serverCpuUsPerRequest)} µs and PostgreSQL ${us(row?.postgresCpuUsPerRequest)} µs of CPU per request ` +
      `(the administrator's: ${us(admin?.serverCpuUsPerRequest)} µs and ${us(admin?.postgresCpuUsPerRequest)} µs)`
  }
  const flat = find('flat', 'service')
  const nested = find('nested', 'service')
  const flatCeiling = find('flat', 'ceiling')
  const target = (name, available, pass, detail) => ({ name, status: !available ? 'SKIP' : pass ? 'PASS' : 'FAIL', detail: available ? detail : 'not measured' })
  const f1 = (n) => Number.isFinite(n) ? n.toFixed(1) : 'n/a'
  const targets = [
    target('flat >= 0.8 x ceiling', flat && flatCeiling, flat?.ceilingRatio >= 0.8,
      `${flat?.rps.toFixed(0)} req/s = ${flat?.ceilingRatio?.toFixed(2)} x the ceiling's ${flatCeiling?.rps.toFixed(0)} req/s (its median in the interleaved rounds)`),
    // autocannon measures latency in whole milliseconds: a p50 of 0 is below its resolution, and no
    // ratio to it says anything (a cached flat read on Citus).
    flat?.p50 === 0
      ? { name: 'nested p50 <= 2 x flat p50', status: 'SKIP', detail: `flat p50 below autocannon's 1 ms resolution (nested p50 ${f1(nested?.p50)} ms)` }
      : target('nested p50 <= 2 x flat p50', flat && nested, nested?.p50 <= 2 * flat?.p50,
        `nested p50 ${f1(nested?.p50)} ms vs flat p50 ${f1(flat?.p50)} ms (${(nested?.p50 / flat?.p50).toFixed(2)} x)`),
    target('flat p99 < 30 ms', flat, flat?.p99 < 30, `flat p99 ${f1(flat?.p99)} ms`),
    target('peak RSS < 200 MB', peakRssMb.service !== undefined, peakRssMb.service < 200, `service peak RSS ${f1(peakRssMb.service)} MB over the whole run`),
    target('ready < 1 s', ready.service !== undefined, ready.service < 1000, `${ready.service?.toFixed(0)} ms from process start to the first 200 from /ready`),
    target('RLS cost <= 15%', rlsCost.flat !== undefined, rlsCost.flat <= 0.15,
      `flat, response cache off: 1 - the service role's req/s / the superuser's, median of the rounds = ${((rlsCost.flat ?? NaN) * 100).toFixed(1)}% ` +
      `(${((rlsSpread.flat?.min ?? NaN) * 100).toFixed(1)}% to ${((rlsSpread.flat?.max ?? NaN) * 100).toFixed(1)}% over ${rlsSpread.flat?.n} rounds)` +
      (rlsTables.length === 0 ? ' (no row-level security in the schema yet)' : '')),
    // Issue 36's targets (issue 16's 0.8 stays the goal beyond them).
    fresh('flat', 0.65),
    fresh('deep-page', 0.65),
    fresh('nested', 0.6),
    freshCpu('flat', 2.5),
    // (A REST row without a GraphQL equivalent has no such target.)
    ...WORKLOADS.filter((w) => w.kind === 'rest' && w.graphql !== undefined).map((w) => {
      const c = comparisons.find((x) => x.name === 'rest' && x.workload === w.name)
      const row = laneOf(c, 'uncached', w.name)
      const peer = laneOf(c, 'uncached', w.graphql)
      const cpu = row !== undefined && peer !== undefined ? roundRatios(row, peer, (r) => r.serverCpuUsPerRequest) : undefined
      if (row !== undefined && cpu !== undefined) row.versusGraphql = { workload: w.graphql, cpu }
      return target(`${w.name}: server CPU per request <= ${w.graphql}'s (median of the rounds)`, cpu !== undefined, cpu?.median <= 1,
        `${fmtRatio(cpu)}; ${us(row?.serverCpuUsPerRequest)} µs against ${us(peer?.serverCpuUsPerRequest)} µs of server CPU per request, ` +
        `PostgreSQL ${us(row?.postgresCpuUsPerRequest)} µs against ${us(peer?.postgresCpuUsPerRequest)} µs (medians)`)
    }),
    ...['teacher-flat', 'client-flat', 'teacher-nested', 'client-nested'].map((name) =>
      target(`${name} >= 0.95 x the administrator's (cache off)`, callerRatios[name] !== undefined, callerRatios[name] >= 0.95, versusAdmin(name)))
  ]

  // Server CPU by layer (bench/layers.mjs), from each profiled server's samples in the windows of
  // each of its workloads' measurements, scaled to the CPU per request measured in them.
  const layers = []
  if (settings.profile) {
    for (const row of runs) {
      const file = join(profilesDir, `${row.target}.cpuprofile`)
      if (row.windows === undefined || !existsSync(file)) continue
      layers.push({ workload: row.workload, target: row.target, comparison: row.comparison, ...layerCosts(file, projectDir, row.windows, row.serverCpuUsPerRequest) })
    }
  }

  const results = {
    finishedAt: new Date().toISOString(),
    totalSeconds: Math.round((Date.now() - began) / 1000),
    git: gitInfo(),
    settings: {
      connections: settings.connections,
      durationSeconds: settings.durationSeconds,
      warmupSeconds: settings.warmupSeconds,
      rounds: settings.rounds,
      roundSeconds: settings.roundSeconds,
      roundLeadSeconds: ROUND_LEAD_SECONDS,
      profile: settings.profile,
      profileOnly: settings.profileOnly,
      disturbedCores: DISTURBED_CORES,
      workloads: settings.workloads,
      sizes: settings.sizes
    },
    machine: {
      cpus: os.availableParallelism(),
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      memoryMb: Math.round(os.totalmem() / 2 ** 20),
      platform: `${os.type()} ${os.release()} ${os.arch()}`,
      node: process.versions.node,
      postgres: pgInfo.version,
      postgresSharedBuffers: pgInfo.shared_buffers,
      // A Citus coordinator's workers (the database's CPU is then measured on the coordinator only).
      citusWorkers: settings.citusWorkers
    },
    dataset: { counts: dataset.counts },
    pool: {
      variable: pool.variable,
      size: pool.size,
      note: pool.note,
      observedMax: Math.max(0, ...runs.filter((r) => r.target === 'service' || r.target === 'uncached').map((r) => r.dbConnections ?? 0))
    },
    rls: { tables: rls, summary: rlsSummary, cost: rlsCost, spread: rlsSpread },
    callers: { ratios: callerRatios, detail: Object.fromEntries(Object.keys(callerRatios).map((name) => [name, versusAdmin(name)])) },
    scaling,
    walks,
    ready,
    modes,
    peakRssMb,
    runs,
    // Each interleaved comparison: its workload, its reference server, its lanes (rows of `runs`).
    comparisons: comparisons.map((c) => ({ name: c.name, workload: c.workload, reference: c.reference, lanes: c.rows.map((row) => ({ target: row.target, workload: row.workload })) })),
    layers,
    targets,
    correct: failures.length === 0,
    checkedResponses,
    failures
  }
  mkdirSync(resultsDir, { recursive: true })
  writeFileSync(join(resultsDir, 'latest.json'), JSON.stringify(results, null, 2) + '\n')
  const markdown = renderMarkdown(results)
  writeFileSync(join(resultsDir, 'latest.md'), markdown)
  writeFileSync(join(resultsDir, 'latest.svg'), renderSvg(results))
  process.stdout.write('\n' + markdown)
  log(`wrote bench/results/latest.{json,md,svg} (${results.totalSeconds} s in all)`)
  if (settings.profile) summarizeProfiles(runs)
  if (failures.length > 0) {
    log(`FAILED: ${failures.length} problem(s) with the answers; first: ${failures[0].workload} on ${failures[0].target}: ${failures[0].message}`)
    process.exitCode = 1
  }
}

try {
  if (!writesOnly && !subscriptionsOnly) await main()
  if (writesOnly || (!subscriptionsOnly && process.env.BENCH_WRITES !== '0')) await writes()
  if (subscriptionsOnly || (!writesOnly && process.env.BENCH_SUBSCRIPTIONS !== '0')) await subscriptions()
} catch (err) {
  log(`the benchmark could not run: ${err.stack ?? err}`)
  process.exitCode = 2
}
