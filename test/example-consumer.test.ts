// The example consumer of examples/ as the README tells consumers to use it: GraphQL Code
// Generator's client preset against the SDL a running server publishes, the typed script compiled
// and run against that server, and the trusted-documents manifest of the same run accepted by a
// server in TRUSTED_DOCUMENTS mode. Generated in a temporary folder on every run, so it is never
// stale and the checkout is left as it was.
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { readDocumentManifest } from '../src/graphql/document-manifest.js'
import { PASSWORD, build, seedSchool } from './helper.js'

const run = promisify(execFile)
const root = resolve(import.meta.dirname, '..')
const bin = (path: string): string => join(root, 'node_modules', path)

t.test('the example consumer generates its documents from the published SDL, then logs in and prints every student', async (t) => {
  const app = await build(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/`
  const names = ['Ada Lovelace', 'Alan Turing', 'Grace Hopper', 'Edsger Dijkstra', 'Barbara Liskov', 'Donald Knuth', 'Frances Allen']
  const school = await seedSchool('Example School', names.map((name): [string] => [name]))

  const dir = mkdtempSync(join(tmpdir(), 'sds-example-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  cpSync(join(root, 'examples'), dir, { recursive: true, filter: (src) => !/[/\\](gql|dist)$/.test(src) })
  // As in a consumer's own project: ES modules, and the packages installed beside it.
  writeFileSync(join(dir, 'package.json'), '{ "private": true, "type": "module" }\n')
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir')
  const env = { ...process.env, SCHOOL_DATA_URL: url }

  await run(process.execPath, [bin('@graphql-codegen/cli/cjs/bin.js'), '--config', 'codegen.ts'], { cwd: dir, env })
  await run(process.execPath, [bin('typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: dir, env })
  const { stdout } = await run(process.execPath, [join('dist', 'list-students.js')], {
    cwd: dir,
    env: { ...env, SCHOOL_DATA_USERNAME: school.username, SCHOOL_DATA_PASSWORD: PASSWORD }
  })
  const lines = stdout.trim().split('\n').map((line) => line.split('\t'))
  t.same(lines.map(([id]) => id).sort(), [...school.studentIds].sort(), 'every student once')
  t.same(lines.map(([, name]) => name).sort(), [...names].sort())
  t.ok(lines.every(([, , status]) => status === 'ACTIVE'))

  // The writer: a student enrolled through Apollo Client with an idempotency key; the same request
  // again (a retry) answers the same and enrols nobody twice; the key with another body is refused.
  const writer = { ...env, SCHOOL_DATA_USERNAME: school.username, SCHOOL_DATA_PASSWORD: PASSWORD, SCHOOL_DATA_SOURCED_ID: 'sis-4711', SCHOOL_DATA_FULL_NAME: 'Katherine Johnson', SCHOOL_DATA_IDEMPOTENCY_KEY: 'enrol-sis-4711' }
  const enrolled = await run(process.execPath, [join('dist', 'enrol-student.js')], { cwd: dir, env: writer })
  const [studentId, sourcedId, fullName, version, key] = enrolled.stdout.trim().split('\t')
  t.same([sourcedId, fullName, version, key], ['sis-4711', 'Katherine Johnson', '1', 'enrol-sis-4711'])
  const retried = await run(process.execPath, [join('dist', 'enrol-student.js')], { cwd: dir, env: writer })
  t.equal(retried.stdout, enrolled.stdout, 'the retry gets the first answer: the same student')
  const reused = await run(process.execPath, [join('dist', 'enrol-student.js')], { cwd: dir, env: { ...writer, SCHOOL_DATA_FULL_NAME: 'Someone Else' } }).then(() => undefined, (e: { code: number, stderr: string }) => e)
  t.equal(reused?.code, 1)
  t.match(reused?.stderr, /^IDEMPOTENCY_KEY_REUSED: /, 'the same key with another body: the coded error')
  const again = await run(process.execPath, [join('dist', 'list-students.js')], { cwd: dir, env: { ...env, SCHOOL_DATA_USERNAME: school.username, SCHOOL_DATA_PASSWORD: PASSWORD } })
  t.equal(again.stdout.split('\n').filter((line) => line.startsWith(`${studentId!}\t`)).length, 1, 'enrolled once')

  // The manifest of the same run: what an operator deploys as TRUSTED_DOCUMENTS.
  const manifestPath = join(dir, 'gql', 'persisted-documents.json')
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Record<string, string>
  t.equal(Object.keys(manifest).length, 4, 'Login, StudentsPage, EnrolLogin and EnrolStudent')
  // Keyed by GraphQL over HTTP's document identifier, `sha256:<hex>`, which the documents carry too.
  for (const [id, document] of Object.entries(manifest)) t.equal(id, `sha256:${createHash('sha256').update(document).digest('hex')}`)
  const trusted = await build(t, { trustedDocuments: readDocumentManifest(manifestPath) })
  const loginId = Object.entries(manifest).find(([, document]) => document.includes('mutation Login'))![0]
  const res = await trusted.inject({ method: 'POST', url: '/', payload: { documentId: loginId, variables: { username: school.username, password: PASSWORD } } })
  t.equal(res.statusCode, 200, res.body)
  t.ok(res.json().data.login.accessToken, 'a trusted-documents server runs the generated Login by its hash')
})
