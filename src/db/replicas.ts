// Reads of tenant data on PostgreSQL streaming replicas (DATABASE_REPLICA_URLS); writes,
// transactions, authentication and everything else on the primary.
//
// A replica is asynchronous: it replays the primary's WAL a little later. A school's reads go to a
// replica only when that replica has replayed the school's last change, so no one reads older data
// than the primary's once a change is known to this process:
// - a write of this process to a school pins the school to the primary at once (before the write's
//   answer returns, so a request that wrote reads its own writes, and so do later requests);
// - a change from anywhere else (another node, the CLI, SQL) arrives as the notification the
//   triggers send (school_data_changed, as for the response cache) and pins the school likewise,
//   before any other subscriber on the node hears of it (notifications.ts, SUBSCRIBERS);
// - the pin holds until the replica's replay position (pg_last_wal_replay_lsn(), polled) has passed
//   the primary's WAL insert position read after the change (pg_current_wal_insert_lsn(), which
//   is past the change's commit record even with synchronous_commit off);
// - while the notifications are not being received, every read goes to the primary.
// A replica that fails a read, or does not answer the poll, gets no reads until it answers again;
// the failed read is run again on the primary.
import { Prisma, type PrismaClient } from '../generated/prisma/client.js'
import { delegateOf } from './data-model.js'
import { DATA_CHANGED_CHANNEL, type Notifications } from './notifications.js'
import { openPostgresClient } from './open.js'
import { readsOnly, registeredStatement } from './typed-reads.js'

/** What the read-routing step asks before and after an operation of a school. */
export interface ReadRouter {
  /** The client to read `schoolId`'s data from now; undefined means the primary. */
  replicaFor (schoolId: string): PrismaClient | undefined
  /** A read on `replica` failed: no more reads there until it answers the poll again. */
  failed (replica: PrismaClient): void
  /** The school's data changed: read it from the primary until the replicas have replayed the change. */
  changed (schoolId: string): void
}

export interface ReplicaStatus {
  /** The replica's place in the list of DATABASE_REPLICA_URLS. */
  index: number
  up: boolean
  /** WAL position replayed at the last poll. */
  replayed: string | null
}

export interface Replicas extends ReadRouter {
  status (): ReplicaStatus[]
  /** Resolves once every replica has been polled (up or not). */
  polled (): Promise<void>
  close (): Promise<void>
}

export interface ReplicaOptions {
  urls: readonly string[]
  poolSize: number
  connectTimeoutMs: number
  /** PostgreSQL's statement_timeout for the replicas' connections (0 or undefined: none). */
  statementTimeoutMs?: number | undefined
  /** How often each replica's replay position is read (ms). */
  pollMs?: number
  /** The primary's client: its WAL position marks where a change ends. */
  primary: PrismaClient
  /** The primary's notifications. */
  notifications: Pick<Notifications, 'subscribe'>
  warn: (message: string, err?: unknown) => void
}

/** '16/B374D848' (a pg_lsn) as a number that compares. */
export function parseLsn (text: string): bigint {
  const [high, low] = text.split('/')
  if (high === undefined || low === undefined || !/^[0-9A-F]+$/i.test(high) || !/^[0-9A-F]+$/i.test(low)) {
    throw new Error(`Not a WAL position: ${text}`)
  }
  return (BigInt('0x' + high) << 32n) | BigInt('0x' + low)
}

interface Replica {
  index: number
  client: PrismaClient
  up: boolean
  replayed: bigint
  warned: boolean
}

/** A pinned school: the primary's WAL position after its change, or null while it is being read. */
interface Pin { lsn: bigint | null }

const INFINITE = (1n << 64n)

export async function openReplicas (options: ReplicaOptions): Promise<Replicas> {
  const pollMs = options.pollMs ?? 200
  const replicas: Replica[] = options.urls.map((url, index) => {
    const { prisma, pool } = openPostgresClient({ url, poolSize: options.poolSize, connectTimeoutMs: options.connectTimeoutMs, statementTimeoutMs: options.statementTimeoutMs })
    // A dropped connection of an idle pool must not crash the process; the poll notices.
    pool.pool.on('error', () => {})
    return { index, client: prisma, up: false, replayed: 0n, warned: false }
  })

  const pins = new Map<string, Pin>()
  // Changes whose end on the primary is still to be read.
  let waiting: Pin[] = []
  let reading = false
  // Every school waits for this position after the notifications were (re)started.
  let floor = INFINITE
  let live = false
  let next = 0
  let closed = false

  async function primaryLsn (): Promise<bigint> {
    const [row] = await options.primary.$queryRawUnsafe<Array<{ lsn: string }>>('SELECT pg_current_wal_insert_lsn()::text AS lsn')
    return parseLsn(row!.lsn)
  }

  function readPrimaryLsn (): void {
    if (reading || waiting.length === 0 || closed) return
    reading = true
    const batch = waiting
    waiting = []
    primaryLsn().then((lsn) => {
      for (const pin of batch) pin.lsn = lsn
    }, (err: unknown) => {
      // The pins stay on the primary; try again with the next change or poll.
      waiting.push(...batch)
      options.warn('could not read the primary\'s WAL position', err)
    }).finally(() => {
      reading = false
      if (waiting.length > 0) setTimeout(readPrimaryLsn, pollMs).unref()
    })
  }

  function changed (schoolId: string): void {
    const pin: Pin = { lsn: null }
    pins.set(schoolId, pin)
    waiting.push(pin)
    readPrimaryLsn()
  }

  async function pollOne (replica: Replica): Promise<void> {
    try {
      const [row] = await replica.client.$queryRawUnsafe<Array<{ lsn: string | null }>>('SELECT pg_last_wal_replay_lsn()::text AS lsn')
      if (row?.lsn == null) {
        if (!replica.warned) options.warn(`database replica ${replica.index + 1} is not a standby (pg_last_wal_replay_lsn() is null): no reads go there`)
        replica.warned = true
        replica.up = false
        return
      }
      replica.replayed = parseLsn(row.lsn)
      if (!replica.up) replica.warned = false
      replica.up = true
    } catch (err) {
      if (replica.up || !replica.warned) options.warn(`database replica ${replica.index + 1} does not answer: reads go to the primary`, err)
      replica.warned = true
      replica.up = false
    }
  }

  let polling: Promise<void> = Promise.resolve()
  function poll (): Promise<void> {
    polling = Promise.all(replicas.map(pollOne)).then(() => {
      // Pins every replica has passed are done with.
      const up = replicas.filter((r) => r.up)
      if (up.length === replicas.length && up.length > 0) {
        const slowest = up.reduce((min, r) => (r.replayed < min ? r.replayed : min), INFINITE)
        for (const [schoolId, pin] of pins) if (pin.lsn !== null && pin.lsn <= slowest) pins.delete(schoolId)
      }
    })
    return polling
  }
  await poll()
  const timer = setInterval(() => { void poll() }, pollMs)
  timer.unref()

  const listener = await options.notifications.subscribe(DATA_CHANGED_CHANNEL, 'readRouting', {
    notify (payload) { changed(payload) },
    async listening () {
      // Anything may have changed while not listening: wait for the primary's current position.
      floor = INFINITE
      live = true
      try {
        floor = await primaryLsn()
      } catch (err) {
        options.warn('could not read the primary\'s WAL position', err)
      }
    },
    lost () {
      live = false
      floor = INFINITE
    }
  })

  function replicaFor (schoolId: string): PrismaClient | undefined {
    if (!live || !listener.live) return undefined
    const pin = pins.get(schoolId)
    const needed = pin === undefined ? floor : (pin.lsn === null ? INFINITE : (pin.lsn > floor ? pin.lsn : floor))
    for (let i = 0; i < replicas.length; i++) {
      const replica = replicas[(next + i) % replicas.length]!
      if (replica.up && replica.replayed >= needed) {
        next = (next + i + 1) % replicas.length
        return replica.client
      }
    }
    return undefined
  }

  return {
    replicaFor,
    changed,
    failed (client) {
      const replica = replicas.find((r) => r.client === client)
      if (replica !== undefined) replica.up = false
    },
    status: () => replicas.map((r) => ({ index: r.index, up: r.up, replayed: r.up ? lsnText(r.replayed) : null })),
    polled: async () => { await polling; await poll() },
    async close () {
      closed = true
      clearInterval(timer)
      await listener.close()
      await Promise.all(replicas.map(async (r) => { await r.client.$disconnect() }))
    }
  }
}

function lsnText (lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xFFFFFFFFn).toString(16).toUpperCase()}`
}

/** Operations that only read: these may run on a replica. */
const READS = new Set([
  'findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'findMany', 'count', 'aggregate', 'groupBy'
])

/** findFirstOrThrow's "no record": an answer, not a failure of the replica. */
function isNotFound (err: unknown): boolean {
  return err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2025'
}

/**
 * Read routing as a Prisma client extension (a step of the school client, school-client.ts): a
 * read runs on the replica `reads` names, through `onReplica(replica)` (that replica's client of
 * the school), and again on the primary if the replica fails; a write runs on the primary and pins
 * the school there before its answer returns (read your writes).
 */
export function readRouting (schoolId: string, reads: ReadRouter, onReplica: (replica: PrismaClient) => object) {
  /** A write, run on the primary: the school's reads stay there until a replica has replayed it. */
  const written = async (write: Promise<unknown>): Promise<unknown> => await write.finally(() => reads.changed(schoolId))
  return Prisma.defineExtension({
    name: 'read-routing',
    query: {
      $allOperations ({ model, operation, args, query }) {
        if (model === undefined) {
          // A typed statement (typed-reads.ts; wall 1 has bound its school) is a read too; a bulk
          // upsert's write (typed-writes.ts) is a write, on the primary.
          if (operation !== '$queryRawUnsafe') return query(args)
          const typed = registeredStatement((args as unknown[])[0])
          if (typed !== undefined && !readsOnly(typed)) return written(query(args))
          const replica = reads.replicaFor(schoolId)
          if (replica === undefined) return query(args)
          const [sql, ...values] = args as [string, ...unknown[]]
          const client = onReplica(replica) as { $queryRawUnsafe: (sql: string, ...values: unknown[]) => Promise<unknown> }
          return client.$queryRawUnsafe(sql, ...values).catch(() => {
            // The replica is gone or refused: this read, and the next ones, on the primary.
            reads.failed(replica)
            return query(args)
          })
        }
        if (!READS.has(operation)) return written(query(args))
        const replica = reads.replicaFor(schoolId)
        if (replica === undefined) return query(args)
        const delegate = delegateOf(onReplica(replica), model)
        return delegate[operation]!(args).catch((err: unknown) => {
          if (isNotFound(err)) throw err
          // The replica is gone or refused: this read, and the next ones, on the primary.
          reads.failed(replica)
          return query(args)
        })
      }
    }
  })
}
