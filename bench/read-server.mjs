// The server of the bench's peers (bench/ceiling.mjs, bench/prisma-minimal.mjs,
// bench/mercurius-pg.mjs): Fastify parses the request body, @fastify/jwt verifies the HS256 access
// token with the run's secret, and the answer is for the token's school. The ceiling and the
// Prisma floor answer from a handler per GraphQL text (serveReads); the Mercurius peer registers
// its GraphQL endpoint on the same server (readServer).
//
// Environment: JWT_SECRET, PORT, HOST, and for benchPool CEILING_DATABASE_URL, POOL_SIZE and
// POOL_IDLE_MS.
import jwt from '@fastify/jwt'
import Fastify from 'fastify'
import pg from 'pg'

export const UNAUTHENTICATED = { data: null, errors: [{ message: 'Authentication required', extensions: { code: 'UNAUTHENTICATED' } }] }

/**
 * The peer's pg.Pool: the service's size. Idle connections close after POOL_IDLE_MS, so that a
 * peer waiting for its next round of the interleaved comparison does not hold connections the
 * server in its round needs (PostgreSQL's max_connections is shared by every server of the run).
 */
export function benchPool () {
  const { CEILING_DATABASE_URL, POOL_SIZE = '10', POOL_IDLE_MS = '10000' } = process.env
  return new pg.Pool({ connectionString: CEILING_DATABASE_URL, max: Number(POOL_SIZE), idleTimeoutMillis: Number(POOL_IDLE_MS) })
}

/**
 * A Fastify server with the token check: `schoolOf(request)` is the school of the request's valid
 * access token, or null. `listen()` adds GET /ready (backed by `ready()`), closes with `close()` on
 * SIGINT or SIGTERM, and listens on HOST:PORT.
 */
export async function readServer ({ ready, close }) {
  const { JWT_SECRET } = process.env
  const app = Fastify({ logger: false })
  await app.register(jwt, {
    secret: JWT_SECRET,
    verify: { algorithms: ['HS256'], requiredClaims: ['sub', 'iat', 'exp'] }
  })
  const schoolOf = (request) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')
    let claims
    try {
      claims = match === null ? null : app.jwt.verify(match[1])
    } catch {
      claims = null
    }
    return claims === null || typeof claims.school !== 'string' ? null : claims.school
  }
  const listen = async () => {
    const { PORT, HOST = '127.0.0.1' } = process.env
    app.get('/ready', async () => {
      await ready()
      return { status: 'ready' }
    })
    app.addHook('onClose', close)
    for (const signal of ['SIGINT', 'SIGTERM']) {
      process.once(signal, () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
    }
    await app.listen({ host: HOST, port: Number(PORT) })
  }
  return { app, schoolOf, listen }
}

/**
 * Listens with `handlers` (GraphQL text -> async (schoolId, variables) => answer) on POST /.
 */
export async function serveReads (handlers, { ready, close }) {
  const { app, schoolOf, listen } = await readServer({ ready, close })
  app.post('/', async (request, reply) => {
    const handler = handlers.get(request.body?.query)
    if (handler === undefined) return await reply.code(400).send({ errors: [{ message: 'this server serves only the benchmark queries' }] })
    const school = schoolOf(request)
    if (school === null) return UNAUTHENTICATED
    return await handler(school, request.body.variables)
  })
  await listen()
}
