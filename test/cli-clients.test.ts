// `school-data client ...` as an operator runs it (in process, through the CLI's main) on this file's database.
// create prints the secret once and the id alone on the last line; list never shows a secret;
// rotate-secret and revoke act at once; errors are clear, on standard error, with exit status 1.
import t from 'tap'
import { build, cliEnvironment, gql } from './helper.js'
import { runCli, type CliRun } from './fixtures/cli.js'
import { basic, tokenRequest } from './fixtures/oauth.js'

// Each command opens the embedded database anew when there is no server: slow on a busy machine.
t.setTimeout(300_000)

let env: NodeJS.ProcessEnv
const cli = async (args: string[]): Promise<CliRun> => await runCli(args, env)
const lastLine = (text: string): string => text.trimEnd().split('\n').at(-1) ?? ''
const secretOf = (text: string): string => /^client_secret=(\S+)$/m.exec(text)?.[1] ?? ''
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

t.before(async () => {
  env = await cliEnvironment(t, 'sds-cli-clients-')
})

t.test('client create, list, rotate-secret and revoke', async (t) => {
  const schoolId = lastLine((await cli(['school', 'create', '--name', 'Client Academy'])).stdout)
  // A scope in OneRoster's full form is taken as its short name.
  const created = await cli(['client', 'create', '--school', schoolId, '--name', 'SIS sync', '--scope', 'roster-core.readonly',
    '--scope', 'https://purl.imsglobal.org/spec/or/v1p2/scope/roster-demographics.readonly'])
  t.equal(created.code, 0, created.stderr)
  const clientId = lastLine(created.stdout)
  t.match(clientId, UUID, 'the id alone on the last line')
  const secret = secretOf(created.stdout)
  t.match(secret, /^[A-Za-z0-9_-]{43}$/, 'the secret, once')
  t.match(created.stderr, /shown only now/)

  const listed = await cli(['client', 'list', '--school', schoolId])
  t.equal(listed.code, 0, listed.stderr)
  t.match(listed.stdout, new RegExp(`^${clientId} school=${schoolId} scopes=roster-core.readonly,roster-demographics.readonly secrets=1 active name="SIS sync"\\n$`))
  t.notOk(listed.stdout.includes(secret), 'list never shows a secret')
  const json = await cli(['client', 'list', '--json'])
  t.match(json.stdout.trimEnd().split('\n').map((line) => JSON.parse(line)), [{ id: clientId, schoolId, name: 'SIS sync', scopes: ['roster-core.readonly', 'roster-demographics.readonly'], revokedAt: null, liveSecrets: 1 }])

  const rotated = await cli(['client', 'rotate-secret', clientId])
  t.equal(rotated.code, 0, rotated.stderr)
  const second = secretOf(rotated.stdout)
  t.match(second, /^[A-Za-z0-9_-]{43}$/)
  t.not(second, secret)
  t.equal(lastLine(rotated.stdout), clientId)
  t.match(rotated.stderr, /The previous secret works until \d{4}-/)
  t.match((await cli(['client', 'list'])).stdout, / secrets=2 active /, 'both secrets live during the overlap')
  const cut = await cli(['client', 'rotate-secret', clientId, '--overlap', '0'])
  t.equal(cut.code, 0, cut.stderr)
  const third = secretOf(cut.stdout)
  t.match((await cli(['client', 'list'])).stdout, / secrets=1 active /, 'overlap 0: only the newest')

  if (env.DATABASE_URL !== undefined) {
    // The same client through the API (the embedded database belongs to the CLI's process otherwise).
    const app = await build(t)
    const ok = await tokenRequest(app, { grant_type: 'client_credentials' }, { authorization: basic(clientId, third) })
    t.equal(ok.statusCode, 200, JSON.stringify(ok.body))
    t.equal(ok.body.scope, 'roster-core.readonly roster-demographics.readonly')
    t.notOk((await gql(app, '{ students { dateOfBirth } }', { token: String(ok.body.access_token) })).body.errors)
    t.equal((await tokenRequest(app, { grant_type: 'client_credentials' }, { authorization: basic(clientId, second) })).statusCode, 401, 'the cut secret')
  }

  const revoked = await cli(['client', 'revoke', clientId])
  t.equal(revoked.code, 0, revoked.stderr)
  t.match(revoked.stderr, new RegExp(`Revoked client ${clientId}`))
  t.match((await cli(['client', 'list', '--school', schoolId])).stdout, / revoked=\d{4}-/)
  t.match((await cli(['client', 'rotate-secret', clientId])).stderr, /is revoked/)
})

t.test('client commands refuse unknown schools, scopes and clients clearly', async (t) => {
  const schoolId = lastLine((await cli(['school', 'create', '--name', 'Refusing Academy'])).stdout)
  const nobody = '01900000-0000-7000-8000-000000000000'
  const cases: Array<[string[], RegExp]> = [
    [['client', 'create', '--school', nobody, '--name', 'X', '--scope', 'roster.readonly'], /School 01900000-0000-7000-8000-000000000000 does not exist/],
    [['client', 'create', '--school', 'not-a-uuid', '--name', 'X', '--scope', 'roster.readonly'], /is not a UUID/],
    [['client', 'create', '--school', schoolId, '--name', 'X', '--scope', 'roster.write'], /Unknown scope "roster.write": one of roster-core.readonly, roster.readonly, roster-demographics.readonly/],
    [['client', 'create', '--school', schoolId, '--name', 'X'], /Give at least one --scope/],
    [['client', 'create', '--school', schoolId, '--name', ' ', '--scope', 'roster.readonly'], /Client name must not be empty/],
    [['client', 'rotate-secret', nobody], /Client 01900000-0000-7000-8000-000000000000 does not exist/],
    [['client', 'rotate-secret', nobody, '--overlap', 'soon'], /--overlap must be a number of hours/],
    [['client', 'revoke', 'nope'], /Client id "nope" is not a UUID/],
    [['client', 'list', '--school', 'nope'], /School id "nope" is not a UUID/]
  ]
  for (const [args, message] of cases) {
    const run = await cli(args)
    t.equal(run.code, 1, args.join(' '))
    t.match(run.stderr, message, args.join(' '))
    t.equal(run.stdout, '', `${args.join(' ')}: nothing on standard output`)
  }
})
