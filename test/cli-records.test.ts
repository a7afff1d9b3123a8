// `school-data student|teacher|classroom change, move, delete` (and `classroom create`) as an
// operator runs them (in process, through the CLI's main), the same administration code as the API's mutations
// (src/records/: students.ts, teachers.ts, classrooms.ts and the shared writes.ts), so the same
// versions, natural keys and refusals.
import t, { type Test } from 'tap'
import { runCli, type CliRun } from './fixtures/cli.js'
import { cliEnvironment } from './helper.js'

t.setTimeout(600_000)

let env: NodeJS.ProcessEnv
const cli = async (args: string[]): Promise<CliRun> => await runCli(args, env)
const lastLine = (text: string): string => text.trimEnd().split('\n').at(-1) ?? ''

t.before(async () => {
  env = await cliEnvironment(t, 'sds-cli-records-')
})

async function run (t: Test, args: string[]): Promise<string> {
  const done = await cli(args)
  t.equal(done.code, 0, `${args.join(' ')}: ${done.stderr}`)
  return lastLine(done.stdout)
}

async function refused (t: Test, args: string[], message: RegExp): Promise<void> {
  const done = await cli(args)
  t.equal(done.code, 1, args.join(' '))
  t.match(done.stderr, message, args.join(' '))
  t.equal(done.stdout, '', `${args.join(' ')}: nothing on standard output`)
}

t.test('change, move and delete students, teachers and classrooms, by id or natural key, with versions', async (t) => {
  const school = await run(t, ['school', 'create', '--name', 'CLI Records School'])
  const room1 = await run(t, ['classroom', 'create', '--school', school, '--name', 'Room 1', '--sourced-id', 'r-1'])
  await run(t, ['classroom', 'create', '--school', school, '--name', 'Room 2'])
  await refused(t, ['classroom', 'create', '--school', school, '--name', 'Room 2'], /Classroom name "Room 2" is taken in this school/)
  const student = await run(t, ['student', 'create', '--school', school, '--full-name', 'Ada Lovelace', '--sourced-id', 'stu-1', '--student-number', 'N1', '--classroom', 'Room 1'])

  t.equal(await run(t, ['student', 'change', '--school', school, '--student', 'stu-1', '--preferred-name', 'Addie', '--expected-version', '1']), '2', 'prints the new version')
  await refused(t, ['student', 'change', '--school', school, '--student', 'number:N1', '--preferred-name', 'Lost', '--expected-version', '1'], /is at version 2, not 1/)
  t.equal(await run(t, ['student', 'change', '--school', school, '--student', student, '--clear', 'preferred-name', '--email', 'ada@example.org']), '3')
  await refused(t, ['student', 'change', '--school', school, '--student', 'stu-1', '--email', 'nope'], /Email "nope" is not an email address/)

  const moved = await cli(['student', 'move', '--school', school, '--student', 'stu-1', '--classroom', 'Room 2'])
  t.equal(moved.code, 0, moved.stderr)
  t.match(moved.stderr, /Moved student .* to Room 2: version 4/)
  await refused(t, ['classroom', 'delete', '--school', school, '--classroom', 'Room 2'], /has 1 student/)

  const teacher = await run(t, ['teacher', 'create', '--school', school, '--full-name', 'Grace Hopper', '--sourced-id', 't-1'])
  const assigned = await cli(['teacher', 'assign', '--school', school, '--teacher', teacher, '--classroom', 'Room 1', '--role', 'ASSISTANT'])
  t.equal(assigned.code, 0, assigned.stderr)
  const tmove = await cli(['teacher', 'move', '--school', school, '--teacher', 't-1', '--from', 'Room 1', '--to', 'Room 2'])
  t.equal(tmove.code, 0, tmove.stderr)
  t.match(tmove.stderr, /Moved teacher .* as ASSISTANT/)
  await refused(t, ['teacher', 'move', '--school', school, '--teacher', 't-1', '--from', 'Room 1', '--to', 'Room 2'], /is not assigned to classroom/)
  t.equal(await run(t, ['teacher', 'change', '--school', school, '--teacher', 't-1', '--title', 'Head of Science']), '2')

  t.equal(await run(t, ['classroom', 'change', '--school', school, '--classroom', room1, '--subject', 'Math', '--name', 'Room One']), '2')
  const gone = await cli(['classroom', 'delete', '--school', school, '--classroom', 'Room One', '--expected-version', '2'])
  t.equal(gone.code, 0, gone.stderr)
  t.match(gone.stderr, /Deleted classroom .* \(sourcedId r-1\)/)
  await refused(t, ['student', 'delete', '--school', school, '--student', 'stu-1', '--expected-version', '1'], /is at version 4, not 1/)
  const deleted = await cli(['student', 'delete', '--school', school, '--student', 'stu-1'])
  t.equal(deleted.code, 0, deleted.stderr)
  await refused(t, ['student', 'delete', '--school', school, '--student', 'stu-1'], /Student with sourcedId "stu-1" is not a student of school/)
  const tdel = await cli(['teacher', 'delete', '--school', school, '--teacher', 't-1'])
  t.equal(tdel.code, 0, tdel.stderr)
})
