// The caller's school client: the one place an identity becomes the client confined to its school,
// its reach (a teacher's) and the columns of its scopes. The GraphQL context and the OneRoster REST
// routes (src/oneroster/) both ask here, so that both ways in read with the same walls.
import type { Database } from '../db/client.js'
import type { SchoolDb } from '../db/school-client.js'
import { accessOf, type Identity } from './identity.js'
import { deniedColumns } from './scopes.js'

export interface SchoolScope {
  schoolId: string
  /** A teacher's teacher record: `db` reaches only what surrounds it. Null for everyone else. */
  teacherId: string | null
  db: SchoolDb
}

/**
 * The school client of the caller, or why there is none: `unauthenticated` without a valid token of
 * a user or a client, `no-school` for a user assigned to no school.
 */
export function schoolScopeOf (database: Database, identity: Identity): SchoolScope | 'unauthenticated' | 'no-school' {
  if (identity.kind !== 'user' && identity.kind !== 'client') return 'unauthenticated'
  if (identity.schoolId === null) return 'no-school'
  // Wall 1 confines the client to the caller's reach as well (src/db/reach.ts): a teacher's
  // classrooms, and the columns of the caller's scopes.
  const teacherId = identity.kind === 'user' ? identity.teacherId : null
  const db = database.forSchool(identity.schoolId, { teacherId: teacherId ?? undefined, deniedColumns: deniedColumns(accessOf(identity)!.scopes) })
  return { schoolId: identity.schoolId, teacherId, db }
}
