// The one place where tenant isolation relies on how a library uses another: the pg pool that
// @prisma/adapter-pg (PrismaPg) is given, so that a school's statement and the setting of its
// school (wall 2, school-session.ts) reach PostgreSQL in one round trip and one transaction.
//
// Public APIs only: pg-pool's `query`, pg's `Query` and its Submittable interface (what
// `client.query` accepts besides a config: pg-cursor's way in; pg accepts it on a client that does
// not pipeline), the extended-protocol messages a Submittable writes (Parse, Bind, Execute), and
// the `queryMode: 'extended'` query option. What is relied upon is checked by
// test/contracts/school-session.test.ts, so that an upgrade that changes it fails there:
// 1. PrismaPg sends a statement outside a transaction through `pool.query(config)` and the
//    statements of a transaction through a client of `pool.connect()`. Were it to change, the
//    school would not be set and row-level security would show nothing (it fails closed).
// 2. PrismaPg accepts a Proxy of a pg.Pool as its pool (it checks `instanceof pg.Pool`).
// 3. A school's statement and its setting cost one round trip.
//
// A school's statement outside a transaction goes out as one sequence of the extended protocol,
// closed by one Sync (SchoolStatement below):
//   Parse/Bind/Execute `SELECT set_config('app.school_id', '<school>', true)` (and `app.teacher_id`
//   for a teacher: setConfigStatement; SET LOCAL would hold too, with a WARNING each time),
//   then PrismaPg's own query (names, types, row mode untouched) as pg's Query writes it:
//   Parse (unless the connection has it), Bind, Describe, Execute, Sync.
// PostgreSQL runs a sequence up to its Sync as one implicit transaction: the setting holds for the
// statement and ends with it; an error anywhere (the setting refused, the statement cancelled or
// timed out) makes PostgreSQL skip the rest up to the Sync and roll back; a connection lost
// mid-way commits nothing; a pooler in transaction mode (PgBouncer) keeps one transaction on one
// server connection. No BEGIN and no COMMIT to parse, run and answer (BENCHMARKS.md, "One parse
// and wall 2's cost"). The school and teacher are validated UUIDs, safe as literals. On any error
// pg-pool closes the connection instead of reusing it. test/wall2-faults.test.ts injects each
// fault with wall 2 alone.
//
// On a Citus coordinator the statement may run on the workers, over connections of the
// coordinator's own; Citus passes SET LOCAL on to them only when told to, for the transaction
// (`citus.propagate_set_commands = 'local'`, Citus's documented setting), and only inside a
// transaction block (its utility hook checks IsMultiStatementTransaction): there the sequence is
// `BEGIN`, that setting, the school's, the statement, and a `COMMIT` after it (two round trips).
// Whether the server is one is asked once, when the pool opens (`detect`).
import pg from 'pg'
import { currentSchoolSession, setConfigStatement, setLocalStatements, type SchoolSession } from './school-session.js'

export interface SessionPool {
  /** The pool to give PrismaPg: its `query` runs a school's statement with the school set. */
  readonly forPrisma: pg.Pool
  /** The pool itself: for statements outside any school (the audit's bulk writes) and statistics. */
  readonly pool: pg.Pool
  /** Whether the server is a Citus coordinator (the citus extension is installed): false until `detect`. */
  readonly citus: boolean
  /**
   * Asks the server whether it is a Citus coordinator, and sends the school in the form it needs
   * (unless `openSessionPool` was told: the tests send Citus's form to a plain server).
   */
  detect (): Promise<boolean>
}

/** Whether the database has the citus extension, i.e. tables may be distributed to workers. */
export const CITUS_CHECK = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus"

/** What pg's client calls on the query it is running (pg's Query, and any Submittable like pg-cursor). */
interface RunningQuery {
  name?: string | undefined
  text?: string | undefined
  callback?: ((err: Error | null, result?: unknown) => void) | undefined
  submit (connection: Messages): Error | null | undefined
  handleRowDescription (msg: unknown): void
  handleDataRow (msg: unknown): void
  handleCommandComplete (msg: unknown, connection: Messages): void
  handleEmptyQuery (connection: Messages): void
  handleError (err: Error, connection: Messages): void
  handleReadyForQuery (connection: Messages): void
  handlePortalSuspended (connection: Messages): void
  handleCopyInResponse (connection: Messages): void
  handleCopyData (msg: unknown, connection: Messages): void
}

/** The messages of the extended protocol a Submittable writes (pg's Connection). */
interface Messages {
  parse (query: { text: string }): void
  bind (config: Record<string, never>): void
  execute (config: Record<string, never>): void
  stream: { cork?: () => void, uncork?: () => void, destroy: () => void }
}

/**
 * A school's statement and its setting as one sequence of the extended protocol with one Sync:
 * Parse, Bind, Execute of each setting (no Describe: their rows and answers are read past), then pg's
 * own Query of the statement (forced to the extended protocol), whose Sync closes the sequence.
 * PostgreSQL runs everything before a Sync in one implicit transaction: the setting holds for the
 * statement and ends with it; if the setting fails, PostgreSQL skips the statement (it discards
 * every message up to the Sync); a statement cancelled, timed out or failing ends the transaction
 * and the setting with it; a connection lost mid-way commits nothing. No BEGIN, no COMMIT: one
 * message sequence, one answer.
 */
class SchoolStatement implements RunningQuery {
  callback: RunningQuery['callback']
  private readonly statement: RunningQuery
  /** The settings' answers still to read past (each ends with a CommandComplete). */
  private settingsLeft: number

  constructor (private readonly settings: readonly string[], config: pg.QueryConfig) {
    // `queryMode: 'extended'` (pg's documented query option, missing from @types/pg): a statement
    // without values would otherwise go out as a simple Query message, not in the sequence.
    const extended = { ...config, queryMode: 'extended' } as pg.QueryConfig
    this.statement = new pg.Query(extended) as unknown as RunningQuery
    this.statement.callback = (err, result) => { this.callback?.(err, result) }
    this.settingsLeft = settings.length
  }

  // pg's client keeps the names of the statements a connection has parsed by these.
  get name (): string | undefined { return this.statement.name }
  get text (): string | undefined { return this.statement.text }

  submit (connection: Messages): Error | null | undefined {
    connection.stream.cork?.()
    try {
      for (const text of this.settings) {
        connection.parse({ text })
        connection.bind({})
        connection.execute({})
      }
      const refused = this.statement.submit(connection)
      // The statement was not written (pg refused it): the settings must not stay open on the
      // connection for whatever is sent next. The connection is closed, unsent.
      if (refused !== null && refused !== undefined) connection.stream.destroy()
      return refused
    } finally {
      connection.stream.uncork?.()
    }
  }

  handleDataRow (msg: unknown): void { if (this.settingsLeft === 0) this.statement.handleDataRow(msg) }
  handleCommandComplete (msg: unknown, connection: Messages): void {
    if (this.settingsLeft > 0) this.settingsLeft--
    else this.statement.handleCommandComplete(msg, connection)
  }

  handleEmptyQuery (connection: Messages): void {
    if (this.settingsLeft > 0) this.settingsLeft--
    else this.statement.handleEmptyQuery(connection)
  }

  handleRowDescription (msg: unknown): void { this.statement.handleRowDescription(msg) }
  handleError (err: Error, connection: Messages): void { this.statement.handleError(err, connection) }
  handleReadyForQuery (connection: Messages): void { this.statement.handleReadyForQuery(connection) }
  handlePortalSuspended (connection: Messages): void { this.statement.handlePortalSuspended(connection) }
  handleCopyInResponse (connection: Messages): void { this.statement.handleCopyInResponse(connection) }
  handleCopyData (msg: unknown, connection: Messages): void { this.statement.handleCopyData(msg, connection) }
}

/** The result of `statement` run by `client` (pg calls back the Submittable). */
function run (client: pg.PoolClient, statement: SchoolStatement): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    statement.callback = (err, result) => {
      if (err !== null && err !== undefined) reject(err)
      else resolve(result as pg.QueryResult)
    }
    // (A Submittable: pg returns it, not a promise, and calls its callback.)
    void client.query(statement as unknown as pg.QueryConfig)
  })
}

/**
 * The result of one statement of a school, sent with the school's setting in one implicit
 * transaction. On any failure the connection is released with the error, which closes it: a
 * connection whose sequence failed is never reused.
 *
 * On a Citus coordinator the sequence begins a transaction block instead (`BEGIN`, then the
 * SET LOCALs): Citus passes SET LOCAL on to the workers only inside one, not in an implicit
 * transaction. Its COMMIT follows, a round trip of its own.
 */
async function schoolStatement (pool: pg.Pool, session: SchoolSession, citus: boolean, config: pg.QueryConfig): Promise<pg.QueryResult> {
  const client = await pool.connect()
  // A checked-out client reports a lost connection as an 'error' event, which its holder must
  // listen to (pg-pool); the query in flight fails with it.
  const lost = (): void => {}
  client.on('error', lost)
  try {
    const settings = citus ? ['BEGIN', ...setLocalStatements(session, true)] : [setConfigStatement(session)]
    const result = await run(client, new SchoolStatement(settings, config))
    if (citus) await client.query('COMMIT')
    client.removeListener('error', lost)
    client.release()
    return result
  } catch (err) {
    client.removeListener('error', lost)
    client.release(err as Error)
    throw err
  }
}

export function openSessionPool (config: pg.PoolConfig, known: { citus?: boolean } = {}): SessionPool {
  // Not pipelined: pg refuses a Submittable in pipeline mode, and a school's statement is one
  // message sequence anyway.
  const pool = new pg.Pool({ ...config, pipeline: false })
  let citus = known.citus ?? false
  function query (config: unknown, ...rest: unknown[]): unknown {
    const session = currentSchoolSession()
    if (session === undefined || rest.length > 0 || typeof config !== 'object' || config === null) {
      return (pool.query as (...args: unknown[]) => unknown)(config, ...rest)
    }
    return schoolStatement(pool, session, citus, config as pg.QueryConfig)
  }
  const bound = new Map<PropertyKey, unknown>()
  const forPrisma = new Proxy(pool, {
    get (target, key) {
      if (key === 'query') return query
      const value = Reflect.get(target, key, target) as unknown
      if (typeof value !== 'function') return value
      let method = bound.get(key)
      if (method === undefined) {
        method = (value as (...args: unknown[]) => unknown).bind(target)
        bound.set(key, method)
      }
      return method
    }
  })
  return {
    forPrisma,
    pool,
    get citus () { return citus },
    async detect () {
      if (known.citus !== undefined) return citus
      const { rows } = await pool.query<{ citus: boolean }>(CITUS_CHECK)
      citus = rows[0]?.citus === true
      return citus
    }
  }
}
