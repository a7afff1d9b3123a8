// Child processes of the benchmark: started on a free port, watched (readiness, RSS, CPU) and
// always stopped, also when the runner fails or is interrupted.
import { spawn, spawnSync, execFile } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import { join } from 'node:path'

const running = new Set()

function killAll () {
  for (const child of running) {
    try { child.kill('SIGKILL') } catch {}
  }
}
process.on('exit', killAll)
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: stopping the benchmark's processes\n`)
    killAll()
    process.exit(130)
  })
}

/**
 * The `school-data` command of the project at `projectDir`, as the database's owner at `ownerUrl`:
 * `cli(args, input)` runs it and answers the last line it printed (a created record's id), or
 * throws with what it said on standard error. `env` and `bin` are what it runs with, for a command
 * to be timed as a process of its own.
 */
export function schoolDataCli (projectDir, ownerUrl) {
  const env = { PATH: process.env.PATH, DATABASE_URL: ownerUrl, LOG_LEVEL: 'silent' }
  const bin = join(projectDir, 'bin', 'school-data.js')
  const cli = (args, input) => {
    const run = spawnSync(process.execPath, [bin, ...args], { env, input, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    if (run.status !== 0) throw new Error(`school-data ${args.join(' ')}: ${run.stderr}`)
    return run.stdout.trim().split('\n').at(-1)
  }
  return { cli, env, bin }
}

export async function freePort () {
  return await new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/**
 * Starts `node args...` with `env`; keeps the last lines of its output for error messages and
 * passes warnings through to stderr with a prefix (at most `echoLines` of them).
 */
export function startNode (name, args, { cwd, env, echoLines = 20 }) {
  const startedAt = performance.now()
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(child)
  const tail = []
  let echoed = 0
  const onData = (data) => {
    for (const line of data.toString().split('\n')) {
      if (line === '') continue
      tail.push(line)
      if (tail.length > 40) tail.shift()
      if (echoed++ < echoLines) process.stderr.write(`  [${name}] ${line.slice(0, 400)}\n`)
    }
  }
  child.stdout.on('data', onData)
  child.stderr.on('data', onData)
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      running.delete(child)
      resolve({ code, signal })
    })
  })
  return { name, child, pid: child.pid, startedAt, exited, tail }
}

export async function stopNode (proc, graceMs = 10_000) {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return await proc.exited
  proc.child.kill('SIGTERM')
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs)
  const result = await proc.exited
  clearTimeout(timer)
  return result
}

function getStatus (port, path) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
    })
    req.on('error', () => resolve(0))
    req.setTimeout(2_000, () => { req.destroy(); resolve(0) })
  })
}

/** Polls GET /ready every 10 ms; returns the milliseconds from the process's start to the first 200. */
export async function waitReady (proc, port, timeoutMs = 60_000) {
  let exited = null
  proc.exited.then((e) => { exited = e })
  while (performance.now() - proc.startedAt < timeoutMs) {
    if (exited !== null) {
      throw new Error(`${proc.name} exited (${exited.code ?? exited.signal}) before it was ready:\n${proc.tail.join('\n')}`)
    }
    if (await getStatus(port, '/ready') === 200) return performance.now() - proc.startedAt
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`${proc.name} was not ready after ${timeoutMs} ms:\n${proc.tail.join('\n')}`)
}

const CLOCK_TICKS = 100 // USER_HZ on Linux

function procStatus (pid) {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN)
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') }
  } catch {
    return null
  }
}

export function procCpuSeconds (pid) {
  try {
    // Fields after the command name (which may hold spaces): utime is the 12th, stime the 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
  } catch {
    return NaN
  }
}

const BACKEND_TITLE = /^postgres: (?:\S+: )?(\S+) (\S+) /

/**
 * CPU seconds of each local PostgreSQL backend serving `database` (found by its process title), by
 * pid; null when there is no /proc to read.
 */
export function postgresCpuByPid (database) {
  let pids
  try {
    pids = readdirSync('/proc').filter((name) => /^[0-9]+$/.test(name))
  } catch {
    return null
  }
  const cpu = new Map()
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      if (!stat.includes('(postgres)')) continue
      const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')
      // `postgres: [CLUSTER: ]USER DATABASE ...`; Debian names the cluster (`15/main:`).
      if (BACKEND_TITLE.exec(title)?.[2] !== database) continue
      const fields = stat.split(') ')[1].split(' ')
      cpu.set(pid, (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS)
    } catch {}
  }
  return cpu
}

/**
 * CPU seconds the backends used between two readings: backends started since count from zero;
 * backends that ended in between (a pool closing idle connections) are left out, as their last
 * figures are gone. NaN when no backend was seen (a remote server).
 */
function postgresCpuBetween (before, after) {
  if (before === null || after === null || (before.size === 0 && after.size === 0)) return NaN
  let total = 0
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0)
  return total
}

function machineCpu () {
  try {
    const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/)
    const [user, nice, system, idle, iowait, irq, softirq] = values.map(Number)
    // Interrupt time counts as busy: Linux also charges it to the process it interrupted. Time
    // stolen by the hypervisor is neither busy nor idle for us.
    const busy = user + nice + system + irq + softirq
    return { total: busy + idle + iowait, busy }
  } catch {
    return null
  }
}

/**
 * Waits until the machine is quiet (at most `maxCores` busy over half a second) or `budgetMs`
 * has passed; returns the milliseconds waited. Other programs' load skews every figure.
 */
export async function waitForQuiet (maxCores, budgetMs, onBusy) {
  const start = performance.now()
  for (;;) {
    const a = machineCpu()
    await new Promise((resolve) => setTimeout(resolve, 500))
    const b = machineCpu()
    if (a === null || b === null) return 0
    const busy = (b.busy - a.busy) / (b.total - a.total) * os.cpus().length
    const waited = performance.now() - start
    if (busy <= maxCores || waited >= budgetMs) return waited
    onBusy(busy)
  }
}

function psRss (pid) {
  return new Promise((resolve) => {
    execFile('ps', ['-o', 'rss=', '-p', String(pid)], (err, stdout) => resolve(err ? NaN : Number(stdout.trim())))
  })
}

/**
 * Samples a process's resident memory every 100 ms (from /proc, or `ps` elsewhere). `window()`
 * starts a measurement window; its `end()` gives the peak RSS, the process's CPU use, that of the
 * local PostgreSQL backends of `database`, and the machine's during the window.
 */
export function watchProcess (pid, database) {
  const samples = [] // [time, rss kB]
  let hwm = NaN
  const useProc = procStatus(pid) !== null
  const sample = async () => {
    if (useProc) {
      const status = procStatus(pid)
      if (status === null) return
      samples.push([performance.now(), status.rss])
      hwm = status.hwm
    } else {
      samples.push([performance.now(), await psRss(pid)])
    }
  }
  const timer = setInterval(sample, 100)
  sample()
  return {
    window () {
      const t0 = performance.now()
      const cpu0 = procCpuSeconds(pid)
      const machine0 = machineCpu()
      const postgres0 = postgresCpuByPid(database)
      return {
        end () {
          sample()
          const t1 = performance.now()
          const peakKb = Math.max(...samples.filter(([t]) => t >= t0 - 100 && t <= t1).map(([, kb]) => kb))
          const machine1 = machineCpu()
          const wall = (t1 - t0) / 1000
          return {
            peakRssMb: peakKb / 1024,
            cpuCores: (procCpuSeconds(pid) - cpu0) / wall,
            postgresCores: postgresCpuBetween(postgres0, postgresCpuByPid(database)) / wall,
            machineBusy: machine0 && machine1 ? (machine1.busy - machine0.busy) / (machine1.total - machine0.total) : NaN,
            wallSeconds: wall
          }
        }
      }
    },
    /** Peak RSS over the whole life so far (VmHWM, or the highest sample). */
    peakRssMb () {
      sample()
      const sampled = Math.max(...samples.map(([, kb]) => kb))
      return (Number.isFinite(hwm) ? Math.max(hwm, sampled) : sampled) / 1024
    },
    stop () { clearInterval(timer) }
  }
}

/**
 * The environment of a bench service process: production mode, `databaseUrlValue`, the port, the
 * limits raised above the load (`pool`: the pool-size variable and size, or variable null).
 */
export function serviceEnv (mode, databaseUrlValue, port, jwtSecret, pool, extra = {}) {
  const env = { ...process.env }
  for (const key of ['DATABASE_URL', 'DATA_DIR', 'ACCESS_TOKEN_TTL', 'REFRESH_TOKEN_TTL']) delete env[key]
  Object.assign(env, {
    SCHOOL_DATA_ENV: mode,
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrlValue,
    JWT_SECRET: jwtSecret,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    // One address and one user per school carry the whole load: the limits stay on (their cost is
    // in the figures) but above it; every bench login succeeds, many at once per account.
    RATE_LIMIT_USER_PER_MINUTE: '100000000',
    RATE_LIMIT_CLIENT_PER_MINUTE: '100000000',
    RATE_LIMIT_SCHOOL_PER_MINUTE: '100000000',
    RATE_LIMIT_ADDRESS_PER_MINUTE: '100000000',
    LOGIN_FAILURES_PER_ACCOUNT: '1000',
    LOGIN_FAILURES_PER_ADDRESS: '100000',
    // No load balancer to drain from between workloads.
    SHUTDOWN_DRAIN_MS: '0'
  })
  if (pool.variable !== null) env[pool.variable] = String(pool.size)
  return Object.assign(env, extra)
}

/** The response cache off: every request reaches GraphQL, Prisma and PostgreSQL. */
export const UNCACHED = { RESPONSE_CACHE_TTL: '0' }
