// What a request did to student and teacher records, counted where the records leave the database:
// the school-scoped client (the only way resolvers reach tenant data) gets one more Prisma client
// extension on top that counts, per request, the Student and Teacher rows each operation returned
// or changed, including rows nested in relation reads. Counting at the database rather than in the
// GraphQL result means no resolver, loader or nested selection can be missed, whatever the schema
// grows into; the count is what the database handed over (a page read with one row of look-ahead
// counts that row too).
//
// The request's tally travels in an AsyncLocalStorage set around the GraphQL handler (plugin.ts).
// Operations outside a request (the CLI, tests) are not counted.
import { AsyncLocalStorage } from 'node:async_hooks'
import type { PrismaClient } from '../generated/prisma/client.js'
import { Prisma } from '../generated/prisma/client.js'
import type { TenantDb } from '../db/tenant.js'

export type RecordType = 'Student' | 'Teacher'
export type AccessAction = 'read' | 'write'

/** One line of a request's tally: this many records of this type, read or written, in this school. */
export interface AccessCount {
  schoolId: string
  recordType: RecordType
  action: AccessAction
  count: number
}

/** The tally of one request; a handful of entries at most. */
export class RequestAccess {
  readonly at = new Date()
  readonly counts: AccessCount[] = []

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

export const requestAccess = new AsyncLocalStorage<RequestAccess>()

const AUDITED: ReadonlySet<string> = new Set<RecordType>(['Student', 'Teacher'])

const READ_ROWS = new Set(['findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'findMany'])
const WRITE_ROWS = new Set(['create', 'createManyAndReturn', 'update', 'updateManyAndReturn', 'upsert', 'delete'])
/** Writes that answer `{ count }` only. */
const WRITE_COUNT = new Set(['createMany', 'updateMany', 'deleteMany'])
// count, aggregate and groupBy hand over numbers, not records: they are not audited.

/** Relation fields of each model and the model each leads to. */
export type Relations = ReadonlyMap<string, ReadonlyArray<readonly [field: string, model: string]>>

interface RuntimeDataModel {
  models: Record<string, { fields: Array<{ name: string, kind: string, type: string }> }>
}

export function relationsOf (prisma: PrismaClient): Relations {
  const dataModel = (prisma as unknown as { _runtimeDataModel?: RuntimeDataModel })._runtimeDataModel
  if (dataModel?.models === undefined) throw new Error('The Prisma client does not expose its data model')
  const relations = new Map<string, Array<[string, string]>>()
  for (const [model, { fields }] of Object.entries(dataModel.models)) {
    relations.set(model, fields.filter((f) => f.kind === 'object').map((f) => [f.name, f.type]))
  }
  return relations
}

/**
 * Rows of other models that name a student or teacher: a change feed entry carries the record's id,
 * sourcedId and student number, so reading it counts as reading that record (a feed read that also
 * asks for the student as it is now counts both rows).
 */
const NAMING: ReadonlyMap<string, (row: Record<string, unknown>) => RecordType | undefined> = new Map([
  ['Change', (row) => row.recordType === 'STUDENT' ? 'Student' : row.recordType === 'TEACHER' ? 'Teacher' : undefined]
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

const lowerFirst = (name: string): string => name.charAt(0).toLowerCase() + name.slice(1)

/**
 * An interactive transaction's client whose model operations are counted too. A transaction client
 * cannot be extended (Prisma refuses `$extends` on it), so its model delegates are wrapped.
 */
function countingTransaction (tx: object, schoolId: string, relations: Relations): object {
  const models = new Map([...relations.keys()].map((model) => [lowerFirst(model), model]))
  const delegates = new Map<string, object>()
  return new Proxy(tx, {
    get (target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown
      const model = typeof key === 'string' ? models.get(key) : undefined
      if (model === undefined || value === null || typeof value !== 'object') return value
      let delegate = delegates.get(key as string)
      if (delegate === undefined) {
        delegate = new Proxy(value, {
          get (inner, operation, innerReceiver) {
            const method = Reflect.get(inner, operation, innerReceiver) as unknown
            if (typeof method !== 'function' || typeof operation !== 'string') return method
            return (...args: unknown[]) => {
              const access = requestAccess.getStore()
              const result = (method as (...a: unknown[]) => Promise<unknown>).apply(inner, args)
              if (access === undefined) return result
              return result.then((rows) => {
                record(access, schoolId, relations, model, operation, rows)
                return rows
              })
            }
          }
        })
        delegates.set(key as string, delegate)
      }
      return delegate
    }
  })
}

/** `db` (the client of `schoolId`) with every operation's records counted into the current request's tally. */
export function countingClient (db: TenantDb, schoolId: string, relations: Relations): TenantDb {
  return db.$extends({
    name: 'access-audit',
    query: {
      $allOperations ({ model, operation, args, query }) {
        const access = requestAccess.getStore()
        if (access === undefined || model === undefined) return query(args)
        return query(args).then((result) => {
          record(access, schoolId, relations, model, operation, result)
          return result
        })
      }
    },
    client: {
      // Operations inside an interactive transaction bypass the query hook above: count them there.
      $transaction (first: unknown, ...rest: unknown[]) {
        const parent = Prisma.getExtensionContext(this).$parent as unknown as { $transaction: (...a: unknown[]) => Promise<unknown> }
        if (typeof first !== 'function') return parent.$transaction(first, ...rest)
        const work = first as (tx: object) => Promise<unknown>
        return parent.$transaction((tx: object) => work(countingTransaction(tx, schoolId, relations)), ...rest)
      }
    }
  }) as unknown as TenantDb
}
