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
// Cost, in round trips to PostgreSQL: a statement of a school outside a transaction takes three
// (BEGIN with set_config, the statement, COMMIT) where it would take one; a transaction takes one
// more than it would, none on PostgreSQL, where BEGIN carries set_config.
import { AsyncLocalStorage } from 'node:async_hooks'
import type {
  IsolationLevel,
  SqlDriverAdapter,
  SqlDriverAdapterFactory,
  SqlQuery,
  SqlResultSet,
  Transaction
} from '@prisma/driver-adapter-utils'
import pg from 'pg'

/** The school of the operation being run, set by the tenant extension. */
export const schoolSession = new AsyncLocalStorage<string>()

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const COMMIT: SqlQuery = { sql: 'COMMIT', args: [], argTypes: [] }
const ROLLBACK: SqlQuery = { sql: 'ROLLBACK', args: [], argTypes: [] }

function currentSchool (): string | undefined {
  const schoolId = schoolSession.getStore()
  if (schoolId !== undefined && !UUID.test(schoolId)) throw new Error('A school id must be a UUID')
  return schoolId
}

function setSchool (schoolId: string): SqlQuery {
  return {
    sql: "SELECT set_config('app.school_id', $1, true)",
    args: [schoolId],
    argTypes: [{ scalarType: 'string', arity: 'scalar' }]
  }
}

/**
 * A pg client whose `BEGIN`, sent for a school, also sets the school: one round trip instead of
 * two. The school is a validated UUID, so it is safe as a literal in the simple query protocol.
 */
export class SchoolSessionClient extends pg.Client {}
const baseQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown
SchoolSessionClient.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const config = args[0] as { text?: unknown, values?: unknown[], name?: unknown } | undefined
  if (typeof config === 'object' && config !== null && config.text === 'BEGIN' && config.name === undefined &&
    (config.values === undefined || config.values.length === 0)) {
    const schoolId = currentSchool()
    if (schoolId !== undefined) {
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

  constructor (private readonly inner: SqlDriverAdapter, private readonly beginSetsSchool: boolean) {
    this.provider = inner.provider
    this.adapterName = inner.adapterName
  }

  queryRaw (query: SqlQuery): Promise<SqlResultSet> {
    if (currentSchool() === undefined) return this.inner.queryRaw(query)
    return this.inSchool((tx) => tx.queryRaw(query))
  }

  executeRaw (query: SqlQuery): Promise<number> {
    if (currentSchool() === undefined) return this.inner.executeRaw(query)
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
    const merged = this.beginSetsSchool && isolationLevel === undefined
    const tx = merged
      ? await this.inner.startTransaction()
      : await schoolSession.exit(() => this.inner.startTransaction(isolationLevel))
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
 * `beginSetsSchool`: the factory's connections are `SchoolSessionClient`s.
 */
export function withSchoolSessions (factory: SqlDriverAdapterFactory, beginSetsSchool = false): SqlDriverAdapterFactory {
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    async connect () {
      return new SchoolSessionAdapter(await factory.connect(), beginSetsSchool)
    }
  }
}
