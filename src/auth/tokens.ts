// Access tokens: HS256 JWTs signed with the current key and verified with the current or a previous
// one, chosen by the key id (`kid`) in the header. The kid is derived from the key, so operators
// rotate by moving JWT_SECRET into JWT_PREVIOUS_SECRETS and setting a new JWT_SECRET.
import { createHash } from 'node:crypto'
import jwt, { type FastifyJWTOptions, type JWT } from '@fastify/jwt'
import type { FastifyInstance } from 'fastify'
import { isUuid, MIN_SECRET_BYTES, secretTooShort } from '../validators.js'
import { isScope, normalizeScopes, type Scope } from './scopes.js'

/** RFC 9068's explicit type for JWT access tokens (RFC 8725 §3.11): no other JWT passes for one. */
export const ACCESS_TOKEN_TYPE = 'at+jwt'
/** Our tokens are about 250 characters; anything much longer is refused unread. */
export const MAX_TOKEN_LENGTH = 4096
/** Allowed difference between nodes' clocks for a token's `iat`. */
const CLOCK_SKEW_SECONDS = 60

/** Ids in our tokens are UUIDs in PostgreSQL's lower-case text form. */
const isOurId = (value: unknown): value is string => typeof value === 'string' && isUuid(value) && value === value.toLowerCase()

/** The claims of a user's access token. */
export interface UserTokenClaims {
  sub: string
  /** The user's school when the token was issued; absent for a user with no school. */
  school?: string
  /** `teacher` for a TEACHER (absent for a school administrator, the default role). */
  role?: 'teacher'
  /** A TEACHER's teacher record when the token was issued. */
  teacher?: string
  /**
   * The user's access version when the token was issued: the id of their latest access change
   * (user_access_changes), 0 for none. A token older than the user's latest change is revoked.
   */
  av: number
}

/**
 * The claims of a client's access token (OAuth 2.0 client credentials): RFC 9068's `client_id`,
 * and `sub` the same id (the token acts for no user); `scope` the granted scopes, space-separated;
 * `av` the client's access version (a revocation or a change of scopes is an access change).
 */
export interface ClientTokenClaims {
  sub: string
  client_id: string
  school: string
  scope: string
  av: number
}

export type AccessTokenClaims = UserTokenClaims | ClientTokenClaims

/** What a valid access token says: a user's or a client's. */
export type VerifiedAccessToken =
  | {
    kind: 'user'
    userId: string
    schoolId: string | null
    /** A TEACHER's teacher record; null for a school administrator. */
    teacherId: string | null
    /** The `av` claim; 0 for a token issued before the claim existed (older than any change). */
    accessVersion: number
  }
  | {
    kind: 'client'
    clientId: string
    schoolId: string
    scopes: readonly Scope[]
    accessVersion: number
  }

export interface AccessTokenKeys {
  /** Signs new tokens and verifies them. */
  current: string
  /** Verify only: tokens signed before the last rotation, until they expire. */
  previous: readonly string[]
}

export interface AccessTokens {
  /** Key id of the current key (in the header of every new token). */
  readonly keyId: string
  sign (claims: AccessTokenClaims): string
  /** The claims of a token that is valid in every respect, or null (whatever the reason). */
  verify (token: string): VerifiedAccessToken | null
}

/** The key id of a secret: the first 8 bytes of its SHA-256, base64url (not reversible to the key). */
export function keyId (secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest().subarray(0, 8).toString('base64url')
}

/**
 * The exact header segment the signer writes for a key. Verification accepts only these: a token
 * with any other header (another algorithm, `none`, an unknown or missing kid, extra parameters
 * such as `jku` or `crit`, another `typ`) is refused before any parsing.
 */
function headerSegment (kid: string): string {
  return Buffer.from(JSON.stringify({ alg: 'HS256', typ: ACCESS_TOKEN_TYPE, kid })).toString('base64url')
}

function jwtOptions (secret: string, kid: string, ttlSeconds: number): FastifyJWTOptions {
  return {
    secret,
    // @fastify/jwt reads numbers as seconds.
    sign: { algorithm: 'HS256', expiresIn: ttlSeconds, kid, header: { alg: 'HS256', typ: ACCESS_TOKEN_TYPE } },
    // Verified tokens are cached (LRU): verifying is most of a read's CPU besides the query. Expiry
    // is checked after it (verify, below) on the app's clock, which fast-jwt's verifier cannot read
    // (its clockTimestamp is fixed when it is made); revocation too, on every request.
    verify: {
      algorithms: ['HS256'],
      requiredClaims: ['sub', 'iat', 'exp'],
      checkTyp: ACCESS_TOKEN_TYPE,
      ignoreExpiration: true,
      cache: 10_000
    }
  }
}

export async function createAccessTokens (
  app: FastifyInstance,
  keys: AccessTokenKeys,
  ttlSeconds: number,
  /** The time in milliseconds (BuildOptions.now): tokens are issued and expire by it. */
  now: () => number
): Promise<AccessTokens> {
  for (const secret of [keys.current, ...keys.previous]) {
    if (secretTooShort(secret)) throw new Error(`JWT secrets must have at least ${MIN_SECRET_BYTES} bytes`)
  }
  const currentKid = keyId(keys.current)
  // The current key is app.jwt (signs and verifies); each previous key only verifies, as a
  // @fastify/jwt namespace of its own (app.jwt[namespace]) with its own verified-token cache.
  await app.register(jwt, jwtOptions(keys.current, currentKid, ttlSeconds))
  const byHeader = new Map<string, JWT>([[headerSegment(currentKid), app.jwt]])
  for (const secret of keys.previous) {
    const kid = keyId(secret)
    if (byHeader.has(headerSegment(kid))) continue
    const namespace = `previousKey_${kid}`
    await app.register(jwt, { ...jwtOptions(secret, kid, ttlSeconds), namespace })
    // @fastify/jwt types app.jwt as one JWT, or (FastifyJWT.namespaces) as a map only; here it is both.
    byHeader.set(headerSegment(kid), (app.jwt as unknown as Record<string, JWT>)[namespace]!)
  }
  const signer = app.jwt

  return {
    keyId: currentKid,
    sign: (claims) => signer.sign({ ...claims }, { clockTimestamp: now() }),
    verify (token) {
      if (token.length > MAX_TOKEN_LENGTH) return null
      const verifier = byHeader.get(token.slice(0, token.indexOf('.')))
      if (verifier === undefined) return null
      let claims: { sub?: unknown, school?: unknown, av?: unknown, iat?: unknown, exp?: unknown, client_id?: unknown, scope?: unknown, role?: unknown, teacher?: unknown }
      try {
        claims = verifier.verify(token)
      } catch {
        // Malformed, bad signature, missing claims...: all the same to a client.
        return null
      }
      if (!isOurId(claims.sub)) return null
      if (claims.school !== undefined && !isOurId(claims.school)) return null
      if (claims.av !== undefined && (!Number.isSafeInteger(claims.av) || (claims.av as number) < 0)) return null
      // fast-jwt has checked that iat and exp are present. Not numbers, expired (RFC 7519: valid
      // only before exp), issued in the future, or with a lifetime beyond the configured one (not
      // issued here): refused.
      const { iat, exp } = claims
      if (typeof iat !== 'number' || typeof exp !== 'number') return null
      const seconds = now() / 1000
      if (seconds >= exp || iat > seconds + CLOCK_SKEW_SECONDS || exp - iat > ttlSeconds) return null
      const accessVersion = (claims.av as number | undefined) ?? 0
      if (claims.client_id === undefined) {
        // A user's token carries no scope: a user's scopes are their role's. A teacher's names the
        // teacher record; nothing else names one.
        if (claims.scope !== undefined) return null
        if (claims.role === undefined ? claims.teacher !== undefined : claims.role !== 'teacher' || !isOurId(claims.teacher)) return null
        const teacherId = (claims.teacher as string | undefined) ?? null
        return { kind: 'user', userId: claims.sub, schoolId: (claims.school) ?? null, teacherId, accessVersion }
      }
      if (claims.client_id !== claims.sub || typeof claims.school !== 'string' || claims.av === undefined) return null
      if (claims.role !== undefined || claims.teacher !== undefined) return null
      const scopes = parseScope(claims.scope)
      if (scopes === null) return null
      return { kind: 'client', clientId: claims.sub, schoolId: claims.school, scopes, accessVersion }
    }
  }
}

/**
 * When a token that `verify` accepted expires, in milliseconds since the epoch (its `exp`): a
 * connection it opened (a GraphQL subscription's WebSocket) closes then.
 */
export function accessTokenExpiry (token: string): number {
  const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp: number }
  return claims.exp * 1000
}

/** A token's `scope` claim: known scopes, space-separated, at least one; null otherwise. */
function parseScope (value: unknown): Scope[] | null {
  if (typeof value !== 'string') return null
  const names = value.split(' ')
  if (!names.every(isScope)) return null
  return normalizeScopes(names)
}
