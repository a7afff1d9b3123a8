// `npm run bench:allocations`: what a request allocates on the service, by layer and by function.
// A small data set (the bench's, BENCH_SCHOOLS schools) is loaded, the service started as
// `npm start` starts it (response cache off, as the service role, both walls, the audit, rate
// limits and the request log on) with V8's sampling heap profiler preloaded (heap-sampling.mjs);
// for each workload, after a warm-up, the profiler counts every allocation of exactly
// BENCH_ALLOCATION_REQUESTS requests, garbage included. Bytes are V8's sampled estimate (one
// sample per HEAP_SAMPLING_INTERVAL bytes on average), so a row under a few hundred bytes per
// request is noise. Allocation does not depend on the machine's load, unlike CPU time, so the
// figures hold on a busy machine.
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import { SERVICE_ROLE, databaseUrl, loadDataset, migrate, prepareServiceRole, recreateDatabase } from './dataset.mjs'
import { UNCACHED, freePort, serviceEnv, startNode, stopNode, waitReady } from './processes.mjs'
import { groupOf } from './profile-summary.mjs'
import { LOGIN_MUTATION, WORKLOADS, requestBody } from './workloads.mjs'

const projectDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const resultsDir = join(projectDir, 'bench', 'results')
const env = process.env
const settings = {
  adminUrl: env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres',
  database: env.BENCH_ALLOCATION_DATABASE ?? 'sds_bench_allocations',
  sizes: {
    schools: Number(env.BENCH_SCHOOLS ?? 2),
    students: Number(env.BENCH_STUDENTS ?? 2000),
    teachers: Number(env.BENCH_TEACHERS ?? 100),
    classrooms: Number(env.BENCH_CLASSROOMS ?? 40),
    assignments: Number(env.BENCH_ASSIGNMENTS ?? 3)
  },
  requests: Number(env.BENCH_ALLOCATION_REQUESTS ?? 4000),
  warmupRequests: Number(env.BENCH_ALLOCATION_WARMUP ?? 4000),
  workloads: (env.BENCH_WORKLOADS ?? 'flat,nested,teacher-flat,client-flat').split(','),
  // V8 charges what an inlined function allocates to the function it was inlined into (graphql-jit's
  // generated handlers take in the resolvers): BENCH_ALLOCATION_NO_INLINING=1 turns inlining off
  // so that each allocation is charged to the function that made it (the totals stay).
  noInlining: env.BENCH_ALLOCATION_NO_INLINING === '1'
}
const log = (line) => process.stderr.write(`[allocations] ${line}\n`)

/** POST / with `body` and `token`; the parsed answer. */
async function post (port, body, token) {
  const response = await fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body
  })
  return { status: response.status, json: await response.json() }
}

/** The access token of `workload`'s caller in `school`. */
async function tokenOf (port, school, caller) {
  if (caller === 'client') {
    const response = await fetch(`http://127.0.0.1:${port}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: school.client.clientId, client_secret: school.client.secret }).toString()
    })
    return (await response.json()).access_token
  }
  const username = caller === 'teacher' ? school.teacher.username : school.username
  const { json } = await post(port, JSON.stringify({ query: LOGIN_MUTATION, variables: { username, password: school.password } }))
  if (json.data?.login?.accessToken === undefined) throw new Error(`login of ${username} failed: ${JSON.stringify(json)}`)
  return json.data.login.accessToken
}

/** `amount` requests of `body` with `token`, 10 at a time; throws unless every one answered 200. */
async function load (port, body, token, amount) {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/`,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body,
    connections: 10,
    amount
  })
  const answered = result['2xx']
  if (answered !== amount || result.errors > 0) throw new Error(`${answered} of ${amount} requests answered 200 (${result.errors} errors, ${result.non2xx} others)`)
}

/** Waits for the preload's line saying the profile was written. */
function written (proc, file) {
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      if (proc.tail.some((line) => line.includes(`written to ${file}`))) { clearInterval(timer); resolve() }
      if (proc.child.exitCode !== null) { clearInterval(timer); reject(new Error('the service exited')) }
    }, 50)
  })
}

/** Self bytes by group and by function of a sampling heap profile. */
function summarize (profile) {
  const groups = new Map()
  const functions = new Map()
  let total = 0
  const walk = (node) => {
    const bytes = node.selfSize
    if (bytes > 0) {
      total += bytes
      const group = groupOf(node.callFrame, projectDir)
      groups.set(group, (groups.get(group) ?? 0) + bytes)
      const { functionName, url, lineNumber } = node.callFrame
      const where = url === '' ? '' : ` ${url.replace(`file://${projectDir}/`, '').replace(/^.*\/node_modules\//, '')}:${lineNumber + 1}`
      const name = `${functionName === '' ? '(anonymous)' : functionName}${where}`
      functions.set(name, (functions.get(name) ?? 0) + bytes)
    }
    for (const child of node.children) walk(child)
  }
  walk(profile.head)
  const sorted = (map) => [...map].sort((a, b) => b[1] - a[1])
  return { total, groups: sorted(groups), functions: sorted(functions) }
}

function markdown (name, requests, { total, groups, functions }) {
  const perRequest = (bytes) => (bytes / requests / 1024).toFixed(1)
  const lines = [`## ${name}: ${perRequest(total)} KiB allocated per request (${requests} requests)`, '',
    '| group | KiB per request | share |', '|---|---:|---:|',
    ...groups.slice(0, 12).map(([group, bytes]) => `| ${group} | ${perRequest(bytes)} | ${(100 * bytes / total).toFixed(1)}% |`),
    '', '| function (self) | KiB per request |', '|---|---:|',
    ...functions.slice(0, 20).map(([fn, bytes]) => `| \`${fn}\` | ${perRequest(bytes)} |`), '']
  return lines.join('\n')
}

async function main () {
  const workloads = settings.workloads.map((name) => {
    const workload = WORKLOADS.find((w) => w.name === name)
    if (workload === undefined || workload.kind !== 'read') throw new Error(`BENCH_WORKLOADS: ${name} is not a read workload`)
    return workload
  })
  const adminBenchUrl = databaseUrl(settings.adminUrl, settings.database)
  const rolePassword = randomBytes(18).toString('base64url')
  log(`recreating ${settings.database} and loading ${settings.sizes.schools} schools x ${settings.sizes.students} students`)
  await recreateDatabase(settings.adminUrl, settings.database)
  await migrate(projectDir, adminBenchUrl)
  const { hashPassword } = await import(pathToFileURL(join(projectDir, 'dist', 'auth', 'passwords.js')).href)
  const password = randomBytes(12).toString('base64url')
  const dataset = await loadDataset(adminBenchUrl, settings.sizes, await hashPassword(password))
  await prepareServiceRole(settings.adminUrl, adminBenchUrl, rolePassword)
  const school = { ...dataset.schools[0], password }

  const { SERVER_NODE_FLAGS } = await import(pathToFileURL(join(projectDir, 'dist', 'server-flags.js')).href)
  const profilesDir = join(resultsDir, 'allocations')
  if (existsSync(profilesDir)) rmSync(profilesDir, { recursive: true })
  mkdirSync(profilesDir, { recursive: true })
  const sections = []
  for (const workload of workloads) {
    const file = join(profilesDir, `${workload.name}.heapprofile`)
    const port = await freePort()
    const serviceUrl = databaseUrl(settings.adminUrl, settings.database, SERVICE_ROLE, rolePassword)
    const proc = startNode(workload.name, ['--import=./bench/heap-sampling.mjs', ...(settings.noInlining ? ['--no-turbo-inlining'] : []), ...SERVER_NODE_FLAGS, join('dist', 'server.js')], {
      cwd: projectDir,
      env: { ...serviceEnv('production', serviceUrl, port, randomBytes(48).toString('base64url'), { variable: null }, UNCACHED), HEAP_SAMPLING_FILE: file }
    })
    try {
      await waitReady(proc, port)
      const token = await tokenOf(port, school, workload.caller)
      const body = requestBody(workload, school)
      const first = await post(port, body, token)
      if (first.status !== 200 || first.json.errors !== undefined) throw new Error(`${workload.name}: ${JSON.stringify(first.json).slice(0, 300)}`)
      await load(port, body, token, settings.warmupRequests)
      proc.child.kill('SIGUSR2')
      await new Promise((resolve) => { const t = setInterval(() => { if (proc.tail.some((l) => l.includes('heap-sampling: started'))) { clearInterval(t); resolve() } }, 20) })
      await load(port, body, token, settings.requests)
      proc.child.kill('SIGUSR2')
      await written(proc, file)
    } finally {
      await stopNode(proc)
    }
    const summary = summarize(JSON.parse(readFileSync(file, 'utf8')))
    log(`${workload.name}: ${(summary.total / settings.requests / 1024).toFixed(1)} KiB per request`)
    sections.push(markdown(workload.name, settings.requests, summary))
  }
  const report = [`# Allocations per request (${new Date().toISOString()})`, '',
    `Sampled by V8's heap profiler, garbage included; ${settings.sizes.schools} schools x ${settings.sizes.students} students; response cache off${settings.noInlining ? '; inlining off' : ''}.`, '',
    ...sections].join('\n')
  writeFileSync(join(resultsDir, 'allocations.md'), report)
  process.stdout.write(report + '\n')
}

await main()
