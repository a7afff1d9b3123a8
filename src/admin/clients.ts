// Administration of clients (programs with OAuth 2.0 client credentials): create, list, change the
// scopes, rotate a secret, revoke. Used by the CLI (`school-data client ...`), the demo seed and
// tests. A secret is returned once, to be shown once; only its SHA-256 is stored.
import { randomToken, tokenDigest } from '../auth/opaque-tokens.js'
import { normalizeScopes, parseScope, SCOPES, type Scope } from '../auth/scopes.js'
import type { Database } from '../db/client.js'

import { AdminError, requireId, requireText } from '../records/errors.js'
import { requireSchool } from '../records/writes.js'

/** How long a rotated secret keeps working by default: a day for every deployment to take the new one. */
export const DEFAULT_OVERLAP_HOURS = 24
/** The longest overlap: a month. */
export const MAX_OVERLAP_HOURS = 720

export interface NewCredentials {
  clientId: string
  /** Shown once; never stored. */
  secret: string
}

export interface ClientSummary {
  id: string
  schoolId: string
  name: string
  scopes: string[]
  createdAt: Date
  revokedAt: Date | null
  /** Live secrets: the current one, and those of a rotation still in their overlap. */
  liveSecrets: number
}

function requireScopes (scopes: readonly string[]): Scope[] {
  if (scopes.length === 0) throw new AdminError(`Give at least one --scope: ${SCOPES.join(', ')}`)
  const parsed = scopes.map((name) => {
    const scope = parseScope(name)
    if (scope === undefined) throw new AdminError(`Unknown scope "${name}": one of ${SCOPES.join(', ')}`)
    return scope
  })
  return normalizeScopes(parsed)
}

async function requireClient (db: Database, clientId: string): Promise<{ id: string, scopes: string[], revokedAt: Date | null }> {
  const id = requireId('Client', clientId)
  const client = await db.prisma.client.findUnique({ where: { id }, select: { id: true, scopes: true, revokedAt: true } })
  if (client === null) throw new AdminError(`Client ${id} does not exist`)
  return client
}

export async function createClient (
  db: Database,
  { schoolId, name, scopes }: { schoolId: string, name: string, scopes: readonly string[] }
): Promise<NewCredentials> {
  const granted = requireScopes(scopes)
  const clientName = requireText('Client name', name)
  const school = await requireSchool(db, schoolId)
  const secret = randomToken()
  const client = await db.prisma.client.create({
    data: { schoolId: school, name: clientName, scopes: granted, secrets: { create: { secretHash: tokenDigest(secret) } } },
    select: { id: true }
  })
  return { clientId: client.id, secret }
}

export async function listClients (db: Database, { schoolId }: { schoolId?: string | undefined } = {}): Promise<ClientSummary[]> {
  const now = new Date()
  const rows = await db.prisma.client.findMany({
    where: schoolId === undefined ? {} : { schoolId: requireId('School', schoolId) },
    orderBy: { id: 'asc' },
    select: {
      id: true,
      schoolId: true,
      name: true,
      scopes: true,
      createdAt: true,
      revokedAt: true,
      _count: { select: { secrets: { where: { OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] } } } }
    }
  })
  return rows.map(({ _count, ...row }) => ({ ...row, liveSecrets: _count.secrets }))
}

/**
 * A new secret for the client. The secrets before it keep working for `overlapHours` (0: they stop
 * at once), so that every deployment of the client can take the new one first.
 */
export async function rotateClientSecret (
  db: Database,
  clientId: string,
  { overlapHours = DEFAULT_OVERLAP_HOURS }: { overlapHours?: number } = {}
): Promise<NewCredentials & { previousUntil: Date }> {
  if (!Number.isFinite(overlapHours) || overlapHours < 0 || overlapHours > MAX_OVERLAP_HOURS) {
    throw new AdminError(`--overlap must be a number of hours from 0 to ${MAX_OVERLAP_HOURS} (got ${overlapHours})`)
  }
  const client = await requireClient(db, clientId)
  if (client.revokedAt !== null) throw new AdminError(`Client ${client.id} is revoked`)
  const secret = randomToken()
  const previousUntil = new Date(Date.now() + overlapHours * 3_600_000)
  await db.prisma.$transaction([
    // An earlier overlap that ends sooner is kept as it is.
    db.prisma.clientSecret.updateMany({
      where: { clientId: client.id, OR: [{ expiresAt: null }, { expiresAt: { gt: previousUntil } }] },
      data: { expiresAt: previousUntil }
    }),
    db.prisma.clientSecret.create({ data: { clientId: client.id, secretHash: tokenDigest(secret) } })
  ])
  return { clientId: client.id, secret, previousUntil }
}

/**
 * Replaces a client's scopes. A change ends its access tokens on every API node within a second
 * (trigger clients_access_changed): it asks /oauth/token for tokens of the new scopes.
 */
export async function setClientScopes (db: Database, clientId: string, scopes: readonly string[]): Promise<{ id: string, scopes: Scope[], changed: boolean }> {
  const granted = requireScopes(scopes)
  const client = await requireClient(db, clientId)
  if (client.revokedAt !== null) throw new AdminError(`Client ${client.id} is revoked`)
  if ([...client.scopes].sort().join(' ') === [...granted].sort().join(' ')) return { id: client.id, scopes: granted, changed: false }
  await db.prisma.client.update({ where: { id: client.id }, data: { scopes: granted } })
  return { id: client.id, scopes: granted, changed: true }
}

/**
 * Revokes a client: its secrets stop at once, and every API node refuses its access tokens within
 * a second (trigger clients_access_changed). Revoking a revoked client changes nothing.
 */
export async function revokeClient (db: Database, clientId: string): Promise<string> {
  const client = await requireClient(db, clientId)
  if (client.revokedAt === null) {
    await db.prisma.client.update({ where: { id: client.id }, data: { revokedAt: new Date() } })
  }
  return client.id
}
