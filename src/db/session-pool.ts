// The one place where tenant isolation relies on how a library uses another: the pg pool that
// @prisma/adapter-pg (PrismaPg) is given, so that a school's statement and the setting of its
// school (wall 2, school-session.ts) reach PostgreSQL in one round trip.
//
// Public APIs only: pg-pool's `connect()`/`release()`, pg's `client.query(config)` and its
// documented `pipeline` client option (https://node-postgres.com/features/pipelining: queries of
// one connection are written without waiting for the previous answer). What is relied upon is
// checked by test/contracts/school-session.test.ts, so that an upgrade that changes it fails there:
// 1. PrismaPg sends a statement outside a transaction through `pool.query(config)` and the
//    statements of a transaction through a client of `pool.connect()`. Were it to change, the
//    school would not be set and row-level security would show nothing (it fails closed).
// 2. PrismaPg accepts a Proxy of a pg.Pool as its pool (it checks `instanceof pg.Pool`).
// 3. With `pipeline: true`, the three queries below leave in one round trip.
//
// A school's statement outside a transaction goes out as
//   `BEGIN; SET LOCAL app.school_id = '<school>'` (simple protocol; SET LOCAL is set_config(...,
//   true) as a utility command: nothing to plan, no row to return), with
//   `; SET LOCAL app.teacher_id = '<teacher>'` for a teacher,
//   the statement itself (PrismaPg's own query config, untouched: names, types, row mode),
//   `COMMIT`,
// on one connection, pipelined. The school and teacher are validated UUIDs, safe as literals.
//
// On a Citus coordinator the statement may run on the workers, over connections of the
// coordinator's own; Citus passes SET LOCAL on to them only when told to, for the transaction
// (`citus.propagate_set_commands = 'local'`, Citus's documented setting). So there the BEGIN
// message sets that first: `BEGIN; SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL
// app.school_id = ...`. Whether the server is one is asked once, when the pool opens (`detect`).
import pg from 'pg'
import { CITUS_CHECK } from './citus-check.js'
import { currentSchoolSession, setLocalStatements, type SchoolSession } from './school-session.js'

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

function beginStatement (session: SchoolSession, citus: boolean): string {
  return ['BEGIN', ...setLocalStatements(session, citus)].join('; ')
}

/** The result of one statement of a school, sent between the school's BEGIN and COMMIT. */
async function pipelinedTransaction (pool: pg.Pool, session: SchoolSession, citus: boolean, config: pg.QueryConfig): Promise<pg.QueryResult> {
  const client = await pool.connect()
  // A checked-out client reports a lost connection as an 'error' event, which its holder must
  // listen to (pg-pool); the queries in flight fail with it and are handled below.
  const lost = (): void => {}
  client.on('error', lost)
  // Written together (pipeline mode): no answer is awaited before the next query is sent.
  const begin = client.query(beginStatement(session, citus))
  const statement = client.query(config)
  const commit = client.query('COMMIT')
  const [began, ran, committed] = await Promise.allSettled([begin, statement, commit])
  client.removeListener('error', lost)
  // A connection whose BEGIN or COMMIT failed is in an unknown state: it is closed, not reused.
  const broken: unknown = began.status === 'rejected' ? began.reason : committed.status === 'rejected' ? committed.reason : undefined
  client.release(broken as Error | undefined)
  if (began.status === 'rejected') throw began.reason
  if (ran.status === 'rejected') throw ran.reason
  if (committed.status === 'rejected') throw committed.reason
  return ran.value
}

export function openSessionPool (config: pg.PoolConfig, known: { citus?: boolean } = {}): SessionPool {
  const pool = new pg.Pool({ ...config, pipeline: true })
  let citus = known.citus ?? false
  function query (config: unknown, ...rest: unknown[]): unknown {
    const session = currentSchoolSession()
    if (session === undefined || rest.length > 0 || typeof config !== 'object' || config === null) {
      return (pool.query as (...args: unknown[]) => unknown)(config, ...rest)
    }
    return pipelinedTransaction(pool, session, citus, config as pg.QueryConfig)
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
