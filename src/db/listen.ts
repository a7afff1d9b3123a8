// PostgreSQL LISTEN on a connection of its own, kept open: after a lost connection it reconnects
// with growing delays and tells the caller, which reloads what it may have missed.
import pg from 'pg'

export interface ListenHandlers {
  /** A notification's payload. */
  notify (payload: string): void
  /** Listening (again): anything sent while not listening must be reloaded now. */
  listening (): Promise<void>
  /** The connection was lost; notifications are missed until `listening` is called again. */
  lost (err: Error): void
}

export interface Listener {
  /** True while notifications arrive. */
  readonly live: boolean
  close (): Promise<void>
}

const MAX_DELAY_MS = 5_000

/** LISTEN on `channel` over its own connection to `url`; resolves once listening the first time. */
export async function listenPostgres (url: string, channel: string, handlers: ListenHandlers): Promise<Listener> {
  let client: pg.Client | undefined
  let live = false
  let closed = false
  let retry: NodeJS.Timeout | undefined

  async function connect (): Promise<void> {
    const next = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 })
    next.on('notification', (message) => {
      if (message.channel === channel && message.payload !== undefined) handlers.notify(message.payload)
    })
    next.on('error', (err) => { drop(next, err) })
    next.on('end', () => { drop(next, new Error('The notification connection ended')) })
    try {
      await next.connect()
      await next.query(`LISTEN "${channel.replaceAll('"', '""')}"`)
    } catch (err) {
      next.removeAllListeners('end')
      await next.end().catch(() => {})
      throw err
    }
    if (closed) {
      await next.end().catch(() => {})
      return
    }
    client = next
    live = true
    await handlers.listening()
  }

  function drop (which: pg.Client, err: Error): void {
    if (which !== client || closed) return
    client = undefined
    live = false
    which.removeAllListeners('end')
    which.end().catch(() => {})
    handlers.lost(err)
    schedule(250)
  }

  function schedule (delay: number): void {
    retry = setTimeout(() => {
      connect().catch((err: Error) => {
        handlers.lost(err)
        if (!closed) schedule(Math.min(delay * 2, MAX_DELAY_MS))
      })
    }, delay)
    retry.unref()
  }

  await connect()
  return {
    get live () { return live },
    async close () {
      closed = true
      live = false
      clearTimeout(retry)
      const last = client
      client = undefined
      if (last !== undefined) {
        last.removeAllListeners('end')
        await last.end().catch(() => {})
      }
    }
  }
}
