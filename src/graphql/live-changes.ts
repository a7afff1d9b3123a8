// What wakes a subscriber of the change feed: the data-changed notifications the service already
// keeps (src/db/notifications.ts), heard once per process and fanned out to the subscribers of the
// school named. A notification carries only the school's id; it never carries data. A woken
// subscriber reads its own feed, through its own school client, from its own last cursor
// (resolvers/changes.ts): what it gets is what the `changes` query would give it, nothing lost or
// twice whichever notifications came, merged or late, and a deletion like any other change.
import { DATA_CHANGED_CHANNEL, type Notifications, type Subscription } from '../db/notifications.js'
import { parseUuid } from '../validators.js'

/** One subscriber's wake-ups: `next` resolves true once something may have changed since the last call, false once closed. */
export interface Wakeups {
  next (): Promise<boolean>
  /** Ends the wake-ups: a pending `next` resolves false. */
  close (): void
}

export interface LiveChanges {
  /**
   * Wake-ups for changes of `schoolId` from now on. The first `next` resolves at once (read what is
   * there): open it before the first read, so that nothing committed after that read goes unheard.
   */
  watch (schoolId: string): Wakeups
  close (): Promise<void>
}

class Watch implements Wakeups {
  private pending = true
  private closed = false
  private wake: ((more: boolean) => void) | undefined

  constructor (private readonly leave: (watch: Watch) => void) {}

  notify (): void {
    this.pending = true
    const wake = this.wake
    this.wake = undefined
    wake?.(true)
  }

  async next (): Promise<boolean> {
    if (this.closed) return false
    if (!this.pending) {
      const more = await new Promise<boolean>((resolve) => { this.wake = resolve })
      if (!more) return false
    }
    this.pending = false
    return true
  }

  close (): void {
    if (this.closed) return
    this.closed = true
    this.leave(this)
    const wake = this.wake
    this.wake = undefined
    wake?.(false)
  }
}

/** Listens on the data-changed channel as `subscriptions` (after the read routing, so a woken reader reads the primary). */
export async function watchLiveChanges (
  notifications: Pick<Notifications, 'subscribe'>,
  log: { warn: (obj: object, msg: string) => void }
): Promise<LiveChanges> {
  const bySchool = new Map<string, Set<Watch>>()
  const wakeAll = (): void => { for (const watches of bySchool.values()) for (const watch of watches) watch.notify() }
  const listener: Subscription = await notifications.subscribe(DATA_CHANGED_CHANNEL, 'subscriptions', {
    notify (payload) {
      const schoolId = parseUuid(payload)
      if (schoolId === undefined) return
      for (const watch of bySchool.get(schoolId) ?? []) watch.notify()
    },
    // Anything may have been committed while not listening: every subscriber reads again.
    async listening () { wakeAll() },
    lost (err) { log.warn({ err }, 'change notifications lost; subscribers read again once listening') }
  })
  return {
    watch (schoolId) {
      let watches = bySchool.get(schoolId)
      if (watches === undefined) bySchool.set(schoolId, watches = new Set())
      const watch = new Watch((gone) => {
        watches.delete(gone)
        if (watches.size === 0 && bySchool.get(schoolId) === watches) bySchool.delete(schoolId)
      })
      watches.add(watch)
      return watch
    },
    async close () {
      for (const watches of [...bySchool.values()]) for (const watch of [...watches]) watch.close()
      await listener.close()
    }
  }
}
