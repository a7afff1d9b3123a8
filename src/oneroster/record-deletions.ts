// Delta sync's deletions of what is not a user (docs/api/oneroster.md, "Delta sync"): a request on
// enrollments, classes, academic sessions or courses whose filter bounds dateLastModified from
// below (deletions.ts deltaBound) also answers what ended after that bound, with status
// `tobedeleted` and dateLastModified the time it ended, for as long as the tombstones are kept (90
// days, migration roster_tombstones): an enrollment that ended (a student moved, deleted or its
// classroom cleared; a teacher unassigned or deleted; a classroom deleted), a class deleted or no
// longer a class, a session or course deleted. A tombstone keeps what the type requires (the
// references by sourcedId); nothing else is sent, and a comparison on a field it does not keep holds
// as on a record without that value (only `!=`).
//
// Read through the caller's school client (the RosterTombstone model: both walls; a teacher reads
// her own rows, what left her reach, and the school's sessions and courses), all those after the
// bound at once, one per sourcedId (the latest), without those the collection answers live again
// (a student moved keeps its enrollment's sourcedId: that enrollment is live, with its new class),
// and merged with the live records (merge.ts) in the order asked, counted with them.
import type { SchoolDb } from '../db/school-client.js'
import type { ListCondition, Predicate } from '../db/typed-reads.js'
import { readRows } from '../records/lists.js'
import { deltaBound, meetsFilter } from './deletions.js'
import type { AnswerContext, Kind } from './kinds.js'
import { compareSorted, type Sorted } from './merge.js'

type Row = Record<string, unknown>

export type TombstoneKind = 'ENROLLMENT' | 'CLASS' | 'ACADEMIC_SESSION' | 'COURSE'

/** A record that ended, as the tombstone keeps it: the fields its type requires (references by sourcedId). */
export interface RecordTombstone {
  readonly id: string
  readonly kind: TombstoneKind
  readonly sourcedId: string
  readonly fields: Readonly<Record<string, unknown>>
  readonly at: Date
}

const reference = (context: AnswerContext, path: string, type: string, key: unknown): Row | undefined =>
  typeof key === 'string' ? { href: `${context.base}/${path}/${encodeURIComponent(key)}`, sourcedId: key, type } : undefined

const text = (value: unknown): string | null => typeof value === 'string' ? value : null

/** A tombstone's value of a binding field (a dotted path too), as the live record's answer writes it: a list for terms; null for one it does not keep. */
function valueOf (tombstone: RecordTombstone, name: string, context: AnswerContext): string | string[] | null {
  const f = tombstone.fields
  switch (name) {
    case 'sourcedId': return tombstone.sourcedId
    case 'status': return 'tobedeleted'
    case 'school.sourcedId':
    case 'org.sourcedId': return tombstone.kind === 'ENROLLMENT' || tombstone.kind === 'CLASS' || tombstone.kind === 'COURSE' ? context.schoolId : null
    case 'user.sourcedId': return text(f.user)
    case 'class.sourcedId': return text(f.class)
    case 'course.sourcedId': return text(f.course)
    case 'terms.sourcedId': return Array.isArray(f.terms) ? f.terms as string[] : null
    case 'role': case 'title': case 'type': case 'startDate': case 'endDate': case 'schoolYear': case 'courseCode': return text(f[name])
    default: return null
  }
}

/** The answer of a tombstone: the selected fields it keeps, in the binding's order. */
export function recordTombstoneAnswer (tombstone: RecordTombstone, selected: readonly string[], context: AnswerContext): Row {
  const f = tombstone.fields
  const all: Row = { sourcedId: tombstone.sourcedId, status: 'tobedeleted', dateLastModified: tombstone.at.toISOString() }
  switch (tombstone.kind) {
    case 'ENROLLMENT':
      Object.assign(all, { user: reference(context, 'users', 'user', f.user), class: reference(context, 'classes', 'class', f.class), school: context.school, role: f.role })
      break
    case 'CLASS':
      Object.assign(all, {
        title: f.title,
        course: reference(context, 'courses', 'course', f.course),
        school: context.school,
        terms: (f.terms as string[]).map((key) => reference(context, 'academicSessions', 'academicSession', key))
      })
      break
    case 'ACADEMIC_SESSION':
      Object.assign(all, { title: f.title, startDate: f.startDate, endDate: f.endDate, type: f.type, schoolYear: f.schoolYear })
      break
    case 'COURSE':
      Object.assign(all, { title: f.title, courseCode: f.courseCode, org: context.school })
      break
  }
  const out: Row = {}
  for (const name of selected) if (all[name] !== undefined && all[name] !== null) out[name] = all[name]
  return out
}

/** The tombstones as a list of the merge (merge.ts), sorted as the database sorts the kind's records by `sort`. */
export function sortedTombstones (tombstones: readonly RecordTombstone[], kind: Kind, sort: string | undefined, descending: boolean, context: AnswerContext): Sorted[] {
  // The live records sort by the field's column, or by id alone for a value every record has (plans' order ['id']).
  const by = sort === undefined || kind.fields[sort] === undefined || kind.fields[sort].sort === 'id' ? undefined : sort
  const valueFor = (tombstone: RecordTombstone): string | number | null => {
    if (by === undefined) return null
    if (by === 'dateLastModified') return tombstone.at.getTime()
    const value = valueOf(tombstone, by, context)
    return typeof value === 'string' ? value : null
  }
  return tombstones.map((tombstone): Sorted => ({ value: valueFor(tombstone), id: tombstone.id, row: { tombstone } }))
    .sort((a, b) => compareSorted(a, b, descending))
}

/** How a collection tells its deletions: the tombstones' kind, those of its route, and which sourcedIds it answers live. */
export interface Deletions {
  readonly kind: TombstoneKind
  /** Whether a tombstone belongs to the route's collection (a class's enrollments, a term's classes); every one without. */
  readonly inRoute?: (tombstone: RecordTombstone) => boolean
  /** The live records the collection answers among these sourcedIds (each one read through the caller's school client). */
  readonly live: (db: SchoolDb, keys: readonly string[]) => Promise<Set<string>>
}

/** A collection's live sourcedIds among `keys`: its records of `model` that meet its conditions, by the key field (sourcedKey, enrollmentKey). */
export async function liveKeys (db: SchoolDb, model: Kind['model'], key: 'sourcedKey' | 'enrollmentKey', conditions: readonly ListCondition[], keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set()
  const match: ListCondition = key === 'sourcedKey'
    ? { kind: 'sourcedKeys', keys }
    : { kind: 'predicate', predicate: { kind: 'any', parts: keys.map((value) => ({ kind: 'compare' as const, field: key, op: '=' as const, value })) } }
  const rows = await readRows<Row>(db, {
    model, fields: key === 'sourcedKey' ? ['sourcedId'] : [key], conditions: [...conditions, match], order: ['id'], descending: false, take: keys.length, skip: 0
  })
  return new Set(rows.map((row) => String(key === 'sourcedKey' ? row.sourcedId ?? row.id : row[key])))
}

/**
 * What ended after the filter's lower bound of dateLastModified and meets the filter (none without a
 * bound): the caller's tombstones of the kind (a teacher's own), the latest of each sourcedId, in
 * the route, not answered live.
 */
export async function deletedRecords (db: SchoolDb, deletions: Deletions, filter: Predicate | undefined, context: AnswerContext): Promise<RecordTombstone[]> {
  const bound = deltaBound(filter)
  if (bound === undefined) return []
  // A teacher reads her own rows (and the school's sessions and courses): the school client's reach
  // step binds her; every other caller the school's rows (wall 2 admits no other).
  const teacher = db.$statementReach() === 'teacher'
  const rows = await db.rosterTombstone.findMany({
    where: { kind: deletions.kind, at: bound.inclusive ? { gte: bound.at } : { gt: bound.at }, ...(teacher ? {} : { teacherId: null }) },
    select: { id: true, kind: true, sourcedId: true, fields: true, at: true },
    orderBy: [{ at: 'asc' }, { id: 'asc' }]
  })
  const latest = new Map<string, RecordTombstone>()
  for (const row of rows) {
    latest.set(row.sourcedId, { id: row.id, kind: row.kind as TombstoneKind, sourcedId: row.sourcedId, fields: row.fields as Record<string, unknown>, at: row.at })
  }
  const candidates = [...latest.values()].filter((tombstone) => (deletions.inRoute?.(tombstone) ?? true) && meetsFilter(filter!, tombstone.at, (name) => valueOf(tombstone, name, context)))
  const live = await deletions.live(db, candidates.map((tombstone) => tombstone.sourcedId))
  return candidates.filter((tombstone) => !live.has(tombstone.sourcedId))
}

/** The deletions of a one-table collection (classes, sessions, courses): its tombstones of `kind` in the route, without the sourcedIds its records answer live. */
export function collectionDeletions (kind: TombstoneKind, live: Kind, route: readonly ListCondition[], inRoute?: (tombstone: RecordTombstone) => boolean): Deletions {
  return { kind, inRoute, live: async (db, keys) => await liveKeys(db, live.model, 'sourcedKey', route, keys) }
}
