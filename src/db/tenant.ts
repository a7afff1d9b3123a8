// Wall 1 of tenant isolation: a Prisma client extension that confines a client to one school.
// Default deny: every operation goes through one hook; tenant models get the school added to
// their filter and written data, School is readable only as the caller's own row, and anything
// else (users, tokens, raw SQL, unknown operations) is refused.
import { Prisma, type PrismaClient } from '../generated/prisma/client.js'
import type { ReadRouter } from './replicas.js'
import { schoolSession } from './school-session.js'

/** Models whose rows belong to one school (primary key leads with schoolId). */
export const TENANT_MODELS: ReadonlySet<string> = new Set<Prisma.ModelName>([
  'Classroom',
  'Student',
  'Teacher',
  'TeacherClassroom',
  'Change'
])

/** Models the scoped client never reaches; only authentication and administration code does. */
export const PRIVATE_MODELS: ReadonlySet<string> = new Set<Prisma.ModelName>(['User', 'RefreshToken', 'UserAccessChange', 'AuditEvent'])

const FILTER_ONLY = new Set([
  'findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'findMany',
  'count', 'aggregate', 'groupBy', 'delete', 'deleteMany'
])
const CREATE = new Set(['create', 'createMany', 'createManyAndReturn'])
const UPDATE = new Set(['update', 'updateMany', 'updateManyAndReturn'])
/** Operations that only read: these may run on a replica (replicas.ts). */
const READS = new Set([
  'findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'findMany', 'count', 'aggregate', 'groupBy'
])
const SCHOOL_READS = new Set([
  'findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'findMany', 'count'
])

export class TenantViolationError extends Error {
  override name = 'TenantViolationError'
}

type Args = Record<string, unknown> | undefined

interface RuntimeDataModel {
  models: Record<string, { fields: Array<{ name: string, kind: string, type: string }> }>
}

/** What the extension needs to know of the data model, read from the generated client. */
export interface TenantModelInfo {
  /** Relation fields of each model (nested writes through them are refused on tenant models). */
  relations: ReadonlyMap<string, ReadonlySet<string>>
  /** Names of relation fields that lead to a private model, anywhere in the data model. */
  privateRelations: ReadonlySet<string>
  /** Scalar fields of each model. */
  scalars: ReadonlyMap<string, ReadonlySet<string>>
}

export function tenantModelInfo (prisma: PrismaClient): TenantModelInfo {
  const dataModel = (prisma as unknown as { _runtimeDataModel?: RuntimeDataModel })._runtimeDataModel
  if (dataModel?.models === undefined) throw new Error('The Prisma client does not expose its data model')
  const relations = new Map<string, Set<string>>()
  const scalars = new Map<string, Set<string>>()
  const privateRelations = new Set<string>()
  for (const [model, { fields }] of Object.entries(dataModel.models)) {
    const names = new Set<string>()
    scalars.set(model, new Set(fields.filter((f) => f.kind !== 'object').map((f) => f.name)))
    for (const field of fields) {
      if (field.kind !== 'object') continue
      names.add(field.name)
      if (PRIVATE_MODELS.has(field.type)) privateRelations.add(field.name)
    }
    relations.set(model, names)
  }
  return { relations, privateRelations, scalars }
}

function isPlainObject (value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** Refuses a reference to a private relation (users, refresh tokens) anywhere in the arguments. */
function checkNoPrivateRelation (value: unknown, privateRelations: ReadonlySet<string>): void {
  if (Array.isArray(value)) {
    for (const item of value) checkNoPrivateRelation(item, privateRelations)
    return
  }
  if (!isPlainObject(value)) return
  for (const [key, inner] of Object.entries(value)) {
    if (privateRelations.has(key)) {
      throw new TenantViolationError(`The relation ${key} is not available on a school-scoped client`)
    }
    checkNoPrivateRelation(inner, privateRelations)
  }
}

/** Refuses any schoolId other than the caller's in a filter, cursor or written data, at any depth. */
function checkSchoolIds (value: unknown, schoolId: string): void {
  if (Array.isArray(value)) {
    for (const item of value) checkSchoolIds(item, schoolId)
    return
  }
  if (!isPlainObject(value)) return
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'schoolId' && inner !== undefined && inner !== schoolId) {
      throw new TenantViolationError("A schoolId other than the caller's school is refused")
    }
    checkSchoolIds(inner, schoolId)
  }
}

function withFilter (where: unknown, field: string, schoolId: string): Record<string, unknown> {
  const current = (where ?? {}) as Record<string, unknown>
  if (field in current && current[field] !== undefined && current[field] !== schoolId) {
    throw new TenantViolationError(`A filter on ${field} other than the caller's school is refused`)
  }
  return { ...current, [field]: schoolId }
}

function checkScalarWrite (data: unknown, model: string, info: TenantModelInfo): Record<string, unknown> {
  if (!isPlainObject(data)) throw new TenantViolationError(`${model} data must be an object`)
  const relations = info.relations.get(model)
  for (const key of Object.keys(data)) {
    if (relations?.has(key) === true) {
      throw new TenantViolationError(
        `Nested writes through ${model}.${key} are not available on a school-scoped client: write the foreign key instead`
      )
    }
  }
  return data
}

function withSchool (data: unknown, model: string, schoolId: string, info: TenantModelInfo): Record<string, unknown> {
  const row = checkScalarWrite(data, model, info)
  if ('schoolId' in row && row.schoolId !== schoolId) {
    throw new TenantViolationError('Writing a row of another school is refused')
  }
  return { ...row, schoolId }
}

function checkNoMove (data: unknown, model: string, schoolId: string, info: TenantModelInfo): Record<string, unknown> {
  const row = checkScalarWrite(data, model, info)
  if ('schoolId' in row && row.schoolId !== schoolId) {
    throw new TenantViolationError('Moving a row to another school is refused')
  }
  return row
}

/** The arguments an operation runs with on the client of `schoolId`; throws when it may not run. */
export function scopeArgs (
  schoolId: string,
  model: string | undefined,
  operation: string,
  args: Args,
  info: TenantModelInfo
): Args {
  if (model === undefined) {
    throw new TenantViolationError(`${operation} is not available on a school-scoped client`)
  }
  if (model !== 'School' && !TENANT_MODELS.has(model)) {
    throw new TenantViolationError(`${model} is not available on a school-scoped client`)
  }
  checkNoPrivateRelation(args, info.privateRelations)
  if (model === 'School') {
    if (!SCHOOL_READS.has(operation)) throw new TenantViolationError(`School.${operation} is not available on a school-scoped client`)
    return { ...args, where: withFilter(args?.where, 'id', schoolId) }
  }
  checkSchoolIds(args?.where, schoolId)
  checkSchoolIds(args?.cursor, schoolId)
  checkSchoolIds(args?.having, schoolId)
  if (FILTER_ONLY.has(operation)) {
    return { ...args, where: withFilter(args?.where, 'schoolId', schoolId) }
  }
  if (CREATE.has(operation)) {
    const data = args?.data
    return {
      ...args,
      data: Array.isArray(data) ? data.map((row) => withSchool(row, model, schoolId, info)) : withSchool(data, model, schoolId, info)
    }
  }
  if (UPDATE.has(operation)) {
    return {
      ...args,
      where: withFilter(args?.where, 'schoolId', schoolId),
      data: checkNoMove(args?.data, model, schoolId, info)
    }
  }
  if (operation === 'upsert') {
    return {
      ...args,
      where: withFilter(args?.where, 'schoolId', schoolId),
      create: withSchool(args?.create, model, schoolId, info),
      update: checkNoMove(args?.update, model, schoolId, info)
    }
  }
  throw new TenantViolationError(`${model}.${operation} is not available on a school-scoped client`)
}

export interface ScopeOptions {
  /**
   * Wall 1 (the filters this extension adds). Off only in the isolation tests that show wall 2
   * holds on its own; the school is still set for row-level security.
   */
  filter?: boolean
  /** Where reads go when there are replicas; without it everything runs on `prisma`. */
  reads?: ReadRouter | undefined
}

interface HookParams {
  __internalParams?: { transaction?: unknown }
}

/** `{ schoolId_id: { schoolId, id } }` (a compound unique key) as the plain filter `{ schoolId, id }`. */
function uniqueAsFilter (where: unknown, scalars: ReadonlySet<string> | undefined): Record<string, unknown> {
  const filter: Record<string, unknown> = {}
  for (const [key, value] of Object.entries((where ?? {}) as Record<string, unknown>)) {
    if (scalars?.has(key) !== true && isPlainObject(value) && Object.keys(value).every((k) => scalars?.has(k) === true)) {
      Object.assign(filter, value)
    } else {
      filter[key] = value
    }
  }
  return filter
}

const same = <T>(value: T): T => value

/** findFirstOrThrow's "no record": an answer, not a failure of the replica. */
function isNotFound (err: unknown): boolean {
  return err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2025'
}

const lowerFirst = (name: string): string => name.charAt(0).toLowerCase() + name.slice(1)

/**
 * The client of one school: wall 1 adds the school to every operation, and every operation runs
 * with the school set for row-level security (wall 2, see school-session.ts).
 */
export function scopeToSchool (prisma: PrismaClient, schoolId: string, info: TenantModelInfo, options: ScopeOptions = {}) {
  const filter = options.filter !== false
  const reads = options.reads

  /** One operation of a model on `client`, in the school's context (findUnique as findFirst). */
  function run (client: PrismaClient, model: string, operation: string, scoped: Args): Promise<unknown> {
    const delegate = (client as unknown as Record<string, Record<string, (a: unknown) => Promise<unknown>>>)[lowerFirst(model)]!
    if (operation === 'findUnique' || operation === 'findUniqueOrThrow') {
      // Prisma gathers the findUnique calls of one tick and runs them under the async context
      // of the first caller, which may be another school's: findFirst runs on the caller's own.
      const where = uniqueAsFilter(scoped?.where, info.scalars.get(model))
      const findFirst = operation === 'findUnique' ? delegate.findFirst! : delegate.findFirstOrThrow!
      return schoolSession.run(schoolId, () => findFirst({ ...scoped, where }).then(same))
    }
    return schoolSession.run(schoolId, () => delegate[operation]!(scoped).then(same))
  }

  return prisma
    .$extends({
      name: 'tenant',
      query: {
        $allOperations (params) {
          const { model, operation, args, query } = params
          const scoped = (filter ? scopeArgs(schoolId, model, operation, args as Args, info) : args) as typeof args
          // Inside a transaction of this client, the school was set when it began.
          if ((params as HookParams).__internalParams?.transaction !== undefined) return query(scoped)
          if (model !== undefined && reads !== undefined) {
            if (!READS.has(operation)) {
              // A write pins the school to the primary before its answer returns (read your writes).
              return schoolSession.run(schoolId, () => query(scoped).then((result) => {
                reads.changed(schoolId)
                return result
              }, (err: unknown) => {
                reads.changed(schoolId)
                throw err
              }))
            }
            const replica = reads.replicaFor(schoolId)
            if (replica !== undefined) {
              return run(replica, model, operation, scoped as Args).catch((err: unknown) => {
                if (isNotFound(err)) throw err
                // The replica is gone or refused: this read, and the next ones, on the primary.
                reads.failed(replica)
                return run(prisma, model, operation, scoped as Args)
              })
            }
          }
          if (model !== undefined && (operation === 'findUnique' || operation === 'findUniqueOrThrow')) {
            return run(prisma, model, operation, scoped as Args)
          }
          // Prisma's promises are lazy: `then` inside run() starts the query in the school's context.
          return schoolSession.run(schoolId, () => query(scoped).then(same))
        }
      }
    })
    .$extends({
      name: 'tenant-transactions',
      client: {
        /** Interactive transactions of the scoped client begin by setting the school. */
        $transaction (first: unknown, ...rest: unknown[]) {
          if (typeof first !== 'function') {
            throw new TenantViolationError('A school-scoped client runs interactive transactions only: $transaction(async (tx) => ...)')
          }
          const parent = Prisma.getExtensionContext(this).$parent as unknown as { $transaction: (...a: unknown[]) => Promise<unknown> }
          const done = schoolSession.run(schoolId, () => parent.$transaction(first, ...rest).then(same))
          // A transaction may have written: the school's next reads go to the primary.
          return reads === undefined ? done : done.finally(() => { reads.changed(schoolId) })
        }
      }
    })
}

/** The only database handle resolvers get: every query confined to one school. */
export type TenantDb = ReturnType<typeof scopeToSchool>
