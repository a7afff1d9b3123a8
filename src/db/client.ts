// The database the service runs on: the PostgreSQL server of DATABASE_URL (with its read replicas),
// or the embedded PGlite under the data folder, opened by open.ts. Both run the same migrations and
// the same SQL; what the rest of the service gets is the same Database.
import { randomUUID } from 'node:crypto'
import type { PrismaClient } from '../generated/prisma/client.js'
import { TENANT_TABLES } from './data-model.js'
import { applyMigrations, pendingMigrations, type MigrationTarget } from './migrations/index.js'
import { embeddedNotifications, postgresNotifications, type Notifications } from './notifications.js'
import { embeddedClient, openEmbedded, openPostgresClient, PendingMigrationsError } from './open.js'
import { openReplicas, type Replicas, type ReplicaStatus } from './replicas.js'
import type { Reach } from './reach.js'
import { schoolClientCache, type SchoolDb } from './school-client.js'
import type { TeacherRooms } from './teacher-rooms.js'
import { outsideSchoolSession, schoolSession } from './school-session.js'

export interface Database {
  readonly kind: 'postgresql' | 'embedded'
  /** Unscoped: for authentication and administration only, never for resolvers. */
  readonly prisma: PrismaClient
  readonly migrationTarget: MigrationTarget
  /**
   * Whether PostgreSQL's row-level security applies to the service's connections (wall 2): false
   * when the role connected is a superuser, has BYPASSRLS or owns the tenant tables.
   */
  readonly rowSecurity: boolean
  /**
   * Whether the access audit is append-only for the role connected: it may insert, but neither
   * read, change nor delete (docs/running/database-roles.md). False for a role that bypasses row security.
   */
  readonly auditAppendOnly: boolean
  /**
   * Whether the server is a Citus coordinator (the citus extension is installed): a school's
   * statements then set the school in the form Citus passes on to its workers.
   */
  readonly citus: boolean
  /** The read replicas (DATABASE_REPLICA_URLS) and whether each gets reads now; empty without. */
  replicaStatus (): ReplicaStatus[]
  /**
   * The client confined to one school and, for a teacher or a client with limited scopes, to the
   * caller's reach (school-client.ts, reach.ts); built once per school and reach, and reused.
   */
  forSchool (schoolId: string, reach?: Reach): SchoolDb
  /** Teachers' classrooms for wall 1, kept while a listener of the schools' changes says to (plugins/database.ts). */
  readonly teacherRooms: TeacherRooms
  ping (): Promise<void>
  /**
   * Rejects unless a school's statement sees its school where the rows are (on Citus, on the
   * workers): a read of a school's rows that cannot see the school would otherwise find nothing.
   */
  checkSchoolSetting (): Promise<void>
  /**
   * Subscribes to a notification channel (PostgreSQL LISTEN, notifications.ts): one connection per
   * channel, which reconnects by itself; `listening` runs on start and after every reconnection.
   */
  subscribe: Notifications['subscribe']
  /** Connections of the PostgreSQL pool (for metrics); null on the embedded database. */
  poolStats (): PoolStats | null
  /**
   * One statement outside any school's session, for the service's own bulk writes (the access
   * audit). On PostgreSQL it goes straight to the pool as a named prepared statement, with none of
   * Prisma's argument serialization (a batch's arrays would otherwise be turned to JSON and back);
   * on the embedded database it goes through Prisma, which orders it among Prisma's transactions.
   */
  runStatement (name: string, sql: string, values: unknown[]): Promise<void>
  close (): Promise<void>
}

export interface PoolStats {
  max: number
  /** Open connections, busy or idle. */
  total: number
  idle: number
  /** Callers waiting for a connection. */
  waiting: number
}

export interface DatabaseOptions {
  /** PostgreSQL server; without it the embedded PGlite is used. */
  url?: string | undefined
  /** Folder of the embedded database; undefined means in memory (tests). */
  dataDir?: string | undefined
  /**
   * The embedded database's starting contents: a dump of another (PGlite's `dumpDataDir`), e.g. one
   * already migrated, which the tests copy instead of migrating a database each.
   */
  loadDataDir?: Blob | undefined
  /** Apply pending migrations on open (the embedded default does). */
  migrate?: boolean
  /** Connections in the pool (PostgreSQL only). */
  poolSize?: number
  /** Milliseconds to wait for a connection, new or from a full pool (PostgreSQL only; default 5000). */
  connectTimeoutMs?: number
  /** PostgreSQL statement_timeout of the pool's connections (default none; PGlite has no such bound). */
  statementTimeoutMs?: number
  /**
   * Embedded only: run as the unprivileged role `school_data_service`, so that row-level security
   * applies as it does on a server (default). Off only in tests that take wall 2 away.
   */
  serviceRole?: boolean
  /** The school client's filters (wall 1); off only in tests that take wall 1 away. */
  tenantFilter?: boolean
  /** PostgreSQL streaming replicas of `url` that serve tenant reads (replicas.ts). */
  replicaUrls?: readonly string[] | undefined
  /** How often a replica's replay position is polled (ms). */
  replicaPollMs?: number
  /** Where the replicas' warnings go (the app's logger). */
  warn?: (message: string, err?: unknown) => void
}

// Whether the connected role is subject to row-level security on every tenant table.
const ROW_SECURITY_CHECK = `
  SELECT NOT (r.rolsuper OR r.rolbypassrls) AND NOT EXISTS (
    SELECT 1 FROM pg_class c
    WHERE c.oid = ANY (ARRAY[${TENANT_TABLES.map((t) => `to_regclass('${t}')`).join(', ')}])
      AND (NOT c.relrowsecurity OR NOT c.relforcerowsecurity OR pg_has_role(current_user, c.relowner, 'USAGE'))
  ) AS enforced
  FROM pg_roles r WHERE r.rolname = current_user`

// Whether the connected role may only add to the access audit (the default privileges of "Database
// roles" also grant SELECT, UPDATE and DELETE, which the REVOKE of that section takes back).
const AUDIT_APPEND_ONLY_CHECK = `
  SELECT to_regclass('access_audit') IS NOT NULL
    AND NOT (has_table_privilege('access_audit', 'SELECT') OR has_table_privilege('access_audit', 'UPDATE')
      OR has_table_privilege('access_audit', 'DELETE')) AS append_only`

// A read of a school's rows that fails, rather than finding nothing, where the school's setting does
// not reach the rows: an unset setting reads '' (or NULL), which is not a UUID. It fails whether the
// school has rows or not: PostgreSQL works out the compared value when it plans the statement (to
// estimate how many rows match), and plans it where it runs (on a Citus worker, for a distributed
// table). Exported for the tests.
export const SCHOOL_SETTING_PROBE = `SELECT count(*)::int AS n FROM "students"
  WHERE "school_id" = $1::uuid AND "school_id" = coalesce(current_setting('app.school_id', true), '')::uuid`

export async function openDatabase (options: DatabaseOptions): Promise<Database> {
  if (options.url !== undefined) {
    const target: MigrationTarget = { url: options.url }
    const poolSize = options.poolSize ?? 10
    const connectTimeoutMs = options.connectTimeoutMs ?? 5_000
    // A school's statement is sent with its school by the pool itself, in one round trip.
    const { prisma, pool } = openPostgresClient({ url: options.url, poolSize, connectTimeoutMs, statementTimeoutMs: options.statementTimeoutMs })
    // Prisma loads and compiles its query compiler (WebAssembly) while the migrations are read.
    const [migrations, connected, detected] = await Promise.allSettled([pendingMigrations(target), prisma.$connect(), pool.detect()])
    try {
      // The migrations' error first: it names the database and what failed.
      if (migrations.status === 'rejected') throw migrations.reason
      if (connected.status === 'rejected') throw connected.reason
      if (detected.status === 'rejected') throw detected.reason
      const pending = migrations.value
      if (options.migrate === true) {
        if (pending.length > 0) await applyMigrations(target)
      } else if (pending.length > 0) {
        throw new PendingMigrationsError(pending)
      }
    } catch (err) {
      await prisma.$disconnect()
      throw err
    }
    const notifications = postgresNotifications(options.url)
    let replicas: Replicas | undefined
    if (options.replicaUrls !== undefined && options.replicaUrls.length > 0) {
      try {
        replicas = await openReplicas({
          urls: options.replicaUrls,
          poolSize,
          connectTimeoutMs,
          statementTimeoutMs: options.statementTimeoutMs,
          pollMs: options.replicaPollMs,
          primary: prisma,
          notifications,
          warn: options.warn ?? (() => {})
        })
      } catch (err) {
        await notifications.close()
        await prisma.$disconnect()
        throw err
      }
    }
    const { pool: pgPool } = pool
    return await wrap('postgresql', prisma, target, options, {
      citus: pool.citus,
      notifications,
      replicas,
      poolStats: () => ({ max: pgPool.options.max, total: pgPool.totalCount, idle: pgPool.idleCount, waiting: pgPool.waitingCount }),
      runStatement: async (name, sql, values) => {
        // Straight to the pool, never through a school's session.
        await pgPool.query({ name, text: sql, values })
      },
      close: async () => {}
    })
  }

  const embedded = await openEmbedded(options)
  const prisma = await embeddedClient(embedded.pglite)
  return await wrap('embedded', prisma, { pglite: embedded.pglite }, options, {
    notifications: embeddedNotifications(embedded.pglite),
    close: async () => { await embedded.close() }
  })
}

async function wrap (
  kind: Database['kind'],
  prisma: PrismaClient,
  migrationTarget: MigrationTarget,
  options: DatabaseOptions,
  driver: {
    notifications: Notifications
    close: () => Promise<void>
    poolStats?: () => PoolStats
    runStatement?: Database['runStatement']
    replicas?: Replicas | undefined
    citus?: boolean
  }
): Promise<Database> {
  const closeDriver = driver.close
  let rowSecurity: boolean
  let auditAppendOnly: boolean
  try {
    const [row] = await prisma.$queryRawUnsafe<Array<{ enforced: boolean | null }>>(ROW_SECURITY_CHECK)
    rowSecurity = row?.enforced === true
    const [audit] = await prisma.$queryRawUnsafe<Array<{ append_only: boolean | null }>>(AUDIT_APPEND_ONLY_CHECK)
    auditAppendOnly = audit?.append_only === true
  } catch (err) {
    await driver.notifications.close()
    await prisma.$disconnect()
    await closeDriver()
    throw err
  }
  const schools = schoolClientCache(prisma, { filter: options.tenantFilter !== false, reads: driver.replicas, citus: driver.citus === true })
  return {
    kind,
    prisma,
    migrationTarget,
    rowSecurity,
    auditAppendOnly,
    citus: driver.citus === true,
    replicaStatus: () => driver.replicas?.status() ?? [],
    forSchool: (schoolId, reach) => schools.forSchool(schoolId, reach),
    teacherRooms: schools.rooms,
    subscribe: (channel, subscriber, handlers) => driver.notifications.subscribe(channel, subscriber, handlers),
    poolStats: () => driver.poolStats?.() ?? null,
    runStatement: driver.runStatement ?? (async (_name, sql, values) => {
      await outsideSchoolSession(async () => await prisma.$executeRawUnsafe(sql, ...values))
    }),
    async ping () {
      await prisma.$queryRaw`SELECT 1`
    },
    async checkSchoolSetting () {
      const probe = randomUUID()
      await schoolSession.run({ schoolId: probe }, async () => await prisma.$queryRawUnsafe(SCHOOL_SETTING_PROBE, probe))
    },
    async close () {
      schools.clear()
      await driver.replicas?.close()
      await driver.notifications.close()
      await prisma.$disconnect()
      await closeDriver()
    }
  }
}
