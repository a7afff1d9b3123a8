// Wall 2 of tenant isolation, the application's half. Every query of a school's client runs in a
// transaction that first sets `app.school_id` for that transaction only (set_config(..., true));
// the row-level security policies of the tenant tables (migration tenant_walls) then admit that
// school's rows only. The setting never outlives its transaction, so a pooled connection carries
// no school from one request to the next.
//
// The school travels from the tenant extension (src/db/tenant.ts), which runs each operation in
// `schoolSession.run(schoolId, ...)`, down to this driver adapter through an AsyncLocalStorage.
// The extension keeps every operation of a school on the direct path from its call to the
// adapter (see there), so the store seen here is always that operation's school.
//
// Cost, in round trips to PostgreSQL: none. A statement of a school outside a transaction goes out
// in one write with set_config before it and one Sync after both, so that the two run in one
// implicit transaction (PostgreSQL's extended query protocol); a transaction's BEGIN carries
// set_config. On the embedded PGlite (no network) a statement is BEGIN, set_config, the
// statement, COMMIT.
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks'
import type {
  IsolationLevel,
  SqlDriverAdapter,
  SqlDriverAdapterFactory,
  SqlQuery,
  SqlResultSet,
  Transaction
} from '@prisma/driver-adapter-utils'
import pg from 'pg'
import { isUuid } from '../validators.js'

/** The school of the operation being run, set by the tenant extension. */
export const schoolSession = new AsyncLocalStorage<string>()

/** Set by the adapter around one statement of a school that runs outside any transaction. */
const singleStatement = new AsyncLocalStorage<true>()

const COMMIT: SqlQuery = { sql: 'COMMIT', args: [], argTypes: [] }
const ROLLBACK: SqlQuery = { sql: 'ROLLBACK', args: [], argTypes: [] }

function currentSchool (): string | undefined {
  const schoolId = schoolSession.getStore()
  if (schoolId !== undefined && !isUuid(schoolId)) throw new Error('A school id must be a UUID')
  return schoolId
}

function setSchool (schoolId: string): SqlQuery {
  return {
    sql: "SELECT set_config('app.school_id', $1, true)",
    args: [schoolId],
    argTypes: [{ scalarType: 'string', arity: 'scalar' }]
  }
}

// pg's own query class, extended below; its protocol methods are pg's public extension points for
// custom queries ("submittables", as pg-cursor uses them).
interface PgConnection {
  parsedStatements: Record<string, string>
  submittedNamedStatements: Record<string, string>
  parse (message: { text: string, name: string, types: unknown[] }): void
  bind (message: { portal: string, statement: string, values: unknown[], binary?: boolean }): void
  execute (message: { portal: string, rows?: number }): void
}
interface PgQuery {
  prepare (connection: PgConnection): void
  handleDataRow (message: unknown): void
  handleCommandComplete (message: unknown, connection: PgConnection): void
}
const PgQuery = (pg as unknown as { Query: new (config: unknown, values?: unknown, callback?: unknown) => PgQuery }).Query

const SET_SCHOOL_STATEMENT = 'sds_set_school'
const SET_SCHOOL_TEXT = "SELECT set_config('app.school_id', $1, true)"

/**
 * One statement of a school outside a transaction: set_config, then the statement, then one Sync,
 * in a single write. Between two Syncs PostgreSQL runs the statements as one implicit transaction,
 * so the setting holds for the statement and ends with it. set_config's own row and completion
 * are read and dropped; the statement's result is pg's usual one.
 */
class SchoolStatement extends PgQuery {
  private preamble = true

  constructor (config: unknown, values: unknown, callback: unknown, private readonly schoolId: string) {
    super(config, values, callback)
  }

  requiresPreparation (): boolean {
    return true
  }

  override prepare (connection: PgConnection): void {
    if (connection.parsedStatements[SET_SCHOOL_STATEMENT] === undefined &&
      connection.submittedNamedStatements[SET_SCHOOL_STATEMENT] === undefined) {
      connection.parse({ text: SET_SCHOOL_TEXT, name: SET_SCHOOL_STATEMENT, types: [] })
      connection.submittedNamedStatements[SET_SCHOOL_STATEMENT] = SET_SCHOOL_TEXT
    }
    connection.bind({ portal: '', statement: SET_SCHOOL_STATEMENT, values: [this.schoolId] })
    connection.execute({ portal: '' })
    super.prepare(connection)
  }

  override handleDataRow (message: unknown): void {
    if (!this.preamble) super.handleDataRow(message)
  }

  override handleCommandComplete (message: unknown, connection: PgConnection): void {
    if (this.preamble) {
      this.preamble = false
      return
    }
    super.handleCommandComplete(message, connection)
  }
}

/**
 * A pg client that runs a school's statements with the school set: a single statement as a
 * SchoolStatement, and a transaction's `BEGIN` together with set_config (the school is a validated
 * UUID, so it is safe as a literal in the simple query protocol).
 */
export class SchoolSessionClient extends pg.Client {}
const baseQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown
SchoolSessionClient.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const config = args[0] as { text?: unknown, values?: unknown[], name?: unknown, submit?: unknown } | undefined
  const schoolId = currentSchool()
  if (schoolId !== undefined && typeof config === 'object' && config !== null && typeof config.submit !== 'function') {
    if (singleStatement.getStore() === true) {
      const [, values, callback] = args
      return baseQuery.call(this, typeof values === 'function'
        ? new SchoolStatement(config, undefined, values, schoolId)
        : new SchoolStatement(config, values, callback, schoolId))
    }
    if (config.text === 'BEGIN' && config.name === undefined && (config.values === undefined || config.values.length === 0)) {
      args[0] = { ...config, text: `BEGIN; SELECT set_config('app.school_id', '${schoolId}', true)` }
    }
  }
  return baseQuery.apply(this, args)
} as typeof pg.Client.prototype.query

async function finish (tx: Transaction, outcome: 'commit' | 'rollback'): Promise<void> {
  if (tx.options.usePhantomQuery) {
    await (outcome === 'commit' ? tx.commit() : tx.rollback())
    return
  }
  if (outcome === 'commit') {
    try {
      await tx.executeRaw(COMMIT)
    } catch (err) {
      await tx.rollback()
      throw err
    }
    await tx.commit()
    return
  }
  try {
    await tx.executeRaw(ROLLBACK)
  } finally {
    await tx.rollback()
  }
}

class SchoolSessionAdapter implements SqlDriverAdapter {
  readonly provider: SqlDriverAdapter['provider']
  readonly adapterName: string

  constructor (private readonly inner: SqlDriverAdapter, private readonly pgSessions: boolean) {
    this.provider = inner.provider
    this.adapterName = inner.adapterName
  }

  queryRaw (query: SqlQuery): Promise<SqlResultSet> {
    if (currentSchool() === undefined) return this.inner.queryRaw(query)
    if (this.pgSessions) return singleStatement.run(true, () => this.inner.queryRaw(query))
    return this.inSchool((tx) => tx.queryRaw(query))
  }

  executeRaw (query: SqlQuery): Promise<number> {
    if (currentSchool() === undefined) return this.inner.executeRaw(query)
    if (this.pgSessions) return singleStatement.run(true, () => this.inner.executeRaw(query))
    return this.inSchool((tx) => tx.executeRaw(query))
  }

  executeScript (script: string): Promise<void> {
    if (currentSchool() !== undefined) {
      return Promise.reject(new Error('Scripts are not available to a school-scoped client'))
    }
    return this.inner.executeScript(script)
  }

  /** Every transaction begun for a school (Prisma's, or one statement's) sets the school first. */
  async startTransaction (isolationLevel?: IsolationLevel): Promise<Transaction> {
    const schoolId = currentSchool()
    if (schoolId === undefined) return await this.inner.startTransaction(isolationLevel)
    // SET TRANSACTION ISOLATION LEVEL must come first in a transaction: then set the school after it.
    const merged = this.pgSessions && isolationLevel === undefined
    const tx = merged
      ? await this.inner.startTransaction()
      : await schoolSession.exit(() => this.inner.startTransaction(isolationLevel))
    // (A statement inside this transaction goes to the transaction itself, never to queryRaw above.)
    if (!merged) {
      try {
        await tx.queryRaw(setSchool(schoolId))
      } catch (err) {
        await finish(tx, 'rollback').catch(() => {})
        throw err
      }
    }
    return tx
  }

  getConnectionInfo (): ReturnType<NonNullable<SqlDriverAdapter['getConnectionInfo']>> {
    return this.inner.getConnectionInfo?.() ?? { supportsRelationJoins: false }
  }

  dispose (): Promise<void> {
    return this.inner.dispose()
  }

  /** One statement of a school: a short transaction of its own. */
  private async inSchool<T> (work: (tx: Transaction) => Promise<T>): Promise<T> {
    const tx = await this.startTransaction()
    let result: T
    try {
      result = await work(tx)
    } catch (err) {
      await finish(tx, 'rollback').catch(() => {})
      throw err
    }
    await finish(tx, 'commit')
    return result
  }
}

/**
 * Wraps a driver adapter factory so that a school's operations run under row-level security.
 * `pgSessions`: the factory's connections are `SchoolSessionClient`s.
 */
export function withSchoolSessions (factory: SqlDriverAdapterFactory, pgSessions = false): SqlDriverAdapterFactory {
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    async connect () {
      return new SchoolSessionAdapter(await factory.connect(), pgSessions)
    }
  }
}

/**
 * A pg pool whose queued requests resume in their caller's async context. pg-pool hands a freed
 * connection to the next waiting caller from inside `release()`, that is in the context of the
 * request that released it; without this, `pool.query` of one school could run in another's.
 */
export class SchoolSessionPool extends pg.Pool {
  override connect (): Promise<pg.PoolClient>
  override connect (callback: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void): void
  override connect (callback?: (...args: any[]) => void): Promise<pg.PoolClient> | void {
    if (callback === undefined) return super.connect()
    super.connect(AsyncResource.bind(callback))
  }
}
