// Roles from the command line, as an operator gives them: `user create --role teacher --teacher`,
// `user role`, `user assign` of a teacher, `user list`, and `client scopes`. Bad input is refused
// with a clear message on standard error and exit status 1; the database's CHECK on users is never
// what the operator sees.
import t, { type Test } from 'tap'
import { build, cliEnvironment, gql, login, testDatabase } from './helper.js'
import { runCli, type CliRun } from './fixtures/cli.js'

// Some fifty commands, each opening the database anew: on a busy machine over
// 300 s (325 s seen while other suites ran), as its siblings.
t.setTimeout(600_000)

let env: NodeJS.ProcessEnv
const cli = async (args: string[], input?: string): Promise<CliRun> => await runCli(args, env, input)
const lastLine = (text: string): string => text.trimEnd().split('\n').at(-1) ?? ''
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const PASSWORD = 'a long enough password\n'

t.before(async () => {
  env = await cliEnvironment(t, 'sds-cli-roles-')
})

async function created (args: string[], input?: string): Promise<string> {
  const run = await cli(args, input)
  if (run.code !== 0) throw new Error(`${args.join(' ')}: ${run.stderr}`)
  return lastLine(run.stdout)
}

interface Listed { id: string, username: string, schoolId: string | null, role: string, teacherId: string | null, teacherName: string | null, disabledAt: string | null }

async function listed (school: string): Promise<Listed[]> {
  const run = await cli(['user', 'list', '--school', school, '--json'])
  if (run.code !== 0) throw new Error(run.stderr)
  return run.stdout.trimEnd().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Listed)
}

async function refused (t: Test, args: string[], message: RegExp, input?: string): Promise<void> {
  const run = await cli(args, input)
  t.equal(run.code, 1, args.join(' '))
  t.match(run.stderr, message, args.join(' '))
  t.notMatch(run.stderr, /users_teacher_check|constraint|Prisma/i, `${args.join(' ')}: no database error`)
  t.equal(run.stdout, '', `${args.join(' ')}: nothing on standard output`)
}

t.test('a teacher login: user create --role teacher, user list, user role, user assign', async (t) => {
  const school = await created(['school', 'create', '--name', 'Roles Academy'])
  const other = await created(['school', 'create', '--name', 'Other Academy'])
  const ada = await created(['teacher', 'create', '--school', school, '--full-name', 'Ada Teacher'])
  const bea = await created(['teacher', 'create', '--school', school, '--full-name', 'Bea Teacher'])
  const cal = await created(['teacher', 'create', '--school', other, '--full-name', 'Cal Elsewhere'])

  const teacherId = await created(['user', 'create', '--username', 'ada', '--school', school, '--role', 'teacher', '--teacher', ada], PASSWORD)
  t.match(teacherId, UUID, 'the id alone on the last line')
  const adminId = await created(['user', 'create', '--username', 'boss', '--school', school], PASSWORD)

  t.match(await listed(school), [
    { id: teacherId, username: 'ada', schoolId: school, role: 'teacher', teacherId: ada, teacherName: 'Ada Teacher', disabledAt: null },
    { id: adminId, username: 'boss', schoolId: school, role: 'admin', teacherId: null, teacherName: null, disabledAt: null }
  ], 'role admin by default; the teacher with their record')
  const text = await cli(['user', 'list', '--school', school])
  t.equal(text.stdout, `${teacherId} username=ada school=${school} role=teacher teacher=${ada} ("Ada Teacher") active\n` +
    `${adminId} username=boss school=${school} role=admin active\n`)

  // Another teacher record of the same school, then admin, then teacher again.
  const toBea = await cli(['user', 'role', '--username', 'ada', '--role', 'teacher', '--teacher', bea])
  t.equal(toBea.code, 0, toBea.stderr)
  t.match(toBea.stderr, `ada is now teacher (teacher ${bea})`)
  t.match((await cli(['user', 'role', '--username', 'ADA', '--role', 'teacher', '--teacher', bea])).stderr, /already: nothing was changed/)
  const toAdmin = await cli(['user', 'role', '--username', 'ada', '--role', 'admin'])
  t.equal(toAdmin.code, 0, toAdmin.stderr)
  t.match((await listed(school))[0], { username: 'ada', role: 'admin', teacherId: null })
  t.equal((await cli(['user', 'role', '--username', 'boss', '--role', 'TEACHER', '--teacher', ada])).code, 0, 'roles in any case')
  t.match((await listed(school)).find((u) => u.username === 'boss'), { role: 'teacher', teacherId: ada })

  // A teacher moves with a teacher record of the new school, or not at all.
  await refused(t, ['user', 'assign', '--username', 'boss', '--school', other],
    new RegExp(`User "boss" is a teacher of school ${school}: give --teacher TEACHER_ID, a teacher of school ${other}, or make the user an admin first`))
  await refused(t, ['user', 'assign', '--username', 'boss', '--school', other, '--teacher', ada], new RegExp(`Teacher ${ada} is not a teacher of school ${other}`))
  const moved = await cli(['user', 'assign', '--username', 'boss', '--school', other, '--teacher', cal])
  t.equal(moved.code, 0, moved.stderr)
  t.match(moved.stderr, `Assigned boss to school ${other} as teacher ${cal}`)
  t.match(await listed(other), [{ username: 'boss', schoolId: other, role: 'teacher', teacherId: cal, teacherName: 'Cal Elsewhere' }])
  t.equal((await cli(['user', 'assign', '--username', 'boss', '--school', other])).code, 0, 'a teacher assigned to their own school: nothing changes')

  // An admin moves as before, and takes no --teacher.
  await refused(t, ['user', 'assign', '--username', 'ada', '--school', other, '--teacher', cal], /User "ada" is not a teacher: --teacher is for teacher users/)
  t.equal((await cli(['user', 'assign', '--username', 'ada', '--school', other])).code, 0)
  t.match(await listed(other), [{ username: 'ada', role: 'admin' }, { username: 'boss', role: 'teacher' }])
})

t.test("an operator makes a teacher login step by step (docs/api/access.md#roles): it reads its classroom's students only", async (t) => {
  const school = await created(['school', 'create', '--name', 'Step Academy'])
  const mine = await created(['student', 'create', '--school', school, '--full-name', 'Ann Mine', '--classroom', 'Room 1'])
  await created(['student', 'create', '--school', school, '--full-name', 'Bob Elsewhere', '--classroom', 'Room 2'])
  const teacher = await created(['teacher', 'create', '--school', school, '--full-name', 'Grace Hopper'])
  const assigned = await cli(['teacher', 'assign', '--school', school, '--teacher', teacher, '--classroom', 'Room 1'])
  t.equal(assigned.code, 0, assigned.stderr)
  t.match(assigned.stderr, new RegExp(`Assigned teacher ${teacher} to Room 1 \\([0-9a-f-]{36}\\) as PRIMARY`))
  t.match((await cli(['teacher', 'assign', '--school', school, '--teacher', teacher, '--classroom', 'Room 1', '--role', 'assistant'])).stderr, /as ASSISTANT/, 'again: the role changes')
  await refused(t, ['teacher', 'assign', '--school', school, '--teacher', teacher, '--classroom', 'Room 1', '--role', 'head'], /Classroom role must be one of PRIMARY, ASSISTANT \(got "head"\)/)
  await refused(t, ['teacher', 'assign', '--school', school, '--teacher', '01900000-0000-7000-8000-000000000000', '--classroom', 'Room 1'], /is not a teacher of school/)
  await created(['user', 'create', '--username', 'ghopper', '--school', school, '--role', 'teacher', '--teacher', teacher], PASSWORD)
  t.match((await cli(['user', 'list', '--school', school])).stdout, /username=ghopper school=\S+ role=teacher teacher=\S+ \("Grace Hopper"\) active/)

  if (env.DATABASE_URL !== undefined) {
    // The login through the API (the embedded database belongs to the CLI's process otherwise).
    const app = await build(t)
    const { accessToken } = await login(app, 'ghopper', PASSWORD.trim())
    const res = await gql(app, '{ students { id fullName classroomName } classrooms { name } }', { token: accessToken })
    t.same(res.body.data, { students: [{ id: mine, fullName: 'Ann Mine', classroomName: 'Room 1' }], classrooms: [{ name: 'Room 1' }] }, 'its classroom and its students only')

    // A teacher record deleted later (an import's deletion): the user is listed with it missing.
    await (await testDatabase()).forSchool(school).teacher.deleteMany({ where: { id: teacher } })
    t.match((await cli(['user', 'list', '--school', school])).stdout, /username=ghopper school=\S+ role=teacher teacher=\S+ \(no such teacher record\) active/)
  }
})

t.test('bad roles and teacher records are refused clearly', async (t) => {
  const school = await created(['school', 'create', '--name', 'Strict Academy'])
  const other = await created(['school', 'create', '--name', 'Elsewhere Academy'])
  const mine = await created(['teacher', 'create', '--school', school, '--full-name', 'Dee Teacher'])
  const theirs = await created(['teacher', 'create', '--school', other, '--full-name', 'Eve Elsewhere'])
  const nobody = '01900000-0000-7000-8000-000000000000'
  await created(['user', 'create', '--username', 'floating'], PASSWORD)
  await created(['user', 'create', '--username', 'head', '--school', school], PASSWORD)

  const cases: Array<[string[], RegExp]> = [
    [['user', 'create', '--username', 'x1', '--school', school, '--role', 'principal'], /Role must be one of admin, teacher \(got "principal"\)/],
    [['user', 'create', '--username', 'x2', '--school', school, '--teacher', mine], /--teacher is for the role teacher only/],
    [['user', 'create', '--username', 'x3', '--school', school, '--role', 'admin', '--teacher', mine], /--teacher is for the role teacher only/],
    [['user', 'create', '--username', 'x4', '--school', school, '--role', 'teacher'], new RegExp(`give --teacher TEACHER_ID, a teacher of school ${school}`)],
    [['user', 'create', '--username', 'x5', '--role', 'teacher', '--teacher', mine], /A teacher belongs to a school/],
    [['user', 'create', '--username', 'x6', '--school', school, '--role', 'teacher', '--teacher', theirs], new RegExp(`Teacher ${theirs} is not a teacher of school ${school}`)],
    [['user', 'create', '--username', 'x7', '--school', school, '--role', 'teacher', '--teacher', nobody], new RegExp(`Teacher ${nobody} is not a teacher of school ${school}`)],
    [['user', 'create', '--username', 'x8', '--school', school, '--role', 'teacher', '--teacher', 'ms-dee'], /Teacher id "ms-dee" is not a UUID/],
    [['user', 'role', '--username', 'head', '--role', 'teacher'], /give --teacher TEACHER_ID/],
    [['user', 'role', '--username', 'head', '--role', 'teacher', '--teacher', theirs], new RegExp(`Teacher ${theirs} is not a teacher of school ${school}`)],
    [['user', 'role', '--username', 'head', '--role', 'admin', '--teacher', mine], /--teacher is for the role teacher only/],
    [['user', 'role', '--username', 'floating', '--role', 'teacher', '--teacher', mine], /A teacher belongs to a school: the user needs one first/],
    [['user', 'role', '--username', 'ghost', '--role', 'admin'], /User "ghost" does not exist/],
    [['user', 'role', '--username', 'head'], /required option '--role <role>'/],
    [['user', 'list', '--school', 'nope'], /School id "nope" is not a UUID/]
  ]
  for (const [args, message] of cases) await refused(t, args, message, args[1] === 'create' ? PASSWORD : undefined)
  t.match(await listed(school), [{ username: 'head', role: 'admin', teacherId: null }], 'nothing was changed or created')
})

t.test('client scopes replaces a client\'s scopes; client list shows them', async (t) => {
  const school = await created(['school', 'create', '--name', 'Scoped Academy'])
  const clientId = await created(['client', 'create', '--school', school, '--name', 'Gradebook', '--scope', 'roster.readonly'])
  const changed = await cli(['client', 'scopes', clientId, '--scope', 'roster-core.readonly', '--scope', 'roster-demographics.readonly'])
  t.equal(changed.code, 0, changed.stderr)
  t.match(changed.stderr, `Client ${clientId} now holds roster-core.readonly, roster-demographics.readonly; its access tokens issued before are refused`)
  t.match((await cli(['client', 'list', '--school', school])).stdout, new RegExp(`^${clientId} school=${school} scopes=roster-core.readonly,roster-demographics.readonly secrets=1 active`))
  t.match((await cli(['client', 'scopes', clientId, '--scope', 'roster-demographics.readonly', '--scope', 'roster-core.readonly'])).stderr, /already: nothing was changed/)

  const cases: Array<[string[], RegExp]> = [
    [['client', 'scopes', clientId], /required option '--scope <scope>'|Give at least one --scope/],
    [['client', 'scopes', clientId, '--scope', 'roster.write'], /Unknown scope "roster.write"/],
    [['client', 'scopes', 'nope', '--scope', 'roster.readonly'], /Client id "nope" is not a UUID/],
    [['client', 'scopes', '01900000-0000-7000-8000-000000000000', '--scope', 'roster.readonly'], /Client 01900000-0000-7000-8000-000000000000 does not exist/]
  ]
  for (const [args, message] of cases) await refused(t, args, message)
  t.equal((await cli(['client', 'revoke', clientId])).code, 0)
  await refused(t, ['client', 'scopes', clientId, '--scope', 'roster.readonly'], /is revoked/)
})
