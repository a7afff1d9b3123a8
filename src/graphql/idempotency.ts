// Idempotent mutations (docs/api/mutations.md): a mutation sent with an idempotency key (the
// `Idempotency-Key` header of the IETF HTTP API working group's draft, or the `idempotencyKey`
// argument) runs once per caller and key. The key and its answer are kept in PostgreSQL
// (idempotency_keys) in the write's own transaction, so a retry on any node gets the first answer
// again, and a write is never done twice nor a key kept without its write; a retry while the first
// still runs waits for it (and gets its answer, or runs when it failed); the same key with another
// mutation or other arguments is refused with IDEMPOTENCY_KEY_REUSED (the draft's 422). A mutation
// that fails keeps no answer: nothing was written (one transaction), and a retry runs it again.
// Keys are kept 24 hours, pruned by the caller's next key, and at most IDEMPOTENCY_KEYS_PER_CALLER
// per caller in that time. All of it is mutateOnce, below, read top to bottom.
import { createHash } from 'node:crypto'
import { print, type GraphQLResolveInfo } from 'graphql'
import mercurius from 'mercurius'
import stringify from 'safe-stable-stringify'
import { KEEP_ANSWER, TAKE_KEY } from '../db/idempotency-keys.js'
import type { SchoolDb } from '../db/school-client.js'
import type { PrismaClient } from '../generated/prisma/client.js'
import type { Tx } from '../records/writes.js'
import { badUserInput, type ErrorCode } from './errors.js'

const { ErrorWithProps } = mercurius

export const IDEMPOTENCY_HEADER = 'idempotency-key'
/** How long a key and its answer are kept: the draft asks for at least 24 hours. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000
/** Keys one caller may hold at once (in IDEMPOTENCY_KEY_TTL_MS). */
export const IDEMPOTENCY_KEYS_PER_CALLER = 10_000
/** A key the previous version took before its write and has not answered after this long may be taken again. */
const LEGACY_LEASE_MS = 5 * 60 * 1000
/** The draft's key is a string; ours is printable ASCII, 1 to 255 characters (a UUID fits). */
const KEY = /^[\x21-\x7e]{1,255}$/

export function idempotencyError (code: Extract<ErrorCode, 'IDEMPOTENCY_KEY_REUSED' | 'IDEMPOTENCY_KEY_IN_USE'>, message: string): Error {
  return new ErrorWithProps(message, { code })
}

/** The idempotency key of a mutation: its argument, else the request's header; refused when malformed or when the two differ. */
export function idempotencyKeyOf (argument: string | null | undefined, header: string | string[] | undefined): string | undefined {
  const fromHeader = Array.isArray(header) ? header[0] : header
  // The draft's header is a Structured Field string ("..."); a bare token is taken as it is.
  const headerKey = fromHeader === undefined ? undefined : /^"(.*)"$/.exec(fromHeader.trim())?.[1] ?? fromHeader.trim()
  if (argument != null && headerKey !== undefined && argument !== headerKey) {
    throw badUserInput('idempotencyKey and the Idempotency-Key header differ: send one of them, or the same key in both')
  }
  const key = argument ?? headerKey
  if (key === undefined) return undefined
  if (!KEY.test(key)) throw badUserInput('An idempotency key is 1 to 255 printable ASCII characters (a UUID, for example)')
  return key
}

/**
 * What a retry must repeat: the mutation field, its arguments (the key aside; as JSON with object keys
 * in order, so that the same arguments always print the same) and its selection.
 */
export function fingerprintOf (info: GraphQLResolveInfo, args: Record<string, unknown>): string {
  const { idempotencyKey: _key, ...rest } = args
  const selection = info.fieldNodes.map((node) => node.selectionSet === undefined ? '' : print(node.selectionSet)).join(' ')
  return createHash('sha256').update(`${info.fieldName}\n${stringify(rest)}\n${selection}`).digest('hex')
}

/** An answer as JSON text, its Dates marked so that they come back as Dates (the scalars serialize Dates). */
function encode (value: unknown): string {
  return JSON.stringify(value ?? null, function (this: Record<string, unknown>, key, inner: unknown) {
    const raw = this[key]
    return raw instanceof Date ? { $date: raw.toISOString() } : inner
  })
}

function decode (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decode)
  if (value !== null && typeof value === 'object') {
    const { $date } = value as { $date?: unknown }
    if (typeof $date === 'string' && Object.keys(value).length === 1) return new Date($date)
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, decode(inner)]))
  }
  return value
}

/** The answer kept for the caller's key, if there is one; refused when it came with another fingerprint. */
async function keptAnswer (prisma: PrismaClient, callerId: string, key: string, fingerprint: string): Promise<{ value: unknown } | undefined> {
  const kept = await prisma.idempotencyKey.findUnique({ where: { callerId_key: { callerId, key } } })
  if (kept === null) return undefined
  if (kept.fingerprint !== fingerprint) {
    throw idempotencyError('IDEMPOTENCY_KEY_REUSED', `Idempotency key "${key}" was used with another mutation or other arguments: use a new key for a new request`)
  }
  if (kept.completedAt === null) {
    // Only a key taken by the previous version (which kept a key before its write and the answer
    // after): taken again once its lease is over, else in use.
    const stale = await prisma.idempotencyKey.deleteMany({ where: { callerId, key, completedAt: null, createdAt: { lt: new Date(Date.now() - LEGACY_LEASE_MS) } } })
    if (stale.count === 0) throw idempotencyError('IDEMPOTENCY_KEY_IN_USE', `A request with idempotency key "${key}" is still running: retry once it has answered`)
    return undefined
  }
  return { value: decode(kept.response) }
}

/** Whose key it is and what it came with: the caller (a user's or a client's id), the key and the request's fingerprint. */
export interface IdempotencyKeyOf {
  readonly callerId: string
  readonly key: string
  readonly fingerprint: string
}

/** A transaction of the school's client as a mutation writes through it, with the raw writes the key's two statements go through. */
type KeyedTx = Tx & Pick<SchoolDb, '$executeRawUnsafe'>

/** Opens a mutation's one transaction: `inTransaction` writes, reads the answer in the transaction and returns it. */
export type OpenTransaction<T> = (inTransaction: (tx: Tx) => Promise<T>) => Promise<T>

/**
 * Runs a mutation once for the caller and key: a call with the same key and fingerprint gets the
 * first call's answer, another fingerprint is refused. `mutation` writes in the one transaction it
 * opens with the `open` it is given: the school client's (`school`), the key taken by its first
 * statement and the answer stored by its last (src/db/idempotency-keys.ts), so that the key and
 * its answer commit with the write or neither does. A request with the same key while the first's
 * transaction is open waits for it on the key (PostgreSQL's primary key), then fails and gets the
 * first's answer here; when the first rolled back (its node died, the write was refused), it runs.
 * The unscoped client (`prisma`) reads and prunes the keys: they are the caller's, not a school's
 * records.
 */
export async function mutateOnce<T> (
  prisma: PrismaClient,
  school: SchoolDb,
  { callerId, key, fingerprint }: IdempotencyKeyOf,
  mutation: (open: OpenTransaction<T>) => Promise<T>
): Promise<T> {
  // The caller's expired keys go first: what is left is what the bound counts.
  await prisma.idempotencyKey.deleteMany({ where: { callerId, createdAt: { lt: new Date(Date.now() - IDEMPOTENCY_KEY_TTL_MS) } } })
  const answered = await keptAnswer(prisma, callerId, key, fingerprint)
  if (answered !== undefined) return answered.value as T
  const held = await prisma.idempotencyKey.count({ where: { callerId } })
  if (held >= IDEMPOTENCY_KEYS_PER_CALLER) {
    throw badUserInput(`At most ${IDEMPOTENCY_KEYS_PER_CALLER} idempotency keys per caller are kept (24 hours): send this mutation without a key, or later`)
  }
  const open: OpenTransaction<T> = async (inTransaction) => await school.$transaction(async (tx: KeyedTx) => {
    // First: the key taken (a retry with the same key waits here until this transaction ends).
    await tx.$executeRawUnsafe(TAKE_KEY, callerId, key, fingerprint)
    const answer = await inTransaction(tx)
    // Last: the answer stored, once the write is done and its answer read.
    const stored = await tx.$executeRawUnsafe(KEEP_ANSWER, callerId, key, encode(answer))
    if (stored !== 1) throw new Error(`Idempotency key "${key}": its answer was not stored`)
    return answer
  }) as T
  try {
    return await mutation(open)
  } catch (err) {
    // Refused, rolled back: nothing was written and no key kept, unless a request with the same
    // key committed first (this one waited for it on the key): then its answer.
    const first = await keptAnswer(prisma, callerId, key, fingerprint)
    if (first !== undefined) return first.value as T
    throw err
  }
}
