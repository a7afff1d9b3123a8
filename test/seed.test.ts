// `school-data seed demo` and the sandbox's first start: a demo school that its printed users (an
// administrator and a teacher) and client can log in to and read; refused in production; not made twice.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { buildApp } from '../src/app.js'
import { openDatabase, type Database } from '../src/db/client.js'
import { DEMO_SCHOOL_NAME, DEMO_TEACHER_CLASSROOM, DEMO_TEACHER_USERNAME, DEMO_USERNAME } from '../src/seed/demo.js'
import { seedEmptySandbox } from '../src/seed/sandbox.js'
import { createTestDatabase, engineIndependentSkip, gql, login, testConfig, testDatabase, testDatabaseUrl } from './helper.js'
import { runCli, type CliRun } from './fixtures/cli.js'
import { basic, tokenRequest } from './fixtures/oauth.js'

const server = fileURLToPath(new URL('../dist/server.js', import.meta.url))

// CLI processes and a server start on a fresh embedded database; a busy machine takes its time.
t.setTimeout(600_000)

let env: NodeJS.ProcessEnv
let dataDir: string

const cli = async (args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<CliRun> => await runCli(args, { ...env, ...extraEnv })

/** The database the CLI wrote to (the embedded one is opened once the CLI has ended). */
async function cliDatabase (t: { teardown: (fn: () => unknown) => void }): Promise<Database> {
  if (env.DATABASE_URL !== undefined) return await testDatabase()
  const db = await openDatabase({ dataDir, migrate: false })
  t.teardown(() => db.close())
  return db
}

const passwordOf = (stdout: string): string => /with the password "([^"]+)"/.exec(stdout)?.[1] ?? ''

t.before(async () => {
  const url = await testDatabaseUrl()
  dataDir = mkdtempSync(join(tmpdir(), 'sds-seed-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  env = { PATH: process.env.PATH, DATA_DIR: dataDir, ...(url !== undefined && { DATABASE_URL: url }) }
})

t.test('seed demo is refused in production, before anything is written', async (t) => {
  const run = await cli(['seed', 'demo'], { SCHOOL_DATA_ENV: 'production', JWT_SECRET: 'x'.repeat(48) })
  t.not(run.code, 0)
  t.match(run.stderr, /sandbox only: `seed demo` is refused when SCHOOL_DATA_ENV=production/)
  t.equal(run.stdout, '')
})

t.test('seed demo makes a school its printed user can log in to; a second run is refused', async (t) => {
  const run = await cli(['seed', 'demo'])
  t.equal(run.code, 0, run.stderr)
  const schoolId = run.stdout.trim().split('\n').at(-1)!
  t.match(schoolId, /^[0-9a-f-]{36}$/, 'the school id alone on the last line')
  const password = passwordOf(run.stdout)
  t.ok(password.length >= 16, 'a random password is printed')
  t.match(run.stdout, new RegExp(`Log in as "${DEMO_USERNAME}"`))

  const again = await cli(['seed', 'demo'])
  t.not(again.code, 0, 'a second run is refused')
  t.match(again.stderr, /The demo data exists already \(user demo-admin, school [0-9a-f-]{36}\): nothing was changed/)

  const db = await cliDatabase(t)
  t.equal(await db.prisma.school.count({ where: { name: DEMO_SCHOOL_NAME } }), 1, 'one demo school')
  const app = await buildApp(testConfig(), { database: db, logger: false })
  t.teardown(() => app.close())
  const { accessToken } = await login(app, DEMO_USERNAME, password)
  const res = await gql(app, `{
    school { id name timeZone }
    students(limit: 1000) { id fullName givenName familyName preferredName studentNumber email dateOfBirth gradeLevel status enrollmentStartDate enrollmentEndDate classroomName }
    teachers(limit: 1000) { id fullName email title status classroomAssignments { role } }
    classrooms(limit: 1000) { id name gradeLevel subject }
  }`, { token: accessToken })
  t.same(res.body.errors, undefined)
  const data = res.body.data as any
  t.same(data.school, { id: schoolId, name: DEMO_SCHOOL_NAME, timeZone: 'America/Chicago' })
  t.ok(data.students.length >= 300 && data.students.length <= 500, `a few hundred students (${data.students.length})`)
  for (const s of data.students) {
    const empty = Object.entries(s).filter(([, v]) => v === null || v === '').map(([k]) => k)
    if (empty.length > 0) t.fail(`student ${s.id as string} has empty fields: ${empty.join(', ')}`)
  }
  t.same(new Set(data.students.map((s: any) => s.studentNumber)).size, data.students.length, 'student numbers are unique')
  t.ok(new Set(data.students.map((s: any) => s.fullName)).size > data.students.length * 0.8, 'generated, mostly distinct names')
  t.ok(data.students.some((s: any) => s.status !== 'ACTIVE'), 'some students have left or are inactive')
  t.equal(data.classrooms.length, 18, 'two classrooms per grade, kindergarten to grade 8')
  t.same(new Set(data.classrooms.map((c: any) => c.gradeLevel)).size, 9)

  const roles = data.teachers.flatMap((x: any) => x.classroomAssignments.map((a: any) => a.role))
  t.same([roles.filter((r: string) => r === 'PRIMARY').length, roles.filter((r: string) => r === 'ASSISTANT').length], [18, 8],
    'a lead teacher per classroom, aides in the youngest grades')
  t.ok(data.teachers.every((x: any) => x.title !== null && x.email !== null), 'teachers have a title and an email')

  // The demo client, printed as the demo user is: every read scope, through the token endpoint.
  const printed = /client id "([0-9a-f-]{36})" and the secret "([A-Za-z0-9_-]{43})"/.exec(run.stdout)
  t.ok(printed, 'the demo client id and secret are printed')
  const token = await tokenRequest(app, { grant_type: 'client_credentials' }, { authorization: basic(printed?.[1] ?? '', printed?.[2] ?? '') })
  t.equal(token.statusCode, 200, JSON.stringify(token.body))
  t.equal(token.body.scope, 'roster-core.readonly roster.readonly roster-demographics.readonly')
  const read = await gql(app, '{ students(limit: 1) { email dateOfBirth } }', { token: String(token.body.access_token) })
  t.same(read.body.errors, undefined, 'the demo client reads every field')

  // The demo teacher, printed as the demo user is: a teacher login of the lead teacher of one
  // classroom, who reads that classroom, its students and its teachers, and no dates of birth.
  const teacherLine = new RegExp(`A teacher logs in as "${DEMO_TEACHER_USERNAME}" with the password "([^"]+)" \\(shown only now\\): (.+), lead teacher of ${DEMO_TEACHER_CLASSROOM},`).exec(run.stdout)
  t.ok(teacherLine, 'the demo teacher\'s login is printed')
  const [, teacherPassword = '', teacherName = ''] = teacherLine ?? []
  t.ok(teacherPassword.length >= 16 && teacherPassword !== password, 'a password of its own')
  const lead = data.teachers.find((x: any) => x.fullName === teacherName)
  t.ok(lead, `the printed teacher (${teacherName}) is a teacher of the school`)
  const user = await db.prisma.user.findUnique({ where: { username: DEMO_TEACHER_USERNAME }, select: { role: true, teacherId: true, schoolId: true } })
  t.same(user, { role: 'TEACHER', teacherId: lead?.id, schoolId }, 'a teacher user of that teacher record')
  const room = data.classrooms.find((c: any) => c.name === DEMO_TEACHER_CLASSROOM)
  const teacher = await login(app, DEMO_TEACHER_USERNAME, teacherPassword)
  const reach = await gql(app, `{
    classrooms(limit: 1000) { id name }
    students(limit: 1000) { id classroom { id } }
    teachers(limit: 1000) { id }
  }`, { token: teacher.accessToken })
  t.same(reach.body.errors, undefined)
  const seen = reach.body.data as any
  t.same(seen.classrooms, [{ id: room.id, name: DEMO_TEACHER_CLASSROOM }], 'the teacher\'s one classroom')
  t.ok(seen.students.length >= 18 && seen.students.every((s: any) => s.classroom?.id === room.id), `its students only (${seen.students.length})`)
  t.equal(seen.teachers.length, 2, 'the teacher and the classroom\'s teaching assistant')
  const demographics = await gql(app, '{ students(limit: 1) { dateOfBirth } }', { token: teacher.accessToken })
  t.match(demographics.body.errors?.[0]?.extensions, { code: 'FORBIDDEN' }, 'no dates of birth for a teacher')
})

t.test('the sandbox server seeds an empty embedded database only', async (t) => {
  const lines: string[] = []
  const log = { info: () => {}, warn: (obj: object) => { lines.push(JSON.stringify(obj)) } }
  const printed: string[] = []
  const print = (text: string): void => { printed.push(text) }
  const db = await createTestDatabase()
  t.equal(await seedEmptySandbox(db, 'production', log, print), false, 'never in production')
  if (db.kind !== 'embedded') {
    t.equal(await seedEmptySandbox(db, 'sandbox', log, print), false, 'never on a PostgreSQL server')
    t.equal(await db.prisma.school.count(), 0)
    return
  }
  t.equal(await seedEmptySandbox(db, 'sandbox', log, print), true, 'an empty embedded sandbox is seeded')
  t.match(printed.join(''), /Log in as "demo-admin" with the password "[^"]+"/)
  t.equal(await seedEmptySandbox(db, 'sandbox', log, print), false, 'but only while it has no school')
  t.equal(await db.prisma.school.count(), 1)
  t.same(lines, [], 'no warning')
})

// The server's own embedded database in a folder of its own, whatever TEST_DATABASE_URL says: the
// same in both runs, so once.
t.test('npm start on an empty embedded database prints how to log in', { skip: engineIndependentSkip }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sds-seed-start-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // `npm start` is the build and then this process; the sandbox and the embedded database are the defaults.
  const child = spawn(process.execPath, [server], {
    env: { PATH: process.env.PATH, DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '0' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => { out += d.toString() })
  child.stderr.on('data', (d: Buffer) => { out += d.toString() })
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  t.teardown(() => { child.kill('SIGKILL') })
  // The printed login and the log line travel separately (the logger writes on its own, after),
  // so both are waited for.
  const printed = /Log in as "demo-admin" with the password "[^"]+"/
  const logged = /empty sandbox database: demo data created/
  for (let i = 0; i < 2400 && !(printed.test(out) && logged.test(out)) && child.exitCode === null; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.match(out, printed, 'the login is printed')
  t.match(out, logged, 'and logged')
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'the server stops cleanly')
})
