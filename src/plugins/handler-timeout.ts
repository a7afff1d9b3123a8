// The bound on the time to answer a request (HANDLER_TIMEOUT_MS): a request still unanswered that
// long after it arrived is answered 503 (`extensions.code` TIMEOUT on the GraphQL endpoint), so a
// stuck resolver or a database that stopped answering does not leave its caller hanging.
//
// One timer sweeps the requests in flight, oldest first, a tenth of the bound apart (at most a
// second): a request is answered between the bound and 1.1 times it. It replaces Fastify's own
// `handlerTimeout` (a timer, an AbortController and a close listener per request); nothing here
// reads `request.signal`.
// Cached flat: 120-124 µs of CPU per request, 143-155 with Fastify's handlerTimeout (BENCHMARKS.md, "Fastify's own mechanisms, measured again").
import { errorCodes, type FastifyReply } from 'fastify'
import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyInstance {
    /** Requests received and not yet answered (the metrics' in-flight gauge). */
    requestsInFlight (): number
  }
  interface FastifyReply {
    /** Links of the in-flight list (arrival order). */
    inFlightPrev: FastifyReply | null
    inFlightNext: FastifyReply | null
  }
}

/**
 * The requests in flight, oldest first: a list linked through the replies themselves, so that
 * adding and removing a request allocates nothing (a Set's table is reallocated as it churns, and
 * those tables live long enough to reach the old generation).
 */
class InFlight {
  private head: FastifyReply | null = null
  private tail: FastifyReply | null = null
  size = 0

  add (reply: FastifyReply): void {
    reply.inFlightPrev = this.tail
    reply.inFlightNext = null
    if (this.tail === null) this.head = reply
    else this.tail.inFlightNext = reply
    this.tail = reply
    this.size += 1
  }

  delete (reply: FastifyReply): void {
    const { inFlightPrev: prev, inFlightNext: next } = reply
    if (prev === null && next === null && this.head !== reply) return // not in the list
    if (prev === null) this.head = next
    else prev.inFlightNext = next
    if (next === null) this.tail = prev
    else next.inFlightPrev = prev
    reply.inFlightPrev = null
    reply.inFlightNext = null
    this.size -= 1
  }

  * [Symbol.iterator] (): Generator<FastifyReply> {
    let reply = this.head
    while (reply !== null) {
      // Read before yielding: the caller may remove this one.
      const next = reply.inFlightNext
      yield reply
      reply = next
    }
  }
}

/** How often the requests in flight are looked at, for a bound of `timeoutMs` (> 0). */
function sweepInterval (timeoutMs: number): number {
  return Math.min(1_000, Math.max(5, Math.floor(timeoutMs / 10)))
}

export default fp(async (app) => {
  const timeoutMs = app.config.handlerTimeoutMs
  const inFlight = new InFlight()
  app.decorate('requestsInFlight', () => inFlight.size)
  app.decorateReply('inFlightPrev', null)
  app.decorateReply('inFlightNext', null)

  // Callback style, no promise per request (BENCHMARKS.md, "What changed since `1b26f99`", Hooks: no figure of its own).
  app.addHook('onRequest', function trackInFlight (_request, reply, done) {
    inFlight.add(reply)
    done()
  })
  app.addHook('onResponse', (_request, reply, done) => {
    inFlight.delete(reply)
    done()
  })

  function sweep (): void {
    for (const reply of inFlight) {
      if (timeoutMs <= 0 || reply.elapsedTime < timeoutMs) {
        // Without a bound, only the requests whose client went away (they never get an
        // onResponse) are looked for; with one, the rest of the list arrived later still.
        if (timeoutMs > 0) return
        if (reply.raw.destroyed) inFlight.delete(reply)
        continue
      }
      inFlight.delete(reply)
      // Answered already (the response is still being written), or the connection is gone: the
      // entry only had to go.
      if (reply.sent || reply.raw.destroyed) continue
      const err = new errorCodes.FST_ERR_HANDLER_TIMEOUT(timeoutMs, reply.request.routeOptions.url ?? reply.request.url)
      if (reply.raw.headersSent) {
        // A response already on its way cannot become an error answer: cut it off.
        reply.raw.destroy(err)
        continue
      }
      reply.log.warn({ timeoutMs }, 'request took longer than HANDLER_TIMEOUT_MS; answered 503')
      // The route's error handler answers it (the GraphQL formatter: 503, TIMEOUT).
      reply.send(err)
    }
  }
  const timer = setInterval(sweep, timeoutMs > 0 ? sweepInterval(timeoutMs) : 1_000)
  timer.unref()
  app.addHook('onClose', async () => { clearInterval(timer) })
}, { name: 'handler-timeout', dependencies: ['config', 'shutdown'] })
