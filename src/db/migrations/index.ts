// Migrations in Prisma's standard layout (prisma/migrations/<timestamp>_<name>/migration.sql plus
// migration_lock.toml), created and applied by Prisma's own schema engine. The applied ones are
// recorded in `_prisma_migrations`, so the folder stays usable by the regular Prisma CLI.
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { PGlite } from '@electric-sql/pglite'
import type { MigrationList, SchemaFilter } from '@prisma/schema-engine-wasm'
import pg from 'pg'
import { CITUS_CHECK } from '../citus-check.js'
import { distributeAddedTables, refreshRowFeed } from './citus-tables.js'
import type { ClosableMigrationFactory } from './adapters.js'
import { MigrationEngineError } from './errors.js'

// The schema engine (WebAssembly) and the embedded database load only when a migration runs, so
// that a service checking for pending migrations starts fast.
const engine = async () => await import('./schema-engine.js')
const adapters = async () => await import('./adapters.js')

export { MigrationEngineError }

/** A database to migrate: a PostgreSQL server by URL, or an open embedded PGlite. */
export type MigrationTarget = { url: string } | { pglite: PGlite }

// src/db/migrations and dist/db/migrations are both three levels below the project root.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')
export const migrationsDir = join(root, 'prisma', 'migrations')
export const schemaPath = join(root, 'prisma', 'schema.prisma')
const LOCKFILE = 'migration_lock.toml'
const NO_FILTER: SchemaFilter = { externalTables: [], externalEnums: [] }

async function factoryFor (target: MigrationTarget, citus?: boolean): Promise<ClosableMigrationFactory> {
  const { PGliteMigrationFactory, PostgresMigrationFactory } = await adapters()
  if (!('url' in target)) return new PGliteMigrationFactory(target.pglite)
  const distributed = citus ?? await distributedOnCitus(target.url)
  return new PostgresMigrationFactory(target.url, distributed ? { settings: CITUS_MIGRATION_SETTINGS } : undefined)
}

/**
 * A migration's sessions on a Citus coordinator whose records are distributed (`school-data citus
 * distribute`), as the distribution itself runs: Citus refuses trigger DDL on a distributed table
 * ("triggers are not supported on distributed tables") unless `citus.enable_unsafe_triggers` is on
 * (with it, a trigger a migration creates or drops is created or dropped on the shards too), and a
 * function created after a statement that ran on the shards in parallel ("cannot run function
 * command because there was a parallel operation on a distributed table in the transaction")
 * unless the transaction's statements go one connection per node
 * (`citus.multi_shard_modify_mode = sequential`). The service's own sessions set neither. Its
 * scripts also run statement by statement there (adapters.ts, runScripts). (A migration that replaces what the distribution replaced
 * keeps the replacement's form: docs/running/citus.md.)
 */
const CITUS_MIGRATION_SETTINGS = '-c citus.enable_unsafe_triggers=on -c citus.multi_shard_modify_mode=sequential'

async function distributedOnCitus (url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    if ((await client.query<{ citus: boolean }>(CITUS_CHECK)).rows[0]?.citus !== true) return false
    return (await client.query<{ distributed: boolean }>('SELECT EXISTS (SELECT 1 FROM pg_dist_partition) AS distributed')).rows[0]?.distributed === true
  } finally {
    await client.end()
  }
}

/** The migrations folder as the schema engine reads it. */
export async function listMigrations (dir: string = migrationsDir): Promise<MigrationList> {
  const names = existsSync(dir)
    ? (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort()
    : []
  const lockPath = join(dir, LOCKFILE)
  return {
    baseDir: dir,
    lockfile: { path: LOCKFILE, content: existsSync(lockPath) ? await readFile(lockPath, 'utf8') : null },
    shadowDbInitScript: '',
    migrationDirectories: await Promise.all(names.map(async (name) => {
      const file = join(dir, name, 'migration.sql')
      let content: MigrationList['migrationDirectories'][number]['migrationFile']['content']
      try {
        content = { tag: 'ok', value: await readFile(file, 'utf8') }
      } catch (err) {
        content = { tag: 'error', value: `Could not read ${file}: ${(err as Error).message}` }
      }
      return { path: name, migrationFile: { path: 'migration.sql', content } }
    }))
  }
}

// A function's `SET "app.x" = ...` clause (the teacher walls' functions run without the teacher
// setting): PostgreSQL 15 lets only a superuser, or a role granted SET on that parameter, name a
// custom setting there ("permission denied to set parameter").
const FUNCTION_SETTING = /\bSET\s+"([a-z_]+\.[a-z_]+)"\s*=/g

/**
 * Refuses, before anything is applied, migrations whose functions set parameters the connected
 * role may not set: otherwise the schema engine stops half-way through one of them and records it
 * as failed, which an operator must then resolve by hand.
 */
async function checkSettingPrivileges (url: string, migrations: MigrationList, dir: string): Promise<void> {
  const pending = new Set(await pendingMigrations({ url }, dir))
  const parameters = new Set<string>()
  for (const migration of migrations.migrationDirectories) {
    if (!pending.has(migration.path) || migration.migrationFile.content.tag !== 'ok') continue
    for (const match of migration.migrationFile.content.value.matchAll(FUNCTION_SETTING)) parameters.add(match[1]!)
  }
  if (parameters.size === 0) return
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const [role] = (await client.query<{ name: string, superuser: boolean, version: number }>(
      "SELECT current_user AS name, rolsuper AS superuser, current_setting('server_version_num')::int AS version FROM pg_roles WHERE rolname = current_user")).rows
    if (role === undefined || role.superuser) return
    // Before PostgreSQL 15 there is no GRANT SET ON PARAMETER: only a superuser may.
    const grantable = role.version >= 150000
    const missing = grantable
      ? (await client.query<{ missing: string[] | null }>(
          "SELECT array_agg(p ORDER BY p) FILTER (WHERE NOT has_parameter_privilege(p, 'SET')) AS missing FROM unnest($1::text[]) p",
          [[...parameters]])).rows[0]?.missing ?? []
      : [...parameters].sort()
    if (missing.length > 0) {
      const list = missing.map((p) => `"${p}"`).join(', ')
      const remedy = grantable
        ? `as a superuser, run \`GRANT SET ON PARAMETER ${list} TO ${client.escapeIdentifier(role.name)}\` (docs/running/database-roles.md), then migrate again`
        : 'migrate as a superuser'
      throw new MigrationEngineError(
        `The role ${role.name} may not set ${list}, which the pending migrations' functions set: ${remedy}. Nothing was applied.`)
    }
  } finally {
    await client.end()
  }
}

/** Applies the migrations the database has not recorded yet (`prisma migrate deploy`). */
export async function applyMigrations (target: MigrationTarget, dir: string = migrationsDir): Promise<string[]> {
  const migrationsList = await listMigrations(dir)
  if ('url' in target) await checkSettingPrivileges(target.url, migrationsList, dir)
  const citus = 'url' in target && await distributedOnCitus(target.url)
  const { withSchemaEngine } = await engine()
  const apply = async (list: MigrationList): Promise<string[]> => await withSchemaEngine(await factoryFor(target, citus), {}, async (engine) => {
    const { appliedMigrationNames } = await engine.applyMigrations({ migrationsList: list, filters: NO_FILTER })
    return appliedMigrationNames
  })
  if (!citus) return await apply(migrationsList)
  // On a distributed database, one migration at a time, each followed by the distribution of the
  // tables it added: a later migration's key from a distributed table to one of them is refused by
  // Citus until both are distributed and co-located (classrooms' key to courses). Its keys lose ON
  // UPDATE CASCADE, as the distribution's keys do (src/admin/citus.ts: Citus refuses it on a key
  // holding the distribution column; the ids never change).
  const pending = new Set(await pendingMigrations(target, dir))
  const applied: string[] = []
  for (const [i, migration] of migrationsList.migrationDirectories.entries()) {
    if (!pending.has(migration.path)) continue
    const { content } = migration.migrationFile
    const distributedForm = content.tag === 'ok' ? { ...migration, migrationFile: { ...migration.migrationFile, content: { tag: 'ok' as const, value: content.value.replaceAll(' ON UPDATE CASCADE', '') } } } : migration
    applied.push(...await apply({ ...migrationsList, migrationDirectories: [...migrationsList.migrationDirectories.slice(0, i), distributedForm] }))
    await onDistributed(target.url, distributeAddedTables)
  }
  // The row feed's function (Citus's own, made by the distribution: no migration writes it) as this release has it.
  await onDistributed(target.url, refreshRowFeed)
  return applied
}

/**
 * A step of `migrate` that only a distributed Citus database takes (citus-tables.ts): the tenant
 * tables the migrations added distributed, the row feed's function renewed; in one transaction.
 */
async function onDistributed (url: string, step: (client: pg.ClientBase) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('BEGIN')
    await step(client)
    await client.query('COMMIT')
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  } finally {
    await client.end()
  }
}

/**
 * Names of the migrations in the folder that the database has not applied. A plain read of
 * `_prisma_migrations`, so that a server start costs no schema-engine run.
 */
export async function pendingMigrations (target: MigrationTarget, dir: string = migrationsDir): Promise<string[]> {
  const { migrationDirectories } = await listMigrations(dir)
  const sql = `SELECT migration_name FROM _prisma_migrations
    WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`
  const exists = "SELECT to_regclass('_prisma_migrations') IS NOT NULL AS present"
  let applied: string[]
  if ('url' in target) {
    const client = new pg.Client({ connectionString: target.url })
    await client.connect()
    try {
      const present = (await client.query<{ present: boolean }>(exists)).rows[0]?.present === true
      applied = present ? (await client.query<{ migration_name: string }>(sql)).rows.map((r) => r.migration_name) : []
    } finally {
      await client.end()
    }
  } else {
    const present = (await target.pglite.query<{ present: boolean }>(exists)).rows[0]?.present === true
    applied = present ? (await target.pglite.query<{ migration_name: string }>(sql)).rows.map((r) => r.migration_name) : []
  }
  const done = new Set(applied)
  return migrationDirectories.map((m) => m.path).filter((name) => !done.has(name))
}

export interface SchemaOptions {
  /** Where the shadow database is made; an in-memory PGlite when absent. */
  target?: MigrationTarget
  schemaPath?: string
  migrationsDir?: string
}

/** Runs `work` against `options.target`, or a throwaway in-memory PGlite. */
async function withTarget<T> (options: SchemaOptions, work: (target: MigrationTarget) => Promise<T>): Promise<T> {
  if (options.target !== undefined) return await work(options.target)
  const { PGlite } = await import('@electric-sql/pglite')
  const pglite = new PGlite()
  try {
    await pglite.waitReady
    return await work({ pglite })
  } finally {
    await pglite.close()
  }
}

async function schemaFile (path: string): Promise<[string, string]> {
  return [path, await readFile(path, 'utf8')]
}

/**
 * The SQL that would bring a database built from the migrations to what `schema.prisma`
 * describes; empty when they agree. The migrations are replayed in a shadow database.
 */
export async function diffMigrationsToSchema (options: SchemaOptions = {}): Promise<string> {
  const schema = await schemaFile(options.schemaPath ?? schemaPath)
  const migrationsList = await listMigrations(options.migrationsDir ?? migrationsDir)
  const { withSchemaEngine } = await engine()
  return await withTarget(options, async (target) =>
    await withSchemaEngine(await factoryFor(target), { schema }, async (engine) => {
      const result = await engine.diff({
        from: { tag: 'migrations', ...migrationsList },
        to: { tag: 'schemaDatamodel', files: [{ path: schema[0], content: schema[1] }] },
        script: true,
        exitCode: true,
        filters: NO_FILTER
      })
      return result.exitCode === 2 ? (result.stdout ?? '').trim() : ''
    }))
}

export const MIGRATION_NAME = /^[a-z0-9_]{1,200}$/

const LOCKFILE_TEXT = '# Please do not edit this file manually\n' +
  '# It should be added in your version-control system (e.g., Git)\n' +
  'provider = "postgresql"\n'

/** `20261123091500` for a UTC time, as Prisma names migration folders. */
function timestamp (now: Date): string {
  return now.toISOString().replace(/[-:T]/g, '').slice(0, 14)
}

/**
 * Writes a new migration from the change between the migrations and `schema.prisma`
 * (what `prisma migrate dev --create-only` does). Returns its folder, or null when there is no
 * change. The engine's own createMigration needs a shadow-database URL that a driver adapter
 * cannot give it, so the script comes from the same diff the drift check runs.
 */
export async function createMigration (name: string, options: SchemaOptions & { now?: Date } = {}): Promise<string | null> {
  if (!MIGRATION_NAME.test(name)) {
    throw new MigrationEngineError(`Invalid migration name "${name}": use lower-case letters, digits and underscores`)
  }
  const dir = options.migrationsDir ?? migrationsDir
  await mkdir(dir, { recursive: true })
  if (!existsSync(join(dir, LOCKFILE))) await writeFile(join(dir, LOCKFILE), LOCKFILE_TEXT)
  const script = await diffMigrationsToSchema({ ...options, migrationsDir: dir })
  if (script === '') return null
  const folder = join(dir, `${timestamp(options.now ?? new Date())}_${name}`)
  if (existsSync(folder)) throw new MigrationEngineError(`${folder} exists already`)
  await mkdir(folder)
  await writeFile(join(folder, 'migration.sql'), script + '\n')
  return folder
}
