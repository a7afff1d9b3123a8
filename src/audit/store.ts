// The access audit in PostgreSQL (table access_audit): a batch goes in as one INSERT, and the CLI
// reads it back. The service writes through the unscoped client, outside any school's session:
// one batch holds rows of many schools, and the table has no row-level security (the service role
// should hold INSERT only on it; README "Access audit").
import type { PrismaClient } from '../generated/prisma/client.js'
import { schoolSession } from '../db/school-session.js'
import type { AuditRow } from './writer.js'

const same = <T>(value: T): T => value

/**
 * One INSERT for the whole batch. The rows travel as one array per column (unnest), so the
 * statement's text is the same for every batch size: one prepared statement per connection.
 */
export function insertAuditRows (prisma: PrismaClient, rows: readonly AuditRow[]): Promise<void> {
  if (rows.length === 0) return Promise.resolve()
  const at = rows.map((r) => r.at.toISOString())
  const schoolIds = rows.map((r) => r.schoolId)
  const userIds = rows.map((r) => r.userId)
  const requestIds = rows.map((r) => r.requestId)
  const operations = rows.map((r) => r.operation)
  const recordTypes = rows.map((r) => r.recordType)
  const counts = rows.map((r) => r.recordCount)
  const actions = rows.map((r) => r.action)
  // Lazy Prisma promise: `then` inside exit() runs it with no school set, whoever scheduled the flush.
  return schoolSession.exit(() => prisma.$executeRaw`
    INSERT INTO access_audit (at, school_id, user_id, request_id, operation, record_type, record_count, action)
    SELECT * FROM unnest(
      ${at}::timestamptz[], ${schoolIds}::uuid[], ${userIds}::uuid[], ${requestIds}::text[],
      ${operations}::text[], ${recordTypes}::text[], ${counts}::int[], ${actions}::text[]
    )`.then(same)).then(() => {})
}

export interface AuditQuery {
  schoolId: string
  userId?: string | undefined
  since?: Date | undefined
  limit: number
}

export interface AuditEntry {
  id: string
  at: Date
  schoolId: string
  userId: string
  requestId: string
  operation: string
  recordType: string
  recordCount: number
  action: string
}

/** A school's audit, newest first. Needs a role that may read access_audit (not the service's). */
export async function readAudit (prisma: PrismaClient, query: AuditQuery): Promise<AuditEntry[]> {
  const rows = await prisma.auditEvent.findMany({
    where: {
      schoolId: query.schoolId,
      ...(query.userId !== undefined && { userId: query.userId }),
      ...(query.since !== undefined && { at: { gte: query.since } })
    },
    orderBy: [{ at: 'desc' }, { id: 'desc' }],
    take: query.limit
  })
  return rows.map((row) => ({ ...row, id: row.id.toString() }))
}
