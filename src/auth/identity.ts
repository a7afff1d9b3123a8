// Who is calling: read from the access token of the Authorization header.
import type { AccessTokens } from './tokens.js'

export type Identity =
  | { kind: 'anonymous' }
  | { kind: 'invalid' }
  | { kind: 'user', userId: string, schoolId: string | null, accessVersion: number }

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
  const claims = tokens.verify(match[1]!)
  return claims === null ? INVALID : { kind: 'user', ...claims }
}
