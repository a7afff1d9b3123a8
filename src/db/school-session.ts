// Wall 2 of tenant isolation, the application's half. Every statement of a school's client runs in
// a transaction that first sets `app.school_id` for that transaction only (set_config(..., true) or
// SET LOCAL); the row-level security policies of the tenant tables (migration tenant_walls) then
// admit that school's rows only. The setting never outlives its transaction, so a pooled connection
// carries no school from one request to the next.
//
// Names, one per thing:
// - the school session (`schoolSession`, `SchoolSession`): the school, and a teacher, whose
//   statements are being sent; an AsyncLocalStorage around each operation of a school's client.
// - the school setting: `app.school_id` (and `app.teacher_id`) as PostgreSQL sees it in a
//   transaction; sent as `setConfigQuery` (set_config, a transaction's), `setConfigStatement`
//   (set_config with literals, a single statement's sequence) or as the `setLocalStatements`
//   (SET LOCAL, Citus's).
// - enterSchoolSession: the school client's innermost step (a Prisma client extension) that runs
//   each operation in the school session. The operation is awaited inside run(), so its statements
//   start in the school's async context whether Prisma starts a query when it is created or when
//   it is awaited. findUnique runs as findFirst: Prisma's documented dataloader merges the
//   findUnique calls of one tick into one statement, which cannot hold two schools' settings.
// - sessionAdapter: the wrapper of the driver adapter (SqlDriverAdapterFactory) that reads the
//   school session of each statement and runs the statement in a transaction that sets it (its
//   `ownTransaction`, on PGlite; on PostgreSQL the pool's pipelined one, session-pool.ts). An
//   interactive transaction of a school sets it once, after BEGIN (a SessionTransaction).
// - A mutation's idempotency key (idempotency-keys.ts) is written by its two fixed statements in
//   the write's own interactive transaction, the key taken by its first statement: the adapter
//   refuses them sent on their own, and a SessionTransaction the key taken after another statement.
// - On a Citus coordinator the statements run on the workers too, which see only what Citus
//   passes on: SET LOCAL, once `citus.propagate_set_commands = 'local'` is set in the transaction
//   (set_config is a function call, never passed on). There both paths send that form.
//
// Cost, in round trips to PostgreSQL: none per statement. There the pool itself sends a school's
// single statement (a typed read's or a Prisma query's) and its set_config (setConfigStatement) as
// one sequence of the extended protocol with one Sync, which PostgreSQL runs as one implicit
// transaction: no BEGIN, no COMMIT (session-pool.ts, the one place that relies on how
// @prisma/adapter-pg uses its pool; test/wall2-faults.test.ts injects its faults: the setting
// refused, the statement cancelled, timed out or its connection reset after the setting, a
// PgBouncer in transaction mode between). Any error closes the connection: nothing pg knows of it
// reaches another statement. A transaction (interactive, or a write's with its idempotency key)
// stays pipelined: its set_config goes out with its first statement. On Citus the pool's single
// statement keeps `BEGIN; SET LOCAL ...` and `COMMIT` written around it (SET LOCAL reaches the
// workers only inside a transaction block). On the embedded PGlite (no network) a statement is
// BEGIN, set_config, the statement, COMMIT, through the adapter's own transactions.
import { AsyncLocalStorage } from 'node:async_hooks'
import type {
  IsolationLevel,
  SqlDriverAdapter,
  SqlDriverAdapterFactory,
  SqlQuery,
  SqlResultSet,
  Transaction
} from '@prisma/driver-adapter-utils'
import { Prisma, type PrismaClient } from '../generated/prisma/client.js'
import { isUuid } from '../validators.js'
import { delegateOf, SCALARS } from './data-model.js'
import { isKeyStatement, TAKE_KEY } from './idempotency-keys.js'
import { isPlainObject } from './tenant.js'

/**
 * Whose statements these are: the school, and for a teacher the teacher record (row-level security
 * then confines the statements to the teacher's reach as well, through app.teacher_id).
 */
export interface SchoolSession {
  readonly schoolId: string
  readonly teacherId?: string | undefined
}

/** The session of the operation being run, set by enterSchoolSession. */
export const schoolSession = new AsyncLocalStorage<SchoolSession>()

/** The session of the statement being sent, if any (its ids always UUIDs). */
export function currentSchoolSession (): SchoolSession | undefined {
  const session = schoolSession.getStore()
  if (session !== undefined && (!isUuid(session.schoolId) || (session.teacherId !== undefined && !isUuid(session.teacherId)))) {
    throw new Error('A school or teacher id must be a UUID')
  }
  return session
}

/** Runs `work` outside any school's session (the service's own statements). */
export function outsideSchoolSession<T> (work: () => Promise<T>): Promise<T> {
  return schoolSession.exit(async () => await work())
}

/** `{ schoolId_id: { schoolId, id } }` (a compound unique key) as the plain filter `{ schoolId, id }`. */
function uniqueAsFilter (where: unknown, scalars: ReadonlySet<string> | undefined): Record<string, unknown> {
  const filter: Record<string, unknown> = {}
  for (const [key, value] of Object.entries((where ?? {}) as Record<string, unknown>)) {
    if (scalars?.has(key) !== true && isPlainObject(value) && Object.keys(value).every((k) => scalars?.has(k) === true)) {
      Object.assign(filter, value)
    } else {
      filter[key] = value
    }
  }
  return filter
}

/**
 * Wall 2's step of the school client: every operation of `client` runs in `session`.
 * `client` is the client being extended (its findFirst serves findUnique without running this
 * step twice).
 */
export function enterSchoolSession (session: SchoolSession, client: PrismaClient) {
  // (The ids are checked to be UUIDs where they are sent: currentSchoolSession().)
  return Prisma.defineExtension({
    name: 'enter-school-session',
    query: {
      $allOperations ({ model, operation, args, query }) {
        if (model !== undefined && (operation === 'findUnique' || operation === 'findUniqueOrThrow')) {
          const delegate = delegateOf(client, model)
          const findFirst = operation === 'findUnique' ? delegate.findFirst! : delegate.findFirstOrThrow!
          const where = uniqueAsFilter((args as { where?: unknown }).where, SCALARS.get(model))
          return schoolSession.run(session, async () => await findFirst({ ...args, where }))
        }
        return schoolSession.run(session, async (): Promise<unknown> => await query(args))
      }
    }
  })
}

const COMMIT: SqlQuery = { sql: 'COMMIT', args: [], argTypes: [] }
const ROLLBACK: SqlQuery = { sql: 'ROLLBACK', args: [], argTypes: [] }

function setConfigQuery ({ schoolId, teacherId }: SchoolSession): SqlQuery {
  if (teacherId === undefined) {
    return { sql: "SELECT set_config('app.school_id', $1, true)", args: [schoolId], argTypes: [{ scalarType: 'string', arity: 'scalar' }] }
  }
  return {
    sql: "SELECT set_config('app.school_id', $1, true), set_config('app.teacher_id', $2, true)",
    args: [schoolId, teacherId],
    argTypes: [{ scalarType: 'string', arity: 'scalar' }, { scalarType: 'string', arity: 'scalar' }]
  }
}

/**
 * The SET LOCAL statements of a school's session, in order: on a Citus coordinator first the one
 * that tells Citus to pass the transaction's SET LOCALs on to the workers (set_config, a function
 * call, is never passed on). The one source of this form, for the pool's single statements on
 * Citus (session-pool.ts), interactive transactions on Citus (below) and the import. The ids must be
 * validated UUIDs (currentSchoolSession, the import's check): they go in as literals.
 */
export function setLocalStatements ({ schoolId, teacherId }: SchoolSession, citus: boolean): string[] {
  return [
    ...(citus ? ["SET LOCAL citus.propagate_set_commands = 'local'"] : []),
    `SET LOCAL app.school_id = '${schoolId}'`,
    ...(teacherId === undefined ? [] : [`SET LOCAL app.teacher_id = '${teacherId}'`])
  ]
}

/**
 * The setting of a school's session as one statement that sets it for the transaction only, for a
 * statement sent outside a transaction block (session-pool.ts, one extended-protocol sequence):
 * `set_config(..., true)`, which holds to the end of the implicit transaction, where SET LOCAL
 * would too but with a WARNING ("SET LOCAL can only be used in transaction blocks") in the answer
 * and the server's log on every statement. The ids must be validated UUIDs
 * (currentSchoolSession): they go in as literals (an unnamed statement: nothing kept per school).
 */
export function setConfigStatement ({ schoolId, teacherId }: SchoolSession): string {
  return teacherId === undefined
    ? `SELECT set_config('app.school_id', '${schoolId}', true)`
    : `SELECT set_config('app.school_id', '${schoolId}', true), set_config('app.teacher_id', '${teacherId}', true)`
}

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

/**
 * A school's interactive transaction: set_config was sent after BEGIN; with a pipelining driver
 * the first statement goes out right behind it (same round trip), else after it has answered.
 */
class SessionTransaction implements Transaction {
  readonly provider: Transaction['provider']
  readonly adapterName: string
  readonly options: Transaction['options']
  readonly createSavepoint?: (name: string) => Promise<void>
  readonly rollbackToSavepoint?: (name: string) => Promise<void>
  readonly releaseSavepoint?: (name: string) => Promise<void>
  private setting: Promise<unknown> | undefined
  /** No statement has been sent yet: an idempotency key may be taken (idempotency-keys.ts). */
  private first = true

  constructor (private readonly tx: Transaction, setting: Promise<unknown>, private readonly pipelined: boolean) {
    this.provider = tx.provider
    this.adapterName = tx.adapterName
    this.options = tx.options
    this.setting = setting
    // Observed by the first statement, commit or rollback.
    setting.catch(() => {})
    // Only what the driver's transaction offers: Prisma falls back to SQL for the rest.
    if (tx.createSavepoint !== undefined) this.createSavepoint = (name) => this.next(() => tx.createSavepoint!(name))
    if (tx.rollbackToSavepoint !== undefined) this.rollbackToSavepoint = (name) => this.next(() => tx.rollbackToSavepoint!(name))
    if (tx.releaseSavepoint !== undefined) this.releaseSavepoint = (name) => this.next(() => tx.releaseSavepoint!(name))
  }

  private async next<T> (send: () => Promise<T>): Promise<T> {
    const setting = this.setting
    if (setting === undefined) return await send()
    this.setting = undefined
    if (!this.pipelined) {
      await setting
      return await send()
    }
    const sent = send()
    // Observed at once: it may fail while the setting is still awaited (after a statement that
    // waited for a lock, say), and is awaited below.
    sent.catch(() => {})
    await setting
    return await sent
  }

  queryRaw (query: SqlQuery): Promise<SqlResultSet> {
    const refused = this.refusal(query)
    if (refused !== undefined) return Promise.reject(refused)
    return this.next(() => this.tx.queryRaw(query))
  }

  executeRaw (query: SqlQuery): Promise<number> {
    const refused = this.refusal(query)
    if (refused !== undefined) return Promise.reject(refused)
    return this.next(() => this.tx.executeRaw(query))
  }

  /**
   * An idempotency key is taken by the transaction's first statement only: a retry with the same
   * key then waits on it before the write has done anything (and no transaction holds a write's
   * locks while it waits for a key).
   */
  private refusal (query: SqlQuery): Error | undefined {
    const first = this.first
    this.first = false
    return query.sql === TAKE_KEY && !first ? new Error('An idempotency key is taken by the first statement of its transaction') : undefined
  }

  async commit (): Promise<void> {
    // The driver's commit hands the connection back: nothing may be in flight then.
    const setting = this.setting
    this.setting = undefined
    await setting
    await this.tx.commit()
  }

  async rollback (): Promise<void> {
    const setting = this.setting
    this.setting = undefined
    await setting?.catch(() => {})
    await this.tx.rollback()
  }
}

export interface SessionAdapterOptions {
  /**
   * The driver sets the school for a statement sent outside a transaction by itself (session-pool.ts:
   * one extended-protocol sequence), and pipelines: statements of one connection's transaction go
   * out without waiting for the previous answer. Without it (PGlite), each statement of a school is a transaction of its own.
   */
  driverSetsSchool: boolean
  /**
   * The server is a Citus coordinator (asked once the pool has opened): an interactive transaction
   * sets the school with SET LOCAL, which reaches the workers, instead of set_config.
   */
  citus?: () => boolean
}

class SessionDriverAdapter implements SqlDriverAdapter {
  readonly provider: SqlDriverAdapter['provider']
  readonly adapterName: string

  constructor (private readonly inner: SqlDriverAdapter, private readonly options: SessionAdapterOptions) {
    this.provider = inner.provider
    this.adapterName = inner.adapterName
  }

  queryRaw (query: SqlQuery): Promise<SqlResultSet> {
    if (isKeyStatement(query.sql)) return Promise.reject(outsideTransaction())
    if (this.options.driverSetsSchool || currentSchoolSession() === undefined) return this.inner.queryRaw(query)
    return this.ownTransaction((tx) => tx.queryRaw(query))
  }

  executeRaw (query: SqlQuery): Promise<number> {
    if (isKeyStatement(query.sql)) return Promise.reject(outsideTransaction())
    if (this.options.driverSetsSchool || currentSchoolSession() === undefined) return this.inner.executeRaw(query)
    return this.ownTransaction((tx) => tx.executeRaw(query))
  }

  executeScript (script: string): Promise<void> {
    if (currentSchoolSession() !== undefined) {
      return Promise.reject(new Error('Scripts are not available to a school-scoped client'))
    }
    return this.inner.executeScript(script)
  }

  /** Every transaction begun for a school (Prisma's, or one statement's) sets the school first. */
  async startTransaction (isolationLevel?: IsolationLevel): Promise<Transaction> {
    const session = currentSchoolSession()
    if (session === undefined) return await this.inner.startTransaction(isolationLevel)
    // BEGIN (and SET TRANSACTION ISOLATION LEVEL, which must come first) outside the school's
    // session: the driver must not wrap them as a school's single statement.
    const tx = await outsideSchoolSession(() => this.inner.startTransaction(isolationLevel))
    const school = this.options.citus?.() === true
      // Unnamed (client.ts): a name per school would be a prepared statement per school.
      ? Promise.all(setLocalStatements(session, true).map(async (sql) => await tx.executeRaw({ sql, args: [], argTypes: [] })))
      : tx.queryRaw(setConfigQuery(session))
    return new SessionTransaction(tx, school, this.options.driverSetsSchool)
  }

  getConnectionInfo (): ReturnType<NonNullable<SqlDriverAdapter['getConnectionInfo']>> {
    return this.inner.getConnectionInfo?.() ?? { supportsRelationJoins: false }
  }

  dispose (): Promise<void> {
    return this.inner.dispose()
  }

  /** One statement of a school: a short transaction of its own. */
  private async ownTransaction<T> (work: (tx: Transaction) => Promise<T>): Promise<T> {
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
 * An idempotency key's statement sent on its own (idempotency-keys.ts): it would commit without
 * the write it stands for, or store an answer no write gave.
 */
function outsideTransaction (): Error {
  return new Error("An idempotency key's statements run in the transaction of its write only")
}

/** Wraps a driver adapter factory so that a school's statements run under row-level security. */
export function sessionAdapter (factory: SqlDriverAdapterFactory, options: SessionAdapterOptions): SqlDriverAdapterFactory {
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    async connect () {
      return new SessionDriverAdapter(await factory.connect(), options)
    }
  }
}
