// Whether a failure is the database being out of reach (connections refused, reset or dropped, a
// connect timeout, a full pool's wait, a server shutting down or starting up) rather than a fault
// of a statement or of this service: the one place that tells them apart, so that callers are
// told to retry in a moment (SERVICE_UNAVAILABLE, 503 and Retry-After) only when that can help.
//
// It reads errors as pg, pg-pool, @prisma/adapter-pg and Prisma's client hand them over: a socket
// error's `code`, a PostgreSQL SQLSTATE, the adapter's `kind` (kept by Prisma in
// `meta.driverAdapterError`), Prisma's P1xxx codes, and, for pg's and pg-pool's errors that have
// no code, their messages. test/contracts/database-unavailable.test.ts makes each of them for
// real, so an upgrade that changes one fails there.

/** Seconds a caller is told to wait (Retry-After, extensions.retryAfter) while the database is out of reach. */
export const DATABASE_RETRY_AFTER = 5

/** What a caller is told while the database is out of reach. */
export const DATABASE_UNAVAILABLE_MESSAGE = `The database is unavailable; retry in ${DATABASE_RETRY_AFTER} seconds`

const CODES = new Set([
  // Node's socket errors: no route, refused, reset, a write to a closed socket, a timeout.
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
  // Prisma: the server cannot be reached, a socket timed out, the server closed the connection.
  'P1001', 'P1008', 'P1017'
])

/**
 * PostgreSQL's SQLSTATEs: class 08 (connection exception), 57P01 admin_shutdown, 57P02
 * crash_shutdown, 57P03 cannot_connect_now (starting up, shutting down, in recovery), 53300
 * too_many_connections.
 */
const SQLSTATE = /^(?:08[0-9A-Z]{3}|57P0[123]|53300)$/

/** @prisma/adapter-pg's kinds of a driver error that mean the same (its convertDriverError). */
const KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections'])

/** pg's and pg-pool's errors without a code: a connection lost, a connect timeout, a full pool's wait. */
const MESSAGES = new Set([
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable'
])

interface Failure {
  code?: unknown
  originalCode?: unknown
  kind?: unknown
  message?: unknown
  cause?: unknown
  meta?: { driverAdapterError?: unknown }
}

/** True when `err`, or an error it wraps, says the database cannot be reached or refuses connections. */
export function databaseUnavailable (err: unknown): boolean {
  const seen = new Set<unknown>()
  const pending: unknown[] = [err]
  while (pending.length > 0) {
    const failure = pending.pop()
    if (typeof failure !== 'object' || failure === null || seen.has(failure)) continue
    seen.add(failure)
    const { code, originalCode, kind, message, cause, meta } = failure as Failure
    if (typeof code === 'string' && (CODES.has(code) || SQLSTATE.test(code))) return true
    if (typeof originalCode === 'string' && SQLSTATE.test(originalCode)) return true
    if (typeof kind === 'string' && KINDS.has(kind)) return true
    if (typeof message === 'string' && MESSAGES.has(message)) return true
    // An error's cause; Prisma's error keeps the adapter's error (whose cause is the mapped driver error) in meta.
    pending.push(cause, meta?.driverAdapterError)
  }
  return false
}
