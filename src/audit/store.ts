// The access audit in PostgreSQL (table access_audit): a batch goes in as one INSERT, and the CLI
// reads it back. The service writes outside any school's session (Database.runStatement): one
// batch holds rows of many schools, and the table has no row-level security (the service role
// should hold INSERT only on it; docs/running/audit.md).
import type { PrismaClient } from '../generated/prisma/client.js'
import type { Database } from '../db/client.js'
import type { AuditRow } from './writer.js'

const INSERT = `
  INSERT INTO access_audit (at, school_id, user_id, client_id, request_id, operation, record_type, record_count, action)
  SELECT * FROM unnest(
    $1::timestamptz[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::int[], $9::text[]
  )`

/**
 * One INSERT for the whole batch. The rows travel as one array per column (unnest), so the
 * statement's text is the same for every batch size: one prepared statement per connection.
 */
export async function insertAuditRows (db: Pick<Database, 'runStatement'>, rows: readonly AuditRow[]): Promise<void> {
  if (rows.length === 0) return
  const n = rows.length
  const at = new Array<string>(n)
  const schoolIds = new Array<string>(n)
  const userIds = new Array<string | null>(n)
  const clientIds = new Array<string | null>(n)
  const requestIds = new Array<string>(n)
  const operations = new Array<string>(n)
  const recordTypes = new Array<string>(n)
  const counts = new Array<number>(n)
  const actions = new Array<string>(n)
  for (let i = 0; i < n; i++) {
    const r = rows[i]!
    at[i] = r.at.toISOString()
    schoolIds[i] = r.schoolId
    userIds[i] = r.userId
    clientIds[i] = r.clientId
    requestIds[i] = r.requestId
    operations[i] = r.operation
    recordTypes[i] = r.recordType
    counts[i] = r.recordCount
    actions[i] = r.action
  }
  await db.runStatement('sds_audit_insert', INSERT, [at, schoolIds, userIds, clientIds, requestIds, operations, recordTypes, counts, actions])
}

export interface AuditQuery {
  schoolId: string
  userId?: string | undefined
  clientId?: string | undefined
  since?: Date | undefined
  limit: number
}

export interface AuditEntry {
  id: string
  at: Date
  schoolId: string
  userId: string | null
  clientId: string | null
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
      ...(query.clientId !== undefined && { clientId: query.clientId }),
      ...(query.since !== undefined && { at: { gte: query.since } })
    },
    orderBy: [{ at: 'desc' }, { id: 'desc' }],
    take: query.limit
  })
  return rows.map((row) => ({ ...row, id: row.id.toString() }))
}
