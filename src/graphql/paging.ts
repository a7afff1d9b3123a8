// Page sizes, keyset cursors and orderings of the lists (students, teachers, classrooms).
//
// Paging is by keyset, never OFFSET: a page is "the next `limit` rows after the cursor's sort key",
// written by the typed statements (src/db/typed-reads.ts) as `k1 >= v1 AND (k1, k2, id) > (v1, v2,
// id0)`, so PostgreSQL starts an index range scan on (school_id, k1, k2, id) at the cursor and reads
// only the page (and the ties of k1). Each order has that index (schema.prisma).
import { isStorableText, parseTimestamp, parseUuid } from '../validators.js'
import { badUserInput } from './errors.js'

export const DEFAULT_LIMIT = 100
export const MAX_LIMIT = 1000

/** The number of records a list returns for its `limit` argument. */
export function pageSize (limit: number | null | undefined): number {
  if (limit === null || limit === undefined) return DEFAULT_LIMIT
  if (limit < 0 || limit > MAX_LIMIT) {
    throw badUserInput(`limit must be between 0 and ${MAX_LIMIT} (got ${limit})`)
  }
  return limit
}

export type Direction = 'ASC' | 'DESC'

/** A list's orderings: for each order field, the Prisma fields it sorts by (the last is `id`). */
export interface ListSpec<O extends string> {
  /** Name of the list, written into its cursors so that one list's cursor is refused by another. */
  list: string
  orders: Readonly<Record<O, readonly string[]>>
  defaultOrder: O
  /** Sort fields that hold timestamps; `id` holds a UUID, the others text. */
  dates: ReadonlySet<string>
}

export interface PageArgs<O extends string> {
  limit?: number | null
  after?: string | null
  orderBy?: { field: O, direction?: Direction | null } | null
}

export interface PageInfo {
  endCursor: string | null
  hasNextPage: boolean
}

export interface PagePlan {
  /** Records wanted. */
  take: number
  /** The cursor of a row read with this plan. */
  cursorOf: (row: Record<string, unknown>) => string
  /** The fields of the order (the last is `id`), its direction and the cursor's sort key: the typed statements' keyset. */
  keyset: { fields: readonly string[], descending: boolean, after: unknown[] | undefined }
}

interface CursorBody { l: string, o: string, d: Direction, v: unknown[] }

const notOurs = (argument: string): Error =>
  badUserInput(`${argument} is not a cursor of this API (pass pageInfo.endCursor as it was returned)`)

function decodeCursor (cursor: string, argument: string): CursorBody {
  try {
    const body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<CursorBody>
    if (typeof body.l === 'string' && typeof body.o === 'string' && (body.d === 'ASC' || body.d === 'DESC') && Array.isArray(body.v)) {
      return body as CursorBody
    }
  } catch {}
  throw notOurs(argument)
}

/**
 * The SQL value of a cursor's sort key, checked against the type of the column it stands for:
 * a forged value is the client's error (BAD_USER_INPUT), never one PostgreSQL raises.
 */
function keyValue (spec: ListSpec<string>, field: string, value: unknown): string | Date {
  if (typeof value !== 'string') throw notOurs('after')
  if (field === 'id') {
    const id = parseUuid(value)
    if (id === undefined) throw notOurs('after')
    return id
  }
  if (spec.dates.has(field)) {
    const date = parseTimestamp(value)
    if (date === null) throw notOurs('after')
    return date
  }
  if (!isStorableText(value)) throw notOurs('after')
  return value
}

const encodeCursor = (body: CursorBody): string => Buffer.from(JSON.stringify(body)).toString('base64url')

/** How to read one page of a list for its arguments; throws BAD_USER_INPUT for a bad limit or cursor. */
export function planPage<O extends string> (spec: ListSpec<O>, args: PageArgs<O>): PagePlan {
  const take = pageSize(args.limit)
  const order = args.orderBy?.field ?? spec.defaultOrder
  const direction: Direction = args.orderBy?.direction ?? 'ASC'
  const fields = spec.orders[order]
  let after: unknown[] | undefined
  if (args.after !== null && args.after !== undefined) {
    const cursor = decodeCursor(args.after, 'after')
    if (cursor.l !== spec.list) throw badUserInput(`after is a cursor of ${cursor.l}, not of ${spec.list}`)
    if (cursor.o !== order || cursor.d !== direction) {
      throw badUserInput(`after was read with orderBy { field: ${cursor.o}, direction: ${cursor.d} }: use the same orderBy to continue (got { field: ${order}, direction: ${direction} })`)
    }
    if (cursor.v.length !== fields.length) throw notOurs('after')
    after = fields.map((field, i) => keyValue(spec, field, cursor.v[i]))
  }
  return {
    take,
    keyset: { fields, descending: direction === 'DESC', after },
    cursorOf: (row) => encodeCursor({
      l: spec.list,
      o: order,
      d: direction,
      v: fields.map((field) => {
        const value = row[field]
        return value instanceof Date ? value.toISOString() : String(value)
      })
    })
  }
}

/** The arguments of a list (`students`, ...) and of its page (`studentsPage`, ...). */
export interface ListArgs<O extends string, F> extends PageArgs<O> {
  filter?: F | null
}

/** A page of `rows` read with `plan` and `take + 1` records, the extra one telling whether more follow. */
export function toPage<T extends Record<string, unknown>> (rows: T[], plan: PagePlan): { nodes: T[], pageInfo: PageInfo } {
  const nodes = rows.slice(0, plan.take)
  const last = nodes[nodes.length - 1]
  return {
    nodes,
    pageInfo: { endCursor: last === undefined ? null : plan.cursorOf(last), hasNextPage: rows.length > plan.take }
  }
}

/** The LIKE pattern of a name search (its wildcards escaped), undefined without one; throws BAD_USER_INPUT for one of fewer than 1 or more than 100 characters. */
export function searchPattern (search: string | null | undefined): string | undefined {
  if (search === null || search === undefined) return undefined
  const text = search.trim()
  if (text.length < 1 || text.length > 100) throw badUserInput(`filter.search must have 1 to 100 characters (got ${text.length})`)
  return text.replace(/[\\%_]/g, (c) => '\\' + c)
}
