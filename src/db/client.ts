// Opens the database the service runs on: the PostgreSQL server of DATABASE_URL, or the
// embedded PGlite under the data folder. Both run the same migrations and the same SQL.
import { randomUUID } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { PGlite } from '@electric-sql/pglite'
import { PrismaPg } from '@prisma/adapter-pg'
import { LRUCache } from 'lru-cache'
import { PrismaClient } from '../generated/prisma/client.js'
import { applyMigrations, pendingMigrations, type MigrationTarget } from './migrations/index.js'
import { lockDataDir } from './embedded-lock.js'
import { listenPostgres, type Listener, type ListenHandlers } from './listen.js'
import { DATA_CHANGED_CHANNEL, openReplicas, type Replicas, type ReplicaStatus } from './replicas.js'
import { openSchoolPool } from './pg-school-pool.js'
import type { Reach } from './reach.js'
import { schoolClients, type SchoolDb } from './school-client.js'
import type { TeacherRooms } from './teacher-rooms.js'
import { outsideSchool, schoolSession, withSchoolSessions } from './school-session.js'

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
   * Notifications of `channel` (PostgreSQL LISTEN), on a connection of their own that reconnects
   * by itself; `listening` runs on start and after every reconnection.
   */
  listen (channel: string, handlers: ListenHandlers): Promise<Listener>
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

/** The role the embedded database runs the service as; a server's role is the operator's choice. */
export const EMBEDDED_SERVICE_ROLE = 'school_data_service'

/** The records' tables, each with school_id in every key (on Citus: distributed by it, co-located with the first). */
export const TENANT_TABLES = ['classrooms', 'students', 'teachers', 'teacher_classrooms', 'changes', 'teacher_changes'] as const

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

export class PendingMigrationsError extends Error {
  override name = 'PendingMigrationsError'
}

/**
 * Names for the statements Prisma sends, so that each connection parses and plans a statement once
 * and then only binds and executes it.
 */
function preparedStatements (): (query: { sql: string, args: unknown[] }) => string {
  const names = new LRUCache<string, string>({ max: 2_000 })
  let next = 0
  return (query) => {
    // SET LOCAL carries its value as a literal (Citus's form): unnamed, not one statement per school.
    if (query.sql.startsWith('SET ')) return ''
    let name = names.get(query.sql)
    if (name === undefined) {
      next += 1
      name = `sds_${next}`
      names.set(query.sql, name)
    }
    return name
  }
}

export async function openDatabase (options: DatabaseOptions): Promise<Database> {
  if (options.url !== undefined) {
    const target: MigrationTarget = { url: options.url }
    const schoolPool = openSchoolPool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      // Fail fast instead of queueing forever when the server is gone or every connection is busy.
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
      // Sent at connection start: a runaway statement is cancelled by the server itself.
      ...(options.statementTimeoutMs !== undefined && options.statementTimeoutMs > 0 && { statement_timeout: options.statementTimeoutMs })
    })
    // A school's statement is sent with its school by the pool itself, in one round trip.
    const { forPrisma, pool } = schoolPool
    const adapter = withSchoolSessions(
      new PrismaPg(forPrisma, { disposeExternalPool: true, statementNameGenerator: preparedStatements() }),
      { driverSetsSchool: true, citus: () => schoolPool.citus })
    const prisma = new PrismaClient({ adapter })
    // Prisma loads and compiles its query compiler (WebAssembly) while the migrations are read.
    const [migrations, connected, detected] = await Promise.allSettled([pendingMigrations(target), prisma.$connect(), schoolPool.detect()])
    try {
      // The migrations' error first: it names the database and what failed.
      if (migrations.status === 'rejected') throw migrations.reason
      if (connected.status === 'rejected') throw connected.reason
      if (detected.status === 'rejected') throw detected.reason
      const pending = migrations.value
      if (options.migrate === true) {
        if (pending.length > 0) await applyMigrations(target)
      } else if (pending.length > 0) {
        throw new PendingMigrationsError(
          `The database has ${pending.length} pending migration(s) (${pending.join(', ')}): run \`school-data migrate\` first`
        )
      }
    } catch (err) {
      await prisma.$disconnect()
      throw err
    }
    const url = options.url
    let replicas: Replicas | undefined
    if (options.replicaUrls !== undefined && options.replicaUrls.length > 0) {
      try {
        replicas = await openReplicas({
          urls: options.replicaUrls,
          poolSize: options.poolSize ?? 10,
          connectTimeoutMs: options.connectTimeoutMs ?? 5_000,
          statementTimeoutMs: options.statementTimeoutMs,
          pollMs: options.replicaPollMs,
          primary: prisma,
          listen: (channel, handlers) => listenPostgres(url, channel, handlers),
          statementNames: preparedStatements,
          warn: options.warn ?? (() => {})
        })
      } catch (err) {
        await prisma.$disconnect()
        throw err
      }
    }
    const router = replicas
    return await wrap('postgresql', prisma, target, options, {
      citus: schoolPool.citus,
      // The replicas hear of a school's change before anyone else on this node (the response cache).
      listen: (channel, handlers) => listenPostgres(url, channel, router !== undefined && channel === DATA_CHANGED_CHANNEL ? router.wrap(handlers) : handlers),
      replicas,
      poolStats: () => ({ max: pool.options.max, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      runStatement: async (name, sql, values) => {
        // Straight to the pool, never through a school's session.
        await pool.query({ name, text: sql, values })
      },
      close: async () => {}
    })
  }

  let dataPath: string | undefined
  let unlock = (): void => {}
  if (options.dataDir !== undefined) {
    dataPath = join(options.dataDir, 'pglite')
    mkdirSync(dataPath, { recursive: true })
    unlock = lockDataDir(options.dataDir)
  }
  let pglite: PGlite | undefined
  try {
    // The embedded database loads only when used.
    const { PGlite } = await import('@electric-sql/pglite')
    pglite = new PGlite({ dataDir: dataPath, ...(options.loadDataDir !== undefined && { loadDataDir: options.loadDataDir }) })
    await pglite.waitReady
    // Starting the schema engine takes seconds; a plain read tells whether it is needed.
    if (options.migrate !== false && (await pendingMigrations({ pglite })).length > 0) {
      await applyMigrations({ pglite })
    }
    if (options.serviceRole !== false) await becomeServiceRole(pglite)
  } catch (err) {
    await pglite?.close()
    unlock()
    throw err
  }
  const { PrismaPGlite } = await import('pglite-prisma-adapter')
  const prisma = new PrismaClient({ adapter: withSchoolSessions(new PrismaPGlite(pglite), { driverSetsSchool: false }) })
  const driver = pglite
  return await wrap('embedded', prisma, { pglite }, options, {
    async listen (channel, handlers) {
      const stop = await driver.listen(channel, (payload) => { handlers.notify(payload) })
      let live = true
      await handlers.listening()
      return {
        get live () { return live },
        async close () {
          live = false
          // Nothing to stop once the database itself is closed.
          if (!driver.closed) await stop().catch(() => {})
        }
      }
    },
    async close () {
      await driver.close()
      unlock()
    }
  })
}

/**
 * The embedded database runs as a superuser; the service drops to an unprivileged role for the
 * rest of the session, so that row-level security applies as it does on a server.
 */
async function becomeServiceRole (pglite: PGlite): Promise<void> {
  const role = EMBEDDED_SERVICE_ROLE
  await pglite.exec(`
    DO $$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${role}') THEN
        CREATE ROLE ${role} NOLOGIN NOSUPERUSER NOBYPASSRLS;
      END IF;
    END $$;
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role};
    GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${role};
    DO $$ BEGIN
      IF to_regclass('_prisma_migrations') IS NOT NULL THEN
        REVOKE INSERT, UPDATE, DELETE ON "_prisma_migrations" FROM ${role};
      END IF;
      -- The access audit is append-only for the service (docs/running/audit.md).
      IF to_regclass('access_audit') IS NOT NULL THEN
        REVOKE SELECT, UPDATE, DELETE ON access_audit FROM ${role};
      END IF;
    END $$;
    SET ROLE ${role};
  `)
}

async function wrap (
  kind: Database['kind'],
  prisma: PrismaClient,
  migrationTarget: MigrationTarget,
  options: DatabaseOptions,
  driver: {
    listen: Database['listen']
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
    await prisma.$disconnect()
    await closeDriver()
    throw err
  }
  const schools = schoolClients(prisma, { filter: options.tenantFilter !== false, reads: driver.replicas, citus: driver.citus === true })
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
    listen: driver.listen,
    poolStats: () => driver.poolStats?.() ?? null,
    runStatement: driver.runStatement ?? (async (_name, sql, values) => {
      await outsideSchool(async () => await prisma.$executeRawUnsafe(sql, ...values))
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
      await prisma.$disconnect()
      await closeDriver()
    }
  }
}
