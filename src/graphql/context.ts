// The GraphQL context: who calls, and the only ways to reach data. Tenant data is reachable only
// through `school()`, which checks the caller first and hands out the client confined to their school.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AuthService } from '../auth/auth-service.js'
import type { Identity } from '../auth/identity.js'
import { schoolScopeOf, type SchoolScope } from '../auth/school-access.js'
import { forbidden, subscriptionsOverWebSocket, unauthenticated } from './errors.js'
import type { LiveChanges } from './live-changes.js'

export type { SchoolScope }

declare module 'mercurius' {
  interface MercuriusContext {
    identity: Identity
    auth: AuthService
    /** The caller's user id; throws UNAUTHENTICATED without a valid access token of a user. */
    userId (): string
    /** The caller's school and the client confined to it and to their reach; throws UNAUTHENTICATED or FORBIDDEN. */
    school (): SchoolScope
    /** What wakes a subscription (src/plugins/subscriptions.ts); throws over HTTP, which serves no subscription. */
    liveChanges (): LiveChanges
  }
}

export function buildContext (app: FastifyInstance, request: FastifyRequest) {
  const identity = request.identity
  return {
    identity,
    auth: app.auth,
    userId (): string {
      if (identity.kind !== 'user') throw unauthenticated()
      return identity.userId
    },
    school (): SchoolScope {
      // A client has a school always; which of its fields it may read is checked before execution
      // (scope-check.ts).
      const scope = schoolScopeOf(app.db, identity)
      if (scope === 'unauthenticated') throw unauthenticated()
      if (scope === 'no-school') throw forbidden()
      return scope
    },
    liveChanges (): LiveChanges {
      throw subscriptionsOverWebSocket()
    }
  }
}
