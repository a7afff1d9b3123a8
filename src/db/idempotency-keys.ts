// The two statements that keep a mutation's idempotency key with its write (docs/api/mutations.md,
// src/graphql/idempotency.ts's mutateOnce): sent through the write's own transaction of the school
// client, the key taken by its first statement and the answer stored by its last, so that the key
// and its answer commit with the write or neither does. idempotency_keys is the caller's table, not
// a tenant one (no school, no row-level security): wall 1 lets these two fixed texts through the
// school client and no other raw write (tenant.ts, reach.ts; refused on a teacher's client, which
// writes nothing), and the school session refuses them outside a transaction, where a key would
// commit without its write (school-session.ts). Their parameters: the caller ($1), the key ($2) and
// the fingerprint or the answer as JSON text ($3).

/**
 * The key taken: the transaction's first statement. A second transaction with the same caller and
 * key waits here on the table's primary key until the first has ended, then fails with a unique
 * violation (the first committed) or goes on (it rolled back).
 */
export const TAKE_KEY = 'INSERT INTO "idempotency_keys" ("caller_id", "key", "fingerprint") VALUES ($1::uuid, $2, $3)'

/** The answer stored: the transaction's last statement, once the write is done and its answer read. */
export const KEEP_ANSWER = 'UPDATE "idempotency_keys" SET "response" = $3::jsonb, "completed_at" = CURRENT_TIMESTAMP WHERE "caller_id" = $1::uuid AND "key" = $2'

/** Whether `sql` is one of the two statements (by its exact text). */
export function isKeyStatement (sql: unknown): boolean {
  return sql === TAKE_KEY || sql === KEEP_ANSWER
}
