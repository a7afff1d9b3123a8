// Users moved to another school, disabled or deleted lose access at once on every API node, with
// no query per request: a trigger on users records each change in user_access_changes and
// announces it with NOTIFY; every node keeps the changes of the last access-token lifetime in
// memory and refuses an access token whose school is no longer the user's (or whose user is
// disabled). Older changes need no memory: every token issued before them has expired.
import type { Database } from '../db/client.js'
import type { Listener } from '../db/listen.js'

export const ACCESS_CHANNEL = 'user_access_changed'

interface AccessState {
  id: number
  schoolId: string | null
  disabled: boolean
  at: number
}

export interface AccessChanges {
  /** True when an access token of `userId` issued for `schoolId` no longer stands. */
  revoked (userId: string, schoolId: string | null): boolean
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

  let listener: Listener
  try {
    listener = await db.listen(ACCESS_CHANNEL, {
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
    revoked (userId, schoolId) {
      const state = latest.get(userId)
      return state !== undefined && (state.disabled || state.schoolId !== schoolId)
    },
    get live () { return listener.live },
    async close () {
      clearInterval(sweep)
      await listener.close()
    }
  }
}
