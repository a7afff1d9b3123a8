// The change feed (table `changes`, written by triggers; see the migration records_and_change_feed).
// A school's changes are numbered densely in commit order, so "after seq n" misses nothing, and a
// first change above n + 1 means the ones between were pruned (older than 90 days).
import type { MercuriusContext } from 'mercurius'
import type { QueryResolvers } from '../generated.js'
import type { ChangeRow, ClassroomRow, StudentRow, TeacherRow } from '../models.js'
import { badUserInput } from '../errors.js'
import { pageSize } from '../paging.js'

const PREFIX = 'changes:'

export function changeCursor (seq: bigint): string {
  return Buffer.from(PREFIX + seq.toString()).toString('base64url')
}

/** The largest seq: the counter is a PostgreSQL bigint. */
const MAX_SEQ = 2n ** 63n - 1n

const notAFeedCursor = (): Error =>
  badUserInput('since is not a cursor of the change feed (pass nextCursor or a change\'s cursor as returned)')

/** The seq a cursor stands for; null for no cursor (from the oldest change kept). */
function parseSince (since: string | null | undefined): bigint | null {
  if (since === null || since === undefined) return null
  const text = Buffer.from(since, 'base64url').toString('utf8')
  if (!text.startsWith(PREFIX) || !/^\d{1,19}$/.test(text.slice(PREFIX.length))) throw notAFeedCursor()
  const seq = BigInt(text.slice(PREFIX.length))
  if (seq > MAX_SEQ) throw notAFeedCursor()
  return seq
}

const expired = (): Error => badUserInput(
  'since is older than the change feed keeps (90 days): read the lists again, then follow changes from latestChangeCursor'
)

export const changeQueries: Pick<QueryResolvers, 'changes' | 'latestChangeCursor'> = {
  async changes (_parent, { since, limit }, ctx) {
    const take = pageSize(limit)
    const cursor = parseSince(since)
    const after = cursor ?? 0n
    const { db } = ctx.school()
    const rows = await db.change.findMany({ where: { seq: { gt: after } }, orderBy: { seq: 'asc' }, take: take + 1 })
    if (cursor !== null) {
      // Numbers are dense: a first change above after + 1, or none while the school has counted
      // further, means the changes after the cursor were pruned.
      const first = rows[0]
      if (first !== undefined ? first.seq > after + 1n : (await db.school.findFirstOrThrow({ select: { changeSeq: true } })).changeSeq > after) {
        throw expired()
      }
    }
    const changes = rows.slice(0, take)
    const last = changes[changes.length - 1]
    return { changes, nextCursor: changeCursor(last?.seq ?? after), hasMore: rows.length > take }
  },

  async latestChangeCursor (_parent, _args, ctx) {
    const { db } = ctx.school()
    const school = await db.school.findFirstOrThrow({ select: { changeSeq: true } })
    return changeCursor(school.changeSeq)
  }
}

type RecordType = ChangeRow['recordType']

/** The current records of changes of one kind, batched per response (deleted ones are null). */
function recordLoader<T extends { id: string }> (
  type: RecordType,
  read: (ctx: MercuriusContext, ids: string[]) => Promise<T[]>
) {
  return async (queries: Array<{ obj: ChangeRow }>, ctx: MercuriusContext): Promise<Array<T | null>> => {
    const ids = [...new Set(queries.filter((q) => q.obj.recordType === type).map((q) => q.obj.recordId))]
    const rows = ids.length === 0 ? [] : await read(ctx, ids)
    const byId = new Map(rows.map((row) => [row.id, row]))
    return queries.map((q) => (q.obj.recordType === type ? byId.get(q.obj.recordId) ?? null : null))
  }
}

export const changeLoaders = {
  Change: {
    student: recordLoader<StudentRow>('STUDENT', (ctx, ids) =>
      ctx.school().db.student.findMany({ relationLoadStrategy: 'join', where: { id: { in: ids } }, include: { classroom: true } })),
    teacher: recordLoader<TeacherRow>('TEACHER', (ctx, ids) => ctx.school().db.teacher.findMany({ where: { id: { in: ids } } })),
    classroom: recordLoader<ClassroomRow>('CLASSROOM', (ctx, ids) => ctx.school().db.classroom.findMany({ where: { id: { in: ids } } }))
  }
}

export const Change = {
  cursor: (change: ChangeRow) => changeCursor(change.seq),
  id: (change: ChangeRow) => change.recordId
}
