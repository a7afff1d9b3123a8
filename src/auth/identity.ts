// Who is calling: read from the access token of the Authorization header.
import { ROLE_SCOPES, type Access, type Scope } from './scopes.js'
import type { AccessTokens } from './tokens.js'

export type Identity =
  | { kind: 'anonymous' }
  | { kind: 'invalid' }
  /**
   * A person who logged in: a school administrator, or a teacher (teacherId: their teacher record),
   * who reads only their reach (src/db/reach.ts).
   */
  | { kind: 'user', userId: string, schoolId: string | null, teacherId: string | null, accessVersion: number }
  /** A program with OAuth 2.0 client credentials: one school, the scopes its token was granted. */
  | { kind: 'client', clientId: string, schoolId: string, scopes: readonly Scope[], accessVersion: number }

export type { AccessTokenClaims } from './tokens.js'

const ANONYMOUS: Identity = { kind: 'anonymous' }
const INVALID: Identity = { kind: 'invalid' }

/** Only the Bearer scheme (RFC 6750), one token of base64url segments. */
const BEARER = /^Bearer +([A-Za-z0-9_.-]+) *$/i

export function identify (tokens: AccessTokens, authorization: string | undefined): Identity {
  if (authorization === undefined || authorization === '') return ANONYMOUS
  const match = BEARER.exec(authorization)
  if (match === null) return INVALID
  // Every failure (malformed, forged, expired, another key...) is the same to a client.
  return tokens.verify(match[1]!) ?? INVALID
}

const ADMIN: Access = { scopes: ROLE_SCOPES.admin, user: true }
const TEACHER: Access = { scopes: ROLE_SCOPES.teacher, user: true, teacher: true }

/** What the caller may read and do (docs/api/access.md); null without a valid token. */
export function accessOf (identity: Identity): Access | null {
  switch (identity.kind) {
    case 'user': return identity.teacherId === null ? ADMIN : TEACHER
    case 'client': return { scopes: identity.scopes, user: false }
    default: return null
  }
}

/** The id of the user or client; what the rate limits, the audit and the log count by. */
export function callerId (identity: Identity): string | null {
  switch (identity.kind) {
    case 'user': return identity.userId
    case 'client': return identity.clientId
    default: return null
  }
}
