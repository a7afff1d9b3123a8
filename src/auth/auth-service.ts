// Login, refresh and logout of users, and clients' access tokens (the OAuth token endpoint,
// src/plugins/oauth.ts). The only code besides administration that uses the unscoped client.
import type { FastifyBaseLogger } from 'fastify'
import type { PrismaClient } from '../generated/prisma/client.js'
import { currentAccessVersion, type AccessChanges } from './access-changes.js'
import { authenticateClient } from './client-credentials.js'
import { identify, type Identity } from './identity.js'
import { needsRehash, rehashPassword, verifyPassword } from './passwords.js'
import { findRefreshTokenOwner, issueRefreshToken, revokeRefreshToken, type RefreshTokenOwner } from './refresh-tokens.js'
import { grantable, type Scope } from './scopes.js'
import type { AccessTokens } from './tokens.js'
import { isStorableText } from '../validators.js'

export interface AuthService {
  /** The caller of a request; an access token of a user since moved or disabled is invalid. */
  identify (authorization: string | undefined): Identity
  /** False while changes of users' schools may be missed (the notification connection is down). */
  readonly accessChangesLive: boolean
  /** Tokens for valid credentials; null otherwise (unknown user and wrong password alike). */
  login (username: string, password: string): Promise<{ accessToken: string, refreshToken: string } | null>
  /** A new access token with the user's current school; null for a token that is not live. */
  refresh (refreshToken: string): Promise<{ accessToken: string } | null>
  logout (userId: string, refreshToken: string): Promise<boolean>
  /**
   * An access token for a client with these credentials, granted `scopes` (all of the client's
   * when undefined); `invalid_client` for unknown or revoked clients and wrong secrets alike,
   * `invalid_scope` for a scope the client does not hold.
   */
  clientToken (clientId: string, secret: string, scopes: readonly Scope[] | undefined):
  Promise<{ accessToken: string, scopes: readonly Scope[] } | { error: 'invalid_client' | 'invalid_scope' }>
}

/** Usernames are compared trimmed, case-insensitively and in Unicode NFC form. */
export function normalizeUsername (username: string): string {
  return username.normalize('NFC').trim().toLowerCase()
}

const INVALID: Identity = { kind: 'invalid' }

export function createAuthService (
  tokens: AccessTokens,
  prisma: PrismaClient,
  refreshTokenTtl: number,
  accessChanges: AccessChanges,
  log: FastifyBaseLogger,
  /** The clock of refresh tokens' lifetimes (BuildOptions.now). */
  now: () => number
): AuthService {
  /**
   * A token for the user's state just read. The access version is read after that state, so a
   * change committed in between makes the token stale (revoked), never newer than its school.
   */
  async function signAccessToken ({ userId, schoolId, teacherId }: RefreshTokenOwner): Promise<string> {
    const av = await currentAccessVersion(prisma, userId)
    return tokens.sign({
      sub: userId,
      ...(schoolId === null ? {} : { school: schoolId }),
      ...(teacherId === null ? {} : { role: 'teacher', teacher: teacherId }),
      av
    })
  }

  /** Stores the password anew under the current parameters; a failure only costs the upgrade. */
  async function rehash (userId: string, password: string): Promise<void> {
    try {
      await prisma.user.update({ where: { id: userId }, data: { passwordHash: await rehashPassword(password) }, select: { id: true } })
    } catch (err) {
      log.warn({ err, userId }, 'could not upgrade a password hash')
    }
  }

  return {
    identify (authorization) {
      const identity = identify(tokens, authorization)
      if (identity.kind === 'user' && accessChanges.revoked(identity.userId, identity.schoolId, identity.accessVersion)) return INVALID
      // A client revoked (or whose scopes changed) is an access change like a user's (migration oauth_clients).
      if (identity.kind === 'client' && accessChanges.revoked(identity.clientId, identity.schoolId, identity.accessVersion)) return INVALID
      return identity
    },

    get accessChangesLive () { return accessChanges.live },

    async login (username, password) {
      const name = normalizeUsername(username)
      // A name PostgreSQL cannot hold belongs to nobody: refused as an unknown user.
      const user = !isStorableText(name)
        ? null
        : await prisma.user.findUnique({ where: { username: name }, select: { id: true, passwordHash: true, schoolId: true, teacherId: true, disabledAt: true } })
      // The password is checked for an unknown user (against a decoy) and a disabled one too, so
      // that every refusal takes the same time and says the same.
      if (!await verifyPassword(user?.passwordHash, password) || user === null || user.disabledAt !== null) return null
      if (needsRehash(user.passwordHash)) await rehash(user.id, password)
      return {
        accessToken: await signAccessToken({ userId: user.id, schoolId: user.schoolId, teacherId: user.teacherId }),
        refreshToken: await issueRefreshToken(prisma, user.id, refreshTokenTtl, now)
      }
    },

    async refresh (refreshToken) {
      const owner = await findRefreshTokenOwner(prisma, refreshToken, now)
      if (owner === null) return null
      return { accessToken: await signAccessToken(owner) }
    },

    logout: (userId, refreshToken) => revokeRefreshToken(prisma, userId, refreshToken, now),

    async clientToken (clientId, secret, requested) {
      const client = await authenticateClient(prisma, clientId, secret)
      if (client === null) return { error: 'invalid_client' }
      const scopes = grantable(client.scopes, requested ?? client.scopes)
      if (scopes === undefined) return { error: 'invalid_scope' }
      // Read after the client's row, as a user's: a revocation in between makes the token stale.
      const av = await currentAccessVersion(prisma, client.clientId)
      const accessToken = tokens.sign({ sub: client.clientId, client_id: client.clientId, school: client.schoolId, scope: scopes.join(' '), av })
      return { accessToken, scopes }
    }
  }
}
