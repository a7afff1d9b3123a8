// A client's credentials: its id and one of its live secrets. Secrets are opaque random tokens
// (opaque-tokens.ts) stored as SHA-256 digests; a client has one current secret and, after a
// rotation, the previous ones until their overlap ends. The presented secret's digest is compared
// with each live one in constant time, and an unknown client costs the same comparison.
import type { PrismaClient } from '../generated/prisma/client.js'
import { parseUuid } from '../validators.js'
import { OPAQUE_TOKEN, sameDigest, tokenDigest } from './opaque-tokens.js'
import { isScope, normalizeScopes, type Scope } from './scopes.js'

export interface AuthenticatedClient {
  clientId: string
  schoolId: string
  scopes: Scope[]
}

const DECOY = tokenDigest('decoy client secret')

/** The client, when `secret` is one of its live secrets and it is not revoked; else null. */
export async function authenticateClient (prisma: PrismaClient, clientId: string, secret: string): Promise<AuthenticatedClient | null> {
  const presented = tokenDigest(secret)
  const id = parseUuid(clientId)
  const client = id !== undefined && OPAQUE_TOKEN.test(secret)
    ? await prisma.client.findUnique({
      where: { id },
      select: {
        id: true,
        schoolId: true,
        scopes: true,
        revokedAt: true,
        secrets: { where: { OR: [{ expiresAt: null }, { expiresAt: { gt: new Date() } }] }, select: { secretHash: true } }
      }
    })
    : null
  const live = client?.secrets ?? []
  let match = false
  for (const { secretHash } of live.length === 0 ? [{ secretHash: DECOY }] : live) {
    // Every live secret is compared: the time does not tell which one matched.
    if (sameDigest(presented, secretHash)) match = live.length > 0
  }
  if (client === null || !match || client.revokedAt !== null) return null
  return { clientId: client.id, schoolId: client.schoolId, scopes: normalizeScopes(client.scopes.filter(isScope)) }
}
