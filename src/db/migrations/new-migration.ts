// `npm run db:migration -- --name NAME`: writes prisma/migrations/<timestamp>_NAME/migration.sql
// from the change between the existing migrations and prisma/schema.prisma. The migrations are
// replayed in a throwaway in-memory PGlite, so no database server is needed.
import { relative } from 'node:path'
import { parseArgs } from 'node:util'
import { createMigration, MIGRATION_NAME } from './index.js'

async function main (): Promise<number> {
  let name: string | undefined
  try {
    name = parseArgs({ options: { name: { type: 'string', short: 'n' } }, strict: true }).values.name
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`)
  }
  if (name === undefined || !MIGRATION_NAME.test(name)) {
    process.stderr.write('Usage: npm run db:migration -- --name NAME  (lower-case letters, digits and underscores)\n')
    return 2
  }
  const folder = await createMigration(name)
  if (folder === null) {
    process.stderr.write('schema.prisma and the migrations agree: no migration created\n')
    return 0
  }
  process.stderr.write(`Created ${relative(process.cwd(), folder)}/migration.sql: review it, then run npm run db:generate\n`)
  return 0
}

main().then((code) => { process.exitCode = code }, (err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
})
