// The `school-data` command as a user runs it: a real child process of bin/school-data.js on this
// file's database (the other CLI test files run the commands in process, through the same main).
import t from 'tap'
import { build, cliEnvironment, engineIndependentSkip, gql, login, testDatabase } from './helper.js'
import { runCliProcess, type CliRun } from './fixtures/cli.js'

let env: NodeJS.ProcessEnv

const cli = async (args: string[], input?: string): Promise<CliRun> => await runCliProcess(args, env, input)

const lastLine = (text: string): string => text.trimEnd().split('\n').at(-1) ?? ''
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

t.before(async () => {
  // On PostgreSQL the CLI uses this file's database; otherwise its own embedded one in a temp folder.
  env = await cliEnvironment(t)
})

t.test('creating a school, a user and students prints each id alone on the last line', async (t) => {
  const school = await cli(['school', 'create', '--name', 'CLI Academy'])
  t.equal(school.code, 0, school.stderr)
  const schoolId = lastLine(school.stdout)
  t.match(schoolId, UUID)

  const user = await cli(['user', 'create', '--username', 'cli-admin', '--school', schoolId], 'a long enough password\n')
  t.equal(user.code, 0, user.stderr)
  t.match(lastLine(user.stdout), UUID)

  const student = await cli(['student', 'create', '--school', schoolId, '--full-name', 'Cli Student', '--classroom', 'Room 9'])
  t.equal(student.code, 0, student.stderr)
  const studentId = lastLine(student.stdout)
  t.match(studentId, UUID)

  const teacher = await cli(['teacher', 'create', '--school', schoolId, '--full-name', 'Cli Teacher'])
  t.equal(teacher.code, 0, teacher.stderr)
  t.match(lastLine(teacher.stdout), UUID)

  if (env.DATABASE_URL !== undefined) {
    // The same rows through the API.
    const app = await build(t)
    const { accessToken } = await login(app, 'cli-admin', 'a long enough password')
    const res = await gql(app, '{ students { id fullName classroomName } }', { token: accessToken })
    t.same(res.body.data!.students, [{ id: studentId, fullName: 'Cli Student', classroomName: 'Room 9' }])
  }
})

t.test('user assign gives a user a school', async (t) => {
  const schoolId = lastLine((await cli(['school', 'create', '--name', 'Assign School'])).stdout)
  const created = await cli(['user', 'create', '--username', 'floater'], 'floating password\n')
  t.equal(created.code, 0, created.stderr)
  const assigned = await cli(['user', 'assign', '--username', 'floater', '--school', schoolId])
  t.equal(assigned.code, 0, assigned.stderr)
})

t.test('errors go to standard error with a non-zero exit status', { skip: engineIndependentSkip }, async (t) => {
  const cases: Array<[string[], string | undefined, RegExp]> = [
    [['school', 'create'], undefined, /required option '--name <name>'/],
    [['student', 'create', '--school', 'not-a-uuid', '--full-name', 'X'], undefined, /is not a UUID/],
    [['student', 'create', '--school', '00000000-0000-4000-8000-000000000000', '--full-name', 'X'], undefined, /does not exist/],
    [['user', 'create', '--username', 'nopassword'], '', /No password on standard input/],
    [['user', 'create', '--username', 'shortpw'], 'short\n', /at least 8 characters/],
    // Login refuses a NUL as in every text argument: such a password could never be used.
    [['user', 'create', '--username', 'nulpw'], 'a long\u0000password\n', /The password must not contain a NUL character \(U\+0000\)/],
    [['user', 'assign', '--username', 'ghost', '--school', '00000000-0000-4000-8000-000000000000'], undefined, /does not exist/],
    [['frobnicate'], undefined, /unknown command/]
  ]
  for (const [args, input, message] of cases) {
    const run = await cli(args, input)
    t.not(run.code, 0, args.join(' '))
    t.match(run.stderr, message, args.join(' '))
    t.equal(run.stdout, '', 'nothing on standard output')
  }
  const nulpw = await cli(['user', 'create', '--username', 'nulpw'], 'a long enough password\n')
  t.equal(nulpw.code, 0, `the user refused for a NUL in the password was not written: ${nulpw.stderr}`)
  await cli(['user', 'create', '--username', 'twice'], 'password one two\n')
  const again = await cli(['user', 'create', '--username', 'TWICE'], 'password one two\n')
  t.not(again.code, 0)
  t.match(again.stderr, /Username "twice" is taken/)
})

t.test('citus distribute refuses a database that is not on a Citus coordinator, and changes nothing', async (t) => {
  const run = await cli(['citus', 'distribute'])
  if ((await testDatabase()).citus) {
    // The suites on a Citus cluster (npm run test:citus): this file's database is distributed already.
    t.equal(run.code, 0)
    t.equal(run.stderr, 'Already distributed: nothing to do\n')
    return
  }
  t.equal(run.code, 1)
  t.match(run.stderr, env.DATABASE_URL === undefined
    ? /Set DATABASE_URL to the database on the Citus coordinator/
    : /not on a Citus coordinator \(the citus extension is not installed in it\)/)
  t.equal(run.stdout, '')
  const created = await cli(['school', 'create', '--name', 'Still Here'])
  t.equal(created.code, 0, 'the database works as before')
})
