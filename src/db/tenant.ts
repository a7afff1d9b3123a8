// Wall 1 of tenant isolation: a Prisma client extension that confines a client to one school.
// Default deny: every operation goes through one hook; tenant models get the school added to
// their filter and written data, School is readable only as the caller's own row, and anything
// else (users, tokens, raw SQL, unknown operations) is refused.
import { Prisma, type PrismaClient } from '../generated/prisma/client.js'

/** Models whose rows belong to one school (primary key leads with schoolId). */
export const TENANT_MODELS: ReadonlySet<string> = new Set<Prisma.ModelName>([
  'Classroom',
  'Student',
  'Teacher',
  'TeacherClassroom'
])

/** Models the scoped client never reaches; only authentication and administration code does. */
export const PRIVATE_MODELS: ReadonlySet<string> = new Set<Prisma.ModelName>(['User', 'RefreshToken'])

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

function withFilter (where: unknown, field: string, schoolId: string): Record<string, unknown> {
  const current = (where ?? {}) as Record<string, unknown>
  if (field in current && current[field] !== schoolId) {
    throw new TenantViolationError(`A filter on ${field} other than the caller's school is refused`)
  }
  return { ...current, [field]: schoolId }
}

function withSchool (data: unknown, schoolId: string): Record<string, unknown> {
  const row = (data ?? {}) as Record<string, unknown>
  if ('schoolId' in row && row.schoolId !== schoolId) {
    throw new TenantViolationError('Writing a row of another school is refused')
  }
  return { ...row, schoolId }
}

function checkNoMove (data: unknown, schoolId: string): unknown {
  const row = (data ?? {}) as Record<string, unknown>
  if ('schoolId' in row && row.schoolId !== schoolId) {
    throw new TenantViolationError('Moving a row to another school is refused')
  }
  if ('school' in row) throw new TenantViolationError('Changing the school relation is refused')
  return data
}

/** The arguments an operation runs with on the client of `schoolId`; throws when it may not run. */
export function scopeArgs (schoolId: string, model: string | undefined, operation: string, args: Args): Args {
  if (model === undefined) {
    throw new TenantViolationError(`${operation} is not available on a school-scoped client`)
  }
  if (model === 'School') {
    if (!SCHOOL_READS.has(operation)) throw new TenantViolationError(`School.${operation} is not available on a school-scoped client`)
    return { ...args, where: withFilter(args?.where, 'id', schoolId) }
  }
  if (!TENANT_MODELS.has(model)) {
    throw new TenantViolationError(`${model} is not available on a school-scoped client`)
  }
  if (FILTER_ONLY.has(operation)) {
    return { ...args, where: withFilter(args?.where, 'schoolId', schoolId) }
  }
  if (CREATE.has(operation)) {
    const data = args?.data
    return {
      ...args,
      data: Array.isArray(data) ? data.map((row) => withSchool(row, schoolId)) : withSchool(data, schoolId)
    }
  }
  if (UPDATE.has(operation)) {
    return { ...args, where: withFilter(args?.where, 'schoolId', schoolId), data: checkNoMove(args?.data, schoolId) }
  }
  if (operation === 'upsert') {
    return {
      ...args,
      where: withFilter(args?.where, 'schoolId', schoolId),
      create: withSchool(args?.create, schoolId),
      update: checkNoMove(args?.update, schoolId)
    }
  }
  throw new TenantViolationError(`${model}.${operation} is not available on a school-scoped client`)
}

export function tenantExtension (schoolId: string) {
  return Prisma.defineExtension({
    name: 'tenant',
    query: {
      $allOperations ({ model, operation, args, query }) {
        return query(scopeArgs(schoolId, model, operation, args as Args) as typeof args)
      }
    }
  })
}

export function scopeToSchool (prisma: PrismaClient, schoolId: string) {
  return prisma.$extends(tenantExtension(schoolId))
}

/** The only database handle resolvers get: every query confined to one school. */
export type TenantDb = ReturnType<typeof scopeToSchool>
