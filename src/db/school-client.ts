// The school client: the only database handle resolvers get (`ctx.school().db`), confined to one
// school. It is composed here and nowhere else, from named steps, each a Prisma client extension
// with query hooks only. Prisma runs the query hooks of `a.$extends(x).$extends(y)` outermost first:
// x, then y, then the database; SCHOOL_CLIENT_STEPS below lists the steps in that order, and the
// client is that list folded with `$extends` (docs/changing/tenant-isolation.md's table is tested
// against it):
//
//   relationsByQuery, on a Citus coordinator only: loads an operation's relations by a query of
//     their own each ('query' strategy) instead of Prisma's LATERAL joins, which Citus refuses
//     under row-level security (outer joins with quals that depend on no row).
//   operationsObserved (operation-observer.ts): shows what the operation returned to the request's
//     observer, the access audit's tally; outermost but for relationsByQuery, so that it sees what
//     the operation returned wherever it ran.
//   schoolFilter (tenant.ts), wall 1: adds the school to the operation's filter and written data,
//     or refuses the operation.
//   callerReach (reach.ts), wall 1 inside the school, for a caller narrower than a school
//     administrator only: confines a teacher to their reach, keeps columns outside the caller's
//     rights unread and unwritten, refuses a teacher's writes. A teacher's classrooms come from the node's store
//     (teacher-rooms.ts) when it keeps them.
//   roomsChanged, with that store only: a write of this client drops the school's kept classrooms
//     once it has run (writes only: reads pass no hook of it).
//   changeAnnounced, on a Citus coordinator only: once a write of this client has committed, tells
//     every node the school changed (NOTIFY school_data_changed), which the triggers do on plain
//     PostgreSQL but cannot from a worker's shard (no API node listens there).
//   readRouting (replicas.ts), with read replicas only: runs a read on a replica that has replayed
//     the school's last change (through that replica's enterSchoolSession), a write on the primary.
//   enterSchoolSession (school-session.ts), wall 2's application half: runs the operation in the
//     school session (with the teacher, for a teacher), which the driver adapter turns into
//     `SET LOCAL app.school_id = ...` (and `app.teacher_id`) for row-level security (sessionAdapter;
//     on PostgreSQL in the same round trip, session-pool.ts).
//
// An interactive transaction ($transaction(async (tx) => ...)) begins in the school session, so the
// driver adapter sets the school once after BEGIN; its client `tx` runs the steps marked
// `inTransactions`, the first ones of the list (a transaction runs on the primary, and its
// statements need no session of their own); changeAnnounced's notice follows its commit.
//
// Clients are built per school and reach (teacher, denied columns), and reused.
import { LRUCache } from 'lru-cache'
import { Prisma, type PrismaClient } from '../generated/prisma/client.js'
import { operationsObserved } from './operation-observer.js'
import { callerReach, narrowsReach, reachKey, type Reach } from './reach.js'
import { DATA_CHANGED_CHANNEL } from './notifications.js'
import { readRouting, type ReadRouter } from './replicas.js'
import { enterSchoolSession, outsideSchoolSession, schoolSession, type SchoolSession } from './school-session.js'
import { teacherRooms, type TeacherRooms } from './teacher-rooms.js'
import { COLUMN_TYPES, type StatementReach, type TypedModel } from './typed-reads.js'
import { schoolFilter, schoolFilterTakenAway, TenantViolationError } from './tenant.js'

export interface SchoolClientOptions {
  /** Wall 1; off only in the isolation tests that show wall 2 holds on its own. */
  filter?: boolean
  /** Where reads go when there are read replicas; without it everything runs on the primary. */
  reads?: ReadRouter | undefined
  /** Teachers' classrooms kept on this node; without it a teacher's reach is filtered by relation. */
  rooms?: TeacherRooms | undefined
  /** The database is a Citus coordinator (relationsByQuery and changeAnnounced). */
  citus?: boolean
}

/** A query hook of one operation, as the school client's steps write them. */
type Operation = (params: { args: unknown, query: (args: unknown) => Promise<unknown> }) => Promise<unknown>

// The operations that take a relationLoadStrategy (Prisma's relationJoins preview feature).
const LOADING_RELATIONS = ['findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'findMany', 'create', 'update', 'upsert', 'delete'] as const

/**
 * relationsByQuery, on Citus: relations loaded by queries of their own, whatever strategy the caller chose
 * for plain PostgreSQL. Each is a read of one school's rows, which Citus routes to the school's shard.
 */
const relationsByQuery = Prisma.defineExtension({
  name: 'relations-by-query',
  query: {
    $allModels: Object.fromEntries(LOADING_RELATIONS.map((operation): [string, Operation] => [operation,
      async ({ args, query }) => await query({ ...(args as object), relationLoadStrategy: 'query' })]))
  }
})

const WRITES = ['create', 'createMany', 'createManyAndReturn', 'update', 'updateMany', 'updateManyAndReturn', 'upsert', 'delete', 'deleteMany'] as const

/** A step that passes the school client's write operations through `write` (reads pass no hook of it). */
function onWrites (name: string, write: Operation) {
  return Prisma.defineExtension({
    name,
    query: { $allModels: Object.fromEntries(WRITES.map((operation) => [operation, write])) }
  })
}

/** roomsChanged: after a write of the school's client, the school's kept classrooms are loaded again. */
function roomsChanged (schoolId: string, rooms: TeacherRooms) {
  return onWrites('rooms-changed', async ({ args, query }) => {
    try {
      return await query(args)
    } finally {
      rooms.invalidate(schoolId)
    }
  })
}

/** Tells every node that `schoolId` changed, as the triggers do on plain PostgreSQL. */
function announcer (prisma: PrismaClient, schoolId: string): () => Promise<void> {
  return async () => {
    await outsideSchoolSession(async () => await prisma.$executeRaw`SELECT pg_notify(${DATA_CHANGED_CHANNEL}, ${schoolId})`)
  }
}

/** changeAnnounced, on Citus: a committed write of the school's client is announced. */
function changeAnnounced (announce: () => Promise<void>) {
  return onWrites('change-announced', async ({ args, query }) => {
    const result = await query(args)
    await announce()
    return result
  })
}

/**
 * A step of the school client: a Prisma client extension with query hooks only. Every such
 * extension has this one type, and `$extends` with one keeps the client's type: the steps fold
 * without a cast.
 */
type QueryStep = typeof relationsByQuery

/** What the steps of one school client are built from. */
interface StepInput {
  /** The primary's unscoped client. */
  readonly prisma: PrismaClient
  readonly schoolId: string
  readonly session: SchoolSession
  readonly reach: Reach
  readonly options: SchoolClientOptions
  /** Tells every node the school changed (on Citus only). */
  readonly announce: (() => Promise<void>) | undefined
}

interface StepDefinition {
  readonly name: string
  /** Also a step of the client of the school's interactive transactions. */
  readonly inTransactions: boolean
  /** The step for this client, or undefined where it does not apply. */
  readonly make: (input: StepInput) => QueryStep | undefined
}

/** The school client's steps, outermost first: the order Prisma runs their query hooks in. */
const STEPS = [
  { name: 'relationsByQuery', inTransactions: true, make: ({ options }) => options.citus === true ? relationsByQuery : undefined },
  { name: 'operationsObserved', inTransactions: true, make: ({ schoolId }) => operationsObserved(schoolId) },
  {
    name: 'schoolFilter',
    inTransactions: true,
    // Taken away in the isolation tests only: then it only binds the school (and a teacher) of
    // typed statements, taking their conditions out, so that they run with wall 2 alone.
    make: ({ schoolId, reach, options }) => options.filter === false ? schoolFilterTakenAway(schoolId, reach.teacherId) : schoolFilter(schoolId, reach.teacherId)
  },
  {
    name: 'callerReach',
    inTransactions: true,
    make: ({ schoolId, reach, options: { filter, rooms } }) => {
      if (filter === false || !narrowsReach(reach)) return undefined
      const teacherId = reach.teacherId
      return callerReach(reach, rooms === undefined || teacherId === undefined ? undefined : () => rooms.of(schoolId, teacherId))
    }
  },
  { name: 'roomsChanged', inTransactions: true, make: ({ schoolId, options: { rooms } }) => rooms === undefined ? undefined : roomsChanged(schoolId, rooms) },
  { name: 'changeAnnounced', inTransactions: false, make: ({ announce }) => announce === undefined ? undefined : changeAnnounced(announce) },
  {
    name: 'readRouting',
    inTransactions: false,
    make: ({ schoolId, session, options: { reads } }) => {
      if (reads === undefined) return undefined
      const onReplica = new Map<PrismaClient, object>()
      return readRouting(schoolId, reads, (replica) => {
        let client = onReplica.get(replica)
        if (client === undefined) {
          client = replica.$extends(enterSchoolSession(session, replica))
          onReplica.set(replica, client)
        }
        return client
      })
    }
  },
  { name: 'enterSchoolSession', inTransactions: false, make: ({ session, prisma }) => enterSchoolSession(session, prisma) }
] as const satisfies readonly StepDefinition[]

export type StepName = typeof STEPS[number]['name']

/** The steps' names in order, outermost first (docs/changing/tenant-isolation.md's table lists them so). */
export const SCHOOL_CLIENT_STEPS: readonly StepName[] = STEPS.map((step) => step.name)

/** The steps of the client of the school's interactive transactions: the list's first ones. */
export const SCHOOL_TRANSACTION_STEPS: readonly StepName[] = STEPS.filter((step) => step.inTransactions).map((step) => step.name)

interface BuiltStep { name: StepName, inTransactions: boolean, step: QueryStep }

/** The steps a client gets, in order, each built. */
function buildSteps (input: StepInput): BuiltStep[] {
  const built: BuiltStep[] = []
  for (const { name, inTransactions, make } of STEPS) {
    const step = make(input)
    if (step !== undefined) built.push({ name, inTransactions, step })
  }
  return built
}

/** The names of the steps a client of `prisma` built with these options and this reach runs, in order. */
export function schoolClientSteps (prisma: PrismaClient, options: SchoolClientOptions = {}, reach: Reach = {}): StepName[] {
  const schoolId = '00000000-0000-0000-0000-000000000000'
  // Building the steps sends nothing: a step's hooks run only with an operation.
  const steps = buildSteps({ prisma, schoolId, session: { schoolId }, reach, options, announce: options.citus === true ? announcer(prisma, schoolId) : undefined })
  return steps.map(({ name }) => name)
}

type Transaction = (work: unknown, options?: unknown) => Promise<unknown>

/**
 * The client of `schoolId` over `prisma` (the primary's unscoped client), for a caller of `reach`
 * (a school administrator's when it says nothing).
 */
export function schoolClient (prisma: PrismaClient, schoolId: string, options: SchoolClientOptions = {}, reach: Reach = {}) {
  const session: SchoolSession = reach.teacherId === undefined ? { schoolId } : { schoolId, teacherId: reach.teacherId }
  const announce = options.citus === true ? announcer(prisma, schoolId) : undefined
  const steps = buildSteps({ prisma, schoolId, session, reach, options, announce })
  // Folded in order; the client of interactive transactions is the fold of the steps up to the
  // last one marked `inTransactions`, which come first.
  const [first, ...others] = steps
  if (first === undefined || !first.inTransactions) throw new Error('The school client begins with the steps of its transactions')
  let client = prisma.$extends(first.step)
  let transactional = client
  let previous = first
  for (const next of others) {
    if (next.inTransactions && !previous.inTransactions) throw new Error(`School client step ${next.name}: a step of transactions after ${previous.name}, which is not one`)
    client = client.$extends(next.step)
    if (next.inTransactions) transactional = client
    previous = next
  }
  const reads = options.reads
  const rooms = options.rooms
  // Lists and relations are typed statements (typed-reads.ts) for every caller: a teacher's are
  // built for the teacher's reach, and every caller's read only the columns it may read.
  const statementReach: StatementReach = reach.teacherId === undefined ? 'school' : 'teacher'
  const denied = reach.deniedColumns
  const readable = new Map<TypedModel, readonly string[]>()
  for (const model of Object.keys(COLUMN_TYPES) as TypedModel[]) {
    readable.set(model, Object.keys(COLUMN_TYPES[model]).filter((field) => field !== 'schoolId' && denied?.get(model)?.has(field) !== true))
  }
  // The bulk upsert's statements (typed-writes.ts) serve a caller who reaches the whole school with
  // every column, on plain PostgreSQL or PGlite; the others write through the model operations.
  const typedWrites = !narrowsReach(reach) && options.citus !== true
  return client.$extends({
    name: 'school-transactions',
    client: {
      /** Whose rows this client's statements read: the school's, or a teacher's reach (typed-reads.ts). */
      $statementReach (): StatementReach {
        return statementReach
      },
      /** The columns of `model` this client's caller may read (every one but the school's, less those its scopes deny). */
      $readableColumns (model: TypedModel): readonly string[] {
        return readable.get(model)!
      },
      /**
       * Whether this client's bulk upsert writes through the statements of typed-writes.ts (on
       * Citus, or for a narrower caller, it keeps the model operations).
       */
      $typedWrites (): boolean {
        return typedWrites
      },
      /** Interactive transactions only, begun in the school session (the school set after BEGIN). */
      $transaction (work: unknown, ...rest: unknown[]): Promise<unknown> {
        if (typeof work !== 'function') {
          throw new TenantViolationError('A school-scoped client runs interactive transactions only: $transaction(async (tx) => ...)')
        }
        // The one cast of the composition: $transaction's overloads take a typed callback or an
        // array; `work` is checked above to be a function, and it and the rest are passed on as given.
        const begin = transactional.$transaction as unknown as Transaction
        const run = schoolSession.run(session, async () => await begin.call(transactional, work, ...rest))
        const done = announce === undefined ? run : run.then(async (result) => { await announce(); return result })
        // A transaction may have written: the school's next reads go to the primary, and its
        // teachers' classrooms are loaded again.
        return done.finally(() => {
          reads?.changed(schoolId)
          rooms?.invalidate(schoolId)
        })
      }
    }
  })
}

/** The only database handle resolvers get: every query confined to one school. */
export type SchoolDb = ReturnType<typeof schoolClient>

/** School clients over one database, built once per school and reach, and reused. */
export function schoolClientCache (prisma: PrismaClient, options: Omit<SchoolClientOptions, 'rooms'>): {
  forSchool (schoolId: string, reach?: Reach): SchoolDb
  /** Teachers' classrooms, kept while the owner of the store hears the schools' changes. */
  readonly rooms: TeacherRooms
  clear (): void
} {
  const clients = new LRUCache<string, SchoolDb>({ max: 10_000 })
  // Loaded through the school's own client (both walls, the school only: not a teacher's reach).
  const rooms = teacherRooms(async (schoolId, teacherId) => {
    const rows = await forSchool(schoolId).teacherClassroom.findMany({ where: { teacherId }, select: { classroomId: true } })
    return rows.map((row) => row.classroomId)
  })
  function forSchool (given: string, reach: Reach = {}): SchoolDb {
    // A UUID's one form: the walls compare it, the store and the caches key by it.
    const schoolId = given.toLowerCase()
    // Per request: the key is two strings joined; whether the reach needs a step of its own is
    // asked once, when the client is built.
    const key = `${schoolId}|${reachKey(reach)}`
    let client = clients.get(key)
    if (client === undefined) {
      client = schoolClient(prisma, schoolId, { ...options, rooms }, reach)
      clients.set(key, client)
    }
    return client
  }
  return {
    forSchool,
    rooms,
    clear () {
      clients.clear()
      rooms.invalidateAll()
    }
  }
}
