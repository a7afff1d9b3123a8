// The server of the ceiling (bench/ceiling.mjs) and of the Prisma floor (bench/prisma-minimal.mjs):
// Fastify parses the request body, @fastify/jwt verifies the HS256 access token with the run's
// secret, and the handler of the request's GraphQL text answers for the token's school. Only the
// handlers differ between the two servers.
//
// Environment: JWT_SECRET, PORT, HOST.
import jwt from '@fastify/jwt'
import Fastify from 'fastify'

const UNAUTHENTICATED = { data: null, errors: [{ message: 'Authentication required', extensions: { code: 'UNAUTHENTICATED' } }] }

/**
 * Listens with `handlers` (GraphQL text -> async (schoolId, variables) => answer); `ready()` backs
 * GET /ready, `close()` runs when the server closes (SIGINT, SIGTERM).
 */
export async function serveReads (handlers, { ready, close }) {
  const { JWT_SECRET, PORT, HOST = '127.0.0.1' } = process.env
  const app = Fastify({ logger: false })
  await app.register(jwt, {
    secret: JWT_SECRET,
    verify: { algorithms: ['HS256'], requiredClaims: ['sub', 'iat', 'exp'] }
  })

  app.post('/', async (request, reply) => {
    const handler = handlers.get(request.body?.query)
    if (handler === undefined) return await reply.code(400).send({ errors: [{ message: 'this server serves only the benchmark queries' }] })
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')
    let claims
    try {
      claims = match === null ? null : app.jwt.verify(match[1])
    } catch {
      claims = null
    }
    if (claims === null || typeof claims.school !== 'string') return UNAUTHENTICATED
    return await handler(claims.school, request.body.variables)
  })

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
