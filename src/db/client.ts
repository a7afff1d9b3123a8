// Opens the database the service runs on: the PostgreSQL server of DATABASE_URL, or the
// embedded PGlite under the data folder. Both run the same migrations and the same SQL.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { PrismaPg } from '@prisma/adapter-pg'
import { LRUCache } from 'lru-cache'
import { PrismaPGlite } from 'pglite-prisma-adapter'
import { PrismaClient } from '../generated/prisma/client.js'
import { applyMigrations, pendingMigrations, type MigrationTarget } from './migrations/index.js'
import { lockDataDir } from './embedded-lock.js'
import { scopeToSchool, type TenantDb } from './tenant.js'

export interface Database {
  readonly kind: 'postgresql' | 'embedded'
  /** Unscoped: for authentication and administration only, never for resolvers. */
  readonly prisma: PrismaClient
  readonly migrationTarget: MigrationTarget
  /** The client confined to one school; built once per school and reused. */
  forSchool (schoolId: string): TenantDb
  ping (): Promise<void>
  close (): Promise<void>
}

export interface DatabaseOptions {
  /** PostgreSQL server; without it the embedded PGlite is used. */
  url?: string | undefined
  /** Folder of the embedded database; undefined means in memory (tests). */
  dataDir?: string | undefined
  /** Apply pending migrations on open (the embedded default does). */
  migrate?: boolean
  /** Connections in the pool (PostgreSQL only). */
  poolSize?: number
}

export class PendingMigrationsError extends Error {
  override name = 'PendingMigrationsError'
}

export async function openDatabase (options: DatabaseOptions): Promise<Database> {
  if (options.url !== undefined) {
    const target: MigrationTarget = { url: options.url }
    const pending = await pendingMigrations(target)
    if (options.migrate === true) {
      if (pending.length > 0) await applyMigrations(target)
    } else if (pending.length > 0) {
      throw new PendingMigrationsError(
        `The database has ${pending.length} pending migration(s) (${pending.join(', ')}): run \`school-data migrate\` first`
      )
    }
    const adapter = new PrismaPg({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      // Fail fast instead of queueing forever when the server is gone.
      connectionTimeoutMillis: 5_000
    })
    return wrap('postgresql', new PrismaClient({ adapter }), target, async () => {})
  }

  let dataPath: string | undefined
  let unlock = (): void => {}
  if (options.dataDir !== undefined) {
    dataPath = join(options.dataDir, 'pglite')
    mkdirSync(dataPath, { recursive: true })
    unlock = lockDataDir(options.dataDir)
  }
  let pglite: PGlite | undefined
  try {
    pglite = new PGlite(dataPath)
    await pglite.waitReady
    // Starting the schema engine takes seconds; a plain read tells whether it is needed.
    if (options.migrate !== false && (await pendingMigrations({ pglite })).length > 0) {
      await applyMigrations({ pglite })
    }
  } catch (err) {
    await pglite?.close()
    unlock()
    throw err
  }
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) })
  const driver = pglite
  return wrap('embedded', prisma, { pglite }, async () => {
    await driver.close()
    unlock()
  })
}

function wrap (
  kind: Database['kind'],
  prisma: PrismaClient,
  migrationTarget: MigrationTarget,
  closeDriver: () => Promise<void>
): Database {
  const scoped = new LRUCache<string, TenantDb>({ max: 10_000 })
  return {
    kind,
    prisma,
    migrationTarget,
    forSchool (schoolId) {
      let db = scoped.get(schoolId)
      if (db === undefined) {
        db = scopeToSchool(prisma, schoolId)
        scoped.set(schoolId, db)
      }
      return db
    },
    async ping () {
      await prisma.$queryRaw`SELECT 1`
    },
    async close () {
      scoped.clear()
      await prisma.$disconnect()
      await closeDriver()
    }
  }
}
