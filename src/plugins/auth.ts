import jwt from '@fastify/jwt'
import fp from 'fastify-plugin'
import { watchAccessChanges } from '../auth/access-changes.js'
import { createAuthService, type AuthService } from '../auth/auth-service.js'

declare module 'fastify' {
  interface FastifyInstance {
    auth: AuthService
  }
}

export default fp(async (app) => {
  const { jwtSecret, accessTokenTtl, refreshTokenTtl } = app.config
  if (jwtSecret.length < 32) throw new Error('JWT_SECRET must have at least 32 characters')
  await app.register(jwt, {
    secret: jwtSecret,
    sign: { algorithm: 'HS256', expiresIn: accessTokenTtl },
    // Verified tokens are cached (LRU, never past their expiry): verifying is most of a read's CPU
    // besides the query. Revocation is checked after verification, on every request.
    verify: { algorithms: ['HS256'], requiredClaims: ['sub', 'iat', 'exp'], cache: 10_000 }
  })
  const accessChanges = await watchAccessChanges(app.db, accessTokenTtl, app.log)
  app.addHook('onClose', async () => { await accessChanges.close() })
  app.decorate('auth', createAuthService(app, app.db.prisma, refreshTokenTtl, accessChanges))
}, { name: 'auth', dependencies: ['config', 'database'] })
