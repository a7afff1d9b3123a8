// The PostgreSQL notification channels the service hears (LISTEN), and the one place that listens:
// one connection per channel for each open database (a process's service has one), shared by every
// subscriber of the channel. On PostgreSQL a lost connection is opened again with growing delays;
// each subscriber is told (`lost`), and told again once listening (`listening`), to reload what it
// may have missed. On the embedded PGlite notifications are delivered in process and never lost.
//
// The subscribers of a channel are heard in the order SUBSCRIBERS gives, whatever order they
// subscribed in: a school's change reaches the read routing of the replicas before anyone else on
// the node, so that a reader told of the change (the response cache, which then drops the school's
// answers) reads it from the primary, not from a replica that has not replayed it yet.
import type { PGlite } from '@electric-sql/pglite'
import pg from 'pg'

/** Sent by the tenant tables' triggers (and on Citus by the service) with the id of the school whose data changed. */
export const DATA_CHANGED_CHANNEL = 'school_data_changed'
/** Sent by the users' and clients' triggers with the access change (src/auth/access-changes.ts). */
export const ACCESS_CHANGED_CHANNEL = 'user_access_changed'

/** Each channel's subscribers, in the order a notification reaches them. */
export const SUBSCRIBERS = {
  // GraphQL subscriptions (src/plugins/subscriptions.ts) last: their readers read from the primary
  // (readRouting), and a subscriber's access is checked again once the access changes are in.
  [DATA_CHANGED_CHANNEL]: ['readRouting', 'teacherRooms', 'responseCache', 'subscriptions'],
  [ACCESS_CHANGED_CHANNEL]: ['accessChanges', 'subscriptions']
} as const

export type Channel = keyof typeof SUBSCRIBERS
export type SubscriberOf<C extends Channel> = typeof SUBSCRIBERS[C][number]

export interface Subscriber {
  /** A notification's payload. */
  notify (payload: string): void
  /** Listening (again): anything sent while not listening must be reloaded now. */
  listening (): Promise<void>
  /** The connection was lost; notifications are missed until `listening` is called again. */
  lost (err: Error): void
}

export interface Subscription {
  /** True while notifications arrive. */
  readonly live: boolean
  /** Stops this subscriber's notifications; the channel's connection closes with its last one. */
  close (): Promise<void>
}

export interface Notifications {
  /**
   * Subscribes `handlers`, as `subscriber`, to `channel`; resolves once they listen (their
   * `listening` has run). Rejects when the channel's first connection cannot be opened.
   */
  subscribe<C extends Channel> (channel: C, subscriber: SubscriberOf<C>, handlers: Subscriber): Promise<Subscription>
  /** Closes every channel's connection. */
  close (): Promise<void>
}

/** One LISTEN connection, opened: closed by `close`; an end of its own is reported to `ended`. */
interface Connection { close (): Promise<void> }
type Connect = (channel: string, notify: (payload: string) => void, ended: (err: Error) => void) => Promise<Connection>

const FIRST_RETRY_MS = 250
const MAX_RETRY_MS = 5_000

/** Notifications on the PostgreSQL server of `url`, each channel on a connection of its own. */
export function postgresNotifications (url: string): Notifications {
  return notifications(async (channel, notify, ended) => {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 })
    client.on('notification', (message) => {
      if (message.channel === channel && message.payload !== undefined) notify(message.payload)
    })
    client.on('error', (err) => { ended(err) })
    client.on('end', () => { ended(new Error('The notification connection ended')) })
    const close = async (): Promise<void> => {
      client.removeAllListeners('end')
      await client.end().catch(() => {})
    }
    try {
      await client.connect()
      await client.query(`LISTEN "${channel.replaceAll('"', '""')}"`)
    } catch (err) {
      await close()
      throw err
    }
    return { close }
  })
}

/** Notifications of the embedded database: delivered in process, never lost. */
export function embeddedNotifications (pglite: PGlite): Notifications {
  return notifications(async (channel, notify) => {
    const stop = await pglite.listen(channel, notify)
    return {
      async close () {
        // Nothing to stop once the database itself is closed.
        if (!pglite.closed) await stop().catch(() => {})
      }
    }
  })
}

interface Entry { readonly rank: number, readonly handlers: Subscriber }

interface ChannelState {
  /** In the order of SUBSCRIBERS; subscribers of one name in the order they came. */
  readonly entries: Entry[]
  connection: Connection | undefined
  /** The first connection, while it opens. */
  opening: Promise<void> | undefined
  live: boolean
  retry: NodeJS.Timeout | undefined
}

function notifications (connect: Connect): Notifications {
  const channels = new Map<Channel, ChannelState>()
  let closed = false

  /** Opens the channel's connection, then tells every subscriber it listens. */
  async function open (channel: Channel, state: ChannelState): Promise<void> {
    // Declared before it is assigned: a notification may come before connect() has returned it
    // (const would throw in the handler then).
    let connection: Connection | undefined
    // eslint-disable-next-line prefer-const
    connection = await connect(channel, (payload) => {
      if (state.connection !== connection) return
      for (const { handlers } of [...state.entries]) handlers.notify(payload)
    }, (err) => { drop(channel, state, connection, err) })
    if (closed || state.entries.length === 0) {
      await connection.close()
      return
    }
    state.connection = connection
    state.live = true
    try {
      for (const { handlers } of [...state.entries]) await handlers.listening()
    } catch (err) {
      state.connection = undefined
      state.live = false
      await connection.close()
      throw err
    }
  }

  function drop (channel: Channel, state: ChannelState, connection: Connection | undefined, err: Error): void {
    if (connection === undefined || state.connection !== connection) return
    state.connection = undefined
    state.live = false
    connection.close().catch(() => {})
    for (const { handlers } of [...state.entries]) handlers.lost(err)
    schedule(channel, state, FIRST_RETRY_MS)
  }

  function schedule (channel: Channel, state: ChannelState, delay: number): void {
    if (closed || state.entries.length === 0) return
    state.retry = setTimeout(() => {
      state.retry = undefined
      open(channel, state).catch((err: Error) => {
        for (const { handlers } of [...state.entries]) handlers.lost(err)
        schedule(channel, state, Math.min(delay * 2, MAX_RETRY_MS))
      })
    }, delay)
    state.retry.unref()
  }

  async function stop (state: ChannelState): Promise<void> {
    clearTimeout(state.retry)
    state.retry = undefined
    state.live = false
    const connection = state.connection
    state.connection = undefined
    await connection?.close()
  }

  return {
    async subscribe (channel, subscriber, handlers) {
      if (closed) throw new Error('The database is closed')
      let state = channels.get(channel)
      if (state === undefined) {
        state = { entries: [], connection: undefined, opening: undefined, live: false, retry: undefined }
        channels.set(channel, state)
      }
      const rank = (SUBSCRIBERS[channel] as readonly string[]).indexOf(subscriber)
      const entry: Entry = { rank, handlers }
      const at = state.entries.findIndex((other) => other.rank > rank)
      state.entries.splice(at < 0 ? state.entries.length : at, 0, entry)
      const current = state
      const leave = (): void => {
        const index = current.entries.indexOf(entry)
        if (index >= 0) current.entries.splice(index, 1)
      }
      try {
        if (current.live) {
          await handlers.listening()
        } else if (current.opening !== undefined) {
          await current.opening
        } else if (current.connection === undefined && current.retry === undefined) {
          // The channel's first connection (or the first after its last subscriber left).
          current.opening = open(channel, current).finally(() => { current.opening = undefined })
          await current.opening
        }
        // Else the connection was lost and is being opened again: `listening` comes with it.
      } catch (err) {
        leave()
        throw err
      }
      return {
        get live () { return current.live && current.entries.includes(entry) },
        async close () {
          leave()
          if (current.entries.length === 0) await stop(current)
        }
      }
    },
    async close () {
      closed = true
      await Promise.all([...channels.values()].map(stop))
    }
  }
}
