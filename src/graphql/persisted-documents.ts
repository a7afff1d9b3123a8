// Persisted queries, through Mercurius's public `persistedQueryProvider` option. One of three
// providers, chosen by the configuration:
//
// - trusted documents (TRUSTED_DOCUMENTS): only the manifest's operations run, asked for by hash
//   (`documentId`, bare or `sha256:`-prefixed, or Apollo's `extensions.persistedQuery`); query text
//   alone is refused with TRUSTED_DOCUMENT_REQUIRED, an unknown hash with PERSISTED_QUERY_NOT_FOUND,
//   and nothing is ever registered.
// - automatic persisted queries (Apollo's APQ protocol, PERSISTED_QUERY_TTL > 0): a hash alone runs
//   the document registered under it, else PERSISTED_QUERY_NOT_FOUND, and the client sends the
//   document with its hash; that document runs like any query (size, token, depth, cost... limits
//   included) and is registered only if it passed them and its hash is right. Registered documents
//   live in Redis when REDIS_URL is set, so that every API node knows them, and in a bounded
//   in-memory LRU in front of it (or alone). Both are bounded, so that clients registering
//   documents cannot fill them: each document by QUERY_MAX_BYTES, their number by
//   PERSISTED_QUERY_MAX_DOCUMENTS (the oldest registrations out first), their age by
//   PERSISTED_QUERY_TTL.
// - neither (PERSISTED_QUERY_TTL=0): a hash alone is answered PERSISTED_QUERY_NOT_SUPPORTED, which
//   tells Apollo's link to send the text from then on.
//
// Refusals are thrown from the provider's functions as coded errors (errors.ts), so that the one
// formatter shows them with their code; Mercurius's own fallbacks (notFoundError...) carry no code.
import type { FastifyBaseLogger } from 'fastify'
import type { Redis } from 'ioredis'
import { LRUCache } from 'lru-cache'
import type mercurius from 'mercurius'
import { DOCUMENT_HASH, documentHash } from './document-manifest.js'
import {
  persistedQueryHashMismatch,
  persistedQueryNotFound,
  persistedQueryNotSupported,
  trustedDocumentRequired
} from './errors.js'

export interface PersistedDocumentsOptions {
  /** The manifest (config.trustedDocuments): when given, the only operations executed. */
  trustedDocuments: ReadonlyMap<string, string> | undefined
  /** Seconds a registered document is kept; 0: automatic persisted queries off. */
  ttlSeconds: number
  /** Registered documents kept at most, in Redis and in each process. */
  maxDocuments: number
  /** The size limit of a query (limits.ts): a longer document is never registered. */
  maxBytes: number
  /** The shared Redis (plugins/redis.ts), whose client adds REDIS_KEY_PREFIX to every key. */
  redis: Redis | undefined
  log: FastifyBaseLogger
}

/** Registered documents each API process keeps in memory, in bytes (about). */
const MEMORY_BYTES = 16 * 1024 * 1024
/**
 * Redis keys (after REDIS_KEY_PREFIX): a hash of the documents by their hash, and a sorted set of
 * those hashes by registration time, which bounds their number and age.
 */
const DOCUMENTS_KEY = 'pq:documents'
const REGISTERED_KEY = 'pq:registered'

// KEYS: documents, registered; ARGV: hash, document, ttl (s), max documents. Registers the document,
// then drops those registered more than ttl ago and the oldest beyond the maximum; both keys expire
// ttl after the last registration. Redis's clock, so nodes' clocks need not agree.
const REGISTER = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[1])
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - ttl * 1000)
local over = redis.call('ZCARD', KEYS[2]) - #old - tonumber(ARGV[4])
if over > 0 then
  local oldest = redis.call('ZRANGE', KEYS[2], #old, #old + over - 1)
  for _, hash in ipairs(oldest) do old[#old + 1] = hash end
end
for i = 1, #old, 1000 do
  local batch = { unpack(old, i, math.min(i + 999, #old)) }
  redis.call('HDEL', KEYS[1], unpack(batch))
  redis.call('ZREM', KEYS[2], unpack(batch))
end
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('EXPIRE', KEYS[2], ttl)
return #old
`

interface RegisterCommand {
  sdsPersistedQueryRegister (documents: string, registered: string, hash: string, document: string, ttl: number, max: number): Promise<number>
}

/** The GraphQL request as Mercurius hands it to the provider (POST body, or GET's parsed query string). */
interface PersistedRequest {
  query?: unknown
  /** GraphQL over HTTP's persisted documents appendix: `sha256:<hex>`, or the bare hex. */
  documentId?: unknown
  extensions?: { persistedQuery?: { version?: unknown, sha256Hash?: unknown } } | null
}

/** Whether a request asks for a document by hash (registering it or not). */
export function asksPersistedDocument (request: unknown): boolean {
  const r = request as PersistedRequest | null | undefined
  return r?.documentId !== undefined || (r?.extensions?.persistedQuery ?? undefined) !== undefined
}

const UNSUPPORTED = Symbol('unsupported')

/** The hash a request asks for; undefined when it asks for none, UNSUPPORTED when not by SHA-256. */
function requestedHash (request: PersistedRequest): string | undefined | typeof UNSUPPORTED {
  if (typeof request.documentId === 'string') {
    const [prefix, hash] = request.documentId.includes(':') ? request.documentId.split(':', 2) : ['sha256', request.documentId]
    return prefix === 'sha256' && hash !== undefined ? hash : UNSUPPORTED
  }
  if (request.documentId !== undefined) return UNSUPPORTED
  const persisted = request.extensions?.persistedQuery
  if (persisted === undefined || persisted === null) return undefined
  return persisted.version === 1 && typeof persisted.sha256Hash === 'string' ? persisted.sha256Hash : UNSUPPORTED
}

const queryText = (request: PersistedRequest): string | undefined =>
  typeof request.query === 'string' && request.query !== '' ? request.query : undefined

/** The hash asked for, checked against the text sent with it, if any. */
function checkedHash (request: PersistedRequest, whenNone: () => Error): string {
  const hash = requestedHash(request)
  if (hash === UNSUPPORTED) throw persistedQueryNotSupported()
  if (hash === undefined) throw whenNone()
  const query = queryText(request)
  if (query !== undefined && documentHash(query) !== hash) throw persistedQueryHashMismatch()
  return hash
}

/** Mercurius's messages when it refuses by itself (unreached: ours are thrown first). */
const FALLBACK_MESSAGES = {
  notFoundError: 'PersistedQueryNotFound',
  notSupportedError: 'PersistedQueryNotSupported',
  mismatchError: 'provided sha does not match query'
}

function trustedProvider (documents: ReadonlyMap<string, string>): mercurius.PersistedQueryProvider {
  return {
    ...FALLBACK_MESSAGES,
    // Every request: text alone is refused, not run.
    isPersistedQuery: () => true,
    isPersistedQueryRetry: () => false,
    getHash: (request) => checkedHash(request, trustedDocumentRequired),
    getQueryFromHash: async (hash) => {
      const document = documents.get(hash)
      if (document === undefined) throw persistedQueryNotFound()
      return document
    }
  }
}

/** A hash alone is refused as not supported; text runs as usual. */
function unsupportedProvider (): mercurius.PersistedQueryProvider {
  return {
    ...FALLBACK_MESSAGES,
    isPersistedQuery: (request) => queryText(request) === undefined && asksPersistedDocument(request),
    isPersistedQueryRetry: () => false,
    getHash: () => { throw persistedQueryNotSupported() },
    getQueryFromHash: async () => { throw persistedQueryNotSupported() }
  }
}

function automaticProvider (options: PersistedDocumentsOptions): mercurius.PersistedQueryProvider {
  const { log, maxBytes, ttlSeconds, maxDocuments } = options
  const redis = options.redis as (Redis & RegisterCommand) | undefined
  // The client's key prefix applies to the script's keys too; EVALSHA, with EVAL on a script cache miss.
  if (redis !== undefined && typeof redis.sdsPersistedQueryRegister !== 'function') {
    redis.defineCommand('sdsPersistedQueryRegister', { numberOfKeys: 2, lua: REGISTER })
  }
  const local = new LRUCache<string, string>({
    max: maxDocuments,
    maxSize: MEMORY_BYTES,
    sizeCalculation: (document, hash) => document.length + hash.length,
    ttl: ttlSeconds * 1000
  })

  async function fromRedis (hash: string): Promise<string | undefined> {
    if (redis === undefined) return undefined
    let document: string | null
    try {
      // A document past its ttl may still be here until the next registration drops it: it is
      // still the right document for its hash.
      document = await redis.hget(DOCUMENTS_KEY, hash)
    } catch (err) {
      // Redis down: the client sends the document again, which runs; the plugin logs the outage.
      log.debug({ err }, 'persisted query lookup in redis failed')
      return undefined
    }
    // Documents are keyed by their own hash: a value that is not the key's document is not used.
    if (document === null || documentHash(document) !== hash) return undefined
    local.set(hash, document)
    return document
  }

  return {
    ...FALLBACK_MESSAGES,
    isPersistedQuery: (request) => queryText(request) === undefined && asksPersistedDocument(request),
    isPersistedQueryRetry: (request) => queryText(request) !== undefined && asksPersistedDocument(request),
    getHash: (request) => checkedHash(request, persistedQueryNotSupported),
    getQueryFromHash: async (hash) => {
      const document = DOCUMENT_HASH.test(hash) ? local.get(hash) ?? await fromRedis(hash) : undefined
      if (document === undefined) throw persistedQueryNotFound()
      return document
    },
    getHashForQuery: documentHash,
    // Called once the document ran: it passed parsing, validation and the query limits.
    saveQuery: async (hash, document) => {
      if (Buffer.byteLength(document, 'utf8') > maxBytes) return
      local.set(hash, document)
      if (redis === undefined) return
      try {
        await redis.sdsPersistedQueryRegister(DOCUMENTS_KEY, REGISTERED_KEY, hash, document, ttlSeconds, maxDocuments)
      } catch (err) {
        log.debug({ err }, 'persisted query registration in redis failed')
      }
    }
  }
}

/** The provider the configuration asks for (see the top of this file). */
export function persistedQueryProvider (options: PersistedDocumentsOptions): mercurius.PersistedQueryProvider {
  if (options.trustedDocuments !== undefined) return trustedProvider(options.trustedDocuments)
  if (options.ttlSeconds === 0) return unsupportedProvider()
  return automaticProvider(options)
}
