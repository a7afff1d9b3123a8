// The one place where tenant isolation relies on how a library uses another: the pg pool that
// @prisma/adapter-pg (PrismaPg) is given, so that a school's statement and the setting of its
// school (wall 2, school-session.ts) reach PostgreSQL in one round trip and one transaction.
//
// Public APIs only: pg-pool's `connect()`/`release(err)`, pg's `client.query(config)`, its
// documented `pipeline` client option (https://node-postgres.com/features/pipelining: queries of
// one connection are written without waiting for the previous answer), and pg's `Query` as a
// Submittable (https://node-postgres.com/apis/client#clientquery: an object with `submit` is handed
// the connection and writes its own messages, as pg-cursor does), here a subclass of the exported
// `pg.Query` that writes the setting's extended-protocol messages (the connection's parse, bind and
// execute, the Submittable's interface) ahead of its own. What is relied upon is checked by
// test/contracts/school-session.test.ts, so that an upgrade that changes it fails there:
// 1. PrismaPg sends a statement outside a transaction through `pool.query(config)` and the
//    statements of a transaction through a client of `pool.connect()`. Were it to change, the
//    school would not be set and row-level security would show nothing (it fails closed).
// 2. PrismaPg accepts a Proxy of a pg.Pool as its pool (it checks `instanceof pg.Pool`).
// 3. A school's statement and its setting cost one round trip; a transaction's first statement
//    goes out with the transaction's setting (pipelined).
// 4. pg takes a subclass of its Query on a pipelining client (it refuses other Submittables there,
//    which may keep a portal open across round trips; this one ends with its Sync like any Query).
//
// A school's statement outside a transaction goes out as one sequence of the extended protocol,
// closed by one Sync (SchoolStatement below):
//   Parse/Bind/Execute `SELECT set_config('app.school_id', '<school>', true)` (and
//   `app.teacher_id` for a teacher: setConfigStatement),
//   then PrismaPg's own query (names, types, row mode untouched) as pg's Query writes it:
//   Parse (unless the connection has it), Bind, Describe, Execute, Sync.
// PostgreSQL runs a sequence up to its Sync as one implicit transaction: the setting holds for the
// statement and ends with it; an error anywhere (the setting refused, the statement cancelled or
// timed out) makes PostgreSQL skip the rest up to the Sync and roll back; a connection lost
// mid-way commits nothing; a pooler in transaction mode (PgBouncer) keeps one transaction on one
// server connection. No BEGIN and no COMMIT to parse, run and answer: one ReadyForQuery instead of
// three (BENCHMARKS.md, "One parse and wall 2's cost"). On any error the connection is released
// with it, which closes it: what pg knows of the connection (the statements it has parsed, which
// the setting's ParseComplete may have recorded for a statement PostgreSQL then skipped) goes with
// it, never to a next statement. test/wall2-faults.test.ts injects each fault with wall 2 alone.
//
// A transaction (Prisma's interactive ones, a write's with its idempotency key) keeps the pool's
// pipelining: PrismaPg's BEGIN, then school-session.ts's set_config written with the first
// statement.
//
// On a Citus coordinator the statement may run on the workers, over connections of the
// coordinator's own; Citus passes SET LOCAL on to them only when told to, for the transaction
// (`citus.propagate_set_commands = 'local'`, Citus's documented setting), and only inside a
// transaction block (its utility hook checks IsMultiStatementTransaction), never a function call
// such as set_config. There a school's statement keeps the form it had before the sequence:
// `BEGIN; SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL app.school_id = ...`, the
// statement, `COMMIT`, written together (pipelined, one round trip, three answers). Whether the
// server is one is asked once, when the pool opens (`detect`).
import pg from 'pg'
import { CITUS_CHECK } from './citus-check.js'
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
export { CITUS_CHECK }

function beginStatement (session: SchoolSession): string {
  return ['BEGIN', ...setLocalStatements(session, true)].join('; ')
}

/** A checked-out client whose 'error' events its holder listens to (pg-pool: a lost connection). */
async function checkOut (pool: pg.Pool): Promise<{ client: pg.PoolClient, release: (err?: unknown) => void }> {
  const client = await pool.connect()
  // The queries in flight fail with the error, and are handled by the caller.
  const lost = (): void => {}
  client.on('error', lost)
  return {
    client,
    release (err?: unknown) {
      client.removeListener('error', lost)
      // With an error pg-pool closes the connection instead of reusing it.
      client.release(err as Error | undefined)
    }
  }
}

/** The result of one statement of a school on Citus, sent between the school's BEGIN and COMMIT. */
async function pipelinedTransaction (pool: pg.Pool, session: SchoolSession, config: pg.QueryConfig): Promise<pg.QueryResult> {
  const { client, release } = await checkOut(pool)
  // Written together (pipeline mode): no answer is awaited before the next query is sent.
  const begin = client.query(beginStatement(session))
  const statement = client.query(config)
  const commit = client.query('COMMIT')
  const [began, ran, committed] = await Promise.allSettled([begin, statement, commit])
  // Any error closes the connection (as a single statement's sequence does): a connection whose
  // BEGIN or COMMIT failed is in an unknown state, and nothing pg recorded of it is kept.
  const failed = [began, ran, committed].find((outcome) => outcome.status === 'rejected')
  release(failed?.reason)
  if (began.status === 'rejected') throw began.reason
  if (ran.status === 'rejected') throw ran.reason
  if (committed.status === 'rejected') throw committed.reason
  return ran.value
}

/** The extended-protocol messages a Submittable writes (pg's Connection, as pg's Query writes them). */
interface Messages {
  parse (query: { text: string }): void
  bind (config: Record<string, never>): void
  execute (config: Record<string, never>): void
  readonly stream: { cork?: () => void, uncork?: () => void, destroy: () => void }
}

/** pg's Query as the Submittable pg's client runs (the methods pg-cursor implements too). */
interface SubmittableQuery {
  readonly name?: string | undefined
  callback?: ((err: Error | null | undefined, result?: unknown) => void) | undefined
  submit (connection: Messages): Error | null | undefined
  handleDataRow (msg: unknown): void
  handleCommandComplete (msg: unknown, connection: Messages): void
  handleEmptyQuery (connection: Messages): void
}

const Query = pg.Query as unknown as new (config: pg.QueryConfig) => SubmittableQuery

/**
 * A school's statement and its setting as one sequence of the extended protocol with one Sync:
 * Parse, Bind, Execute of the setting (no Describe: its row and answer are read past), then pg's
 * own Query of the statement (forced to the extended protocol), whose Sync closes the sequence.
 */
class SchoolStatement extends Query {
  /** The settings' answers still to read past (each a DataRow and a CommandComplete). */
  private settingsLeft: number

  constructor (private readonly settings: readonly string[], config: pg.QueryConfig) {
    // `queryMode: 'extended'` (pg's documented query option): a statement without values would
    // otherwise go out as a simple Query message, outside the sequence.
    super({ ...config, queryMode: 'extended' } as pg.QueryConfig)
    this.settingsLeft = settings.length
  }

  override submit (connection: Messages): Error | null | undefined {
    // Written out together, as pg's Query writes its own messages.
    connection.stream.cork?.()
    try {
      for (const text of this.settings) {
        connection.parse({ text })
        connection.bind({})
        connection.execute({})
      }
      const refused = super.submit(connection)
      // The statement was not written (pg refused it before writing anything): the settings must
      // not run with whatever is sent next on the connection. It is closed, its sequence unended.
      if (refused !== null && refused !== undefined) connection.stream.destroy()
      return refused
    } finally {
      connection.stream.uncork?.()
    }
  }

  override handleDataRow (msg: unknown): void {
    if (this.settingsLeft === 0) super.handleDataRow(msg)
  }

  override handleCommandComplete (msg: unknown, connection: Messages): void {
    if (this.settingsLeft > 0) this.settingsLeft--
    else super.handleCommandComplete(msg, connection)
  }

  override handleEmptyQuery (connection: Messages): void {
    if (this.settingsLeft > 0) this.settingsLeft--
    else super.handleEmptyQuery(connection)
  }
}

/**
 * The result of one statement of a school, sent with the school's setting in one implicit
 * transaction (SchoolStatement). On any failure the connection is released with the error, which
 * closes it: a connection whose sequence failed is never reused.
 */
async function schoolStatement (pool: pg.Pool, session: SchoolSession, config: pg.QueryConfig): Promise<pg.QueryResult> {
  const { client, release } = await checkOut(pool)
  try {
    const result = await new Promise<pg.QueryResult>((resolve, reject) => {
      const statement = new SchoolStatement([setConfigStatement(session)], config)
      // pg calls a Submittable back (and returns it, not a promise); a Query's callback may be
      // called twice when pg fails a Bind it could not write: the first call settles.
      statement.callback = (err, result) => {
        if (err !== null && err !== undefined) reject(err)
        else resolve(result as pg.QueryResult)
      }
      client.query(statement as unknown as pg.Submittable)
    })
    release()
    return result
  } catch (err) {
    release(err)
    throw err
  }
}

export function openSessionPool (config: pg.PoolConfig, known: { citus?: boolean } = {}): SessionPool {
  const pool = new pg.Pool({ ...config, pipeline: true })
  let citus = known.citus ?? false
  function query (config: unknown, ...rest: unknown[]): unknown {
    const session = currentSchoolSession()
    if (session === undefined || rest.length > 0 || typeof config !== 'object' || config === null) {
      return (pool.query as (...args: unknown[]) => unknown)(config, ...rest)
    }
    return citus
      ? pipelinedTransaction(pool, session, config as pg.QueryConfig)
      : schoolStatement(pool, session, config as pg.QueryConfig)
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
