// A PostgreSQL cluster of a test's own (initdb in a temporary folder, a free port), and a
// streaming replica of it (pg_basebackup -R): for what the machine's shared server cannot show,
// such as a replica, or every statement the service sends (log_statement = all).
// Built from the server binaries of the machine's PostgreSQL (pg_config --bindir); run as the
// `postgres` system user when the tests run as root (initdb refuses root).
import { execFile as execFileCb, execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, appendFileSync, chmodSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'

const execFile = promisify(execFileCb)

function binDir (): string | undefined {
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
    if (existsSync(join(dir, 'initdb'))) return dir
  } catch {}
  // Debian keeps the server binaries out of PATH, per major version.
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = execFileSync('ls', [root], { encoding: 'utf8' }).split('\n').filter((v) => /^\d+$/.test(v))
  versions.sort((a, b) => Number(b) - Number(a))
  for (const version of versions) {
    const dir = join(root, version, 'bin')
    if (existsSync(join(dir, 'initdb'))) return dir
  }
  return undefined
}

const bin = binDir()
const asRoot = process.getuid?.() === 0

/** Why a private cluster cannot be made here, or undefined when it can. */
export function clusterUnavailable (): string | undefined {
  if (bin === undefined) return 'no PostgreSQL server binaries (initdb) on this machine'
  if (asRoot && !existsSync('/usr/sbin/runuser') && !existsSync('/sbin/runuser')) return 'running as root without runuser'
  return undefined
}

async function run (command: string, args: string[]): Promise<string> {
  const file = join(bin!, command)
  const { stdout } = asRoot
    ? await execFile('runuser', ['-u', 'postgres', '--', file, ...args], { encoding: 'utf8' })
    : await execFile(file, args, { encoding: 'utf8' })
  return stdout
}

/** A TCP port nothing listens on now. */
export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => { resolve(typeof address === 'object' && address !== null ? address.port : 0) })
    })
  })
}

export interface Cluster {
  port: number
  dataDir: string
  logFile: string
  /** URL of `database` as `user` (default the superuser postgres, trust authentication). */
  url (database?: string, user?: string): string
  /** The server's log so far. */
  log (): string
  stop (): Promise<void>
  start (): Promise<void>
}

export interface ClusterSet {
  primary: Cluster
  replica?: Cluster
  destroy (): Promise<void>
}

function makeCluster (root: string, name: string, port: number): Cluster {
  const dataDir = join(root, name)
  const logFile = join(root, `${name}.log`)
  return {
    port,
    dataDir,
    logFile,
    url: (database = 'postgres', user = 'postgres') => `postgresql://${user}@127.0.0.1:${port}/${database}`,
    log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    async stop () { await run('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', 'stop']) },
    async start () { await run('pg_ctl', ['-D', dataDir, '-l', logFile, '-w', '-t', '60', 'start']) }
  }
}

export interface ClusterOptions {
  /** Log every statement (log_statement = all) to the cluster's log. */
  logStatements?: boolean
  /** Also make a streaming replica on a port of its own. */
  replica?: boolean
}

/** A new primary (and replica), stopped and removed by `destroy`. */
export async function startClusters (options: ClusterOptions = {}): Promise<ClusterSet> {
  const root = mkdtempSync(join(tmpdir(), 'sds-cluster-'))
  chmodSync(root, 0o777)
  if (asRoot) execFileSync('chown', ['postgres', root])
  const primary = makeCluster(root, 'primary', await freePort())
  const started: Cluster[] = []
  const destroy = async (): Promise<void> => {
    for (const cluster of started.reverse()) {
      await run('pg_ctl', ['-D', cluster.dataDir, '-m', 'immediate', '-w', 'stop']).catch(() => {})
    }
    rmSync(root, { recursive: true, force: true })
  }
  try {
    await run('initdb', ['-D', primary.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'])
    appendFileSync(primary.dataDir + '/postgresql.conf', [
      '',
      `port = ${primary.port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${root}'`,
      'wal_level = replica',
      'max_wal_senders = 5',
      'hot_standby = on',
      // A throwaway cluster: durability buys nothing here.
      'fsync = off',
      'synchronous_commit = off',
      'full_page_writes = off',
      options.logStatements === true ? 'log_statement = all' : '',
      ''
    ].join('\n'))
    await primary.start()
    started.push(primary)
    let replica: Cluster | undefined
    if (options.replica === true) {
      replica = makeCluster(root, 'replica', await freePort())
      await run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', replica.dataDir, '-R', '-X', 'stream', '-c', 'fast'])
      // The replica's own port; postgresql.auto.conf (written by -R) wins over postgresql.conf.
      appendFileSync(join(replica.dataDir, 'postgresql.auto.conf'), `port = ${replica.port}\n`)
      await replica.start()
      started.push(replica)
    }
    return { primary, replica, destroy }
  } catch (err) {
    await destroy()
    throw err
  }
}

export async function query<T extends pg.QueryResultRow = pg.QueryResultRow> (url: string, sql: string, values?: unknown[]): Promise<T[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<T>(sql, values)).rows
  } finally {
    await client.end()
  }
}

/** Resolves once the replica has replayed everything the primary has written so far. */
export async function caughtUp (primaryUrl: string, replicaUrl: string): Promise<void> {
  const [{ lsn }] = await query<{ lsn: string }>(primaryUrl, 'SELECT pg_current_wal_lsn()::text AS lsn') as [{ lsn: string }]
  for (let i = 0; i < 600; i++) {
    const [row] = await query<{ done: boolean }>(replicaUrl, 'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done', [lsn])
    if (row?.done === true) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error('the replica did not catch up within 30 s')
}
