// Delta sync's deletions (docs/api/oneroster.md, "Delta sync"): a users, students or teachers
// request whose filter bounds dateLastModified from below (`>` or `>=`, alone or ANDed with other
// conditions) also answers the users deleted after that bound (students, teachers, and on /users
// agents), as users with status `tobedeleted` and dateLastModified the time of the deletion, for as
// long as their tombstones are kept (90 days). A tombstone keeps what UserDType requires (migrations
// change_feed_deleted_users, agent_tombstones): the sourcedId, the names, the status the record had
// (enabledUser), and the role (its table's, an agent's own); a student's number too (identifier).
// Nothing else of the record is kept, so nothing else is sent, and a comparison on a field it does
// not keep holds as on a record without that value (only `!=`).
//
// The tombstones are read through the caller's school client (the Change model, or a teacher's
// TeacherChange: her feed, where a record that left her reach is deleted for her; an agent's from
// RosterTombstone; both walls), all those after the bound at once (kept 90 days), one per sourcedId
// that no live record holds again (a typed statement of the kind), and filtered and ordered here as
// the database orders the live records (users.ts merges them), so that the pages and X-Total-Count
// count them with the rest.
import type { SchoolDb } from '../db/school-client.js'
import type { Comparison, Predicate } from '../db/typed-reads.js'
import { readRows } from '../records/lists.js'
import { compareValues } from './filter.js'
import { AGENT_USERS, parseDateTime, STUDENT_USERS, type AnswerContext, type Kind } from './kinds.js'

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

/** A deleted user as the change feed (a student, a teacher) or the roster's tombstones (an agent) keep it. */
export interface Tombstone {
  readonly id: string
  /** Its table, a kind of UserDType's records: a sourcedId is one user's in its table. */
  readonly table: 'student' | 'teacher' | 'agent'
  /** Its role (RoleEnum): student, teacher, or an agent's guardian, parent or relative. */
  readonly role: string
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

/**
 * Whether a deleted record meets a filter (whose names and values the live kinds have checked), as
 * the database decides for a record: `at` is its dateLastModified, `valueOf` its value of a binding
 * field as the live record's answer writes it (a list for a reference list; null for one it does not
 * keep). Users' and the other records' tombstones (record-deletions.ts) alike.
 */
export function meetsFilter (predicate: Predicate, at: Date, valueOf: (name: string) => string | readonly string[] | null): boolean {
  switch (predicate.kind) {
    case 'constant': return predicate.value
    case 'all': return predicate.parts.every((part) => meetsFilter(part, at, valueOf))
    case 'any': return predicate.parts.some((part) => meetsFilter(part, at, valueOf))
    case 'compare': {
      const op: Comparison = predicate.op
      if (predicate.field === 'dateLastModified') return compareValues(at.getTime(), op, parseDateTime('dateLastModified', op, predicate.value).getTime())
      const value = valueOf(predicate.field)
      // As the database: `!=` holds for a record without the value, every other comparison fails; a list holds a value or not.
      if (value === null) return op === '!='
      if (typeof value !== 'string') return op === '=' ? value.includes(predicate.value) : !value.includes(predicate.value)
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

/** The table of a user kind, as its tombstones name it. */
function tableOf (kind: Kind): Tombstone['table'] {
  return kind === STUDENT_USERS ? 'student' : kind === AGENT_USERS ? 'agent' : 'teacher'
}

/** The deletions after the bound of the kinds' tables: students' and teachers' from a change feed, agents' from the roster's tombstones. */
async function tombstonesAfter (db: SchoolDb, tables: ReadonlySet<Tombstone['table']>, bound: { at: Date, inclusive: boolean }): Promise<Tombstone[]> {
  const at = bound.inclusive ? { gte: bound.at } : { gt: bound.at }
  const tombstones: Tombstone[] = []
  const recordTypes = [...tables].filter((table) => table !== 'agent').map((table) => table === 'student' ? 'STUDENT' as const : 'TEACHER' as const)
  if (recordTypes.length > 0) {
    // The student number needs roster.readonly, on the feeds as on the record (COLUMN_SCOPES): read only by a caller who holds it.
    const studentNumber = db.$readableColumns('Student').includes('studentNumber')
    const where = { type: 'DELETED' as const, recordType: { in: recordTypes }, at, givenName: { not: null } }
    const select = { recordType: true, recordId: true, sourcedId: true, studentNumber, givenName: true, familyName: true, recordStatus: true, at: true }
    // A teacher reads her own feed (the school client's reach step binds her), in which what left her
    // reach is a deletion too; every other caller the school's.
    const rows = db.$statementReach() === 'teacher'
      ? await db.teacherChange.findMany({ where, select, orderBy: { id: 'asc' } })
      : await db.change.findMany({ where, select, orderBy: { seq: 'asc' } })
    for (const row of rows) {
      const table = row.recordType === 'STUDENT' ? 'student' : 'teacher'
      tombstones.push({
        id: row.recordId,
        table,
        role: table,
        sourcedId: row.sourcedId ?? row.recordId,
        // Written together for every deletion of a student or teacher (the query takes those with names).
        givenName: row.givenName!,
        familyName: row.familyName!,
        status: row.recordStatus!,
        studentNumber: row.studentNumber ?? null,
        at: row.at
      })
    }
  }
  // A teacher reads no agent, deleted or not (migration agents; roster_tombstones' policy admits her none).
  if (tables.has('agent') && db.$statementReach() !== 'teacher') {
    const rows = await db.rosterTombstone.findMany({
      where: { kind: 'AGENT', at, teacherId: null },
      select: { id: true, sourcedId: true, fields: true, at: true },
      orderBy: [{ at: 'asc' }, { id: 'asc' }]
    })
    for (const row of rows) {
      // Written by migration agent_tombstones: the role, names and status the agent had.
      const fields = row.fields as { role: string, givenName: string, familyName: string, status: string }
      tombstones.push({
        id: row.id, table: 'agent', role: fields.role, sourcedId: row.sourcedId, givenName: fields.givenName, familyName: fields.familyName, status: fields.status, studentNumber: null, at: row.at
      })
    }
  }
  return tombstones
}

/**
 * The users of these kinds deleted after the filter's lower bound of dateLastModified that meet the
 * filter (none without a bound): students and teachers from the school's feed, or for a teacher
 * from her own (teacher_changes: what left her reach, deleted or not); agents from the roster's
 * tombstones (migration agent_tombstones).
 */
export async function deletedUsers (db: SchoolDb, kinds: readonly Kind[], filter: Predicate | undefined, context: AnswerContext): Promise<Tombstone[]> {
  const bound = deltaBound(filter)
  if (bound === undefined) return []
  const tombstones = await tombstonesAfter(db, new Set(kinds.map(tableOf)), bound)
  // A sourcedId deleted more than once (deleted, imported again, deleted again) is one deletion, the
  // latest, if it meets the filter; one a record of the same kind holds now (deleted and imported
  // again) is no deletion.
  const latest = new Map<string, Tombstone>()
  for (const tombstone of tombstones) {
    const key = `${tombstone.table} ${tombstone.sourcedId}`
    const before = latest.get(key)
    if (before === undefined || before.at.getTime() <= tombstone.at.getTime()) latest.set(key, tombstone)
  }
  for (const [key, tombstone] of latest) if (!meetsFilter(filter!, tombstone.at, (name) => valueOf(tombstone, name, context))) latest.delete(key)
  const live = new Set<string>()
  for (const kind of kinds) {
    const table = tableOf(kind)
    const keys = [...latest.values()].filter((tombstone) => tombstone.table === table).map((tombstone) => tombstone.sourcedId)
    if (keys.length === 0) continue
    const held = await readRows<{ id: string, sourcedId: string | null }>(db, {
      model: kind.model, fields: ['sourcedId'], conditions: [{ kind: 'sourcedKeys', keys }], order: ['id'], descending: false, take: keys.length, skip: 0
    })
    for (const row of held) live.add(`${table} ${row.sourcedId ?? row.id}`)
  }
  return [...latest.entries()].filter(([key]) => !live.has(key)).map(([, tombstone]) => tombstone)
}
