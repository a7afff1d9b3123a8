// The access audit's writer: requests hand their rows to an in-memory queue (a push, nothing
// awaited) and the queue goes to PostgreSQL in batches, one multi-row INSERT each, every
// `flushMs` or as soon as `batchSize` rows wait, whichever comes first. One timer per process, none
// per request.
//
// Bounded: at most `maxQueue` rows wait. When the database cannot keep up (or refuses the inserts)
// and the queue is full, new rows are dropped, counted (`dropped`) and reported in the error log,
// rather than slowing or refusing requests: the audit must never take the API down with it. A
// failed batch goes back to the head of the queue and is tried again on the next tick.
// `close()` writes everything still queued (the app calls it on close, after the server has
// stopped taking requests and the last answers have gone out).
import type { AccessAction, RecordType } from './access.js'

export interface AuditRow {
  at: Date
  schoolId: string
  /** Who read or wrote: a user or a client, exactly one of the two. */
  userId: string | null
  clientId: string | null
  requestId: string
  operation: string
  recordType: RecordType
  recordCount: number
  action: AccessAction
}

export interface AuditWriterOptions {
  /** Writes one batch (one statement). */
  insert: (rows: readonly AuditRow[]) => Promise<void>
  flushMs: number
  batchSize: number
  maxQueue: number
  onError: (message: string, err?: unknown) => void
}

export interface AuditStats {
  queued: number
  written: number
  dropped: number
  /** Batches that failed (and were tried again). */
  failedBatches: number
}

export class AuditWriter {
  private queue: AuditRow[] = []
  private flushing: Promise<void> | undefined
  private soon = false
  private closed = false
  private readonly timer: NodeJS.Timeout
  private written = 0
  private dropped = 0
  private droppedUnreported = 0
  private failedBatches = 0

  constructor (private readonly options: AuditWriterOptions) {
    this.timer = setInterval(() => { this.tick() }, options.flushMs)
    this.timer.unref()
  }

  /** Queues a row; false when the queue is full and the row was dropped. */
  push (row: AuditRow): boolean {
    if (this.queue.length >= this.options.maxQueue) {
      this.dropped += 1
      this.droppedUnreported += 1
      return false
    }
    this.queue.push(row)
    if (this.queue.length >= this.options.batchSize && !this.soon && this.flushing === undefined) {
      // A full batch goes out now, after the request's answer, not in its path.
      this.soon = true
      setImmediate(() => {
        this.soon = false
        this.tick()
      })
    }
    return true
  }

  stats (): AuditStats {
    return { queued: this.queue.length, written: this.written, dropped: this.dropped, failedBatches: this.failedBatches }
  }

  /** Writes every row queued so far (one or more batches); stops at the first failure. */
  async flush (): Promise<void> {
    this.report()
    while (this.queue.length > 0 || this.flushing !== undefined) {
      // One batch in flight at a time (the timer may have started one).
      if (this.flushing !== undefined) {
        await this.flushing
        continue
      }
      if (!await this.writeBatch()) return
    }
  }

  /** Stops the timer and writes what is queued; rows that cannot be written are reported as lost. */
  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    clearInterval(this.timer)
    await this.flush()
    if (this.queue.length > 0) {
      this.options.onError(`access audit: ${this.queue.length} row(s) could not be written before shutdown and are lost`)
      this.dropped += this.queue.length
      this.queue = []
    }
    this.report()
  }

  private tick (): void {
    this.report()
    if (this.flushing !== undefined || this.queue.length === 0) return
    void this.writeBatch().then((ok) => {
      // More than a batch waiting: go on at once rather than a tick later.
      if (ok && this.queue.length >= this.options.batchSize && !this.closed) this.tick()
    })
  }

  /** One batch from the head of the queue; true when it was written. */
  private writeBatch (): Promise<boolean> {
    const batch = this.queue.splice(0, this.options.batchSize)
    let ok = false
    const flushing = this.options.insert(batch).then(() => {
      this.written += batch.length
      ok = true
    }, (err: unknown) => {
      this.failedBatches += 1
      // Back to the head, in order; what no longer fits is dropped (newest first).
      const room = Math.max(0, this.options.maxQueue - this.queue.length)
      const kept = batch.slice(0, room)
      this.dropped += batch.length - kept.length
      this.droppedUnreported += batch.length - kept.length
      this.queue.unshift(...kept)
      this.options.onError(`access audit: writing ${batch.length} row(s) failed; they will be tried again`, err)
    }).finally(() => { this.flushing = undefined })
    this.flushing = flushing
    return flushing.then(() => ok)
  }

  /** The error log hears of dropped rows at most once a tick, with their number. */
  private report (): void {
    if (this.droppedUnreported === 0) return
    const count = this.droppedUnreported
    this.droppedUnreported = 0
    this.options.onError(`access audit: queue full (${this.options.maxQueue} rows), ${count} row(s) dropped (${this.dropped} in all)`)
  }
}
