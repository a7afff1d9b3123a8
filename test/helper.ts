// Test helpers: each test file runs on a fresh database of its own with the migrations applied,
// on the PostgreSQL server of TEST_DATABASE_URL (or DATABASE_URL) when set, else on an
// in-memory PGlite. Every test creates the schools and users it needs.
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { buildApp } from '../src/app.js'
import type { Config } from '../src/config.js'
import { openDatabase, type Database } from '../src/db/client.js'
import { applyMigrations, migrationsDir } from '../src/db/migrations/index.js'
import { distributeOnCitus } from '../src/admin/citus.js'
import { citusWorkers, createCitusDatabase, createCitusRole, dropCitusDatabase, type CitusNode } from './fixtures/citus.js'

/**
 * Set by test/run.mjs on the PGlite run that goes beside a PostgreSQL run (`npm test` with a
 * server): a subtest whose behaviour does not depend on the database engine (a command's argument
 * and parse errors, what it prints) skips itself there with this reason, the PostgreSQL run
 * having run it. Without a server every subtest runs on PGlite.
 */
export const engineIndependentSkip: string | false = process.env.TEST_BESIDE_POSTGRESQL === '1'
  ? 'engine-independent: runs in the PostgreSQL run beside this one (test/run.mjs)'
  : false

/** Admin URL of the PostgreSQL server tests create their databases on; undefined means PGlite. */
export const serverUrl: string | undefined =
  (process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL) || undefined

export const PASSWORD = 'correct horse battery staple'

export function testConfig (overrides: Partial<Config> = {}): Config {
  return {
    env: 'sandbox',
    host: '127.0.0.1',
    port: 0,
    databaseUrl: undefined,
    databasePoolSize: 10,
    databaseReplicaUrls: [],
    dataDir: '.data-test-unused',
    jwtSecret: 'test-secret-that-is-long-enough-for-hs256-0123456789',
    jwtPreviousSecrets: [],
    trustProxy: false,
    corsOrigins: [],
    accessTokenTtl: 900,
    refreshTokenTtl: 604800,
    logLevel: 'silent',
    // Off unless a test is about it: tests write and read back at once, faster than a notification.
    responseCacheTtl: 0,
    responseCacheMb: 32,
    auditFlushMs: 1000,
    auditBatchSize: 500,
    auditMaxQueue: 100_000,
    metricsToken: undefined,
    shutdownTimeoutMs: 10_000,
    shutdownDrainMs: 0,
    redisUrl: undefined,
    redisKeyPrefix: 'sds-test:',
    // Limits and login throttling off unless a test is about them: tests share one client address.
    rateLimitUserPerMinute: 0,
    rateLimitClientPerMinute: 0,
    rateLimitSchoolPerMinute: 0,
    rateLimitAddressPerMinute: 0,
    rateLimitWritesPerMinute: 0,
    loginFailuresPerAccount: 0,
    loginFailuresPerAddress: 0,
    loginFailureWindow: 900,
    loginLockMax: 900,
    // The production defaults for query and HTTP bounds, except the timing-dependent ones:
    queryMaxDepth: 6,
    queryMaxAliases: 15,
    queryMaxDirectives: 50,
    queryMaxTokens: 1000,
    queryMaxCost: 5000,
    queryMaxBytes: 15_000,
    persistedQueryTtl: 86_400,
    persistedQueryMaxDocuments: 10_000,
    trustedDocuments: undefined,
    bodyLimitBytes: 102_400,
    requestTimeoutMs: 30_000,
    // Generous: a loaded test machine or a test of 1,000 concurrent requests is not an overload.
    handlerTimeoutMs: 120_000,
    databaseConnectTimeoutMs: 5_000,
    databaseStatementTimeoutMs: 5_000,
    // Off unless a test is about it: the embedded database blocks the event loop while it migrates.
    pressureMaxEventLoopDelayMs: 0,
    pressureMaxHeapMb: 0,
    pressureMaxRssMb: 0,
    pressureRetryAfter: 10,
    subscriptionsPerNode: 10_000,
    subscriptionsPerCaller: 20,
    subscriptionMaxBufferedBytes: 1_048_576,
    subscriptionKeepaliveMs: 30_000,
    ...overrides
  }
}

function withDatabase (url: string, database: string, user?: string): string {
  const u = new URL(url)
  u.pathname = '/' + database
  if (user !== undefined) {
    u.username = user
    u.password = ''
  }
  return u.toString()
}

async function admin<T> (run: (client: pg.Client) => Promise<T>, database?: string): Promise<T> {
  const client = new pg.Client({ connectionString: database === undefined ? serverUrl : withDatabase(serverUrl!, database) })
  await client.connect()
  try {
    return await run(client)
  } finally {
    await client.end()
  }
}

/**
 * The role the tests' service connects as on PostgreSQL: neither superuser, owner nor BYPASSRLS,
 * so row-level security applies (docs/running/database-roles.md). Test clusters use trust authentication.
 */
export const SERVICE_ROLE = 'sds_test_service'

/** The grants the README gives the service role, run on each test template after its migrations. */
const SERVICE_GRANTS = `
  GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${SERVICE_ROLE};
  GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${SERVICE_ROLE};
  REVOKE INSERT, UPDATE, DELETE ON _prisma_migrations FROM ${SERVICE_ROLE};
  REVOKE SELECT, UPDATE, DELETE ON access_audit FROM ${SERVICE_ROLE};`

/** What a migrated test database holds: the migrations and the grants, hashed. */
async function migrationsHash (): Promise<string> {
  const hash = createHash('sha256')
  hash.update(SERVICE_GRANTS)
  for (const name of (await readdir(migrationsDir)).sort()) {
    hash.update(name)
    if (!name.endsWith('.toml')) hash.update(await readFile(join(migrationsDir, name, 'migration.sql')))
  }
  return hash.digest('hex').slice(0, 16)
}

/** A template database migrated once per version of the migrations; copies of it are cheap. */
async function templateDatabase (): Promise<string> {
  const template = `sds_template_${await migrationsHash()}`
  await admin(async (client) => {
    // One test file builds it; the others wait on the lock, then find it there.
    await client.query('SELECT pg_advisory_lock(727401)')
    try {
      const role = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [SERVICE_ROLE])
      if (role.rowCount === 0) await client.query(`CREATE ROLE ${SERVICE_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS`)
      const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [template])
      if (rowCount === 0) {
        const building = `${template}_building`
        await client.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`)
        await client.query(`CREATE DATABASE ${building}`)
        await applyMigrations({ url: withDatabase(serverUrl!, building) })
        await admin((db) => db.query(SERVICE_GRANTS), building)
        await client.query(`ALTER DATABASE ${building} RENAME TO ${template}`)
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock(727401)')
    }
  })
  return template
}

/**
 * The embedded database migrated once per version of the migrations, as PGlite dumps it (in
 * node_modules/.cache): each test file loads a copy in a fraction of a second instead of migrating
 * a new one for seconds. Written whole or not at all (a rename), so files running at once at worst
 * each make one.
 */
async function embeddedTemplate (): Promise<Blob> {
  const file = fileURLToPath(new URL(`../node_modules/.cache/school-data-tests/pglite-${await migrationsHash()}.tar`, import.meta.url))
  try {
    return new Blob([await readFile(file)])
  } catch {}
  const db = await openDatabase({ migrate: true, serviceRole: false })
  try {
    const dump = await (db.migrationTarget as { pglite: PGlite }).pglite.dumpDataDir('none')
    await mkdir(dirname(file), { recursive: true })
    const partial = `${file}.${process.pid}`
    await writeFile(partial, Buffer.from(await dump.arrayBuffer()))
    await rename(partial, file)
    return dump
  } finally {
    await db.close()
  }
}

/**
 * The environment a test gives the `school-data` command (test/fixtures/cli.ts): this file's
 * PostgreSQL database, or else a data folder of its own holding an embedded database already
 * migrated (a copy of the template above: the command's first run would otherwise migrate it, for
 * seconds). The folder is removed when the test ends.
 */
export async function cliEnvironment (test: { teardown: (fn: () => unknown) => void }, prefix = 'sds-cli-'): Promise<NodeJS.ProcessEnv & { DATA_DIR: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), prefix))
  test.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  if (serverUrl !== undefined) return { PATH: process.env.PATH, DATA_DIR: dataDir, DATABASE_URL: (await testDatabaseUrl())! }
  const { PGlite } = await import('@electric-sql/pglite')
  const pglite = new PGlite({ dataDir: join(dataDir, 'pglite'), loadDataDir: await embeddedTemplate() })
  await pglite.waitReady
  await pglite.close()
  return { PATH: process.env.PATH, DATA_DIR: dataDir }
}

let cluster: Promise<CitusNode[] | null> | undefined

/**
 * The workers when TEST_DATABASE_URL is a database on a Citus coordinator (with the citus
 * extension and its workers added), else null: the suites then run on the cluster, each test
 * database made on every node, migrated and distributed by the service's own command, as the
 * README sets one up (`npm run test:citus`).
 */
function citusCluster (): Promise<CitusNode[] | null> {
  cluster ??= citusWorkers(serverUrl!)
  return cluster
}

/** Why a test cannot run on the Citus cluster of TEST_DATABASE_URL (`because`), or false when it is not one. */
export async function unlessCitus (because: string): Promise<string | false> {
  return serverUrl !== undefined && (await citusCluster()) !== null ? `not on a Citus cluster: ${because}` : false
}

/** A test database on the cluster: on every node, migrated, granted, then distributed. No template: Citus's metadata does not copy. */
async function citusDatabase (workers: CitusNode[], name: string): Promise<string> {
  await createCitusRole(serverUrl!, workers, SERVICE_ROLE)
  const url = await createCitusDatabase(serverUrl!, workers, name)
  await applyMigrations({ url })
  await admin((db) => db.query(SERVICE_GRANTS), name)
  await distributeOnCitus(url)
  return url
}

export interface TestDatabaseOptions {
  /**
   * `service` (default): the unprivileged service role, under row-level security (wall 2).
   * `owner`: the administrative role, which bypasses row-level security (wall 2 taken away).
   */
  role?: 'service' | 'owner'
  /** Wall 1, the tenant extension's filters (default on). */
  tenantFilter?: boolean
}

export interface TestDatabase extends Database {
  /** The URL of this database for the administrative role (undefined on PGlite). */
  ownerUrl: string | undefined
}

/** A new database with the migrations applied, dropped when the test file ends. */
export async function createTestDatabase (options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const role = options.role ?? 'service'
  if (serverUrl === undefined) {
    const db = await openDatabase({ loadDataDir: await embeddedTemplate(), migrate: true, serviceRole: role === 'service', tenantFilter: options.tenantFilter })
    t.teardown(() => db.close())
    return Object.assign(db, { ownerUrl: undefined })
  }
  const name = `sds_test_${randomBytes(6).toString('hex')}`
  const workers = await citusCluster()
  let ownerUrl: string
  if (workers === null) {
    const template = await templateDatabase()
    await admin((client) => client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`))
    ownerUrl = withDatabase(serverUrl, name)
  } else {
    ownerUrl = await citusDatabase(workers, name)
  }
  const url = role === 'service' ? withDatabase(serverUrl, name, SERVICE_ROLE) : ownerUrl
  // Tests that send a thousand requests at once queue for the pool for seconds on a loaded shared
  // machine; the pool's wait bound itself is tested on databases of its own (bounds, faults).
  const db = await openDatabase({ url, tenantFilter: options.tenantFilter, connectTimeoutMs: 120_000 })
  t.teardown(async () => {
    await db.close()
    if (workers === null) await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
    else await dropCitusDatabase(serverUrl, workers, name)
  })
  return Object.assign(db, { ownerUrl })
}

let shared: Promise<TestDatabase> | undefined

/** The database of this test file (both walls on), created on first use and dropped when the file ends. */
export function testDatabase (): Promise<TestDatabase> {
  shared ??= createTestDatabase()
  return shared
}

/** The URL of this test file's PostgreSQL database as the service role (undefined on PGlite). */
export async function testDatabaseUrl (): Promise<string | undefined> {
  const db = await testDatabase()
  return 'url' in db.migrationTarget ? db.migrationTarget.url : undefined
}

/** An app on this file's database, closed when the test ends; `now` its clock (BuildOptions.now). */
export async function build (
  test: { teardown: (fn: () => unknown) => void },
  overrides: Partial<Config> = {},
  { now }: { now?: () => number } = {}
): Promise<FastifyInstance> {
  const app = await buildApp(testConfig(overrides), { database: await testDatabase(), logger: false, ...(now !== undefined && { now }) })
  test.teardown(() => app.close())
  return app
}

/** A clock that starts at the real time and moves only when the test moves it (build's `now`). */
export function testClock (): { now: () => number, advance: (ms: number) => void } {
  let time = Date.now()
  return { now: () => time, advance: (ms) => { time += ms } }
}

export interface GraphQLResponse {
  statusCode: number
  headers: Record<string, unknown>
  body: {
    data?: Record<string, any> | null
    errors?: Array<{ message: string, locations?: unknown, path?: unknown[], extensions?: Record<string, unknown> }>
  }
}

export async function gql (
  app: FastifyInstance,
  query: string,
  { variables, token, accept }: { variables?: Record<string, unknown>, token?: string, accept?: string } = {}
): Promise<GraphQLResponse> {
  const res = await app.inject({
    method: 'POST',
    url: '/',
    headers: { ...(token !== undefined && { authorization: `Bearer ${token}` }), ...(accept !== undefined && { accept }) },
    payload: { query, variables }
  })
  return { statusCode: res.statusCode, headers: res.headers, body: res.json() }
}

let counter = 0
/** A name no other test of this file uses. */
export function unique (prefix: string): string {
  counter += 1
  return `${prefix}-${process.pid}-${counter}-${randomBytes(3).toString('hex')}`
}

export interface SeededSchool {
  schoolId: string
  username: string
  studentIds: string[]
}

/** A school with a user assigned to it and the given students (name, classroom). */
export async function seedSchool (
  name: string,
  students: Array<[fullName: string, classroom?: string]> = []
): Promise<SeededSchool> {
  const db = await testDatabase()
  const schoolId = await createSchool(db, name)
  const username = unique('user')
  await createUser(db, { username, password: PASSWORD, schoolId })
  const studentIds: string[] = []
  for (const [fullName, classroom] of students) {
    studentIds.push(await createStudent(db, { schoolId, fullName, classroom }))
  }
  return { schoolId, username, studentIds }
}

export const LOGIN = `mutation Login($username: String!, $password: String!) {
  login(username: $username, password: $password) { accessToken refreshToken }
}`

export async function login (app: FastifyInstance, username: string, password = PASSWORD): Promise<{ accessToken: string, refreshToken: string }> {
  const res = await gql(app, LOGIN, { variables: { username, password } })
  if (res.body.data?.login == null) throw new Error(`login failed: ${JSON.stringify(res.body)}`)
  return res.body.data.login as { accessToken: string, refreshToken: string }
}

/** A connection of its own to this file's PostgreSQL database as the service role, closed when the test ends. */
export async function serviceConnection (test: { teardown: (fn: () => unknown) => void }): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: (await testDatabaseUrl())! })
  await client.connect()
  test.teardown(() => client.end())
  return client
}
