// Driver adapter factories for the schema engine: PostgreSQL through @prisma/adapter-pg, and the
// embedded PGlite. Each mends one defect of the published adapter (see the comments), with no
// change to how the application's own Prisma client connects.
import { PGlite } from '@electric-sql/pglite'
import { PrismaPg } from '@prisma/adapter-pg'
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils'
import pg from 'pg'
import { PrismaPGlite } from 'pglite-prisma-adapter'

const CHAR_OID = 18 // PostgreSQL's internal one-byte "char" type, used by the system catalogs
const TEXT_OID = 25

/**
 * @prisma/adapter-pg refuses result columns of type "char" (`UnsupportedNativeDataType`), and the
 * engine reads such columns when it describes a database (pg_class.relkind, pg_constraint.contype).
 * They carry one ASCII character, so reporting them as text is exact.
 */
function reportCharAsText<R> (result: R): R {
  for (const one of Array.isArray(result) ? result : [result]) {
    const fields = (one as { fields?: Array<{ dataTypeID: number }> } | undefined)?.fields
    for (const field of fields ?? []) {
      if (field.dataTypeID === CHAR_OID) field.dataTypeID = TEXT_OID
    }
  }
  return result
}

/** A pg client whose results report "char" columns as text; used only for migrations. */
class CatalogClient extends pg.Client {}
const baseQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown
CatalogClient.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const last = args.at(-1)
  if (typeof last === 'function') {
    args[args.length - 1] = (err: unknown, res: unknown) => (last as (e: unknown, r: unknown) => void)(err, err === null || err === undefined ? reportCharAsText(res) : res)
    return baseQuery.apply(this, args)
  }
  const result = baseQuery.apply(this, args)
  return result instanceof Promise ? result.then(reportCharAsText) : result
} as typeof pg.Client.prototype.query

function connectionConfig (url: string, database?: string): pg.PoolConfig {
  const parsed = new URL(url)
  if (database !== undefined) parsed.pathname = '/' + encodeURIComponent(database)
  // One connection is all the engine uses; a second covers the rare overlap.
  return { connectionString: parsed.toString(), max: 2, Client: CatalogClient }
}

function quoteIdent (name: string): string {
  return '"' + name.replaceAll('"', '""') + '"'
}

/**
 * The schema engine's factory for a PostgreSQL server. The shadow database (where the engine
 * replays the migrations to compare them with the schema) is created by this factory, reached
 * at its own address, and dropped only after its pool has closed: @prisma/adapter-pg 7.10 drops
 * it while its pool still holds a connection and, given a connection string, points the shadow
 * pool at the main database instead.
 */
export class PostgresMigrationFactory implements SqlMigrationAwareDriverAdapterFactory {
  readonly provider = 'postgres' as const
  readonly adapterName = '@prisma/adapter-pg'

  constructor (private readonly url: string) {}

  async connect (): Promise<SqlDriverAdapter> {
    return await new PrismaPg(new pg.Pool(connectionConfig(this.url)), { disposeExternalPool: true }).connect()
  }

  async connectToShadowDb (): Promise<SqlDriverAdapter> {
    const name = `prisma_migrate_shadow_db_${crypto.randomUUID().replaceAll('-', '')}`
    const admin = new pg.Client({ connectionString: this.url })
    await admin.connect()
    try {
      await admin.query(`CREATE DATABASE ${quoteIdent(name)}`)
    } finally {
      await admin.end()
    }
    const adapter = await new PrismaPg(new pg.Pool(connectionConfig(this.url, name)), { disposeExternalPool: true }).connect()
    const dispose = adapter.dispose.bind(adapter)
    adapter.dispose = async () => {
      await dispose()
      const dropper = new pg.Client({ connectionString: this.url })
      await dropper.connect()
      try {
        await dropper.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`)
      } finally {
        await dropper.end()
      }
    }
    return adapter
  }
}

/**
 * The schema engine's factory for an embedded PGlite. The published adapter's shadow database is
 * a PGlite it never closes, which keeps the process alive; this one closes it on dispose.
 */
export class PGliteMigrationFactory implements SqlMigrationAwareDriverAdapterFactory {
  readonly provider = 'postgres' as const
  readonly adapterName = 'pglite-prisma-adapter'

  constructor (private readonly pglite: PGlite) {}

  async connect (): Promise<SqlDriverAdapter> {
    return await new PrismaPGlite(this.pglite).connect()
  }

  async connectToShadowDb (): Promise<SqlDriverAdapter> {
    const shadow = new PGlite()
    await shadow.waitReady
    const adapter = await new PrismaPGlite(shadow).connect()
    const dispose = adapter.dispose.bind(adapter)
    adapter.dispose = async () => {
      await dispose()
      await shadow.close()
    }
    return adapter
  }
}
