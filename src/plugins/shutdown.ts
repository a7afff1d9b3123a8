// Graceful shutdown behind a load balancer, in three steps (src/server.ts runs them on SIGTERM):
// 1. drain: /ready answers 503, so the balancer stops sending new work, while every request is
//    still served, each answer with `Connection: close`: a client's keep-alive connection ends
//    after its next answer, never while a request of its may be on the way;
// 2. close: the listening socket closes; a request still arriving on an open connection is
//    refused with a coded 503 and `Connection: close`, so the client retries elsewhere;
// 3. the requests in flight finish, then the database closes (the other plugins' onClose).
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { setTimeout as sleep } from 'node:timers/promises'
import { refusals } from '../graphql/errors.js'

export type ShutdownState = 'serving' | 'draining' | 'closing'

export interface Shutdown {
  readonly state: ShutdownState
  /** Step 1: fails readiness and closes every connection after its next answer, for `ms`. */
  drain (ms: number): Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    shutdown: Shutdown
  }
}

const SHUTTING_DOWN = JSON.stringify(refusals.shuttingDown())

export default fp(async (app) => {
  let state: ShutdownState = 'serving'
  app.decorate('shutdown', {
    get state () { return state },
    async drain (ms) {
      if (state !== 'serving') return
      state = 'draining'
      app.log.info({ drainMs: ms }, 'draining: readiness fails, every answer closes its connection')
      await sleep(ms)
    }
  } satisfies Shutdown)
  // Step 2 begins when Fastify closes: it stops listening once the preClose hooks are done, and
  // the log says so only then (a connection accepted before that is answered or reset by Fastify).
  app.addHook('preClose', (done) => {
    state = 'closing'
    const stopped = (): void => {
      if (app.server.listening) setImmediate(stopped)
      else app.log.info('refusing new requests')
    }
    setImmediate(stopped)
    done()
  })
  // Registered right after CORS (whose headers a refusal keeps): nothing else runs for a refused request.
  app.addHook('onRequest', (_request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (state !== 'closing') {
      done()
      return
    }
    // An early answer: the hook chain stops here (done is not called).
    void reply.code(503).header('retry-after', '1').type('application/json').send(SHUTTING_DOWN)
  })
  // Every answer sent once the shutdown has begun ends its connection, the answers of requests
  // that came before it too.
  app.addHook('onSend', (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    if (state !== 'serving') void reply.header('connection', 'close')
    done(null, payload)
  })
}, { name: 'shutdown' })
