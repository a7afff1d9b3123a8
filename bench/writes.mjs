// The write workload of `npm run bench` (`npm run bench -- --writes` alone): the built service in
// production mode on a fresh PostgreSQL database, as the unprivileged service role (both walls),
// written through the API by an administrator, with the CPU each record costs the server and
// PostgreSQL, beside the CSV import of as many students (`school-data import oneroster`, as
// `npm run bench:import` runs it) measured the same way on the same machine in the same run:
//
//   - bulk upserts of BENCH_WRITE_STUDENTS students (default 20,000) in batches of 1,000: created,
//     then the same batches again (unchanged: read and compared, nothing written), then changed;
//   - single changes (changeStudent, one student per request, BENCH_WRITE_CONCURRENCY at once);
//   - the CSV import of a bundle of as many students (with their classes, teachers and enrollments).
//
// Every answer is checked (outcomes, counts, versions); a wrong one fails the run. The target: a
// bulk upsert costs per record (server and PostgreSQL CPU) no more than the import (its CLI process
// and PostgreSQL CPU).
import { randomBytes } from 'node:crypto'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { writeBundle } from './bundle.mjs'
import { SERVICE_ROLE, databaseUrl, migrate, prepareServiceRole, recreateDatabase, withClient } from './dataset.mjs'
import { freePort, postgresCpuByPid, procCpuSeconds, schoolDataCli, startNode, stopNode, waitReady } from './processes.mjs'

const BATCH = 1000
const CLOCK_TICKS = 100

/** CPU seconds of this process's children that have exited (utime + stime of those waited for). */
function childrenCpuSeconds () {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')
  return (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS
}

/**
 * PostgreSQL's CPU on `database` over a window, sampled every 100 ms so that a backend that exits
 * within it (a CLI's connection) still counts up to its last sample.
 */
function postgresMeter (database) {
  const first = new Map()
  const last = new Map()
  const sample = () => {
    for (const [pid, seconds] of postgresCpuByPid(database) ?? []) {
      if (!first.has(pid)) first.set(pid, seconds)
      last.set(pid, seconds)
    }
  }
  sample()
  // Backends that exist at the start count from there; those born later from zero.
  const born = new Set(first.keys())
  const timer = setInterval(sample, 100)
  return {
    end () {
      sample()
      clearInterval(timer)
      let total = 0
      for (const [pid, seconds] of last) total += seconds - (born.has(pid) ? first.get(pid) : 0)
      return total
    }
  }
}

/** `work()` measured: wall seconds, the server process's CPU seconds, PostgreSQL's, the CLI children's. */
async function measured (serverPid, database, work) {
  const pg = postgresMeter(database)
  const server0 = serverPid === undefined ? 0 : procCpuSeconds(serverPid)
  const children0 = childrenCpuSeconds()
  const t0 = performance.now()
  const result = await work()
  const wall = (performance.now() - t0) / 1000
  return {
    result,
    wallSeconds: wall,
    serverCpuSeconds: serverPid === undefined ? 0 : procCpuSeconds(serverPid) - server0,
    cliCpuSeconds: childrenCpuSeconds() - children0,
    postgresCpuSeconds: pg.end()
  }
}

function student (i, round) {
  const n = String(i).padStart(6, '0')
  return {
    sourcedId: `bench-${n}`,
    givenName: ['Ada', 'Alan', 'Grace', 'Katherine', 'Edsger', 'Barbara'][i % 6],
    familyName: ['Lovelace', 'Turing', 'Hopper', 'Johnson', 'Dijkstra', 'Liskov'][(i >> 3) % 6],
    studentNumber: `${100000 + i}`,
    email: `s${i}@students.bench.example`,
    gradeLevel: `GRADE_${1 + ((i + round) % 12)}`,
    dateOfBirth: `${2008 + (i % 12)}-0${1 + (i % 9)}-1${i % 10}`,
    enrollmentStartDate: '2026-09-01'
  }
}

const UPSERT = 'mutation Upsert($items: [StudentUpsert!]!) { upsertStudents(items: $items) { created changed unchanged items { id outcome version } } }'
const CHANGE = 'mutation Change($id: ID!, $name: String!) { changeStudent(student: { id: $id }, input: { preferredName: $name }) { id version } }'

export async function runWrites ({ adminUrl, projectDir, students = 20_000, concurrency = 4, singles = 2_000, log = (line) => process.stderr.write(line + '\n') }) {
  const database = 'sds_writes_bench'
  const password = randomBytes(18).toString('base64url')
  const ownerUrl = databaseUrl(adminUrl, database)
  await recreateDatabase(adminUrl, database)
  await migrate(projectDir, ownerUrl)
  await prepareServiceRole(adminUrl, ownerUrl, password)
  const serviceUrl = databaseUrl(adminUrl, database, SERVICE_ROLE, password)
  const { cli, env: cliEnv, bin } = schoolDataCli(projectDir, ownerUrl)
  const school = cli(['school', 'create', '--name', 'Writes Bench High'])
  const importSchool = cli(['school', 'create', '--name', 'Import Bench High'])
  const userPassword = randomBytes(12).toString('base64url')
  cli(['user', 'create', '--username', 'bench-writer', '--school', school], userPassword + '\n')

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
    RATE_LIMIT_USER_PER_MINUTE: '100000000',
    RATE_LIMIT_SCHOOL_PER_MINUTE: '100000000',
    RATE_LIMIT_WRITES_PER_MINUTE: '100000000',
    // A batch of 1,000 of these students is about 190 kB of JSON.
    BODY_LIMIT_BYTES: String(1024 * 1024),
    SHUTDOWN_DRAIN_MS: '0'
  }
  delete env.DATA_DIR
  const server = startNode('writes', [join('dist', 'server.js')], { cwd: projectDir, env })
  const failures = []
  const figures = {}
  try {
    await waitReady(server, port)
    const url = `http://127.0.0.1:${port}/`
    const post = async (query, variables, token) => {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) }, body: JSON.stringify({ query, variables }) })
      const body = await res.json()
      if (res.status !== 200 || body.errors !== undefined) throw new Error(`${res.status} ${JSON.stringify(body).slice(0, 500)}`)
      return body.data
    }
    const token = (await post('mutation ($u: String!, $p: String!) { login(username: $u, password: $p) { accessToken } }', { u: 'bench-writer', p: userPassword })).login.accessToken
    const batches = Math.ceil(students / BATCH)
    const upsertAll = (round, expect) => async () => {
      const ids = []
      for (let b = 0; b < batches; b++) {
        const items = Array.from({ length: Math.min(BATCH, students - b * BATCH) }, (_, i) => student(b * BATCH + i, round))
        const { upsertStudents: r } = await post(UPSERT, { items }, token)
        if (r[expect] !== items.length) failures.push(`upsert round ${round} batch ${b}: ${expect} ${r[expect]} of ${items.length}`)
        ids.push(...r.items.map((item) => item.id))
      }
      return ids
    }
    // Warm-up: one batch of other students, so that the first measured batch pays no start-up.
    await post(UPSERT, { items: Array.from({ length: BATCH }, (_, i) => ({ ...student(900_000 + i, 0), studentNumber: `w${i}`, sourcedId: `warm-${i}` })) }, token)

    const created = await measured(server.pid, database, upsertAll(0, 'created'))
    const unchanged = await measured(server.pid, database, upsertAll(0, 'unchanged'))
    const changed = await measured(server.pid, database, upsertAll(1, 'changed'))
    const ids = created.result
    let next = 0
    const single = await measured(server.pid, database, async () => {
      await Promise.all(Array.from({ length: concurrency }, async () => {
        while (next < singles) {
          const i = next++
          const { changeStudent } = await post(CHANGE, { id: ids[i % ids.length], name: `P${i}` }, token)
          if (changeStudent.version < 3) failures.push(`change ${i}: version ${changeStudent.version}`)
        }
      }))
    })

    // The CSV import of as many students, through the CLI as an operator runs it.
    const dir = mkdtempSync(join(tmpdir(), 'sds-writes-bench-'))
    let imported
    try {
      writeBundle(dir, students)
      // Spawned asynchronously: PostgreSQL's meter samples the CLI's backend while it runs.
      imported = await measured(undefined, database, async () => await new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [bin, 'import', 'oneroster', dir, '--school', importSchool, '--json'], { env: cliEnv, stdio: ['ignore', 'ignore', 'pipe'] })
        let stderr = ''
        child.stderr.on('data', (chunk) => { stderr += chunk })
        child.on('close', (code) => code === 0 ? resolve() : reject(new Error(`school-data import: ${stderr}`)))
      }))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    const count = await withClient(ownerUrl, async (client) => (await client.query('SELECT count(*)::int AS n FROM students WHERE school_id = $1', [importSchool])).rows[0].n)
    if (count !== students) failures.push(`import: ${count} students of ${students}`)

    const per = (m, n, cpu) => ({
      records: n,
      wallSeconds: m.wallSeconds,
      recordsPerSecond: n / m.wallSeconds,
      clientCpuUsPerRecord: cpu(m) / n * 1e6,
      postgresCpuUsPerRecord: m.postgresCpuSeconds / n * 1e6,
      totalCpuUsPerRecord: (cpu(m) + m.postgresCpuSeconds) / n * 1e6
    })
    const serverCpu = (m) => m.serverCpuSeconds
    figures.upsertCreated = per(created, students, serverCpu)
    figures.upsertUnchanged = per(unchanged, students, serverCpu)
    figures.upsertChanged = per(changed, students, serverCpu)
    figures.singleChanges = per(single, singles, serverCpu)
    figures.csvImport = per(imported, students, (m) => m.cliCpuSeconds)
    for (const [name, f] of Object.entries(figures)) {
      log(`${name.padEnd(16)} ${String(f.records).padStart(6)} records ${f.wallSeconds.toFixed(1).padStart(6)} s ${f.recordsPerSecond.toFixed(0).padStart(6)}/s   ` +
        `CPU per record: ${name === 'csvImport' ? 'CLI' : 'server'} ${f.clientCpuUsPerRecord.toFixed(0)} µs, PostgreSQL ${f.postgresCpuUsPerRecord.toFixed(0)} µs, total ${f.totalCpuUsPerRecord.toFixed(0)} µs`)
    }
    const ratio = figures.upsertCreated.totalCpuUsPerRecord / figures.csvImport.totalCpuUsPerRecord
    figures.target = { upsertOverImport: ratio, met: ratio <= 1 }
    log(`target: bulk upsert (created) CPU per record <= the CSV import's: ${ratio.toFixed(2)} x ${ratio <= 1 ? 'MET' : 'MISSED'}`)
  } finally {
    await stopNode(server)
  }
  return { students, singles, concurrency, figures, failures }
}
