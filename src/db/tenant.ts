// Wall 1 of tenant isolation: a Prisma client extension that confines a client to one school.
// Default deny: every operation goes through one hook; tenant models get the school added to
// their filter and written data, School is readable only as the caller's own row, and anything
// else (users, tokens, raw SQL, unknown operations) is refused but the typed statements of
// typed-reads.ts, to which it binds the school, and the two fixed statements of a mutation's
// idempotency key (idempotency-keys.ts: the caller's table, not a tenant one).
import { Prisma } from '../generated/prisma/client.js'
import { RELATIONS, TENANT_MODELS } from './data-model.js'
import { isKeyStatement } from './idempotency-keys.js'
import { statementRefusal, withoutSchoolConditions } from './typed-reads.js'

/** Models the scoped client never reaches; only authentication and administration code does. */
export const PRIVATE_MODELS: ReadonlySet<string> = new Set<Prisma.ModelName>(['User', 'RefreshToken', 'Client', 'ClientSecret', 'UserAccessChange', 'AuditEvent', 'IdempotencyKey'])

const FILTER_ONLY = new Set([
  'findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'findMany',
  'count', 'aggregate', 'groupBy', 'delete', 'deleteMany'
])
const CREATE = new Set(['create', 'createMany', 'createManyAndReturn'])
const UPDATE = new Set(['update', 'updateMany', 'updateManyAndReturn'])
const SCHOOL_READS = new Set([
  'findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'findMany', 'count'
])

export class TenantViolationError extends Error {
  override name = 'TenantViolationError'
}

type Args = Record<string, unknown> | undefined

/** What the extension needs to know of the data model (data-model.ts). */
export interface TenantModelInfo {
  /** Relation fields of each model (nested writes through them are refused on tenant models). */
  relations: ReadonlyMap<string, ReadonlySet<string>>
  /** Names of relation fields that lead to a private model, anywhere in the data model. */
  privateRelations: ReadonlySet<string>
}

export const TENANT_MODEL_INFO: TenantModelInfo = {
  relations: new Map([...RELATIONS].map(([model, fields]) => [model, new Set(fields.map(([field]) => field))])),
  privateRelations: new Set([...RELATIONS.values()].flat().filter(([, target]) => PRIVATE_MODELS.has(target)).map(([field]) => field))
}

export function isPlainObject (value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false
  const proto: unknown = Object.getPrototypeOf(value)
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

/** Whether `value` is the id `schoolId` (in its one form, lower case), written in any case (RFC 9562). */
function isSchool (value: unknown, schoolId: string): boolean {
  return typeof value === 'string' && value.toLowerCase() === schoolId
}

/** Refuses any schoolId other than the caller's in a filter, cursor or written data, at any depth. */
function checkSchoolIds (value: unknown, schoolId: string): void {
  if (Array.isArray(value)) {
    for (const item of value) checkSchoolIds(item, schoolId)
    return
  }
  if (!isPlainObject(value)) return
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'schoolId' && inner !== undefined && !isSchool(inner, schoolId)) {
      throw new TenantViolationError("A schoolId other than the caller's school is refused")
    }
    checkSchoolIds(inner, schoolId)
  }
}

function withFilter (where: unknown, field: string, schoolId: string): Record<string, unknown> {
  const current = (where ?? {}) as Record<string, unknown>
  if (field in current && current[field] !== undefined && !isSchool(current[field], schoolId)) {
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
  if ('schoolId' in row && !isSchool(row.schoolId, schoolId)) {
    throw new TenantViolationError('Writing a row of another school is refused')
  }
  return { ...row, schoolId }
}

function checkNoMove (data: unknown, model: string, schoolId: string, info: TenantModelInfo): Record<string, unknown> {
  const row = checkScalarWrite(data, model, info)
  if ('schoolId' in row && !isSchool(row.schoolId, schoolId)) {
    throw new TenantViolationError('Moving a row to another school is refused')
  }
  return 'schoolId' in row ? { ...row, schoolId } : row
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

/**
 * Wall 1 as a Prisma client extension: every operation of the client it extends gets the school
 * added by scopeArgs, or is refused; a typed statement gets the school and, on a teacher's client
 * (`teacherId`), the teacher bound (typedStatementArgs); an idempotency key's statement passes as
 * it is (the reach step refuses it to a teacher). Step of the school client (school-client.ts).
 */
export function schoolFilter (schoolId: string, teacherId?: string) {
  return Prisma.defineExtension({
    name: 'school-filter',
    query: {
      $allOperations ({ model, operation, args, query }) {
        if (model === undefined && operation === RAW_READ) return query(typedStatementArgs(schoolId, teacherId, args) as typeof args)
        if (model === undefined && operation === RAW_WRITE && isKeyStatement((args as unknown[] | undefined)?.[0])) return query(args)
        return query(scopeArgs(schoolId, model, operation, args as Args, TENANT_MODEL_INFO) as typeof args)
      }
    }
  })
}

/** The raw-query operation the typed statements run through (typed-reads.ts). */
export const RAW_READ = '$queryRawUnsafe'

/** The raw operation an idempotency key's two statements run through (idempotency-keys.ts); no other statement passes it. */
export const RAW_WRITE = '$executeRawUnsafe'

/**
 * Wall 1 on a typed statement: the arguments of `$queryRawUnsafe` (its text, then its own
 * parameters) with the school bound as $1 and, on a teacher's client, the teacher as $2; refused
 * when the statement is not registered (by typed-reads.ts or typed-writes.ts), was built for
 * another kind of caller, or does not take the school in `<alias>.school_id = $1` of every table
 * it reads (for a write, where its form puts it) and, a teacher's, the teacher's reach in every
 * table too (`statementRefusal`).
 */
export function typedStatementArgs (schoolId: string, teacherId: string | undefined, args: unknown): unknown[] {
  const [sql, ...values] = args as unknown[]
  const refusal = statementRefusal(sql, teacherId === undefined ? 'school' : 'teacher')
  if (refusal !== null) throw new TenantViolationError(refusal)
  return teacherId === undefined ? [sql, schoolId, ...values] : [sql, schoolId, teacherId, ...values]
}

/**
 * The school filter taken away (the isolation tests that show wall 2 alone): model operations pass
 * as they are, and a typed statement runs with its school conditions (and a teacher's reach
 * conditions) taken out, the school and the teacher still bound where they would be.
 */
export function schoolFilterTakenAway (schoolId: string, teacherId?: string) {
  return Prisma.defineExtension({
    name: 'school-filter-taken-away',
    query: {
      $allOperations ({ model, operation, args, query }) {
        if (model !== undefined || operation !== RAW_READ) return query(args)
        const [sql, ...values] = typedStatementArgs(schoolId, teacherId, args)
        return query([withoutSchoolConditions(sql as string), ...values] as typeof args)
      }
    }
  })
}
