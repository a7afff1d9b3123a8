// What a request did to student and teacher records, counted where the records leave the database:
// the school-scoped client (the only way resolvers reach tenant data) shows every operation's result
// to the request's observer (src/db/operation-observer.ts), and the request's tally, the observer,
// counts the Student, Teacher and Agent rows each operation returned or changed, including rows nested in
// relation reads. Counting at the database rather than in the
// GraphQL result means no resolver, loader or nested selection can be missed, whatever the schema
// grows into; the count is what the database handed over (a page read with one row of look-ahead
// counts that row too).
//
// The request's tally is set as the observer around the GraphQL handler (plugin.ts). Operations
// outside a request (the CLI, tests) are not counted.
import { RELATIONS } from '../db/data-model.js'
import type { OperationObserver } from '../db/operation-observer.js'

/** The personal records audited: students, teachers, and students' agents (guardians, parents, relatives). */
export type RecordType = 'Student' | 'Teacher' | 'Agent'
export type AccessAction = 'read' | 'write'

/** One line of a request's tally: this many records of this type, read or written, in this school. */
export interface AccessCount {
  schoolId: string
  recordType: RecordType
  action: AccessAction
  count: number
}

/** The tally of one request (a handful of entries at most), observing its school clients' operations. */
export class RequestAccess implements OperationObserver {
  readonly at = new Date()
  readonly counts: AccessCount[] = []

  observe (schoolId: string, model: string, operation: string, result: unknown): void {
    record(this, schoolId, RELATIONS, model, operation, result)
  }

  add (schoolId: string, recordType: RecordType, action: AccessAction, count: number): void {
    if (count <= 0) return
    for (const entry of this.counts) {
      if (entry.recordType === recordType && entry.action === action && entry.schoolId === schoolId) {
        entry.count += count
        return
      }
    }
    this.counts.push({ schoolId, recordType, action, count })
  }
}

const AUDITED: ReadonlySet<string> = new Set<RecordType>(['Student', 'Teacher', 'Agent'])

const READ_ROWS = new Set(['findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'findMany'])
const WRITE_ROWS = new Set(['create', 'createManyAndReturn', 'update', 'updateManyAndReturn', 'upsert', 'delete'])
/** Writes that answer `{ count }` only. */
const WRITE_COUNT = new Set(['createMany', 'updateMany', 'deleteMany'])
// count, aggregate and groupBy hand over numbers, not records: they are not audited.

/** Relation fields of each model and the model each leads to. */
export type Relations = ReadonlyMap<string, ReadonlyArray<readonly [field: string, model: string, ...rest: unknown[]]>>

/**
 * Rows of other models that name a student or teacher: a change feed entry carries the record's id,
 * sourcedId and student number, so reading it counts as reading that record (a feed read that also
 * asks for the student as it is now counts both rows).
 */
const namedRecord = (row: Record<string, unknown>): RecordType | undefined =>
  row.recordType === 'STUDENT' ? 'Student' : row.recordType === 'TEACHER' ? 'Teacher' : undefined
const NAMING: ReadonlyMap<string, (row: Record<string, unknown>) => RecordType | undefined> = new Map([
  ['Change', namedRecord],
  ['TeacherChange', namedRecord]
])

/** Adds the audited rows in `value` (a row, a list of rows or null) of `model`, and those nested in it. */
function tally (
  access: RequestAccess,
  schoolId: string,
  relations: Relations,
  model: string,
  action: AccessAction,
  value: unknown
): void {
  if (Array.isArray(value)) {
    if (AUDITED.has(model)) access.add(schoolId, model as RecordType, action, value.length)
    for (const row of value) nested(access, schoolId, relations, model, row)
    return
  }
  if (value === null || typeof value !== 'object') return
  if (AUDITED.has(model)) access.add(schoolId, model as RecordType, action, 1)
  nested(access, schoolId, relations, model, value)
}

/** Rows read through the relation fields of one row, and the record it names. */
function nested (access: RequestAccess, schoolId: string, relations: Relations, model: string, row: unknown): void {
  if (row === null || typeof row !== 'object') return
  const names = NAMING.get(model)?.(row as Record<string, unknown>)
  if (names !== undefined) access.add(schoolId, names, 'read', 1)
  for (const [field, target] of relations.get(model) ?? []) {
    const inner = (row as Record<string, unknown>)[field]
    if (inner !== undefined && inner !== null) tally(access, schoolId, relations, target, 'read', inner)
  }
}

/** Records what one operation of `model` handed over into the request's tally. */
export function record (
  access: RequestAccess,
  schoolId: string,
  relations: Relations,
  model: string,
  operation: string,
  result: unknown
): void {
  if (READ_ROWS.has(operation)) {
    tally(access, schoolId, relations, model, 'read', result)
  } else if (WRITE_ROWS.has(operation)) {
    tally(access, schoolId, relations, model, 'write', result)
  } else if (WRITE_COUNT.has(operation) && AUDITED.has(model)) {
    const count = (result as { count?: unknown } | null)?.count
    if (typeof count === 'number') access.add(schoolId, model as RecordType, 'write', count)
  }
}
