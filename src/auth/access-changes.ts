// Users moved to another school, disabled, enabled or deleted lose the tokens issued before, at
// once, on every API node, with no query per request: a trigger on users records each change in
// user_access_changes and announces it with NOTIFY; every node keeps each user's latest change of
// the last access-token lifetime in memory. Each access token carries the id of the user's latest
// change when it was issued (its access version, claim `av`); a token older than the latest change
// the node knows is refused, and so is one whose school or state the latest change contradicts.
// Older changes need no memory: every token issued before them has expired. Clients (OAuth client
// credentials) use the same mechanism: a trigger on clients records a revocation or a change of
// scopes under the client's id (migration oauth_clients), and a client's token carries its `av`. The trigger keeps the
// changes for ACCESS_CHANGES_KEPT_DAYS, longer than the longest access-token lifetime
// (MAX_ACCESS_TOKEN_TTL), so a node starting at any time reloads every change a live token predates.
import type { Database } from '../db/client.js'
import { ACCESS_CHANGED_CHANNEL, type Subscription } from '../db/notifications.js'
import type { PrismaClient } from '../generated/prisma/client.js'

/** How long the users trigger keeps access changes (the prune in its migration). */
export const ACCESS_CHANGES_KEPT_DAYS = 30
/** The longest access-token lifetime ACCESS_TOKEN_TTL may set: a day, far inside the changes kept. */
export const MAX_ACCESS_TOKEN_TTL = 86_400

/** The user's (or client's) access version now: the id of their latest access change, 0 when none. */
export async function currentAccessVersion (prisma: PrismaClient, userId: string): Promise<number> {
  const latest = await prisma.userAccessChange.findFirst({ where: { userId }, orderBy: { id: 'desc' }, select: { id: true } })
  return latest === null ? 0 : Number(latest.id)
}

interface AccessState {
  id: number
  schoolId: string | null
  disabled: boolean
  at: number
}

export interface AccessChanges {
  /**
   * True when an access token of `userId`, issued for `schoolId` at access version
   * `accessVersion`, no longer stands.
   */
  revoked (userId: string, schoolId: string | null, accessVersion: number): boolean
  /** True while changes arrive (the notification connection is up). */
  readonly live: boolean
  close (): Promise<void>
}

interface Payload {
  id: number
  userId: string
  schoolId: string | null
  disabled: boolean
}

function parse (payload: string): Payload | null {
  try {
    const value = JSON.parse(payload) as Partial<Payload>
    if (typeof value.id !== 'number' || typeof value.userId !== 'string' || typeof value.disabled !== 'boolean') return null
    if (value.schoolId !== null && typeof value.schoolId !== 'string') return null
    return value as Payload
  } catch {
    return null
  }
}

export async function watchAccessChanges (
  db: Database,
  accessTokenTtlSeconds: number,
  log: { warn: (obj: object, msg: string) => void, info: (obj: object, msg: string) => void }
): Promise<AccessChanges> {
  const latest = new Map<string, AccessState>()
  const windowMs = accessTokenTtlSeconds * 1000

  function apply (change: Payload, at: number): void {
    const current = latest.get(change.userId)
    // Notifications and the reload can overlap; the change with the highest id is the newest.
    if (current !== undefined && current.id >= change.id) return
    latest.set(change.userId, { id: change.id, schoolId: change.schoolId, disabled: change.disabled, at })
  }

  async function reload (): Promise<void> {
    const since = new Date(Date.now() - windowMs)
    const rows = await db.prisma.userAccessChange.findMany({
      where: { changedAt: { gt: since } },
      orderBy: { id: 'asc' },
      select: { id: true, userId: true, schoolId: true, disabled: true, changedAt: true }
    })
    for (const row of rows) {
      apply({ id: Number(row.id), userId: row.userId, schoolId: row.schoolId, disabled: row.disabled }, row.changedAt.getTime())
    }
  }

  const sweep = setInterval(() => {
    const cutoff = Date.now() - windowMs
    for (const [userId, state] of latest) if (state.at < cutoff) latest.delete(userId)
  }, Math.min(windowMs, 60_000))
  sweep.unref()

  let listener: Subscription
  try {
    listener = await db.subscribe(ACCESS_CHANGED_CHANNEL, 'accessChanges', {
      notify (payload) {
        const change = parse(payload)
        if (change === null) log.warn({ payload }, 'ignored a malformed user access notification')
        else apply(change, Date.now())
      },
      listening: reload,
      lost (err) { log.warn({ err }, 'user access notifications lost; reconnecting') }
    })
  } catch (err) {
    clearInterval(sweep)
    throw err
  }

  return {
    revoked (userId, schoolId, accessVersion) {
      const state = latest.get(userId)
      if (state === undefined || accessVersion > state.id) return false
      // Issued before the latest change (disable then enable, A -> B -> A): revoked whatever the
      // state now. Issued after it: the version is read after the user's row, so a token of the
      // state before a change that came in between carries the change's version and a stale school.
      return accessVersion < state.id || state.disabled || state.schoolId !== schoolId
    },
    get live () { return listener.live },
    async close () {
      clearInterval(sweep)
      await listener.close()
    }
  }
}
