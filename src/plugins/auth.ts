import fp from 'fastify-plugin'
import { watchAccessChanges } from '../auth/access-changes.js'
import { createAuthService, type AuthService } from '../auth/auth-service.js'
import { prepareDecoy } from '../auth/passwords.js'
import { createAccessTokens, MIN_SECRET_BYTES, secretTooShort } from '../auth/tokens.js'

declare module 'fastify' {
  interface FastifyInstance {
    auth: AuthService
  }
}

export default fp(async (app) => {
  const { jwtSecret, jwtPreviousSecrets, accessTokenTtl, refreshTokenTtl } = app.config
  // Also checked by loadConfig; this guards a Config built in code.
  if (secretTooShort(jwtSecret)) throw new Error(`JWT_SECRET must have at least ${MIN_SECRET_BYTES} bytes`)
  const tokens = await createAccessTokens(app, { current: jwtSecret, previous: jwtPreviousSecrets }, accessTokenTtl)
  await prepareDecoy()
  const accessChanges = await watchAccessChanges(app.db, accessTokenTtl, app.log)
  app.addHook('onClose', async () => { await accessChanges.close() })
  app.decorate('auth', createAuthService(tokens, app.db.prisma, refreshTokenTtl, accessChanges, app.log))
}, { name: 'auth', dependencies: ['config', 'database'] })
