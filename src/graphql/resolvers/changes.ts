// The change feeds. An administrator or a client follows the school's (table `changes`, written
// by triggers; see the migration records_and_change_feed): a school's changes are numbered densely
// in commit order, so "after seq n" misses nothing, and a first change above n + 1 means the ones
// between were pruned (older than 90 days). A teacher follows their own (table `teacher_changes`,
// migration teacher_change_feed): what entered, changed in and left their reach, numbered by ids
// that commit in increasing order within the school but are not dense; the teacher's newest row
// older than 90 days stays as the mark of how far their feed was pruned. Each feed has cursors of
// its own, and a teacher's cursor names the teacher.
import type { MercuriusContext } from 'mercurius'
import type { QueryResolvers, SubscriptionResolvers } from '../generated.js'
import type { Wakeups } from '../live-changes.js'
import type { ChangeRow, ClassroomRow, StudentRow, TeacherRow } from '../models.js'
import type { SchoolScope } from '../context.js'
import { batched } from '../batches.js'
import { badUserInput } from '../errors.js'
import { pageSize } from '../paging.js'
import { UUID } from '../../validators.js'
import { readByIds } from '../../records/lists.js'

const PREFIX = 'changes:'
const TEACHER_PREFIX = 'teacher-changes:'
const TEACHER_CURSOR = new RegExp(`^${TEACHER_PREFIX}(${UUID.source.slice(1, -1)}):(\\d{1,19})$`, 'i')

const encode = (text: string): string => Buffer.from(text).toString('base64url')

export function changeCursor (seq: bigint): string {
  return encode(PREFIX + seq.toString())
}

export function teacherChangeCursor (teacherId: string, id: bigint): string {
  return encode(`${TEACHER_PREFIX}${teacherId}:${id.toString()}`)
}

/** The largest seq or id: both are PostgreSQL bigints. */
const MAX_SEQ = 2n ** 63n - 1n

/** How long changes are kept; teacher_changes is pruned a day later, so no clock skew hides its mark. */
const KEPT_MS = 90 * 86_400_000

/**
 * The school's newest change number. Its counter (schools.change_seq) on PostgreSQL; on Citus,
 * where the shards' triggers number changes from the feed itself (src/admin/citus.ts), the newest
 * change kept, which pruning never takes, or the counter the school had when it was distributed.
 */
async function latestSeq (db: ReturnType<MercuriusContext['school']>['db']): Promise<bigint> {
  const [school, newest] = await Promise.all([
    db.school.findFirstOrThrow({ select: { changeSeq: true } }),
    db.change.findFirst({ orderBy: { seq: 'desc' }, select: { seq: true } })
  ])
  return newest !== null && newest.seq > school.changeSeq ? newest.seq : school.changeSeq
}

/** Whether the change right after `after` is still kept. */
async function nextIsKept (db: SchoolScope['db'], after: bigint): Promise<boolean> {
  return await db.change.findFirst({ where: { seq: after + 1n }, select: { seq: true } }) !== null
}

const notAFeedCursor = (): Error =>
  badUserInput('since is not a cursor of the change feed (pass nextCursor or a change\'s cursor as returned)')

const notYourFeed = (whose: string): Error =>
  badUserInput(`since is a cursor of ${whose} change feed, not of yours: start again from latestChangeCursor`)

/** The position a cursor stands for in the caller's feed; null for no cursor (from the oldest change kept). */
function parseSince (since: string | null | undefined, teacherId: string | null): bigint | null {
  if (since === null || since === undefined) return null
  const text = Buffer.from(since, 'base64url').toString('utf8')
  let position: string
  if (text.startsWith(TEACHER_PREFIX)) {
    const match = TEACHER_CURSOR.exec(text)
    if (match === null) throw notAFeedCursor()
    if (teacherId === null) throw notYourFeed("a teacher's")
    if (match[1]!.toLowerCase() !== teacherId.toLowerCase()) throw notYourFeed("another teacher's")
    position = match[2]!
  } else {
    if (!text.startsWith(PREFIX) || !/^\d{1,19}$/.test(text.slice(PREFIX.length))) throw notAFeedCursor()
    if (teacherId !== null) throw notYourFeed("the school's")
    position = text.slice(PREFIX.length)
  }
  const n = BigInt(position)
  if (n > MAX_SEQ) throw notAFeedCursor()
  return n
}

const expired = (): Error => badUserInput(
  'since is older than the change feed keeps (90 days): read the lists again, then follow changes from latestChangeCursor'
)

/** A run of the caller's feed and where to continue. */
export interface FeedPage { changes: ChangeRow[], nextCursor: string, hasMore: boolean }

/** The caller's school client and whose feed it follows (a teacher's, or the school's). */
type FeedReader = Pick<SchoolScope, 'db' | 'teacherId'>

/**
 * Up to `take` changes of the caller's feed after `since` (null: from the oldest kept), read through
 * the caller's school client: the `changes` query and the `changes` subscription both read here.
 */
export async function readFeed ({ db, teacherId }: FeedReader, since: string | null | undefined, take: number): Promise<FeedPage> {
  const cursor = parseSince(since, teacherId)
  const after = cursor ?? 0n
  if (teacherId !== null) {
    const rows = await db.teacherChange.findMany({ where: { teacherId, id: { gt: after } }, orderBy: { id: 'asc' }, take: take + 1 })
    if (cursor !== null) {
      // Pruned rows all lie below the teacher's newest row older than 90 days (the mark): a row
      // after the cursor that old means rows after it may be gone.
      const old = await db.teacherChange.findFirst({
        where: { teacherId, id: { gt: after }, at: { lt: new Date(Date.now() - KEPT_MS) } }, select: { id: true }
      })
      if (old !== null) throw expired()
    }
    const changes = rows.slice(0, take)
    const last = changes[changes.length - 1]
    return { changes, nextCursor: teacherChangeCursor(teacherId, last?.id ?? after), hasMore: rows.length > take }
  }
  const rows = await db.change.findMany({ where: { seq: { gt: after } }, orderBy: { seq: 'asc' }, take: take + 1 })
  if (cursor !== null) {
    // Numbers are dense: a first change above after + 1, or none while the school has counted
    // further, means the changes after the cursor were pruned. The count is read after the rows:
    // a change committed in between is counted but was not read, so the first change after the
    // cursor is read again once the count is known (everything it counts has committed).
    const first = rows[0]
    if (first !== undefined ? first.seq > after + 1n : await latestSeq(db) > after && !await nextIsKept(db, after)) {
      throw expired()
    }
  }
  const changes = rows.slice(0, take)
  const last = changes[changes.length - 1]
  return { changes, nextCursor: changeCursor(last?.seq ?? after), hasMore: rows.length > take }
}

/** The cursor of the caller's feed's latest change (the query `latestChangeCursor`, a subscription's start). */
export async function latestFeedCursor ({ db, teacherId }: FeedReader): Promise<string> {
  if (teacherId !== null) {
    const latest = await db.teacherChange.findFirst({ where: { teacherId }, orderBy: { id: 'desc' }, select: { id: true } })
    return teacherChangeCursor(teacherId, latest?.id ?? 0n)
  }
  return changeCursor(await latestSeq(db))
}

export const changeQueries: Pick<QueryResolvers, 'changes' | 'latestChangeCursor'> = {
  // A teacher follows their own feed; an administrator or a client, the school's.
  changes: async (_parent, { since, limit }, ctx) => await readFeed(ctx.school(), since, pageSize(limit)),
  latestChangeCursor: async (_parent, _args, ctx) => await latestFeedCursor(ctx.school())
}

/** Changes a subscriber reads per statement while it catches up. */
const FOLLOW_PAGE = 100

/**
 * The feed after `page` (already read), then each page read when `wakeups` says something may have
 * changed, one change at a time, until closed. `return()` closes the wake-ups first: a subscriber
 * waiting for one ends at once instead of at the next change.
 */
function follow (reader: FeedReader, page: FeedPage, wakeups: Wakeups): AsyncGenerator<ChangeRow> {
  async function * changes (): AsyncGenerator<ChangeRow> {
    try {
      let current = page
      for (;;) {
        for (const change of current.changes) yield change
        // More than a page behind: read on at once; else wait for a notification first (the one
        // that came while reading is kept: `next` resolves at once then).
        if (!current.hasMore && !await wakeups.next()) return
        current = await readFeed(reader, current.nextCursor, FOLLOW_PAGE)
      }
    } finally {
      wakeups.close()
    }
  }
  const iterator = changes()
  const end = iterator.return.bind(iterator)
  iterator.return = async (value) => {
    wakeups.close()
    return await end(value)
  }
  return iterator
}

export const changeSubscription: Required<Pick<SubscriptionResolvers, 'changes'>> = {
  changes: {
    // Wake-ups open before the first read, so a change committed after it is heard; the first page
    // is read here, so a bad or expired `since` is refused as the query refuses it.
    async subscribe (_parent, { since }, ctx) {
      const scope = ctx.school()
      const wakeups = ctx.liveChanges().watch(scope.schoolId)
      try {
        await wakeups.next()
        const first = await readFeed(scope, since ?? await latestFeedCursor(scope), FOLLOW_PAGE)
        return follow(scope, first, wakeups)
      } catch (err) {
        wakeups.close()
        throw err
      }
    },
    resolve: (change: ChangeRow) => change
  }
}

type RecordType = ChangeRow['recordType']

/** The current records of changes of one kind, read in batches (deleted ones, and those out of the caller's reach, are null). */
function recordOf<T extends { id: string }> (type: RecordType, read: (ctx: MercuriusContext, ids: string[]) => Promise<T[]>) {
  return batched<ChangeRow, T | null>(`Change.${type}`, async (changes, ctx) => {
    const ids = [...new Set(changes.filter((change) => change.recordType === type).map((change) => change.recordId))]
    const rows = ids.length === 0 ? [] : await read(ctx, ids)
    const byId = new Map(rows.map((row) => [row.id, row]))
    return changes.map((change) => (change.recordType === type ? byId.get(change.recordId) ?? null : null))
  })
}

export const Change = {
  student: recordOf<StudentRow>('STUDENT', async (ctx, ids) => await readByIds<StudentRow>(ctx.school().db, 'Student', ids)),
  teacher: recordOf<TeacherRow>('TEACHER', async (ctx, ids) => await readByIds<TeacherRow>(ctx.school().db, 'Teacher', ids)),
  classroom: recordOf<ClassroomRow>('CLASSROOM', async (ctx, ids) => await readByIds<ClassroomRow>(ctx.school().db, 'Classroom', ids)),
  cursor: (change: ChangeRow) => 'teacherId' in change ? teacherChangeCursor(change.teacherId, change.id) : changeCursor(change.seq),
  id: (change: ChangeRow) => change.recordId
}
