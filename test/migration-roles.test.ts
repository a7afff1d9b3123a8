// Migrating as the README's owner role ("Database roles"): a role that is not a superuser, and
// owns the database. PostgreSQL 15 lets such a role name a custom setting in a function's SET
// clause only once it has been granted SET on that parameter; without the grant, `migrate` must
// refuse before applying anything, saying what to grant, instead of failing half-way.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import t from 'tap'
import { applyMigrations, pendingMigrations } from '../src/db/migrations/index.js'
import { serverUrl } from './helper.js'

const unavailable = serverUrl === undefined ? 'needs a PostgreSQL server (TEST_DATABASE_URL)' : false

function urlFor (database: string, user?: string): string {
  const url = new URL(serverUrl!)
  url.pathname = `/${database}`
  if (user !== undefined) {
    url.username = user
    url.password = ''
  }
  return url.toString()
}

async function run (url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await client.query(sql)
  } finally {
    await client.end()
  }
}

t.test('migrate as the owner role of the README', { skip: unavailable }, async (t) => {
  const suffix = randomBytes(4).toString('hex')
  const owner = `sds_owner_${suffix}`
  const database = `sds_roles_${suffix}`
  const admin = serverUrl!
  await run(admin, `CREATE ROLE ${owner} LOGIN NOSUPERUSER`)
  await run(admin, `CREATE DATABASE ${database} OWNER ${owner}`)
  t.teardown(async () => {
    await run(admin, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    await run(admin, `REVOKE ALL ON PARAMETER "app.teacher_id", "app.writing_teacher_feed" FROM ${owner}`).catch(() => {})
    await run(admin, `DROP ROLE IF EXISTS ${owner}`)
  })
  const ownerUrl = urlFor(database, owner)
  const all = await pendingMigrations({ url: ownerUrl })

  await t.rejects(applyMigrations({ url: ownerUrl }), {
    name: 'MigrationEngineError',
    message: new RegExp(`may not set "app.teacher_id", "app.writing_teacher_feed".*GRANT SET ON PARAMETER "app.teacher_id", "app.writing_teacher_feed" TO "${owner}".*Nothing was applied`)
  }, 'refused, saying what to grant')
  t.same(await pendingMigrations({ url: ownerUrl }), all, 'nothing applied')
  const failed = await run(ownerUrl, "SELECT to_regclass('_prisma_migrations') IS NOT NULL AS present")
  t.equal(failed.rows[0].present, false, 'no migration recorded, failed or not')

  await run(admin, `GRANT SET ON PARAMETER "app.teacher_id", "app.writing_teacher_feed" TO ${owner}`)
  const applied = await applyMigrations({ url: ownerUrl })
  t.same(applied, all, 'with the grant of the README, every migration applies')
  t.same(await pendingMigrations({ url: ownerUrl }), [], 'none pending')
})
