// Driver adapter factories for the schema engine: PostgreSQL through @prisma/adapter-pg, and the
// embedded PGlite. Each mends defects of the published adapter (see the comments), with no
// change to how the application's own Prisma client connects.
import { PGlite } from '@electric-sql/pglite'
import { PrismaPg } from '@prisma/adapter-pg'
import { DriverAdapterError, type SqlDriverAdapter, type SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils'
import pg from 'pg'
import { PrismaPGlite } from 'pglite-prisma-adapter'

export interface ClosableMigrationFactory extends SqlMigrationAwareDriverAdapterFactory {
  /** Releases whatever the engine's connections left behind. */
  close (): Promise<void>
}

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
// pg's own method, applied below with the client as `this`.
// eslint-disable-next-line @typescript-eslint/unbound-method
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

function connectionConfig (url: string, database?: string, options?: string): pg.PoolConfig {
  const parsed = new URL(url)
  if (database !== undefined) parsed.pathname = '/' + encodeURIComponent(database)
  // One connection is all the engine uses; a second covers the rare overlap.
  return { connectionString: parsed.toString(), max: 2, Client: CatalogClient, ...(options !== undefined && { options }) }
}

/**
 * @prisma/adapter-pg runs a script by splitting it at every semicolon, which breaks a function
 * body or a DO block. PostgreSQL runs a multi-statement simple query whole, as one transaction,
 * as the native engine does; this sends the script that way.
 *
 * On a Citus coordinator whose records are distributed (`statementByStatement`), a script goes as
 * its statements one by one in one transaction block instead: Citus passes a DDL statement on to
 * the shards in the text it was sent in, which must then hold that statement alone ("cannot insert
 * multiple commands into a prepared statement"). The statements are found by PostgreSQL's own
 * parser (libpg-query), so that a function body, a DO block or a comment is never cut.
 */
function runScripts (adapter: SqlDriverAdapter, pool: pg.Pool, statementByStatement: boolean): SqlDriverAdapter {
  adapter.executeScript = async (script: string) => {
    const client = await pool.connect()
    try {
      if (!statementByStatement) {
        await client.query(script)
        return
      }
      const statements = await statementsOf(script)
      await client.query('BEGIN')
      try {
        for (const statement of statements) await client.query(statement)
        await client.query('COMMIT')
      } catch (err) {
        await client.query('ROLLBACK')
        throw err
      }
    } catch (err) {
      const e = err as pg.DatabaseError
      throw new DriverAdapterError({
        kind: 'postgres',
        code: e.code ?? 'N/A',
        severity: e.severity ?? 'ERROR',
        message: e.message,
        detail: e.detail,
        column: e.column,
        hint: e.hint
      })
    } finally {
      client.release()
    }
  }
  return adapter
}

/** The statements of a script, each as its text (the parser's locations are in bytes of UTF-8). */
export async function statementsOf (script: string): Promise<string[]> {
  const { parse } = await import('libpg-query')
  const { stmts } = await parse(script) as { stmts?: Array<{ stmt_location?: number, stmt_len?: number }> }
  const bytes = Buffer.from(script, 'utf8')
  return (stmts ?? []).map(({ stmt_location: start = 0, stmt_len: length = 0 }) =>
    bytes.subarray(start, length === 0 ? bytes.length : start + length).toString('utf8').trim()).filter((text) => text !== '')
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
export class PostgresMigrationFactory implements ClosableMigrationFactory {
  readonly provider = 'postgres' as const
  readonly adapterName = '@prisma/adapter-pg'

  /** Open pools, each with the shadow database it serves (undefined for the main one). */
  private readonly pools = new Map<pg.Pool, string | undefined>()

  /**
   * `citus`: the main database is a Citus coordinator whose records are distributed: its sessions
   * get these settings (PostgreSQL's `options` connection parameter, `-c name=value ...`) and its
   * scripts run statement by statement (runScripts). The shadow database is plain PostgreSQL.
   */
  constructor (private readonly url: string, private readonly citus?: { settings: string }) {}

  /** A pool this factory ends itself: the engine does not always dispose what it connected. */
  private pool (shadowDatabase?: string): pg.Pool {
    const pool = new pg.Pool(connectionConfig(this.url, shadowDatabase, shadowDatabase === undefined ? this.citus?.settings : undefined))
    this.pools.set(pool, shadowDatabase)
    return pool
  }

  private async release (pool: pg.Pool): Promise<void> {
    if (!this.pools.has(pool)) return
    const shadowDatabase = this.pools.get(pool)
    this.pools.delete(pool)
    await pool.end()
    if (shadowDatabase !== undefined) await this.admin(`DROP DATABASE IF EXISTS ${quoteIdent(shadowDatabase)} WITH (FORCE)`)
  }

  private async admin (sql: string): Promise<void> {
    const client = new pg.Client({ connectionString: this.url })
    await client.connect()
    try {
      await client.query(sql)
    } finally {
      await client.end()
    }
  }

  async connect (): Promise<SqlDriverAdapter> {
    const pool = this.pool()
    const adapter = runScripts(await new PrismaPg(pool).connect(), pool, this.citus !== undefined)
    adapter.dispose = async () => { await this.release(pool) }
    return adapter
  }

  /** Ends every connection the engine left open and drops its shadow databases. */
  async close (): Promise<void> {
    await Promise.all([...this.pools.keys()].map(async (pool) => { await this.release(pool) }))
  }

  async connectToShadowDb (): Promise<SqlDriverAdapter> {
    const name = `prisma_migrate_shadow_db_${crypto.randomUUID().replaceAll('-', '')}`
    await this.admin(`CREATE DATABASE ${quoteIdent(name)}`)
    const pool = this.pool(name)
    const adapter = runScripts(await new PrismaPg(pool).connect(), pool, false)
    adapter.dispose = async () => { await this.release(pool) }
    return adapter
  }
}

/**
 * The schema engine's factory for an embedded PGlite. The published adapter's shadow database is
 * a PGlite it never closes, which keeps the process alive; this one closes it on dispose.
 */
export class PGliteMigrationFactory implements ClosableMigrationFactory {
  readonly provider = 'postgres' as const
  readonly adapterName = 'pglite-prisma-adapter'

  private readonly shadows = new Set<PGlite>()

  constructor (private readonly pglite: PGlite) {}

  /** Closes a shadow database the engine did not dispose; the main PGlite stays open. */
  async close (): Promise<void> {
    await Promise.all([...this.shadows].map(async (shadow) => { await this.closeShadow(shadow) }))
  }

  private async closeShadow (shadow: PGlite): Promise<void> {
    if (this.shadows.delete(shadow)) await shadow.close()
  }

  async connect (): Promise<SqlDriverAdapter> {
    return await new PrismaPGlite(this.pglite).connect()
  }

  async connectToShadowDb (): Promise<SqlDriverAdapter> {
    const shadow = new PGlite()
    this.shadows.add(shadow)
    await shadow.waitReady
    const adapter = await new PrismaPGlite(shadow).connect()
    adapter.dispose = async () => { await this.closeShadow(shadow) }
    return adapter
  }
}
