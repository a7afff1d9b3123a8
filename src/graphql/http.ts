// GraphQL over HTTP (the GraphQL Foundation's specification): the endpoint's path, the media type of
// an answer negotiated from `Accept`, the status of a request error under that type, and the shape
// of a well-formed request. The plugins of the endpoint (graphql, rate-limit, pressure) and the one
// error formatter (errors.ts) read these; nothing else decides them.
import type { FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import Negotiator from 'negotiator'

/** The GraphQL endpoint: its hooks live in its plugin's context (src/plugins/graphql.ts). */
export const GRAPHQL_PATH = '/'
/** Where GraphQL subscriptions are served, over WebSocket (src/plugins/subscriptions.ts). */
export const SUBSCRIPTIONS_PATH = '/subscriptions'

/** Whether a request is for the GraphQL endpoint: for what every route does (logs, load shedding). */
export function isGraphQLRoute (request: Pick<FastifyRequest, 'routeOptions'>): boolean {
  return request.routeOptions.url === GRAPHQL_PATH
}

export const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json'
export const APPLICATION_JSON = 'application/json'
export type ResponseMediaType = typeof GRAPHQL_RESPONSE_JSON | typeof APPLICATION_JSON

/**
 * application/json first: it answers `*` and `application/*`, an `Accept` that names neither type
 * (answered anyway rather than 406, as the specification allows) and a request with no `Accept`
 * (the specification's recommendation: treat it as `Accept: application/json`).
 */
const AVAILABLE: ResponseMediaType[] = [APPLICATION_JSON, GRAPHQL_RESPONSE_JSON]

/** `Accept` values differ little between clients: each is negotiated once. */
const negotiated = new LRUCache<string, ResponseMediaType>({ max: 500 })

/** The media type of every answer of the GraphQL endpoint to this request. */
export function responseMediaType (request: Pick<FastifyRequest, 'headers'>): ResponseMediaType {
  const accept = request.headers.accept
  if (accept === undefined || accept === '') return APPLICATION_JSON
  let type = negotiated.get(accept)
  if (type === undefined) {
    const [best] = new Negotiator({ headers: { accept } }).mediaTypes(AVAILABLE)
    type = (best as ResponseMediaType | undefined) ?? APPLICATION_JSON
    negotiated.set(accept, type)
  }
  return type
}

/**
 * The status of a request error of the document (syntax, validation, variable coercion, a query
 * limit): 400 under application/graphql-response+json; 200 under application/json, whose older
 * clients read a body only with a 200 (the specification's rules for each type).
 */
export function documentErrorStatus (request: Pick<FastifyRequest, 'headers'> | undefined): 200 | 400 {
  return request !== undefined && responseMediaType(request) === GRAPHQL_RESPONSE_JSON ? 400 : 200
}

function isMap (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Whether a parameter of a GET is a JSON-encoded map (or null). */
function encodedMap (value: unknown): boolean {
  if (typeof value !== 'string') return false
  try {
    const decoded: unknown = JSON.parse(value)
    return decoded === null || isMap(decoded)
  } catch {
    return false
  }
}

const SHAPE = '{"query": "...", "operationName": "...", "variables": {...}, "extensions": {...}}'

/**
 * Why the parameters of a request to the endpoint are not a GraphQL-over-HTTP request, or
 * undefined. POST: the JSON body; GET (and HEAD): the query string, whose `variables` and
 * `extensions` are JSON-encoded. A missing `query` is left to Mercurius (its "Missing query").
 */
export function invalidParameters (method: string, params: unknown): string | undefined {
  if (Array.isArray(params)) return 'Batched operations (a JSON array) are not supported: send one operation per request'
  if (!isMap(params)) return `The request body must be a JSON object ${SHAPE}`
  const get = method !== 'POST'
  const { query, operationName, variables, extensions } = params
  if (query !== undefined && query !== null && typeof query !== 'string') return '"query" must be a string: the GraphQL document'
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return '"operationName" must be a string or null'
  for (const [name, value] of [['variables', variables], ['extensions', extensions]] as const) {
    if (value === undefined || value === null) continue
    if (get ? !encodedMap(value) : !isMap(value)) {
      return `"${name}" must be ${get ? 'a JSON-encoded object' : 'an object'} or null`
    }
  }
  return undefined
}
