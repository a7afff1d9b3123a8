// The GraphQL context: who calls, and the only ways to reach data. Tenant data is reachable only
// through `school()`, which checks the caller first and hands out the client confined to their school.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AuthService } from '../auth/auth-service.js'
import { accessOf, type Identity } from '../auth/identity.js'
import { deniedColumns } from '../auth/scopes.js'
import type { SchoolDb } from '../db/school-client.js'
import { forbidden, unauthenticated } from './errors.js'

export interface SchoolScope {
  schoolId: string
  /** A teacher's teacher record: `db` reaches only what surrounds it. Null for everyone else. */
  teacherId: string | null
  db: SchoolDb
}

declare module 'mercurius' {
  interface MercuriusContext {
    identity: Identity
    auth: AuthService
    /** The caller's user id; throws UNAUTHENTICATED without a valid access token of a user. */
    userId (): string
    /** The caller's school and the client confined to it and to their reach; throws UNAUTHENTICATED or FORBIDDEN. */
    school (): SchoolScope
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
      if (identity.kind !== 'user' && identity.kind !== 'client') throw unauthenticated()
      if (identity.schoolId === null) throw forbidden()
      // Wall 1 confines the client to the caller's reach as well (src/db/reach.ts): a teacher's
      // classrooms, and the columns of the caller's scopes.
      const teacherId = identity.kind === 'user' ? identity.teacherId : null
      const db = app.db.forSchool(identity.schoolId, { teacherId: teacherId ?? undefined, deniedColumns: deniedColumns(accessOf(identity)!.scopes) })
      return { schoolId: identity.schoolId, teacherId, db }
    }
  }
}
