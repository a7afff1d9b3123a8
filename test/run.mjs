// `npm test`'s suites, after the checks and the build (package.json): every test file on the
// PostgreSQL server of TEST_DATABASE_URL (or DATABASE_URL) when one is named and, at the same time,
// on the embedded PGlite the files whose behaviour depends on the database; with no server, every
// file on PGlite. Files given as arguments narrow both runs; `--coverage` (npm run test:coverage)
// has the first run collect coverage and print its summary. Exits non-zero when any run failed.
import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { availableParallelism } from 'node:os'

/**
 * Test files that run once, on PostgreSQL when there is one, with why. Every other file runs on both
 * (a subtest of one of those that does not depend on the engine skips itself in the PGlite run
 * beside a PostgreSQL run: engineIndependentSkip in test/helper.ts).
 */
const ONCE = new Map([
  // Their behaviour does not depend on the database engine: HTTP, GraphQL over HTTP, clients and
  // browsers, the schema, configuration, documentation, counters in memory or Redis, the OneRoster
  // OpenAPI description.
  ...[
    'test/architecture.test.ts', 'test/bench-layers.test.ts', 'test/clients.test.ts', 'test/config.test.ts', 'test/contracts/fastify-close-order.test.ts',
    'test/cors-browser.test.ts', 'test/docs.test.ts', 'test/docs-examples.test.ts', 'test/example-consumer.test.ts', 'test/graphiql.test.ts',
    'test/graphql-over-http.test.ts', 'test/graphql-route-hooks.test.ts', 'test/http-refusals.test.ts',
    'test/login-throttle.test.ts', 'test/logs.test.ts', 'test/metrics.test.ts', 'test/migration-scripts.test.ts', 'test/oneroster-docs.test.ts', 'test/oneroster-openapi.test.ts',
    'test/persisted-queries.test.ts',
    'test/query-limits.test.ts', 'test/rate-limit.test.ts', 'test/scalars.test.ts', 'test/schema-compat.test.ts',
    'test/schema-descriptions.test.ts', 'test/schema-route.test.ts', 'test/server-flags.test.ts'
  ].map((file) => [file, 'engine-independent']),
  // It diffs and applies the migrations on PGlite databases of its own whatever TEST_DATABASE_URL
  // says (its PostgreSQL subtest skips itself without a server).
  ['test/migrations.test.ts', 'its own PGlite databases'],
  // The command line's options and answers, dozens of commands each opening the embedded database
  // anew (seconds apiece on PGlite): what they run on the database is the record
  // writes and the administration code (src/records/, src/admin/), which the in-process tests
  // exercise on PGlite too (ids-case, seed, import, the helpers' seeding), and test/cli.test.ts
  // runs the command on PGlite.
  ...['test/cli-assignments.test.ts', 'test/cli-clients.test.ts', 'test/cli-records.test.ts', 'test/cli-roles.test.ts'].map((file) => [file, 'command line'])
])

/**
 * Test files each run runs at once: one per core. tap's own default leaves a core free (one job on
 * a two-core machine), and the files wait on a database, a child process or a socket much of the
 * time: with one job per run the two runs kept 1.5 of 2 cores busy (user + sys 23.5 CPU-minutes in
 * 16 minutes, 2026-11-28).
 */
const JOBS = Math.max(2, availableParallelism())

/**
 * Runs tap on `files`; resolves to whether it passed and, with `buffered`, to its output, kept to be
 * printed in one piece after the other run's, so that two runs at once do not interleave their lines.
 */
function run (name, files, env, buffered = false) {
  const header = `\n# ${name}: ${files.length} test files\n`
  if (files.length === 0) return Promise.resolve({ passed: true, output: '' })
  if (!buffered) process.stdout.write(header)
  // Coverage only when asked: V8's coverage costs each test process about 45% more CPU (paging +
  // students tests: 13.5-13.9 against 9.0-9.5 CPU-seconds, 2026-11-28), the largest single cost of
  // a CI run. The buffered run never collects it: tap keeps it in one folder (.tap/coverage), which
  // the other run's report reads at its end.
  const options = [`--jobs=${JOBS}`, ...(coverage && !buffered ? [] : ['--disable-coverage'])]
  const tap = spawn('npx', ['tap', ...options, ...files], { stdio: ['ignore', buffered ? 'pipe' : 'inherit', buffered ? 'pipe' : 'inherit'], env: { ...process.env, ...env } })
  const chunks = []
  tap.stdout?.on('data', (chunk) => chunks.push(chunk))
  tap.stderr?.on('data', (chunk) => chunks.push(chunk))
  return new Promise((resolve) => {
    tap.on('close', (code) => resolve({ passed: code === 0, output: buffered ? header + Buffer.concat(chunks).toString() : '' }))
  })
}

const missing = [...ONCE.keys()].filter((file) => !existsSync(file))
if (missing.length > 0) {
  console.error(`test/run.mjs lists test files that do not exist: ${missing.join(', ')}`)
  process.exit(1)
}
const coverage = process.argv.includes('--coverage')
const given = process.argv.slice(2).filter((arg) => arg !== '--coverage')
const all = readdirSync('test', { recursive: true }).map((file) => `test/${file}`).filter((file) => file.endsWith('.test.ts')).sort()
const files = given.length > 0 ? given : all
const server = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || undefined
const embedded = { TEST_DATABASE_URL: '', DATABASE_URL: '' }
// The two runs go at once: the PGlite run opens no connection to the server, and each run's test
// files spend much of their time waiting on a database, a child process or a socket, so together
// they keep the cores busy where one after the other left them half idle. The PGlite run's output
// follows the PostgreSQL run's.
const results = server === undefined
  ? [await run('PGlite (no TEST_DATABASE_URL)', files, embedded)]
  : await Promise.all([
    run('PostgreSQL', files, { TEST_DATABASE_URL: server }),
    run('PGlite', files.filter((file) => !ONCE.has(file)), { ...embedded, TEST_BESIDE_POSTGRESQL: '1' }, true)
  ])
for (const { output } of results) process.stdout.write(output)
process.exit(results.every(({ passed }) => passed) ? 0 : 1)
