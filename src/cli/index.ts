// The `school-data` command line. Each `create` prints the new id alone on the last line of
// standard output; errors go to standard error with a non-zero exit status.
import { Command, CommanderError } from 'commander'
import {
  assignUser,
  createSchool,
  createStudent,
  createTeacher,
  createUser,
  disableUser,
  enableUser
} from '../admin/records.js'
import { loadConfig } from '../config.js'
import { openDatabase, type Database } from '../db/client.js'
import { applyMigrations } from '../db/migrations/index.js'
import { startServer } from '../server.js'
import { readPassword } from './read-password.js'

async function withDatabase<T> (run: (db: Database) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env, { needsSecret: false })
  const db = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, migrate: config.databaseUrl === undefined })
  try {
    return await run(db)
  } finally {
    await db.close()
  }
}

function printId (id: string): void {
  process.stdout.write(id + '\n')
}

export function buildProgram (): Command {
  const program = new Command('school-data')
    .description('School Data Service: run the API and administer its data')
    .showHelpAfterError()
    .exitOverride()

  program.command('migrate')
    .description('apply pending database migrations (DATABASE_URL, or the embedded database)')
    .action(async () => {
      const config = loadConfig(process.env, { needsSecret: false })
      if (config.databaseUrl === undefined) {
        await withDatabase(async () => {}) // opening the embedded database applies its migrations
        process.stderr.write('Embedded database is up to date\n')
        return
      }
      const applied = await applyMigrations({ url: config.databaseUrl })
      process.stderr.write(applied.length === 0 ? 'No pending migrations\n' : `Applied: ${applied.join(', ')}\n`)
    })

  program.command('serve')
    .description('start the API server (PORT, HOST)')
    .action(async () => { await startServer(loadConfig()) })

  program.command('school')
    .description('manage schools')
    .command('create')
    .description('create a school; prints its id')
    .requiredOption('--name <name>', 'name of the school')
    .action(async ({ name }: { name: string }) => {
      printId(await withDatabase((db) => createSchool(db, name)))
    })

  const user = program.command('user').description('manage users (API accounts)')
  user.command('create')
    .description('create a user; the password is read from standard input (one line); prints the id')
    .requiredOption('--username <username>', 'login name (compared case-insensitively)')
    .option('--school <schoolId>', 'school the user may read')
    .action(async ({ username, school }: { username: string, school?: string }) => {
      const password = await readPassword()
      printId(await withDatabase((db) => createUser(db, { username, password, schoolId: school })))
    })
  user.command('assign')
    .description("assign a user to a school (a move revokes the user's refresh tokens)")
    .requiredOption('--username <username>', 'login name')
    .requiredOption('--school <schoolId>', 'school id')
    .action(async ({ username, school }: { username: string, school: string }) => {
      await withDatabase((db) => assignUser(db, username, school))
      process.stderr.write(`Assigned ${username} to school ${school}\n`)
    })
  user.command('disable')
    .description('disable a user: no login or refresh, and their access tokens stop working at once')
    .requiredOption('--username <username>', 'login name')
    .action(async ({ username }: { username: string }) => {
      await withDatabase((db) => disableUser(db, username))
      process.stderr.write(`Disabled ${username}\n`)
    })
  user.command('enable')
    .description('enable a disabled user again (they log in anew)')
    .requiredOption('--username <username>', 'login name')
    .action(async ({ username }: { username: string }) => {
      await withDatabase((db) => enableUser(db, username))
      process.stderr.write(`Enabled ${username}\n`)
    })

  program.command('student')
    .description('manage students')
    .command('create')
    .description('create a student; prints the id')
    .requiredOption('--school <schoolId>', 'school id')
    .requiredOption('--full-name <name>', 'full name')
    .option('--classroom <name>', 'classroom name (created when new)')
    .action(async ({ school, fullName, classroom }: { school: string, fullName: string, classroom?: string }) => {
      printId(await withDatabase((db) => createStudent(db, { schoolId: school, fullName, classroom })))
    })

  program.command('teacher')
    .description('manage teachers')
    .command('create')
    .description('create a teacher; prints the id')
    .requiredOption('--school <schoolId>', 'school id')
    .requiredOption('--full-name <name>', 'full name')
    .action(async ({ school, fullName }: { school: string, fullName: string }) => {
      printId(await withDatabase((db) => createTeacher(db, { schoolId: school, fullName })))
    })

  return program
}

export async function main (argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv)
    return 0
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has printed the problem (or the help/version, with exit code 0).
      return err.exitCode
    }
    process.stderr.write(`error: ${(err as Error).message}\n`)
    return 1
  }
}
