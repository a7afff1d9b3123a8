// Refresh tokens are opaque random strings (opaque-tokens.ts); only their SHA-256 is stored, so a
// database leak does not leak usable tokens. A token stays usable until it expires or is revoked;
// `now` is the app's clock in milliseconds (BuildOptions.now).
import type { PrismaClient } from '../generated/prisma/client.js'
import { OPAQUE_TOKEN as TOKEN_PATTERN, randomToken, tokenDigest as digest } from './opaque-tokens.js'

export async function issueRefreshToken (prisma: PrismaClient, userId: string, ttlSeconds: number, now: () => number): Promise<string> {
  const token = randomToken()
  await prisma.refreshToken.create({
    data: { userId, tokenHash: digest(token), expiresAt: new Date(now() + ttlSeconds * 1000) }
  })
  return token
}

export interface RefreshTokenOwner {
  userId: string
  schoolId: string | null
  /** A TEACHER's teacher record; null for an ADMIN. */
  teacherId: string | null
}

/** The owner of a live (known, unexpired, unrevoked) token with the user's current school, or null. */
export async function findRefreshTokenOwner (prisma: PrismaClient, token: string, now: () => number): Promise<RefreshTokenOwner | null> {
  if (!TOKEN_PATTERN.test(token)) return null
  const row = await prisma.refreshToken.findUnique({
    where: { tokenHash: digest(token) },
    select: { expiresAt: true, revokedAt: true, user: { select: { id: true, schoolId: true, teacherId: true, disabledAt: true } } }
  })
  if (row === null || row.revokedAt !== null || row.expiresAt.getTime() <= now() || row.user.disabledAt !== null) return null
  return { userId: row.user.id, schoolId: row.user.schoolId, teacherId: row.user.teacherId }
}

/** Revokes a live token of `userId`; true when this call revoked it. */
export async function revokeRefreshToken (prisma: PrismaClient, userId: string, token: string, now: () => number): Promise<boolean> {
  if (!TOKEN_PATTERN.test(token)) return false
  const at = new Date(now())
  const { count } = await prisma.refreshToken.updateMany({
    where: { tokenHash: digest(token), userId, revokedAt: null, expiresAt: { gt: at } },
    data: { revokedAt: at }
  })
  return count === 1
}
