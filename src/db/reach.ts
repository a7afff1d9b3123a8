// Wall 1 inside the school: the caller's reach. A step of the school client (school-client.ts) for
// callers narrower than a school administrator, after the school filter (so the school is in every
// filter already). Like the school filter it rewrites every operation or refuses it.
//
// - A teacher reads what surrounds them (docs/api/access.md): the classrooms they are assigned to
//   (any role), the students of those classrooms, the assignments of those classrooms, the teachers
//   of those classrooms and their own record, and the school with its calendar and courses (academic
//   sessions and courses: no one's personal data). Every operation gets the reach of its
//   model added to its `where`; every to-many relation read below it (select, include, _count) gets
//   the reach of the model it leads to; relation filters (`some`, `none`, `every`) consider only
//   rows in reach. A to-one relation needs nothing: from a row in reach it leads to a row in reach
//   (a student's classroom is one of the teacher's; an assignment in reach is in one of the
//   teacher's classrooms, so its teacher is a colleague). The school's change feed is not in a
//   teacher's reach; their own feed (TeacherChange) is, and only theirs.
// - A caller without a scope may not select, filter, order, group or aggregate by the columns it
//   guards; a read that names no columns omits them. Which columns those are is the caller's to say
//   (Reach.deniedColumns, from COLUMN_SCOPES in src/auth/scopes.ts): this layer knows no scopes.
// - Teachers only read: every write of theirs is refused, an idempotency key's too. A client with
//   limited scopes writes (the GraphQL layer checks its write scopes), but only the columns it may
//   read, and keeps its mutations' idempotency keys (idempotency-keys.ts).
//
// Wall 2 holds the same rows on its own (row-level security with app.teacher_id, migration
// teacher_role); the GraphQL layer refuses out-of-scope fields before execution
// (src/graphql/scope-check.ts), so a refusal here means a resolver asked for more than it should.
import { Prisma } from '../generated/prisma/client.js'
import { RELATIONS, type Relation } from './data-model.js'
import { isKeyStatement } from './idempotency-keys.js'
import { isPlainObject, RAW_READ, RAW_WRITE, TenantViolationError } from './tenant.js'
import { readsOnly, registeredStatement } from './typed-reads.js'

/**
 * Columns a caller may not read: by model, each column with what its refusal says the caller lacks
 * (`Student.email needs the scope <label>`).
 */
export type DeniedColumns = ReadonlyMap<string, ReadonlyMap<string, string>>

/** Who the caller is inside the school, beyond the school itself. */
export interface Reach {
  /** The teacher record of a TEACHER user; undefined for everyone else. */
  readonly teacherId?: string | undefined
  /**
   * The columns the caller may not read; none when undefined. Give the same map for the same
   * caller's rights (src/auth/scopes.ts keeps one per set of scopes): clients are keyed by it.
   */
  readonly deniedColumns?: DeniedColumns | undefined
}

type Args = Record<string, unknown>

interface Rules {
  readonly teacherId: string | undefined
  /** The teacher's classrooms, when this node keeps them (teacher-rooms.ts); else reached by relation. */
  readonly rooms?: readonly string[] | undefined
  /** Columns the caller may not read, by model, with the scope each needs. */
  readonly denied: DeniedColumns
}

const READS = new Set([
  'findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'findMany', 'count', 'aggregate', 'groupBy'
])
const AGGREGATES = ['_count', '_min', '_max', '_avg', '_sum'] as const

const RELATION_OF: ReadonlyMap<string, ReadonlyMap<string, Relation>> = new Map(
  [...RELATIONS].map(([model, relations]) => [model, new Map(relations.map((relation) => [relation[0], relation]))])
)

const NONE: DeniedColumns = new Map()

/** The caller's rules; null for one who reaches the whole school (an administrator, a client with every scope). */
function rulesOf (reach: Reach): Rules | null {
  const denied = reach.deniedColumns ?? NONE
  if (reach.teacherId === undefined && denied.size === 0) return null
  return { teacherId: reach.teacherId, denied }
}

/** True when `reach` is narrower than the whole school: the school client gets the reach step. */
export function narrowsReach (reach: Reach): boolean {
  return rulesOf(reach) !== null
}

/** The denied columns as text, by map: worked out once per map, which callers reuse. */
const deniedKeys = new WeakMap<DeniedColumns, string>()

function deniedKey (denied: DeniedColumns | undefined): string {
  if (denied === undefined || denied.size === 0) return ''
  let key = deniedKeys.get(denied)
  if (key === undefined) {
    key = [...denied].flatMap(([model, columns]) => [...columns.keys()].map((column) => `${model}.${column}`)).sort().join(' ')
    deniedKeys.set(denied, key)
  }
  return key
}

/**
 * A key of a reach, for caching clients (one per school and reach): the teacher and the columns
 * denied (two sets of scopes that deny the same columns share a client).
 */
export function reachKey (reach: Reach): string {
  return `${reach.teacherId ?? ''}|${deniedKey(reach.deniedColumns)}`
}

/** The `where` that confines `model` to a teacher's reach; null when the whole model (in the school) is. */
function reachOf (model: string, rules: Rules): Record<string, unknown> | null {
  const teacherId = rules.teacherId
  if (teacherId === undefined) {
    if (model === 'TeacherChange') throw new TenantViolationError('A teacher\'s change feed is read by that teacher only')
    return null
  }
  // With the classrooms known, by their ids (read from the classroom indexes); else by relation.
  const rooms = rules.rooms
  const mine = rooms === undefined ? { teachers: { some: { teacherId } } } : { id: { in: rooms } }
  const inMine = rooms === undefined ? { classroom: { is: mine } } : { classroomId: { in: rooms } }
  switch (model) {
    case 'School': return null
    // The school's calendar and courses, no one's personal data: the whole school's (typed-reads.ts teacherReach).
    case 'AcademicSession':
    case 'Course': return null
    case 'Classroom': return mine
    case 'Student': return inMine
    case 'TeacherClassroom': return inMine
    case 'Teacher': return { OR: [{ id: teacherId }, { classrooms: { some: inMine } }] }
    case 'TeacherChange': return { teacherId }
    // Her own (what left her reach) and the school's sessions and courses (migration roster_tombstones).
    case 'RosterTombstone': return { OR: [{ teacherId }, { teacherId: null, kind: { in: ['ACADEMIC_SESSION', 'COURSE'] } }] }
    case 'Change': throw new TenantViolationError('The school\'s change feed is not in a teacher\'s reach (a teacher reads their own)')
    default: throw new TenantViolationError(`${model} is not in a teacher's reach`)
  }
}

function checkColumn (model: string, column: string, rules: Rules): void {
  const scope = rules.denied.get(model)?.get(column)
  if (scope !== undefined) throw new TenantViolationError(`${model}.${column} needs the scope ${scope}`)
}

/** `where` plus `extra`, keeping the keys of `where` at the top (a unique filter stays unique). */
function andWhere (where: unknown, extra: Record<string, unknown> | null): Record<string, unknown> | undefined {
  if (extra === null) return where as Record<string, unknown> | undefined
  const current = (where ?? {}) as Record<string, unknown>
  const and: unknown[] = current.AND === undefined ? [] : Array.isArray(current.AND) ? current.AND : [current.AND]
  return { ...current, AND: [...and, extra] }
}

/** A filter of `model` that considers only rows in reach, through relation filters at any depth. */
function walkWhere (model: string, where: unknown, rules: Rules): unknown {
  if (Array.isArray(where)) return where.map((inner) => walkWhere(model, inner, rules))
  if (!isPlainObject(where)) return where
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(where)) {
    if (key === 'AND' || key === 'OR' || key === 'NOT') {
      out[key] = walkWhere(model, value, rules)
      continue
    }
    const relation = RELATION_OF.get(model)?.get(key)
    if (relation === undefined) {
      checkColumn(model, key, rules)
      out[key] = value
      continue
    }
    const [, target, many] = relation
    if (!isPlainObject(value)) {
      out[key] = value
      continue
    }
    if (many) {
      const reach = rules.teacherId === undefined ? null : reachOf(target, rules)
      const filters: Record<string, unknown> = {}
      for (const [op, filter] of Object.entries(value)) {
        const walked = walkWhere(target, filter, rules)
        filters[op] = reach === null ? walked : op === 'every' ? { OR: [walked, { NOT: reach }] } : { AND: [walked, reach] }
      }
      out[key] = filters
    } else if ('is' in value || 'isNot' in value) {
      out[key] = Object.fromEntries(Object.entries(value).map(([op, filter]) => [op, walkWhere(target, filter, rules)]))
    } else {
      out[key] = walkWhere(target, value, rules)
    }
  }
  return out
}

function walkOrderBy (model: string, orderBy: unknown, rules: Rules): void {
  if (Array.isArray(orderBy)) {
    for (const inner of orderBy) walkOrderBy(model, inner, rules)
    return
  }
  if (!isPlainObject(orderBy)) return
  for (const [key, value] of Object.entries(orderBy)) {
    const relation = RELATION_OF.get(model)?.get(key)
    if (relation === undefined) {
      checkColumn(model, key, rules)
    } else if (relation[2]) {
      // Ordering by a count of related rows would count rows out of reach.
      if (rules.teacherId !== undefined) throw new TenantViolationError(`Ordering ${model} by ${key} is not available to a teacher`)
    } else {
      walkOrderBy(relation[1], value, rules)
    }
  }
}

/** `_count: { select: { relation: ... } }`: each counted relation confined to the reach of its rows. */
function walkCount (model: string, count: unknown, rules: Rules): unknown {
  if (count === true) {
    if (rules.teacherId !== undefined) throw new TenantViolationError(`${model}._count of every relation is not available to a teacher: name the relations`)
    return count
  }
  if (!isPlainObject(count) || !isPlainObject(count.select)) return count
  const select: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(count.select)) {
    const relation = RELATION_OF.get(model)?.get(key)
    if (relation === undefined || value === false || value === undefined) {
      select[key] = value
      continue
    }
    const target = relation[1]
    const inner = isPlainObject(value) ? value : {}
    const reach = rules.teacherId === undefined ? null : reachOf(target, rules)
    const where = andWhere(walkWhere(target, inner.where, rules), reach)
    select[key] = where === undefined ? value : { ...inner, where }
  }
  return { ...count, select }
}

/** A relation read below `model` (select or include): its rows confined, its columns checked. */
function walkRelations (model: string, selection: Record<string, unknown>, rules: Rules, columns: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(selection)) {
    if (value === false || value === undefined) {
      out[key] = value
      continue
    }
    if (key === '_count') {
      out[key] = walkCount(model, value, rules)
      continue
    }
    const relation = RELATION_OF.get(model)?.get(key)
    if (relation === undefined) {
      if (columns) checkColumn(model, key, rules)
      out[key] = value
      continue
    }
    const [, target, many] = relation
    const nested = narrowRead(target, isPlainObject(value) ? value : {}, rules, many)
    out[key] = value === true && Object.keys(nested).length === 0 ? true : nested
  }
  return out
}

/** The arguments of a read of `model` (at the top, or a relation below one); `filtered`: it takes a `where`. */
function narrowRead (model: string, args: Args, rules: Rules, filtered: boolean): Args {
  const out: Args = { ...args }
  const reach = filtered && rules.teacherId !== undefined ? reachOf(model, rules) : null
  if (args.where !== undefined || reach !== null) {
    const where = andWhere(walkWhere(model, args.where, rules), reach)
    if (where !== undefined) out.where = where
  }
  if (args.orderBy !== undefined) walkOrderBy(model, args.orderBy, rules)
  if (args.cursor !== undefined) walkWhere(model, args.cursor, rules)
  if (Array.isArray(args.distinct)) for (const column of args.distinct) checkColumn(model, String(column), rules)
  if (isPlainObject(args.select)) {
    out.select = walkRelations(model, args.select, rules, true)
  } else {
    if (isPlainObject(args.include)) out.include = walkRelations(model, args.include, rules, false)
    const denied = rules.denied.get(model)
    if (denied !== undefined) {
      const omit = isPlainObject(args.omit) ? { ...args.omit } : {}
      for (const column of denied.keys()) omit[column] = true
      out.omit = omit
    }
  }
  return out
}

/** count, aggregate and groupBy: what they count, group and compute must be readable too. */
function narrowAggregate (model: string, args: Args, rules: Rules): Args {
  const out = narrowRead(model, { ...args, select: undefined, omit: undefined }, rules, true)
  delete out.select
  delete out.omit
  if (isPlainObject(args.select)) {
    for (const [column, value] of Object.entries(args.select)) if (column !== '_all' && value !== false) checkColumn(model, column, rules)
    out.select = args.select
  }
  for (const name of AGGREGATES) {
    const value = args[name]
    if (isPlainObject(value)) for (const [column, on] of Object.entries(value)) if (column !== '_all' && on !== false) checkColumn(model, column, rules)
  }
  const by = args.by
  for (const column of Array.isArray(by) ? by : by === undefined ? [] : [by]) checkColumn(model, String(column), rules)
  if (args.having !== undefined) out.having = walkWhere(model, args.having, rules)
  return out
}

/** The arguments an operation runs with for a caller of these rules; throws when it may not run. */
function narrow (model: string | undefined, operation: string, args: Args | undefined, rules: Rules): Args | undefined {
  // The school filter has refused everything without a model before this step.
  if (model === undefined) throw new TenantViolationError(`${operation} is not available on a school-scoped client`)
  if (!READS.has(operation)) {
    if (rules.teacherId !== undefined) throw new TenantViolationError(`${model}.${operation} is not available to a teacher: teachers only read`)
    return narrowWrite(model, operation, args ?? {}, rules)
  }
  if (operation === 'count' || operation === 'aggregate' || operation === 'groupBy') return narrowAggregate(model, args ?? {}, rules)
  return narrowRead(model, args ?? {}, rules, true)
}

/** Writes answering a count only: no row comes back to confine. */
const COUNTED_WRITES = new Set(['createMany', 'updateMany', 'deleteMany'])

/** The columns `data` (a row, or a list of rows) writes must be the caller's to read. */
function checkWritten (model: string, data: unknown, rules: Rules): void {
  if (Array.isArray(data)) {
    for (const row of data) checkWritten(model, row, rules)
    return
  }
  if (!isPlainObject(data)) return
  for (const column of Object.keys(data)) checkColumn(model, column, rules)
}

/**
 * A write of a client with limited scopes (whose write scopes the GraphQL layer has checked): it may
 * not write, filter by or return a column it may not read; what it returns is confined as a read.
 */
function narrowWrite (model: string, operation: string, args: Args, rules: Rules): Args {
  checkWritten(model, args.data, rules)
  checkWritten(model, args.create, rules)
  checkWritten(model, args.update, rules)
  if (COUNTED_WRITES.has(operation)) {
    const out: Args = { ...args }
    if (args.where !== undefined) out.where = walkWhere(model, args.where, rules)
    return out
  }
  return narrowRead(model, args, rules, args.where !== undefined)
}

/**
 * A typed statement (typed-reads.ts) of a caller of these rules, its school and teacher bound by the
 * school filter: a read only, and of columns the caller may read. A teacher's reach is in the
 * statement itself, which the school filter has checked.
 */
function narrowStatement (args: unknown, rules: Rules): unknown {
  const statement = registeredStatement((args as unknown[] | undefined)?.[0])
  if (statement === undefined) throw new TenantViolationError('Raw SQL is not available on a school-scoped client')
  if (!readsOnly(statement)) throw new TenantViolationError('A caller narrower than the school writes through the model operations')
  for (const column of statement.columns) {
    const dot = column.indexOf('.')
    checkColumn(column.slice(0, dot), column.slice(dot + 1), rules)
  }
  return args
}

/**
 * A raw write: only an idempotency key's statement (idempotency-keys.ts: the caller's table, no
 * column of a record), and not a teacher's, who writes nothing.
 */
function keyStatement (args: unknown, rules: Rules): unknown {
  if (!isKeyStatement((args as unknown[] | undefined)?.[0])) throw new TenantViolationError('Raw SQL is not available on a school-scoped client')
  if (rules.teacherId !== undefined) throw new TenantViolationError('An idempotency key is not available to a teacher: teachers only read')
  return args
}

/**
 * Wall 1's reach step of the school client, for a caller `narrowsReach` says is narrower than the
 * school. `rooms`, for a teacher: the teacher's classrooms when this node keeps them, or null.
 */
export function callerReach (reach: Reach, rooms?: () => Promise<readonly string[]> | null) {
  const rules = rulesOf(reach)
  if (rules === null) throw new Error('callerReach: this caller reaches the whole school; the step is not needed')
  return Prisma.defineExtension({
    name: 'caller-reach',
    query: {
      $allOperations ({ model, operation, args, query }) {
        if (model === undefined && operation === RAW_READ) return query(narrowStatement(args, rules) as typeof args)
        if (model === undefined && operation === RAW_WRITE) return query(keyStatement(args, rules) as typeof args)
        const loading = rules.teacherId === undefined ? null : rooms?.() ?? null
        if (loading === null) return query(narrow(model, operation, args as Args | undefined, rules) as typeof args)
        return loading.then(async (kept): Promise<unknown> => await query(narrow(model, operation, args as Args | undefined, { ...rules, rooms: kept }) as typeof args))
      }
    }
  })
}
