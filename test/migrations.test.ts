// The migrations and schema.prisma must describe the same database; the schema engine applies
// them once and records them, on PGlite and on PostgreSQL alike.
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import t from 'tap'
import {
  applyMigrations,
  createMigration,
  diffMigrationsToSchema,
  listMigrations,
  migrationsDir,
  pendingMigrations,
  schemaPath
} from '../src/db/migrations/index.js'
import { serverUrl, testDatabase } from './helper.js'

t.test('schema.prisma and prisma/migrations agree (run `npm run db:migration -- --name NAME` if not)', async (t) => {
  const drift = await diffMigrationsToSchema()
  t.equal(drift, '', 'no SQL is needed to bring the migrations to schema.prisma')
})

t.test('a change to schema.prisma is detected, and a new migration captures it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'sds-migrations-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const changedSchema = join(dir, 'schema.prisma')
  const schema = await readFile(schemaPath, 'utf8')
  const changed = schema.replace(/model Teacher \{\n/, 'model Teacher {\n  nickname String?\n')
  t.not(changed, schema, 'the test edits the Teacher model')
  await writeFile(changedSchema, changed)
  const migrations = join(dir, 'migrations')
  await cp(migrationsDir, migrations, { recursive: true })

  const drift = await diffMigrationsToSchema({ schemaPath: changedSchema, migrationsDir: migrations })
  t.match(drift, /ALTER TABLE "teachers" ADD COLUMN +"nickname" TEXT/)

  const folder = await createMigration('teacher_nickname', {
    schemaPath: changedSchema, migrationsDir: migrations, now: new Date('2099-01-02T03:04:05Z')
  })
  t.equal(folder, join(migrations, '20990102030405_teacher_nickname'))
  t.match(await readFile(join(folder!, 'migration.sql'), 'utf8'), /ADD COLUMN +"nickname" TEXT/)
  t.equal(await diffMigrationsToSchema({ schemaPath: changedSchema, migrationsDir: migrations }), '', 'in sync again')
  t.equal(await createMigration('nothing', { schemaPath: changedSchema, migrationsDir: migrations }), null,
    'no empty migration is written')
  await t.rejects(createMigration('Bad Name!', { migrationsDir: migrations }), /Invalid migration name/)
})

t.test('the migrations folder has the standard Prisma layout', async (t) => {
  const list = await listMigrations()
  t.match(list.lockfile.content, /provider = "postgresql"/)
  t.ok(list.migrationDirectories.length > 0)
  for (const entry of list.migrationDirectories) {
    t.match(entry.path, /^\d{14}_[a-z0-9_]+$/)
    t.equal(entry.migrationFile.content.tag, 'ok')
  }
  t.same((await readdir(migrationsDir)).filter((f) => !f.includes('_') && f !== 'migration_lock.toml'), [])
})

t.test('applying on PGlite records every migration once', async (t) => {
  const pglite = new PGlite()
  t.teardown(() => pglite.close())
  const names = (await listMigrations()).migrationDirectories.map((m) => m.path)
  t.same(await pendingMigrations({ pglite }), names, 'all pending on an empty database')
  t.same(await applyMigrations({ pglite }), names)
  t.same(await applyMigrations({ pglite }), [], 'a second run applies nothing')
  t.same(await pendingMigrations({ pglite }), [])
  const { rows } = await pglite.query<{ n: number }>('SELECT count(*)::int AS n FROM _prisma_migrations')
  t.equal(rows[0]!.n, names.length)
})

t.test('applying on PostgreSQL is idempotent', {
  skip: serverUrl === undefined ? 'no PostgreSQL server configured (TEST_DATABASE_URL)' : false
}, async (t) => {
  const url = (await testDatabase()).ownerUrl!
  t.same(await pendingMigrations({ url }), [])
  t.same(await applyMigrations({ url }), [], 'the test database is migrated already')
})
