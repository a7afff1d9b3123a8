// The `school-data` command line. Each `create` prints the new id alone on the last line of
// standard output; errors go to standard error with a non-zero exit status.
import { Command, CommanderError } from 'commander'
import { createSchool } from '../admin/schools.js'
import { assignUser, createUser, disableUser, enableUser, listUsers, setUserRole, USER_ROLES } from '../admin/users.js'
import { addClassroom } from '../records/classrooms.js'
import { AdminError, requireId } from '../records/errors.js'
import { assignStudent, createStudent, placeStudent, unassignStudent } from '../records/students.js'
import { assignTeacher, createTeacher, moveTeacher, unassignTeacher } from '../records/teachers.js'
import { changeRecord, cliRef, deleteRecord, schoolTarget, type Kind } from '../records/writes.js'
import { createClient, DEFAULT_OVERLAP_HOURS, listClients, MAX_OVERLAP_HOURS, revokeClient, rotateClientSecret, setClientScopes } from '../admin/clients.js'
import { ONEROSTER_SCOPE_PREFIX, SCOPES } from '../auth/scopes.js'
import { readAudit, type AuditEntry } from '../audit/store.js'
import { loadConfig } from '../config.js'
import { openDatabase, type Database } from '../db/client.js'
import { applyMigrations } from '../db/migrations/index.js'
import { readPassword } from './read-password.js'

/**
 * Where a command reads and writes: the process's own standard streams and environment when run as
 * `school-data`, or a caller's (the tests run commands in their own process, without the start-up
 * of a process per command).
 */
export interface CliIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean }
  stdout: { write: (text: string) => unknown }
  stderr: NodeJS.WritableStream & { isTTY?: boolean }
  env: NodeJS.ProcessEnv
}

// Getters: process.stdin is made on first use, and only `user create` reads it.
const PROCESS_IO: CliIo = {
  get stdin () { return process.stdin },
  get stdout () { return process.stdout },
  get stderr () { return process.stderr },
  get env () { return process.env }
}

async function withDatabase<T> (env: NodeJS.ProcessEnv, run: (db: Database) => Promise<T>): Promise<T> {
  const config = loadConfig(env, { needsSecret: false })
  const db = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, migrate: config.databaseUrl === undefined })
  try {
    return await run(db)
  } finally {
    await db.close()
  }
}

function printId (io: CliIo, id: string): void {
  io.stdout.write(id + '\n')
}

/** A client secret, on a line of its own before the id; it is never shown again. */
function printSecret (io: CliIo, secret: string): void {
  io.stdout.write(`client_secret=${secret}\n`)
  io.stderr.write('The client secret is shown only now: store it where the program reads its credentials.\n')
}

/** Commander's way to take an option several times. */
function collect (value: string, previous: string[]): string[] {
  return [...previous, value]
}

/** An option given as a number (`--expected-version`), or undefined. */
function versionOf (text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  if (!/^\d{1,9}$/.test(text)) throw new AdminError(`--expected-version must be a version number (got "${text}")`)
  return Number(text)
}

/** The fields of a `change` command: the options given, and `--clear` fields as null. */
function changes (options: Record<string, unknown>, clear: string[], fields: Readonly<Record<string, string>>): Record<string, string | null> {
  const out: Record<string, string | null> = {}
  for (const [option, field] of Object.entries(fields)) {
    const value = options[option]
    if (typeof value === 'string') out[field] = value
  }
  for (const name of clear) {
    const field = Object.entries(fields).find(([option, f]) => f === name || option === name.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase()))?.[1]
    if (field === undefined) throw new AdminError(`--clear takes one of ${Object.values(fields).join(', ')} (got "${name}")`)
    out[field] = null
  }
  return out
}

/** The `change` and `delete` commands of a kind of record, through the code of the API's mutations. */
function changeAndDelete (io: CliIo, parent: Command, kind: Kind, noun: string, fields: Readonly<Record<string, string>>, describeOptions: (command: Command) => Command): void {
  const ref = kind === 'Classroom' ? 'id or name' : kind === 'Student' ? 'id, sourcedId, or number:STUDENT_NUMBER' : 'id or sourcedId'
  describeOptions(parent.command('change')
    .description(`change the fields given of a ${noun} (the others stay); prints its new version`)
    .requiredOption('--school <schoolId>', 'school id')
    .requiredOption(`--${noun} <${noun}>`, `the ${noun}: ${ref}`)
    .option('--clear <field>', 'empty a field that may be empty (repeatable)', collect, [])
    .option('--expected-version <version>', `refused, nothing written, unless the ${noun} is at this version`))
    .action(async (options: Record<string, unknown> & { school: string, clear: string[], expectedVersion?: string }) => {
      const given = changes(options, options.clear, fields)
      const { id, version } = await withDatabase(io.env, async (db) => await changeRecord(await schoolTarget(db, options.school), kind, cliRef(kind, String(options[noun])), given, {
        expectedVersion: versionOf(options.expectedVersion), paths: { ref: [`--${noun}`], input: [] }
      }))
      io.stderr.write(`Changed ${noun} ${id}: version ${version}\n`)
      printId(io, String(version))
    })
  parent.command('delete')
    .description(`delete a ${noun}${kind === 'Student' ? '' : ' and its assignments'}${kind === 'Classroom' ? ' (refused while it has students)' : ''}`)
    .requiredOption('--school <schoolId>', 'school id')
    .requiredOption(`--${noun} <${noun}>`, `the ${noun}: ${ref}`)
    .option('--expected-version <version>', `refused, nothing deleted, unless the ${noun} is at this version`)
    .action(async (options: Record<string, string | undefined> & { school: string }) => {
      const deleted = await withDatabase(io.env, async (db) => await deleteRecord(await schoolTarget(db, options.school), kind, cliRef(kind, options[noun]!), {
        expectedVersion: versionOf(options.expectedVersion), path: [`--${noun}`]
      }))
      io.stderr.write(`Deleted ${noun} ${deleted.id}${deleted.sourcedId === null ? '' : ` (sourcedId ${deleted.sourcedId})`}\n`)
    })
}

const PERSON_OPTIONS = { fullName: 'fullName', givenName: 'givenName', familyName: 'familyName', preferredName: 'preferredName', sourcedId: 'sourcedId', email: 'email', status: 'status' }
const STUDENT_CHANGES = { ...PERSON_OPTIONS, studentNumber: 'studentNumber', dateOfBirth: 'dateOfBirth', gradeLevel: 'gradeLevel', enrollmentStart: 'enrollmentStartDate', enrollmentEnd: 'enrollmentEndDate' }
const TEACHER_CHANGES = { ...PERSON_OPTIONS, title: 'title' }
const CLASSROOM_CHANGES = { name: 'name', sourcedId: 'sourcedId', gradeLevel: 'gradeLevel', subject: 'subject' }

function personOptions (command: Command): Command {
  return command
    .option('--full-name <name>', 'full name')
    .option('--given-name <name>', 'given name')
    .option('--family-name <name>', 'family name')
    .option('--preferred-name <name>', 'preferred name')
    .option('--sourced-id <id>', 'OneRoster sourcedId')
    .option('--email <email>', 'email address')
}

export function buildProgram (io: CliIo = PROCESS_IO): Command {
  const program = new Command('school-data')
    .description('School Data Service: run the API and administer its data')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: (text) => { io.stdout.write(text) }, writeErr: (text) => { io.stderr.write(text) } })

  program.command('migrate')
    .description('apply pending database migrations (DATABASE_URL, or the embedded database)')
    .action(async () => {
      const config = loadConfig(io.env, { needsSecret: false })
      if (config.databaseUrl === undefined) {
        await withDatabase(io.env, async () => {}) // opening the embedded database applies its migrations
        io.stderr.write('Embedded database is up to date\n')
        return
      }
      const applied = await applyMigrations({ url: config.databaseUrl })
      io.stderr.write(applied.length === 0 ? 'No pending migrations\n' : `Applied: ${applied.join(', ')}\n`)
    })

  program.command('citus')
    .description('run on a Citus cluster (docs/running/citus.md)')
    .command('distribute')
    .description('distribute the migrated database by school on its Citus coordinator (DATABASE_URL: the owner, on the coordinator); once, after migrate')
    .action(async () => {
      const config = loadConfig(io.env, { needsSecret: false })
      if (config.databaseUrl === undefined) throw new Error('Set DATABASE_URL to the database on the Citus coordinator (the embedded database cannot be distributed)')
      const { distributeOnCitus } = await import('../admin/citus.js')
      const result = await distributeOnCitus(config.databaseUrl)
      io.stderr.write(result.distributed
        ? `Distributed by school over ${result.workers} worker(s): ${result.tables.join(', ')}\n`
        : 'Already distributed: nothing to do\n')
    })

  program.command('serve')
    .description('start the API server (PORT, HOST)')
    .action(async () => {
      // The server, the schema and their libraries load on use: every other command starts faster
      // without them (a third of a short command's CPU).
      const { startServer } = await import('../server.js')
      await startServer(loadConfig(io.env))
    })

  program.command('schema')
    .description('print the GraphQL schema (SDL) the API serves, as GET /schema.graphql does, for code generators')
    .action(async () => {
      const [{ printSchema }, { buildSdlSchema }] = await Promise.all([import('graphql'), import('../graphql/schema.js')])
      io.stdout.write(printSchema(buildSdlSchema()) + '\n')
    })

  program.command('school')
    .description('manage schools')
    .command('create')
    .description('create a school; prints its id')
    .requiredOption('--name <name>', 'name of the school')
    .option('--time-zone <zone>', 'IANA time zone, e.g. America/Chicago (default UTC)')
    .action(async ({ name, timeZone }: { name: string, timeZone?: string }) => {
      printId(io, await withDatabase(io.env, (db) => createSchool(db, name, { timeZone })))
    })

  const user = program.command('user').description('manage users (API accounts)')
  user.command('create')
    .description('create a user; the password is read from standard input (one line); prints the id')
    .requiredOption('--username <username>', 'login name (compared case-insensitively)')
    .option('--school <schoolId>', 'school the user may read')
    .option('--role <role>', `what the user reads: ${USER_ROLES.join(' or ')} (default admin: the whole school)`)
    .option('--teacher <teacherId>', 'with --role teacher: the teacher record (of --school) the user is')
    .action(async ({ username, school, role, teacher }: { username: string, school?: string, role?: string, teacher?: string }) => {
      const password = await readPassword(io.stdin, io.stderr)
      printId(io, await withDatabase(io.env, (db) => createUser(db, { username, password, schoolId: school, role, teacherId: teacher })))
    })
  user.command('assign')
    .description("assign a user to a school (a move revokes the user's refresh tokens); a teacher moves with --teacher")
    .requiredOption('--username <username>', 'login name')
    .requiredOption('--school <schoolId>', 'school id')
    .option('--teacher <teacherId>', "a teacher user's teacher record in the new school")
    .action(async ({ username, school, teacher }: { username: string, school: string, teacher?: string }) => {
      await withDatabase(io.env, (db) => assignUser(db, username, school, { teacherId: teacher }))
      io.stderr.write(`Assigned ${username} to school ${school}${teacher === undefined ? '' : ` as teacher ${teacher}`}\n`)
    })
  user.command('role')
    .description("change a user's role: their access tokens stop working at once on every node, and the next refresh or login gets the new role")
    .requiredOption('--username <username>', 'login name')
    .requiredOption('--role <role>', USER_ROLES.join(' or '))
    .option('--teacher <teacherId>', "with --role teacher: the teacher record (of the user's school) the user is")
    .action(async ({ username, role, teacher }: { username: string, role: string, teacher?: string }) => {
      const { changed } = await withDatabase(io.env, (db) => setUserRole(db, username, { role, teacherId: teacher }))
      const what = `${role.toLowerCase()}${teacher === undefined ? '' : ` (teacher ${teacher})`}`
      io.stderr.write(changed ? `${username} is now ${what}\n` : `${username} is ${what} already: nothing was changed\n`)
    })
  user.command('list')
    .description('list users (never a password), by username: school, role, teacher record, state')
    .option('--school <schoolId>', 'only the users of this school')
    .option('--json', 'one JSON object per line')
    .action(async ({ school, json }: { school?: string, json?: boolean }) => {
      for (const u of await withDatabase(io.env, (db) => listUsers(db, { schoolId: school }))) {
        const role = u.role.toLowerCase()
        const entry = { id: u.id, username: u.username, schoolId: u.schoolId, role, teacherId: u.teacherId, teacherName: u.teacherName, disabledAt: u.disabledAt?.toISOString() ?? null, createdAt: u.createdAt.toISOString() }
        const teacher = u.teacherId === null ? '' : ` teacher=${u.teacherId} (${u.teacherName === null ? 'no such teacher record' : JSON.stringify(u.teacherName)})`
        io.stdout.write((json === true
          ? JSON.stringify(entry)
          : `${u.id} username=${u.username} school=${u.schoolId ?? 'none'} role=${role}${teacher} ${u.disabledAt === null ? 'active' : `disabled=${entry.disabledAt}`}`) + '\n')
      }
    })
  user.command('disable')
    .description('disable a user: no login or refresh, and their access tokens stop working at once')
    .requiredOption('--username <username>', 'login name')
    .action(async ({ username }: { username: string }) => {
      await withDatabase(io.env, (db) => disableUser(db, username))
      io.stderr.write(`Disabled ${username}\n`)
    })
  user.command('enable')
    .description('enable a disabled user again (they log in anew)')
    .requiredOption('--username <username>', 'login name')
    .action(async ({ username }: { username: string }) => {
      await withDatabase(io.env, (db) => enableUser(db, username))
      io.stderr.write(`Enabled ${username}\n`)
    })

  const client = program.command('client').description('manage clients: programs that call the API with OAuth 2.0 client credentials')
  client.command('create')
    .description('create a client of a school; prints its secret (shown only now) and, on the last line, its id')
    .requiredOption('--school <schoolId>', 'school id')
    .requiredOption('--name <name>', 'what the client is, e.g. "SIS sync"')
    .requiredOption('--scope <scope>', `a scope it may be granted, repeatable: ${SCOPES.join(', ')} (or OneRoster's full form, ${ONEROSTER_SCOPE_PREFIX}<name>)`, collect, [])
    .action(async ({ school, name, scope }: { school: string, name: string, scope: string[] }) => {
      const { clientId, secret } = await withDatabase(io.env, (db) => createClient(db, { schoolId: school, name, scopes: scope }))
      printSecret(io, secret)
      printId(io, clientId)
    })
  client.command('list')
    .description('list clients (never their secrets), oldest first')
    .option('--school <schoolId>', 'only the clients of this school')
    .option('--json', 'one JSON object per line')
    .action(async ({ school, json }: { school?: string, json?: boolean }) => {
      for (const c of await withDatabase(io.env, (db) => listClients(db, { schoolId: school }))) {
        const entry = { id: c.id, schoolId: c.schoolId, name: c.name, scopes: c.scopes, createdAt: c.createdAt.toISOString(), revokedAt: c.revokedAt?.toISOString() ?? null, liveSecrets: c.liveSecrets }
        io.stdout.write((json === true
          ? JSON.stringify(entry)
          : `${c.id} school=${c.schoolId} scopes=${c.scopes.join(',')} secrets=${c.liveSecrets} ${c.revokedAt === null ? 'active' : `revoked=${entry.revokedAt}`} name=${JSON.stringify(c.name)}`) + '\n')
      }
    })
  client.command('scopes')
    .description("replace a client's scopes; its access tokens stop working at once on every node (it asks /oauth/token for new ones)")
    .argument('<clientId>', 'client id')
    .requiredOption('--scope <scope>', `a scope it may be granted, repeatable: ${SCOPES.join(', ')} (or OneRoster's full form, ${ONEROSTER_SCOPE_PREFIX}<name>)`, collect, [])
    .action(async (clientId: string, { scope }: { scope: string[] }) => {
      const { id, scopes, changed } = await withDatabase(io.env, (db) => setClientScopes(db, clientId, scope))
      io.stderr.write(changed
        ? `Client ${id} now holds ${scopes.join(', ')}; its access tokens issued before are refused\n`
        : `Client ${id} holds ${scopes.join(', ')} already: nothing was changed\n`)
    })
  client.command('rotate-secret')
    .description('give a client a new secret (printed, shown only now); the previous ones keep working for the overlap')
    .argument('<clientId>', 'client id')
    .option('--overlap <hours>', 'hours the previous secrets keep working (0: they stop now)', String(DEFAULT_OVERLAP_HOURS))
    .action(async (clientId: string, { overlap }: { overlap: string }) => {
      if (!/^\d+(\.\d+)?$/.test(overlap)) throw new Error(`--overlap must be a number of hours from 0 to ${MAX_OVERLAP_HOURS} (got "${overlap}")`)
      const overlapHours = Number(overlap)
      const rotated = await withDatabase(io.env, (db) => rotateClientSecret(db, clientId, { overlapHours }))
      printSecret(io, rotated.secret)
      io.stderr.write(`The previous secret works until ${rotated.previousUntil.toISOString()}\n`)
      printId(io, rotated.clientId)
    })
  client.command('revoke')
    .description('revoke a client: no new tokens, and every API node refuses its tokens within a second')
    .argument('<clientId>', 'client id')
    .action(async (clientId: string) => {
      const id = await withDatabase(io.env, (db) => revokeClient(db, clientId))
      io.stderr.write(`Revoked client ${id}\n`)
    })

  const student = program.command('student').description('manage students')
  student.command('create')
    .description('create a student; prints the id')
    .requiredOption('--school <schoolId>', 'school id')
    .option('--full-name <name>', 'full name (default: given and family name)')
    .option('--given-name <name>', 'given name (default: all but the last word of the full name)')
    .option('--family-name <name>', 'family name (default: the last word of the full name)')
    .option('--preferred-name <name>', 'preferred name')
    .option('--classroom <name>', 'classroom name (created when new)')
    .option('--student-number <number>', 'student number issued by the school (unique in it)')
    .option('--sourced-id <id>', 'OneRoster sourcedId')
    .option('--email <email>', 'email address')
    .option('--date-of-birth <YYYY-MM-DD>', 'date of birth')
    .option('--grade-level <level>', 'PRE_KINDERGARTEN, KINDERGARTEN, GRADE_1 to GRADE_13, UNGRADED, or PK, KG, 01 to 13, Other')
    .option('--status <status>', 'ACTIVE (default), INACTIVE, GRADUATED, TRANSFERRED or WITHDRAWN')
    .option('--enrollment-start <YYYY-MM-DD>', 'first day of enrollment')
    .option('--enrollment-end <YYYY-MM-DD>', 'last day of enrollment')
    .action(async (options: Record<string, string | undefined> & { school: string }) => {
      const { school, enrollmentStart, enrollmentEnd, ...rest } = options
      printId(io, await withDatabase(io.env, (db) => createStudent(db, {
        ...rest, schoolId: school, enrollmentStartDate: enrollmentStart, enrollmentEndDate: enrollmentEnd
      })))
    })

  // A student is in one classroom at most: `assign` moves them, `unassign` takes them out (the
  // verbs of `teacher assign` and `teacher unassign`).
  student.command('assign')
    .description('put a student in a classroom (created when new), in place of the one they were in')
    .requiredOption('--school <schoolId>', 'school id')
    .requiredOption('--student <studentId>', 'student id')
    .requiredOption('--classroom <name>', 'classroom name')
    .action(async ({ school, student: studentId, classroom }: { school: string, student: string, classroom: string }) => {
      const { classroomId, moved } = await withDatabase(io.env, (db) => assignStudent(db, { schoolId: school, studentId, classroom }))
      io.stderr.write(moved ? `Assigned student ${studentId} to ${classroom} (${classroomId})\n` : `Student ${studentId} is in ${classroom} (${classroomId}) already: nothing was changed\n`)
    })
  student.command('unassign')
    .description('take a student out of their classroom (the student stays, in no classroom); refused when they are not in one')
    .requiredOption('--school <schoolId>', 'school id')
    .requiredOption('--student <studentId>', 'student id')
    .option('--classroom <classroom>', 'only out of this classroom (id or name): refused when the student is in another')
    .action(async ({ school, student: studentId, classroom }: { school: string, student: string, classroom?: string }) => {
      const left = await withDatabase(io.env, (db) => unassignStudent(db, { schoolId: school, studentId, classroom }))
      io.stderr.write(`Unassigned student ${studentId} from ${left.classroomName} (${left.classroomId})\n`)
    })

  student.command('move')
    .description('move a student to an existing classroom (id or name), in place of the one they were in')
    .requiredOption('--school <schoolId>', 'school id')
    .requiredOption('--student <student>', 'the student: id, sourcedId, or number:STUDENT_NUMBER')
    .requiredOption('--classroom <classroom>', 'the classroom: id or name')
    .action(async ({ school, student: ref, classroom }: { school: string, student: string, classroom: string }) => {
      const { id, moved, version } = await withDatabase(io.env, async (db) => await placeStudent(await schoolTarget(db, school), cliRef('Student', ref), cliRef('Classroom', classroom)))
      io.stderr.write(moved ? `Moved student ${id} to ${classroom}: version ${version}\n` : `Student ${id} is in ${classroom} already: nothing was changed\n`)
    })
  changeAndDelete(io, student, 'Student', 'student', STUDENT_CHANGES, (command) => personOptions(command)
    .option('--student-number <number>', 'student number issued by the school')
    .option('--date-of-birth <YYYY-MM-DD>', 'date of birth')
    .option('--grade-level <level>', 'a grade level (as for create)')
    .option('--status <status>', 'ACTIVE, INACTIVE, GRADUATED, TRANSFERRED or WITHDRAWN')
    .option('--enrollment-start <YYYY-MM-DD>', 'first day of enrollment')
    .option('--enrollment-end <YYYY-MM-DD>', 'last day of enrollment'))

  const teacher = program.command('teacher').description('manage teachers')
  teacher.command('assign')
    .description('assign a teacher to a classroom (created when new); a teacher login reads the classrooms of its teacher')
    .requiredOption('--school <schoolId>', 'school id')
    .requiredOption('--teacher <teacherId>', 'teacher id')
    .requiredOption('--classroom <name>', 'classroom name')
    .option('--role <role>', 'PRIMARY (default) or ASSISTANT')
    .action(async ({ school, teacher: teacherId, classroom, role }: { school: string, teacher: string, classroom: string, role?: string }) => {
      const assigned = await withDatabase(io.env, (db) => assignTeacher(db, { schoolId: school, teacherId, classroom, role }))
      io.stderr.write(`Assigned teacher ${teacherId} to ${classroom} (${assigned.classroomId}) as ${assigned.role}\n`)
    })
  teacher.command('unassign')
    .description('end a teacher\'s assignment to a classroom: their login stops reading it on every API node; refused when there is no such assignment')
    .requiredOption('--school <schoolId>', 'school id')
    .requiredOption('--teacher <teacherId>', 'teacher id')
    .requiredOption('--classroom <classroom>', 'classroom id or name')
    .action(async ({ school, teacher: teacherId, classroom }: { school: string, teacher: string, classroom: string }) => {
      const ended = await withDatabase(io.env, (db) => unassignTeacher(db, { schoolId: school, teacherId, classroom }))
      io.stderr.write(`Unassigned teacher ${teacherId} from ${ended.classroomName} (${ended.classroomId})\n`)
    })
  teacher.command('create')
    .description('create a teacher; prints the id')
    .requiredOption('--school <schoolId>', 'school id')
    .option('--full-name <name>', 'full name (default: given and family name)')
    .option('--given-name <name>', 'given name (default: all but the last word of the full name)')
    .option('--family-name <name>', 'family name (default: the last word of the full name)')
    .option('--preferred-name <name>', 'preferred name')
    .option('--sourced-id <id>', 'OneRoster sourcedId')
    .option('--email <email>', 'email address')
    .option('--title <title>', 'job title, e.g. "Grade 3 Teacher"')
    .option('--status <status>', 'ACTIVE (default) or INACTIVE')
    .action(async (options: Record<string, string | undefined> & { school: string }) => {
      const { school, ...rest } = options
      printId(io, await withDatabase(io.env, (db) => createTeacher(db, { ...rest, schoolId: school })))
    })

  teacher.command('move')
    .description("move a teacher's assignment from one classroom to another, in the same role (one transaction)")
    .requiredOption('--school <schoolId>', 'school id')
    .requiredOption('--teacher <teacher>', 'the teacher: id or sourcedId')
    .requiredOption('--from <classroom>', 'the classroom assigned now: id or name')
    .requiredOption('--to <classroom>', 'the classroom to assign instead: id or name')
    .action(async ({ school, teacher: ref, from, to }: { school: string, teacher: string, from: string, to: string }) => {
      const moved = await withDatabase(io.env, async (db) => await moveTeacher(await schoolTarget(db, school), cliRef('Teacher', ref), cliRef('Classroom', from), cliRef('Classroom', to)))
      io.stderr.write(`Moved teacher ${moved.teacherId} from ${moved.from} to ${moved.to} as ${moved.role}\n`)
    })
  changeAndDelete(io, teacher, 'Teacher', 'teacher', TEACHER_CHANGES, (command) => personOptions(command)
    .option('--title <title>', 'job title')
    .option('--status <status>', 'ACTIVE or INACTIVE'))

  const classroom = program.command('classroom').description('manage classrooms')
  classroom.command('create')
    .description('create a classroom; prints the id')
    .requiredOption('--school <schoolId>', 'school id')
    .requiredOption('--name <name>', 'name, unique in the school')
    .option('--sourced-id <id>', 'OneRoster sourcedId')
    .option('--grade-level <level>', 'a grade level (as for students)')
    .option('--subject <subject>', 'subject')
    .action(async ({ school, ...fields }: { school: string, name: string, sourcedId?: string, gradeLevel?: string, subject?: string }) => {
      printId(io, (await withDatabase(io.env, async (db) => await addClassroom(await schoolTarget(db, school), fields, { path: [] }))).id)
    })
  changeAndDelete(io, classroom, 'Classroom', 'classroom', CLASSROOM_CHANGES, (command) => command
    .option('--name <name>', 'name, unique in the school')
    .option('--sourced-id <id>', 'OneRoster sourcedId')
    .option('--grade-level <level>', 'a grade level (as for students)')
    .option('--subject <subject>', 'subject'))

  program.command('import')
    .description('import records from other systems')
    .command('oneroster')
    .description('import a OneRoster 1.1/1.2 CSV bundle (folder or zip) into a school: all of it in one transaction, or nothing')
    .argument('<path>', 'folder or zip file with manifest.csv, users.csv, classes.csv, enrollments.csv, ...')
    .requiredOption('--school <schoolId>', 'school id')
    .option('--org <sourcedId>', "the bundle's org that is this school: roles.csv's rows of other orgs are not its roles (needed when roles.csv names several)")
    .option('--dry-run', 'check and plan everything, write nothing: print what would be created, changed and removed')
    .option('--json', 'print the summary as one JSON object')
    .action(async (path: string, options: { school: string, org?: string, dryRun?: boolean, json?: boolean }) => {
      // Loaded on use: the CSV, zip and progress libraries are not needed by other commands.
      const { importOneRoster, formatSummary } = await import('../import/index.js')
      const config = loadConfig(io.env, { needsSecret: false })
      const summary = await importOneRoster({
        path, schoolId: options.school, org: options.org, dryRun: options.dryRun, databaseUrl: config.databaseUrl, dataDir: config.dataDir, progress: io.stderr
      })
      io.stdout.write(options.json === true ? JSON.stringify(summary) + '\n' : formatSummary(summary))
    })

  program.command('seed')
    .description('fill the database with sample data (sandbox only)')
    .command('demo')
    .description('create a demo school with classrooms, teachers, students and a demo user; prints how to log in')
    .action(async () => {
      const { seedDemo, formatLogin, refuseInProduction } = await import('../seed/demo.js')
      const config = loadConfig(io.env, { needsSecret: false })
      refuseInProduction(config.env) // before the database is even opened
      const login = await withDatabase(io.env, (db) => seedDemo(db, { env: config.env }))
      io.stdout.write(formatLogin(login))
    })

  program.command('audit')
    .description("print a school's access audit, newest first (DATABASE_URL must be a role that may read it, e.g. the owner)")
    .requiredOption('--school <schoolId>', 'school id')
    .option('--user <userId>', 'only this user')
    .option('--client <clientId>', 'only this client')
    .option('--since <time>', 'only accesses at or after this ISO 8601 time')
    .option('--limit <n>', 'at most this many lines (1 to 10000)', '100')
    .option('--json', 'one JSON object per line')
    .action(async (options: { school: string, user?: string, client?: string, since?: string, limit: string, json?: boolean }) => {
      const query = auditQuery(options)
      const config = loadConfig(io.env, { needsSecret: false })
      // The embedded database's service role may not read the audit: read it as the administrator.
      const db = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, migrate: config.databaseUrl === undefined, serviceRole: false })
      let entries: AuditEntry[]
      try {
        entries = await readAudit(db.prisma, query)
      } catch (err) {
        if (/permission denied/i.test(String((err as Error).message))) {
          throw new Error("DATABASE_URL's role may not read the access audit (the service role may only add to it): use the owner role")
        }
        throw err
      } finally {
        await db.close()
      }
      for (const e of entries) {
        // Each entry names a user or a client.
        const caller = e.userId !== null ? { userId: e.userId } : { clientId: e.clientId }
        io.stdout.write((options.json === true
          ? JSON.stringify({ at: e.at.toISOString(), schoolId: e.schoolId, ...caller, requestId: e.requestId, operation: e.operation, recordType: e.recordType, action: e.action, recordCount: e.recordCount })
          : `${e.at.toISOString()} ${e.userId !== null ? `user=${e.userId}` : `client=${e.clientId}`} ${e.action} ${e.recordType} count=${e.recordCount} operation=${e.operation} request=${e.requestId}`) + '\n')
      }
    })

  return program
}

// A date, or a date and time (seconds and fraction optional) with Z or an offset.
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/

function auditQuery (options: { school: string, user?: string, client?: string, since?: string, limit: string }) {
  const schoolId = requireId('School', options.school)
  const userId = options.user === undefined ? undefined : requireId('User', options.user)
  const clientId = options.client === undefined ? undefined : requireId('Client', options.client)
  let since: Date | undefined
  if (options.since !== undefined) {
    since = new Date(options.since)
    if (!ISO_TIME.test(options.since) || Number.isNaN(since.getTime())) {
      throw new Error(`--since "${options.since}" is not an ISO 8601 time (e.g. 2026-01-31 or 2026-01-31T08:00:00Z)`)
    }
  }
  const limit = Number(options.limit)
  if (!/^\d+$/.test(options.limit) || limit < 1 || limit > 10_000) throw new Error(`--limit must be a whole number from 1 to 10000 (got "${options.limit}")`)
  return { schoolId, userId, clientId, since, limit }
}

export async function main (argv: string[], io: CliIo = PROCESS_IO): Promise<number> {
  try {
    await buildProgram(io).parseAsync(argv)
    return 0
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has printed the problem (or the help/version, with exit code 0).
      return err.exitCode
    }
    io.stderr.write(`error: ${(err as Error).message}\n`)
    return 1
  }
}
