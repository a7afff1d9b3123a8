// The access audit: for each request that reads or writes student or teacher records, who (user
// or client, school), what (GraphQL operation, record type, read or write, how many; the request id) and
// when, kept in PostgreSQL (access_audit) and read with `school-data audit`.
//
// - Counted at the database (access.ts): the school client (src/db/school-client.ts) shows every
//   operation's result to the request's tally, which `scope` below sets up per request as the
//   operations' observer (src/db/operation-observer.ts).
// - Recorded when the answer is sent (onSend): one row per request, school, record type and
//   action (the operation as src/graphql/operation.ts names it: no parse here), pushed onto the
//   writer's queue; nothing on the request path waits for the database.
// - Answers served from the response cache ran no query: the tally of the answer that filled the
//   cache is kept in the cache with the answer itself, and recorded again for every request the
//   answer serves. The GraphQL plugin runs `audit.scope` after the cache's lookup: a hit needs no
//   tally, and a miss's tally is handed to the cache's slot there, before any resolver counts into
//   it (no order of onSend hooks matters).
// - A subscription's pushes (src/plugins/subscriptions.ts) are tallied one event at a time
//   (`tallied`), each recorded under the connection's upgrade request and the operation's name.
// - Written in batches (writer.ts); the queue is written out when the app closes.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { operationObserver } from '../db/operation-observer.js'
import { operationOf } from '../graphql/operation.js'
import { RequestAccess, type AccessCount } from './access.js'
import { insertAuditRows } from './store.js'
import { AuditWriter, type AuditStats } from './writer.js'

declare module 'fastify' {
  interface FastifyInstance {
    audit: {
      /** Writes every queued audit row now (tests, shutdown). */
      flush (): Promise<void>
      stats (): AuditStats
      /** The GraphQL endpoint's preHandler that sets up the request's tally (src/plugins/graphql.ts). */
      scope: (request: FastifyRequest, reply: FastifyReply, done: () => void) => void
      /**
       * Runs `run` under a tally of its own and records it for `request`'s caller as `operation`:
       * one pushed event of a subscription (src/plugins/subscriptions.ts), whose connection's
       * upgrade request holds the caller.
       */
      tallied: <T>(request: FastifyRequest, operation: string, run: () => Promise<T>) => Promise<T>
    }
  }
}

const kAccess = Symbol('access audit tally')
type AuditedRequest = FastifyRequest & { [kAccess]?: RequestAccess }

export default fp(async (app: FastifyInstance) => {
  const { auditFlushMs, auditBatchSize, auditMaxQueue } = app.config
  const writer = new AuditWriter({
    insert: (rows) => insertAuditRows(app.db, rows),
    flushMs: auditFlushMs,
    batchSize: auditBatchSize,
    maxQueue: auditMaxQueue,
    onError: (message, err) => { app.log.error({ err }, message) }
  })
  app.decorate('audit', {
    flush: () => writer.flush(),
    stats: () => writer.stats(),
    scope,
    async tallied (request, operation, run) {
      const access = new RequestAccess()
      try {
        return await operationObserver.run(access, run)
      } finally {
        if (access.counts.length > 0) enqueue(request, access.at, access.counts, operation)
      }
    }
  })
  // After the server has closed (Fastify closes it first) and before the database closes: Fastify
  // runs onClose hooks in the reverse order of registration, and this plugin depends on 'database'
  // (test/contracts/fastify-close-order.test.ts, test/plugin-order.test.ts).
  app.addHook('onClose', async () => { await writer.close() })

  function enqueue (request: FastifyRequest, at: Date, counts: readonly AccessCount[], operation = operationOf(request)): void {
    const identity = request.identity
    if (identity.kind !== 'user' && identity.kind !== 'client') {
      // Records were handed over to a caller whose token was revoked while the request ran.
      request.log.error('access audit: records were read by a caller that is no longer a user or client; not recorded')
      return
    }
    const userId = identity.kind === 'user' ? identity.userId : null
    const clientId = identity.kind === 'client' ? identity.clientId : null
    for (const { schoolId, recordType, action, count } of counts) {
      writer.push({ at, schoolId, userId, clientId, requestId: request.id, operation, recordType, recordCount: count, action })
    }
  }

  // Callback style, no promise per request (BENCHMARKS.md, "What changed since `1b26f99`", Hooks: no figure of its own).
  app.addHook('onSend', (request: AuditedRequest, _reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    try {
      recordAnswer(request)
    } catch (err) {
      // The answer goes out regardless.
      request.log.error({ err }, 'access audit: recording failed')
    }
    done(null, payload)
  })

  function recordAnswer (request: AuditedRequest): void {
    const access = request[kAccess]
    if (access !== undefined && access.counts.length > 0) {
      enqueue(request, access.at, access.counts)
      return
    }
    const hit = request.responseCacheHit
    if (hit === undefined) return
    const counts = hit.tally as readonly AccessCount[] | undefined
    if (counts === undefined) {
      request.log.error('access audit: an answer from the response cache has no known tally; not recorded')
    } else if (counts.length > 0) {
      enqueue(request, new Date(), counts)
    }
  }
}, { name: 'access-audit', dependencies: ['config', 'database', 'auth'] })

/**
 * The tally's scope: around the handler, so that every operation the request's resolvers run finds
 * its tally. Run after the response cache's lookup, so that an answer the cache sends (no resolver
 * runs) costs no tally and no async context. Only requests with credentials can reach records.
 * (Callback style: the handler runs inside run().)
 */
function scope (request: AuditedRequest, _reply: FastifyReply, done: () => void): void {
  if (request.headers.authorization === undefined) {
    // (Without credentials no records can be reached: an answer kept holds none.)
    if (request.responseCacheSlot !== undefined) request.responseCacheSlot.tally = []
    done()
    return
  }
  const access = new RequestAccess()
  request[kAccess] = access
  // An answer the response cache may keep: its tally (filled as the resolvers run) goes with it.
  const slot = request.responseCacheSlot
  if (slot !== undefined) slot.tally = access.counts
  operationObserver.run(access, done)
}
