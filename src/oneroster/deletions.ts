// Delta sync's deletions (docs/api/oneroster.md, "Delta sync"): a users, students or teachers
// request whose filter bounds dateLastModified from below (`>` or `>=`, alone or ANDed with other
// conditions) also answers the students and teachers deleted after that bound, as users with status
// `tobedeleted` and dateLastModified the time of the deletion, for as long as the change feed keeps
// their tombstones (90 days). A tombstone keeps what UserDType requires (migration
// change_feed_deleted_users): the sourcedId, the names, the status the record had (enabledUser),
// and the role (its table); a student's number too (identifier). Nothing else of the record is
// kept, so nothing else is sent, and a comparison on a field it does not keep holds as on a record
// without that value (only `!=`).
//
// The tombstones are read through the caller's school client (the Change model, or a teacher's
// TeacherChange: her feed, where a record that left her reach is deleted for her; both walls), all
// those after the bound at once (the feed keeps 90 days), one per sourcedId that no live record
// holds again (a typed statement of the kind), and filtered and ordered here as the
// database orders the live records (users.ts merges them), so that the pages and X-Total-Count
// count them with the rest.
import type { SchoolDb } from '../db/school-client.js'
import type { Comparison, Predicate } from '../db/typed-reads.js'
import { readRows } from '../records/lists.js'
import { compareValues } from './filter.js'
import { parseDateTime, STUDENT_USERS, type AnswerContext, type Kind } from './kinds.js'

type Row = Record<string, unknown>

/** The lower bound of dateLastModified a filter sets at its top level (alone or in an AND), the latest of several; undefined without one. */
export function deltaBound (filter: Predicate | undefined): { at: Date, inclusive: boolean } | undefined {
  if (filter === undefined) return undefined
  const parts = filter.kind === 'all' ? filter.parts : [filter]
  let bound: { at: Date, inclusive: boolean } | undefined
  for (const part of parts) {
    if (part.kind !== 'compare' || part.field !== 'dateLastModified' || (part.op !== '>' && part.op !== '>=')) continue
    const at = parseDateTime('dateLastModified', part.op, part.value)
    if (bound === undefined || at.getTime() > bound.at.getTime() || (at.getTime() === bound.at.getTime() && part.op === '>')) {
      bound = { at, inclusive: part.op === '>=' }
    }
  }
  return bound
}

/** A deleted user as the change feed keeps it. */
export interface Tombstone {
  readonly id: string
  readonly role: 'student' | 'teacher'
  readonly sourcedId: string
  readonly givenName: string
  readonly familyName: string
  /** The status the record had (its enum's name). */
  readonly status: string
  readonly studentNumber: string | null
  readonly at: Date
}

/** A tombstone's value of a binding field (a dotted path too), as the live record's answer writes it; null for one it does not keep. */
function valueOf (tombstone: Tombstone, name: string, context: AnswerContext): string | null {
  switch (name) {
    case 'sourcedId': return tombstone.sourcedId
    case 'status': return 'tobedeleted'
    case 'enabledUser': return String(tombstone.status === 'ACTIVE')
    case 'givenName': return tombstone.givenName
    case 'familyName': return tombstone.familyName
    case 'identifier': return tombstone.studentNumber
    case 'roles.role': return tombstone.role
    case 'roles.roleType': return 'primary'
    case 'roles.org.sourcedId':
    case 'primaryOrg.sourcedId': return context.schoolId
    default: return null
  }
}

/** Whether a tombstone meets a filter (whose names and values the live kinds have checked), as the database decides for a record. */
function meets (tombstone: Tombstone, predicate: Predicate, context: AnswerContext): boolean {
  switch (predicate.kind) {
    case 'constant': return predicate.value
    case 'all': return predicate.parts.every((part) => meets(tombstone, part, context))
    case 'any': return predicate.parts.some((part) => meets(tombstone, part, context))
    case 'compare': {
      const op: Comparison = predicate.op
      if (predicate.field === 'dateLastModified') return compareValues(tombstone.at.getTime(), op, parseDateTime('dateLastModified', op, predicate.value).getTime())
      const value = valueOf(tombstone, predicate.field, context)
      // As the database: `!=` holds for a record without the value, every other comparison fails.
      if (value === null) return op === '!='
      return compareValues(value, op, predicate.value)
    }
  }
}

/** The columns a live record sorts by, for each binding field (users.ts sorts by the kind's field), as a tombstone has them; null for none. */
export function sortValueOf (tombstone: Tombstone, sort: string | undefined): string | number | null {
  switch (sort) {
    case 'sourcedId': return tombstone.sourcedId
    case 'dateLastModified': return tombstone.at.getTime()
    // enabledUser sorts by the status's name, as the live records.
    case 'enabledUser': return tombstone.status
    case 'givenName': return tombstone.givenName
    case 'familyName': return tombstone.familyName
    case 'identifier': return tombstone.studentNumber
    default: return null
  }
}

/** The answer of a tombstone: the selected fields it keeps, in the binding's order. */
export function tombstoneAnswer (tombstone: Tombstone, selected: readonly string[], context: AnswerContext): Row {
  const all: Row = {
    sourcedId: tombstone.sourcedId,
    status: 'tobedeleted',
    dateLastModified: tombstone.at.toISOString(),
    enabledUser: String(tombstone.status === 'ACTIVE'),
    givenName: tombstone.givenName,
    familyName: tombstone.familyName,
    roles: [{ roleType: 'primary', role: tombstone.role, org: context.school }],
    primaryOrg: context.school,
    identifier: tombstone.studentNumber ?? undefined
  }
  const out: Row = {}
  for (const name of selected) if (all[name] !== undefined) out[name] = all[name]
  return out
}

/**
 * The users of these kinds deleted after the filter's lower bound of dateLastModified that meet the
 * filter (none without a bound): from the school's feed, or for a teacher from her own
 * (teacher_changes: what left her reach, deleted or not).
 */
export async function deletedUsers (db: SchoolDb, kinds: readonly Kind[], filter: Predicate | undefined, context: AnswerContext): Promise<Tombstone[]> {
  const bound = deltaBound(filter)
  if (bound === undefined) return []
  const recordTypes = kinds.map((kind) => kind === STUDENT_USERS ? 'STUDENT' as const : 'TEACHER' as const)
  // The student number needs roster.readonly, on the feeds as on the record (COLUMN_SCOPES): read only by a caller who holds it.
  const studentNumber = db.$readableColumns('Student').includes('studentNumber')
  const where = { type: 'DELETED' as const, recordType: { in: recordTypes }, at: bound.inclusive ? { gte: bound.at } : { gt: bound.at }, givenName: { not: null } }
  const select = { recordType: true, recordId: true, sourcedId: true, studentNumber, givenName: true, familyName: true, recordStatus: true, at: true }
  // A teacher reads her own feed (the school client's reach step binds her), in which what left her
  // reach is a deletion too; every other caller the school's.
  const rows = db.$statementReach() === 'teacher'
    ? await db.teacherChange.findMany({ where, select, orderBy: { id: 'asc' } })
    : await db.change.findMany({ where, select, orderBy: { seq: 'asc' } })
  const tombstones = rows
    .map((row): Tombstone => ({
      id: row.recordId,
      role: row.recordType === 'STUDENT' ? 'student' : 'teacher',
      sourcedId: row.sourcedId ?? row.recordId,
      // Written together for every deletion of a student or teacher (the query takes those with names).
      givenName: row.givenName!,
      familyName: row.familyName!,
      status: row.recordStatus!,
      studentNumber: row.studentNumber ?? null,
      at: row.at
    }))
  // A sourcedId deleted more than once (deleted, imported again, deleted again) is one deletion, the
  // latest, if it meets the filter; one a record of the same kind holds now (deleted and imported
  // again) is no deletion.
  const latest = new Map<string, Tombstone>()
  for (const tombstone of tombstones) latest.set(`${tombstone.role} ${tombstone.sourcedId}`, tombstone)
  for (const [key, tombstone] of latest) if (!meets(tombstone, filter!, context)) latest.delete(key)
  const live = new Set<string>()
  for (const kind of kinds) {
    const role = kind === STUDENT_USERS ? 'student' : 'teacher'
    const keys = [...latest.values()].filter((tombstone) => tombstone.role === role).map((tombstone) => tombstone.sourcedId)
    if (keys.length === 0) continue
    const held = await readRows<{ id: string, sourcedId: string | null }>(db, {
      model: kind.model, fields: ['sourcedId'], conditions: [{ kind: 'sourcedKeys', keys }], order: ['id'], descending: false, take: keys.length, skip: 0
    })
    for (const row of held) live.add(`${role} ${row.sourcedId ?? row.id}`)
  }
  return [...latest.entries()].filter(([key]) => !live.has(key)).map(([, tombstone]) => tombstone)
}
