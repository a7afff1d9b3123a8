// A response cache for reads, per API node: an answer to a query is kept per school and reused for
// the same document and variables from any user of that school, until a write to that school's
// records (from any node, the CLI or SQL) removes it.
//
// - Keyed by school, teacher and scopes: the key starts with the caller's school, taken from a
//   verified token that has passed the revocation check, then a teacher's teacher record (a
//   teacher's answers are theirs alone) and the caller's scopes (docs/api/access.md), so an answer
//   is shared only by callers who may read every field of it: the scope check runs after this
//   cache's lookup (src/plugins/graphql.ts). Only queries (never mutations) with no error in the
//   answer are kept. The lookup parses nothing: an answer is kept only when the operation Mercurius
//   executed was a query (src/graphql/operation.ts), so a mutation's text never finds one.
// - Invalidated by writes: triggers on the tenant tables and on schools send
//   NOTIFY school_data_changed '<school id>' (migration response_cache_notifications); each node
//   drops that school's answers. A read that was running while a write landed is not kept (each
//   school has a generation, bumped by every notification). While the notification connection is
//   down nothing is served from or kept in the cache.
// - Bounded: at most `maxBytes` of answers (least recently used out first), each for at most `ttlMs`.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import { accessOf } from '../auth/identity.js'
import { DATA_CHANGED_CHANNEL, type Subscription } from '../db/notifications.js'
import { executedQuery, OPERATION_NAME, operationOf } from './operation.js'
import { asksPersistedDocument } from './persisted-documents.js'
import { parseUuid } from '../validators.js'

export interface ResponseCacheOptions {
  maxBytes: number
  ttlMs: number
}

interface GraphQLBody {
  query?: unknown
  variables?: unknown
  operationName?: unknown
}

/** An answer kept: its bytes as sent (encoded once, not on every hit), and what came with it. */
export interface CachedAnswer {
  body: Buffer
  /**
   * The access audit's tally of the records the answer hands over (audit/plugin.ts), kept with the
   * answer so that every hit records what the answer holds.
   */
  tally: unknown
  /** The name of the operation that ran (operation.ts): the log, metrics and audit of every hit name it. */
  operation: string
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Where the answer to this request is kept, when it may be; `tally` is set by the access audit
     * before the answer is kept.
     */
    responseCacheSlot?: { schoolId: string, key: string, generation: number, tally?: unknown }
    /** The kept answer this request was served. */
    responseCacheHit?: CachedAnswer
  }
}

export async function registerResponseCache (app: FastifyInstance, options: ResponseCacheOptions): Promise<void> {
  /** Keys kept per school, so that a write drops exactly that school's answers. */
  const keysBySchool = new Map<string, Set<string>>()
  const answers = new LRUCache<string, CachedAnswer>({
    maxSize: options.maxBytes,
    sizeCalculation: (value, key) => value.body.length + key.length,
    ttl: options.ttlMs,
    // Keys start with the school id (36 characters).
    dispose: (_value, key) => { keysBySchool.get(key.slice(0, 36))?.delete(key) }
  })
  const generations = new Map<string, number>()

  function invalidate (schoolId: string): void {
    generations.set(schoolId, (generations.get(schoolId) ?? 0) + 1)
    const keys = keysBySchool.get(schoolId)
    if (keys === undefined) return
    keysBySchool.delete(schoolId)
    for (const key of keys) answers.delete(key)
  }

  function invalidateAll (): void {
    for (const schoolId of [...generations.keys(), ...keysBySchool.keys()]) invalidate(schoolId)
    answers.clear()
  }

  const listener: Subscription = await app.db.subscribe(DATA_CHANGED_CHANNEL, 'responseCache', {
    notify (payload) {
      const schoolId = parseUuid(payload)
      if (schoolId !== undefined) invalidate(schoolId)
    },
    // Anything may have changed while not listening.
    async listening () { invalidateAll() },
    lost () { invalidateAll() }
  })
  app.addHook('onClose', async () => { await listener.close() })

  /** The answer kept for this request, else undefined (and the slot to keep it in, when it may be). */
  function lookUp (request: FastifyRequest): CachedAnswer | undefined {
    // (Its hooks are the GraphQL endpoint's only: src/plugins/graphql.ts.)
    if (request.method !== 'POST' || !listener.live) return undefined
    const body = request.body as GraphQLBody | undefined
    // A document asked for by hash, or registered with it, is for Mercurius to resolve or keep.
    if (typeof body?.query !== 'string' || asksPersistedDocument(body)) return undefined
    // An operation name that is not a GraphQL name runs nothing (Mercurius refuses it): not looked up.
    const operationName = typeof body.operationName === 'string' ? body.operationName : undefined
    if (operationName !== undefined && !OPERATION_NAME.test(operationName)) return undefined
    const identity = request.identity
    if ((identity.kind !== 'user' && identity.kind !== 'client') || identity.schoolId === null) return undefined
    const schoolId = identity.schoolId
    // Everything that changes an answer: the school, the teacher (a teacher's reach), the scopes
    // (which fields may be read), the operation. Administrators and clients with the same scopes share.
    const scopes = accessOf(identity)!.scopes.join(' ')
    const teacher = identity.kind === 'user' ? identity.teacherId ?? '' : ''
    // Only the query may hold a NUL (in a comment), and it sits between fields that cannot (an
    // operation name that is a GraphQL name, checked above; variables as JSON): one key, one request.
    const key = `${schoolId}\0${teacher}\0${scopes}\0${operationName ?? ''}\0${body.query}\0${JSON.stringify(body.variables ?? null)}`
    const cached = answers.get(key)
    if (cached === undefined) request.responseCacheSlot = { schoolId, key, generation: generations.get(schoolId) ?? 0 }
    return cached
  }

  // Callback style, no promise per request (BENCHMARKS.md, "What changed since `1b26f99`", Hooks: no figure of its own).
  // A hit is answered here: the hook chain stops.
  app.addHook('preHandler', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const cached = lookUp(request)
    if (cached === undefined) {
      done()
      return
    }
    request.responseCacheHit = cached
    request.graphqlCachedOperation = cached.operation
    void reply.header('content-type', 'application/json; charset=utf-8').header('x-cache', 'hit').send(cached.body)
  })

  app.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    const slot = request.responseCacheSlot
    // Only a query's answer is kept (a mutation's text had a slot too: the lookup parses nothing).
    if (slot !== undefined && reply.statusCode === 200 && typeof payload === 'string' && executedQuery(request)) {
      reply.header('x-cache', 'miss')
      // A write landed while this read ran, or the answer holds an error: not kept.
      if (listener.live && (generations.get(slot.schoolId) ?? 0) === slot.generation && !payload.includes('"errors"')) {
        answers.set(slot.key, { body: Buffer.from(payload), tally: slot.tally, operation: operationOf(request) })
        let keys = keysBySchool.get(slot.schoolId)
        if (keys === undefined) keysBySchool.set(slot.schoolId, keys = new Set())
        keys.add(slot.key)
      }
    }
    done(null, payload)
  })
}
