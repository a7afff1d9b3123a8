// The query parameters of the binding's collections (limit, offset, sort, orderBy, filter, fields)
// read and checked, and the paging headers of an answer (X-Total-Count, Link).
import type { Predicate } from '../db/typed-reads.js'
import { DEFAULT_LIMIT, MAX_LIMIT } from '../graphql/paging.js'
import { parseFilter } from './filter.js'
import { OneRosterError } from './status-info.js'

/** The page size without `limit`, and the largest `limit` (the GraphQL lists' bounds). */
export { DEFAULT_LIMIT, MAX_LIMIT }
/** The largest `offset`: the binding's int32. */
const MAX_OFFSET = 2_147_483_647

export interface CollectionQuery {
  readonly limit: number
  readonly offset: number
  /** The field to sort by; the records' order (by id) when undefined. */
  readonly sort: string | undefined
  readonly descending: boolean
  /** The filter, over the binding's field names. */
  readonly filter: Predicate | undefined
  /** The fields asked for; every field the caller may read when undefined. */
  readonly fields: readonly string[] | undefined
}

type Query = Readonly<Record<string, unknown>>

const invalid = (message: string): OneRosterError => new OneRosterError('invaliddata', message)

/** A parameter given once, or undefined. */
function one (query: Query, name: string): string | undefined {
  const value = query[name]
  if (value === undefined) return undefined
  if (typeof value !== 'string') throw invalid(`${name} is given once`)
  return value
}

function integer (query: Query, name: string, min: number, max: number, fallback: number): number {
  const text = one(query, name)
  if (text === undefined) return fallback
  if (!/^\d{1,10}$/.test(text) || Number(text) < min || Number(text) > max) throw invalid(`${name} must be an integer from ${min} to ${max} (got '${text}')`)
  return Number(text)
}

/** `fields`, comma-separated or repeated; undefined without it. */
export function fieldsOf (query: Query): string[] | undefined {
  const value = query.fields
  if (value === undefined) return undefined
  const list = (Array.isArray(value) ? value : [value]).flatMap((item) => String(item).split(',')).map((item) => item.trim())
  if (list.some((item) => item === '')) throw new OneRosterError('invalid_selection_field', 'fields: a comma-separated list of field names')
  return [...new Set(list)]
}

/** The parameters of a collection request. */
export function collectionQuery (query: Query): CollectionQuery {
  const orderBy = one(query, 'orderBy')
  if (orderBy !== undefined && orderBy !== 'asc' && orderBy !== 'desc') throw invalid(`orderBy is asc or desc (got '${orderBy}')`)
  const sort = one(query, 'sort')
  const filter = one(query, 'filter')
  return {
    limit: integer(query, 'limit', 1, MAX_LIMIT, DEFAULT_LIMIT),
    offset: integer(query, 'offset', 0, MAX_OFFSET, 0),
    sort: sort === undefined || sort === '' ? undefined : sort,
    descending: orderBy === 'desc',
    filter: filter === undefined || filter === '' ? undefined : parseFilter(filter),
    fields: fieldsOf(query)
  }
}

/**
 * The Link header of a page (RFC 8288): first, last, and next and prev where they exist, each the
 * request's URL with its offset (and limit) moved, the other parameters kept.
 */
export function linkHeader (url: URL, { limit, offset }: Pick<CollectionQuery, 'limit' | 'offset'>, total: number): string {
  // One parse of the request's URL; each link its origin and path with the parameters moved.
  const base = `${url.origin}${url.pathname}?`
  const params = new URLSearchParams(url.search)
  params.set('limit', String(limit))
  const at = (to: number): string => {
    params.set('offset', String(to))
    return base + params.toString()
  }
  const last = total === 0 ? 0 : Math.floor((total - 1) / limit) * limit
  const links = [`<${at(0)}>; rel="first"`]
  if (offset > 0) links.push(`<${at(Math.max(0, Math.min(offset - limit, last)))}>; rel="prev"`)
  if (offset + limit < total) links.push(`<${at(offset + limit)}>; rel="next"`)
  links.push(`<${at(last)}>; rel="last"`)
  return links.join(', ')
}
