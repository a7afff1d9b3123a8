// Opening a database, in one place. A PostgreSQL server's client is its pool, the driver adapter
// (with the school session's wrapper) and the Prisma client over them: the primary's (client.ts)
// and each replica's (replicas.ts). The embedded PGlite is locked, opened, migrated and switched to
// the service role here: for the service and the CLI (client.ts) and for the import's one raw
// connection (openRawConnection), which sends its bulk statements straight through pg or PGlite.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { PGlite } from '@electric-sql/pglite'
import { PrismaPg } from '@prisma/adapter-pg'
import { LRUCache } from 'lru-cache'
import pg from 'pg'
import { PrismaClient } from '../generated/prisma/client.js'
import { lockDataDir } from './embedded-lock.js'
import { applyMigrations, pendingMigrations } from './migrations/index.js'
import { sessionAdapter } from './school-session.js'
import { CITUS_CHECK, openSessionPool, type SessionPool } from './session-pool.js'

/** The role the embedded database runs the service as; a server's role is the operator's choice. */
export const EMBEDDED_SERVICE_ROLE = 'school_data_service'

export class PendingMigrationsError extends Error {
  override name = 'PendingMigrationsError'

  constructor (pending: readonly string[]) {
    super(`The database has ${pending.length} pending migration(s) (${pending.join(', ')}): run \`school-data migrate\` first`)
  }
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

export interface PostgresClientOptions {
  url: string
  /** Connections in the pool. */
  poolSize: number
  /** Milliseconds to wait for a connection, new or from a full pool. */
  connectTimeoutMs: number
  /** PostgreSQL's statement_timeout of the pool's connections (0 or undefined: none). */
  statementTimeoutMs?: number | undefined
}

export interface PostgresClient {
  prisma: PrismaClient
  /** The pool under it (session-pool.ts): statistics, statements outside any school, Citus detection. */
  pool: SessionPool
}

/**
 * The Prisma client of a PostgreSQL server: a pool that sends a school's statement with its school
 * in one round trip (session-pool.ts), PrismaPg over it with named statements, and the school
 * session's wrapper around PrismaPg (school-session.ts). Nothing is sent until it is used.
 */
export function openPostgresClient (options: PostgresClientOptions): PostgresClient {
  const pool = openSessionPool({
    connectionString: options.url,
    max: options.poolSize,
    // Fail fast instead of queueing forever when the server is gone or every connection is busy.
    connectionTimeoutMillis: options.connectTimeoutMs,
    // Sent at connection start: a runaway statement is cancelled by the server itself.
    ...(options.statementTimeoutMs !== undefined && options.statementTimeoutMs > 0 && { statement_timeout: options.statementTimeoutMs })
  })
  const adapter = sessionAdapter(
    new PrismaPg(pool.forPrisma, { disposeExternalPool: true, statementNameGenerator: preparedStatements() }),
    { driverSetsSchool: true, citus: () => pool.citus })
  return { prisma: new PrismaClient({ adapter }), pool }
}

export interface EmbeddedOptions {
  /** Folder of the embedded database; undefined means in memory (tests). */
  dataDir?: string | undefined
  /** Its starting contents: a dump of another (PGlite's `dumpDataDir`), e.g. one already migrated. */
  loadDataDir?: Blob | undefined
  /** Apply pending migrations (default). */
  migrate?: boolean
  /** Run as the unprivileged role `school_data_service`, under row-level security (default). */
  serviceRole?: boolean
}

export interface Embedded {
  readonly pglite: PGlite
  /** Closes the database and releases the folder's lock. */
  close (): Promise<void>
}

/** The embedded database, locked for this process, opened, migrated and (by default) run as the service role. */
export async function openEmbedded (options: EmbeddedOptions): Promise<Embedded> {
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
  const opened = pglite
  return {
    pglite: opened,
    async close () {
      await opened.close()
      unlock()
    }
  }
}

/** The Prisma client of the embedded database, with the school session's wrapper (school-session.ts). */
export async function embeddedClient (pglite: PGlite): Promise<PrismaClient> {
  const { PrismaPGlite } = await import('pglite-prisma-adapter')
  return new PrismaClient({ adapter: sessionAdapter(new PrismaPGlite(pglite), { driverSetsSchool: false }) })
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

/** One connection, without Prisma: statements and their rows as PostgreSQL sends them. */
export interface RawConnection {
  /** Whether the server is a Citus coordinator. */
  readonly citus: boolean
  query <R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>
  close (): Promise<void>
}

export interface RawConnectionOptions {
  /** PostgreSQL server, migrated already; undefined means the embedded database under dataDir (migrated on open). */
  url: string | undefined
  dataDir: string
  /** The server is a Citus coordinator; asked of the server when not given. */
  citus?: boolean | undefined
}

/**
 * One connection for bulk statements (the import): to the server of `url` as its role, or to the
 * embedded database as its owner (the import sets the school itself; it is the only user of the
 * folder while it runs).
 */
export async function openRawConnection (options: RawConnectionOptions): Promise<RawConnection> {
  if (options.url !== undefined) {
    const pending = await pendingMigrations({ url: options.url })
    if (pending.length > 0) throw new PendingMigrationsError(pending)
    const client = new pg.Client({ connectionString: options.url })
    await client.connect()
    try {
      const citus = options.citus ?? (await client.query<{ citus: boolean }>(CITUS_CHECK)).rows[0]?.citus === true
      return {
        citus,
        query: async <R>(text: string, params?: unknown[]) => (await client.query<R & pg.QueryResultRow>(text, params)).rows,
        close: async () => { await client.end() }
      }
    } catch (err) {
      await client.end().catch(() => {})
      throw err
    }
  }
  const embedded = await openEmbedded({ dataDir: options.dataDir, migrate: true, serviceRole: false })
  return {
    citus: false,
    query: async <R>(text: string, params?: unknown[]) => (await embedded.pglite.query<R>(text, params)).rows,
    close: async () => { await embedded.close() }
  }
}
