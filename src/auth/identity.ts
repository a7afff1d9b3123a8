// Who is calling: read from the access token of the Authorization header.
import type { FastifyInstance } from 'fastify'

export type Identity =
  | { kind: 'anonymous' }
  | { kind: 'invalid' }
  | { kind: 'user', userId: string, schoolId: string | null }

export interface AccessTokenClaims {
  sub: string
  /** The user's school when the token was issued; absent for a user with no school. */
  school?: string
}

const ANONYMOUS: Identity = { kind: 'anonymous' }
const INVALID: Identity = { kind: 'invalid' }

export function identify (app: FastifyInstance, authorization: string | undefined): Identity {
  if (authorization === undefined || authorization === '') return ANONYMOUS
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
  if (match === null) return INVALID
  let claims: Partial<AccessTokenClaims>
  try {
    claims = app.jwt.verify<Partial<AccessTokenClaims>>(match[1]!)
  } catch {
    // Every failure (malformed, bad signature, expired, wrong algorithm...) is the same to a client.
    return INVALID
  }
  if (typeof claims.sub !== 'string' || (claims.school !== undefined && typeof claims.school !== 'string')) {
    return INVALID
  }
  return { kind: 'user', userId: claims.sub, schoolId: claims.school ?? null }
}
