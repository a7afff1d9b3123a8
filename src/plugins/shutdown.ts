// Graceful shutdown behind a load balancer, in three steps (`app.shutdown.run`, which src/server.ts
// calls on SIGTERM, runs them in this order):
// 1. drain: /ready answers 503, so the balancer stops sending new work, while every request is
//    still served, each answer with `Connection: close`: a client's keep-alive connection ends
//    after its next answer, never while a request of its may be on the way;
// 2. refuse: every request is answered with a coded 503 and `Connection: close`, so the client
//    retries elsewhere. The listener stays open CLOSE_GRACE_MS more, then closes;
// 3. close: the requests in flight finish, then the database closes (the other plugins' onClose).
//
// Why the listener stays open in step 2: the kernel completes a connection's TCP handshake by
// itself and queues the connection until the process accepts it; closing the listening socket
// resets every connection still queued, whose client may have sent its request already (the
// process never saw it: no log). Clients that reconnect after each `Connection: close` of the drain
// keep such connections queued; accepting them while refusing them empties the queue. Unavoidable
// at the TCP level: a connection whose handshake completes in the last turn of the event loop
// before the listener closes is reset (a listening socket cannot stop completing handshakes without
// closing, and nothing accepts what it queued on close), so is a keep-alive connection idle since
// before the signal whose next request comes just as `server.close()` closes idle connections
// (closing an idle HTTP/1.1 connection always races with the client's next request).
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import net, { type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { refusals } from '../graphql/errors.js'

/** Seconds a refused client is told to wait (Retry-After) before it tries again. */
const RETRY_AFTER_SECONDS = 1

/**
 * The grace, in milliseconds, for a request that may be on its way: how long the listener stays
 * open once refusals begin, and how long a connection that has sent nothing is kept after the
 * listener closed. Shorter than the Retry-After, so that a client coming back after it finds the
 * port closed rather than a listener about to close.
 */
export const CLOSE_GRACE_MS = 500

export type ShutdownState = 'serving' | 'draining' | 'closing'

export interface Shutdown {
  readonly state: ShutdownState
  /** The three steps in order: drain for `drainMs`, refuse with the listener open, close the app. */
  run (drainMs: number): Promise<void>
  /**
   * Calls `listener` when refusals begin (after the drain, or when the app closes without `run`):
   * long-lived connections (GraphQL subscriptions' WebSockets) close then, so that the connections
   * step 2 waits for end.
   */
  whenRefusing (listener: () => void): void
}

declare module 'fastify' {
  interface FastifyInstance {
    shutdown: Shutdown
  }
}

const SHUTTING_DOWN = JSON.stringify(refusals.shuttingDown())

export default fp(async (app) => {
  let state: ShutdownState = 'serving'
  const refusing: Array<() => void> = []
  const refuse = (): void => {
    if (state === 'closing') return
    state = 'closing'
    app.log.info({ graceMs: CLOSE_GRACE_MS }, 'refusing new requests')
    for (const listener of refusing) listener()
  }
  app.decorate('shutdown', {
    get state () { return state },
    async run (drainMs) {
      if (state !== 'serving') return
      state = 'draining'
      app.log.info({ drainMs }, 'draining: readiness fails, every answer closes its connection')
      await sleep(drainMs)
      refuse()
      await sleep(CLOSE_GRACE_MS)
      await stopListening()
      await app.close()
    },
    whenRefusing (listener) { refusing.push(listener) }
  } satisfies Shutdown)

  // The connections the server holds: Node keeps one that has sent nothing open after the listener
  // closes (it counts as awaiting its first request) and no longer times it out, so without this a
  // silent connection would hold the shutdown until SHUTDOWN_TIMEOUT_MS.
  const connections = new Set<Socket>()
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket)
    socket.once('close', () => connections.delete(socket))
  })
  const closeSilent = (): void => {
    let closed = 0
    for (const socket of connections) {
      if (socket.bytesRead > 0) continue // a request began: answered, whatever its pace
      socket.destroy()
      closed += 1
    }
    if (closed > 0) app.log.info({ connections: closed, graceMs: CLOSE_GRACE_MS }, 'closed connections that sent nothing')
  }

  /**
   * Stops accepting connections while keeping every accepted one for the grace, then closes those
   * that sent nothing and the idle ones, and waits for the rest (each answer now ends its
   * connection). `http.Server`'s own `close()` closes the idle connections at once, and from Node 26
   * a connection that has sent nothing counts as idle: it would be closed under a client whose first
   * request is on the way. So the listener is closed as a `net.Server` (the class `http.Server`
   * extends, whose `close()` only stops accepting), and Fastify's close comes once the connections
   * are done.
   */
  async function stopListening (): Promise<void> {
    if (!app.server.listening) return
    net.Server.prototype.close.call(app.server)
    app.log.info('stopped listening')
    await sleep(CLOSE_GRACE_MS)
    closeSilent()
    app.server.closeIdleConnections()
    while (connections.size > 0) await sleep(10)
  }

  // Also when the app is closed without `run`: a request arriving then is refused all the same.
  app.addHook('preClose', (done) => {
    refuse()
    if (app.server.listening) {
      // Fastify stops listening once the preClose hooks are done; Node's `server.close()` closes
      // the idle keep-alive connections then. Those left are busy, or have sent nothing yet.
      const stopped = (): void => {
        if (app.server.listening) {
          setImmediate(stopped)
          return
        }
        app.log.info('stopped listening')
        setTimeout(closeSilent, CLOSE_GRACE_MS).unref()
      }
      setImmediate(stopped)
    }
    done()
  })
  // The first onRequest hook after CORS's (whose headers a refusal keeps): nothing else runs for a
  // refused request. This plugin depends on 'cors', and the other plugins with onRequest hooks on
  // it (test/plugin-order.test.ts).
  app.addHook('onRequest', function refuseWhenClosing (_request: FastifyRequest, reply: FastifyReply, done: () => void) {
    if (state !== 'closing') {
      done()
      return
    }
    // An early answer: the hook chain stops here (done is not called).
    void reply.code(503).header('retry-after', String(RETRY_AFTER_SECONDS)).type('application/json').send(SHUTTING_DOWN)
  })
  // Every answer sent once the shutdown has begun ends its connection, the answers of requests
  // that came before it too.
  app.addHook('onSend', (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    if (state !== 'serving') void reply.header('connection', 'close')
    done(null, payload)
  })
}, { name: 'shutdown', dependencies: ['cors'] })
