// One connection and one transaction for an import, straight through `pg` (or the embedded PGlite),
// not Prisma: bulk statements of thousands of rows each. The connection is the database layer's
// (openRawConnection, src/db/open.ts, which also migrates the embedded database). The school is set
// for the transaction, so that row-level security admits its rows when DATABASE_URL is the service
// role.
import { DATA_CHANGED_CHANNEL } from '../db/notifications.js'
import { openRawConnection } from '../db/open.js'
import { setLocalStatements } from '../db/school-session.js'
import { parseUuid } from '../validators.js'
import type { Sql } from './write.js'

export interface ConnectionOptions {
  /** PostgreSQL server; undefined means the embedded database under dataDir. */
  databaseUrl: string | undefined
  dataDir: string
  /**
   * The server is a Citus coordinator; asked of the server when not given (the tests send Citus's
   * form to a plain server).
   */
  citus?: boolean | undefined
}

export class SchoolNotFoundError extends Error {
  override name = 'SchoolNotFoundError'
}

/**
 * Runs `work` in one transaction with the school set; commits unless `rollback` (a dry run) or
 * `work` throws. The school's row is locked first: imports of one school run one at a time.
 */
export async function inSchoolTransaction<T> (
  options: ConnectionOptions,
  schoolId: string,
  work: (sql: Sql) => Promise<T>,
  rollback = false
): Promise<T> {
  if (parseUuid(schoolId) === undefined) throw new SchoolNotFoundError(`School ${schoolId} does not exist`)
  const run = async (sql: Sql, citus: boolean): Promise<T> => {
    await sql.query('BEGIN')
    try {
      if (citus) {
        // Citus passes SET LOCAL on to the workers once told to; set_config never (school-session.ts).
        // The school is a UUID (checked above), safe as a literal.
        for (const setting of setLocalStatements({ schoolId }, true)) await sql.query(setting)
      } else {
        await sql.query("SELECT set_config('app.school_id', $1, true)", [schoolId])
      }
      const school = await sql.query('SELECT "id" FROM "schools" WHERE "id" = $1::uuid FOR UPDATE', [schoolId])
      if (school.length === 0) throw new SchoolNotFoundError(`School ${schoolId} does not exist`)
      const result = await work(sql)
      await sql.query(rollback ? 'ROLLBACK' : 'COMMIT')
      // On Citus the triggers' notice comes from the workers, where no API node listens.
      if (citus && !rollback) {
        await sql.query('SELECT pg_notify($1, $2)', [DATA_CHANGED_CHANNEL, schoolId]).catch((err: Error) => {
          throw new Error(`The import is committed, but the API nodes could not be told (their cached answers expire with RESPONSE_CACHE_TTL): ${err.message}`)
        })
      }
      return result
    } catch (err) {
      await sql.query('ROLLBACK').catch(() => {})
      throw err
    }
  }

  const connection = await openRawConnection({ url: options.databaseUrl, dataDir: options.dataDir, citus: options.citus })
  try {
    return await run(connection, connection.citus)
  } finally {
    await connection.close()
  }
}
