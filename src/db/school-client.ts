// The school client: the only database handle resolvers get (`ctx.school().db`), confined to one
// school. It is composed here and nowhere else, from named steps, each a Prisma client extension.
// Prisma runs the query hooks of `a.$extends(x).$extends(y)` outermost first: x, then y, then the
// database. An operation of the school client passes, in this order:
//
//   0. relationsByQuery, on a Citus coordinator only: loads an operation's relations by a query of
//      their own each ('query' strategy) instead of Prisma's LATERAL joins, which Citus refuses
//      under row-level security (outer joins with quals that depend on no row).
//   1. accessCounting (src/audit/access.ts): counts the Student and Teacher records the operation
//      hands over into the request's tally (the access audit); outermost but for step 0, so it
//      counts what the operation returned wherever it ran.
//   2. schoolFilter (src/db/tenant.ts), wall 1: adds the school to the operation's filter and
//      written data, or refuses the operation.
//   2b. callerReach (src/db/reach.ts), wall 1 inside the school, for a caller narrower than a school
//      administrator only: confines a teacher to their reach, keeps columns outside the caller's
//      scopes unread, refuses writes.
//      A teacher's classrooms come from the node's store (teacher-rooms.ts) when it keeps them.
//   2c. roomsChanged, with that store only: a write of this client drops the school's kept
//      classrooms once it has run (writes only: reads pass no hook of it).
//   2d. changeAnnounced, on a Citus coordinator only: once a write of this client has committed,
//      tells every node the school changed (NOTIFY school_data_changed), which the triggers do on
//      plain PostgreSQL but cannot from a worker's shard (no API node listens there).
//   3. readRouting (src/db/replicas.ts), with read replicas only: runs a read on a replica that has
//      replayed the school's last change (through that replica's step 4), a write on the primary.
//   4. schoolSetting (src/db/school-session.ts), wall 2's application half: runs the operation in
//      the school's session (with the teacher, for a teacher), which the driver adapter turns into
//      `SET LOCAL app.school_id = ...` (and `app.teacher_id`) for row-level security (withSchoolSessions; on PostgreSQL in the same round trip,
//      src/db/pg-school-pool.ts).
//
// An interactive transaction ($transaction(async (tx) => ...)) begins in the school's session, so
// the driver adapter sets the school once after BEGIN; its client `tx` runs steps 0 to 2c (a
// transaction runs on the primary, and its statements need no setting of their own); step 2d's
// notice follows its commit.
//
// Clients are built per school and reach (teacher, scopes), and reused.
import { LRUCache } from 'lru-cache'
import { Prisma, type PrismaClient } from '../generated/prisma/client.js'
import { accessCounting } from '../audit/access.js'
import { callerReach, narrowsReach, reachKey, type Reach } from './reach.js'
import { DATA_CHANGED_CHANNEL, readRouting, type ReadRouter } from './replicas.js'
import { outsideSchool, schoolSession, schoolSetting, type SchoolSession } from './school-session.js'
import { teacherRooms, type TeacherRooms } from './teacher-rooms.js'
import { schoolFilter, TenantViolationError } from './tenant.js'

export interface SchoolClientOptions {
  /** Wall 1; off only in the isolation tests that show wall 2 holds on its own. */
  filter?: boolean
  /** Where reads go when there are read replicas; without it everything runs on the primary. */
  reads?: ReadRouter | undefined
  /** Teachers' classrooms kept on this node; without it a teacher's reach is filtered by relation. */
  rooms?: TeacherRooms | undefined
  /** The database is a Citus coordinator (steps 0 and 2d). */
  citus?: boolean
}

/** A query hook of one operation, as the school client's steps write them. */
type Operation = (params: { args: unknown, query: (args: unknown) => Promise<unknown> }) => Promise<unknown>

// The operations that take a relationLoadStrategy (Prisma's relationJoins preview feature).
const LOADING_RELATIONS = ['findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'findMany', 'create', 'update', 'upsert', 'delete'] as const

/**
 * Step 0, on Citus: relations loaded by queries of their own, whatever strategy the caller chose
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

/** Step 2c: after a write of the school's client, the school's kept classrooms are loaded again. */
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
    await outsideSchool(async () => await prisma.$executeRaw`SELECT pg_notify(${DATA_CHANGED_CHANNEL}, ${schoolId})`)
  }
}

/** Step 2d, on Citus: a committed write of the school's client is announced. */
function changeAnnounced (announce: () => Promise<void>) {
  return onWrites('change-announced', async ({ args, query }) => {
    const result = await query(args)
    await announce()
    return result
  })
}

type Transaction = (work: unknown, options?: unknown) => Promise<unknown>

/**
 * The client of `schoolId` over `prisma` (the primary's unscoped client), for a caller of `reach`
 * (a school administrator's when it says nothing).
 */
export function schoolClient (prisma: PrismaClient, schoolId: string, options: SchoolClientOptions = {}, reach: Reach = {}) {
  const session: SchoolSession = reach.teacherId === undefined ? { schoolId } : { schoolId, teacherId: reach.teacherId }
  // Step 0 outermost: the school's interactive transactions load relations the same way.
  const counted = (options.citus === true ? prisma.$extends(relationsByQuery) as unknown as PrismaClient : prisma).$extends(accessCounting(schoolId))
  // Steps 1, 2 and 2b: also the client of the school's interactive transactions.
  const schooled = options.filter === false ? counted : counted.$extends(schoolFilter(schoolId))
  // Query hooks only: the client's API is the same, but each $extends gives it a type of its own.
  const rooms = options.rooms
  const teacherId = reach.teacherId
  const reached = options.filter === false || !narrowsReach(reach)
    ? schooled
    : schooled.$extends(callerReach(reach, rooms === undefined || teacherId === undefined ? undefined : () => rooms.of(schoolId, teacherId))) as unknown as typeof schooled
  const filtered = rooms === undefined ? reached : reached.$extends(roomsChanged(schoolId, rooms)) as unknown as typeof schooled
  const announce = options.citus === true ? announcer(prisma, schoolId) : undefined
  const announcing = announce === undefined ? filtered : filtered.$extends(changeAnnounced(announce)) as unknown as typeof filtered
  const reads = options.reads
  let routed = announcing
  if (reads !== undefined) {
    const onReplica = new Map<PrismaClient, object>()
    routed = announcing.$extends(readRouting(schoolId, reads, (replica) => {
      let client = onReplica.get(replica)
      if (client === undefined) {
        client = replica.$extends(schoolSetting(session, replica))
        onReplica.set(replica, client)
      }
      return client
    })) as unknown as typeof filtered
  }
  return routed
    .$extends(schoolSetting(session, prisma))
    .$extends({
      name: 'school-transactions',
      client: {
        /** Interactive transactions only, begun in the school's session (the school set after BEGIN). */
        $transaction (work: unknown, ...rest: unknown[]): Promise<unknown> {
          if (typeof work !== 'function') {
            throw new TenantViolationError('A school-scoped client runs interactive transactions only: $transaction(async (tx) => ...)')
          }
          // $transaction's overloads take a typed callback or array; `work` is checked above, the rest passed on as given.
          const begin = filtered.$transaction as unknown as Transaction
          const run = schoolSession.run(session, async () => await begin.call(filtered, work, ...rest))
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
export function schoolClients (prisma: PrismaClient, options: Omit<SchoolClientOptions, 'rooms'>): {
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
