import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { watchAccessChanges, type AccessChanges } from '../auth/access-changes.js'
import { createAuthService, type AuthService } from '../auth/auth-service.js'
import { prepareDecoy } from '../auth/passwords.js'
import { createAccessTokens } from '../auth/tokens.js'
import { MIN_SECRET_BYTES, secretTooShort } from '../validators.js'
import type { Identity } from '../auth/identity.js'

declare module 'fastify' {
  interface FastifyInstance {
    auth: AuthService
  }
  interface FastifyRequest {
    /**
     * The caller, from the Authorization header, worked out once per request (the rate limits, the
     * response cache, the GraphQL context, the audit and the request log all ask).
     */
    readonly identity: Identity
    identityMemo: Identity | null
  }
}

export interface AuthPluginOptions {
  /** The clock of tokens' lifetimes (BuildOptions.now). */
  now: () => number
}

export default fp<AuthPluginOptions>(async (app, { now }) => {
  const { jwtSecret, jwtPreviousSecrets, accessTokenTtl, refreshTokenTtl } = app.config
  // Also checked by loadConfig; this guards a Config built in code.
  if (secretTooShort(jwtSecret)) throw new Error(`JWT_SECRET must have at least ${MIN_SECRET_BYTES} bytes`)
  const tokens = await createAccessTokens(app, { current: jwtSecret, previous: jwtPreviousSecrets }, accessTokenTtl, now)
  // Hashed on the thread pool while the rest of the app starts (about a tenth of a second); the
  // first login for an unknown user waits for it if it comes sooner.
  prepareDecoy().catch((err: unknown) => { app.log.error({ err }, 'could not make the decoy password hash; logins will try again') })
  // The user-change notifications connect (and load the recent changes) while the other plugins
  // register; the app is ready, and so serves, only once they are in (onReady).
  const watching = watchAccessChanges(app.db, accessTokenTtl, app.log)
  // Its failure is start-up's (onReady, below), not an unhandled rejection meanwhile.
  watching.catch(() => {})
  let watched: AccessChanges | undefined
  const accessChanges: AccessChanges = {
    // Asked only once the app is ready, by then always set.
    revoked: (userId, schoolId, accessVersion) => watched === undefined || watched.revoked(userId, schoolId, accessVersion),
    get live () { return watched?.live ?? false },
    close: async () => { await (watched ?? await watching.catch(() => undefined))?.close() }
  }
  app.addHook('onReady', async () => { watched = await watching })
  app.addHook('onClose', async () => { await accessChanges.close() })
  app.decorate('auth', createAuthService(tokens, app.db.prisma, refreshTokenTtl, accessChanges, app.log, now))
  const auth = app.auth
  app.decorateRequest('identityMemo', null)
  app.decorateRequest('identity', {
    getter (this: FastifyRequest): Identity {
      return (this.identityMemo ??= auth.identify(this.headers.authorization))
    }
  })
}, { name: 'auth', dependencies: ['config', 'database'] })
