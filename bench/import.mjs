// npm run bench:import — 100,000 students imported from a OneRoster 1.2 CSV bundle in under a
// minute? Generates the bundle (100k students, ~4k classes, ~5k teachers and their enrollments)
// into a temporary folder, creates a fresh database on the PostgreSQL server of BENCH_DATABASE_URL
// (default postgresql://postgres@127.0.0.1:5432/postgres; database sds_import_bench), migrates it,
// runs `school-data import oneroster` as a user would, then runs it again (a re-import that must
// change nothing), and prints the times and their ratio to the 60 s target.
//
//   BENCH_STUDENTS=100000 npm run bench:import
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { writeBundle } from './bundle.mjs'

const TARGET_SECONDS = 60
const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres'
const students = Number(process.env.BENCH_STUDENTS ?? 100_000)
const database = 'sds_import_bench'
const bin = fileURLToPath(new URL('../bin/school-data.js', import.meta.url))

async function admin (url, run) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try { return await run(client) } finally { await client.end() }
}

function cli (args, env) {
  const started = process.hrtime.bigint()
  const run = spawnSync(process.execPath, [bin, ...args], { env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  if (run.status !== 0) throw new Error(`school-data ${args.join(' ')} failed (${run.status}):\n${run.stderr}`)
  return { seconds, stdout: run.stdout }
}

const dir = mkdtempSync(join(tmpdir(), 'sds-import-bench-'))
try {
  process.stderr.write(`Generating a bundle of ${students.toLocaleString('en')} students in ${dir} ...\n`)
  const shape = writeBundle(dir, students)
  const dbUrl = new URL(serverUrl)
  dbUrl.pathname = '/' + database
  await admin(serverUrl, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    await c.query(`CREATE DATABASE ${database}`)
  })
  const env = { PATH: process.env.PATH, DATABASE_URL: dbUrl.toString(), LOG_LEVEL: 'silent' }
  execFileSync(process.execPath, [bin, 'migrate'], { env, stdio: ['ignore', 'ignore', 'inherit'] })
  const school = cli(['school', 'create', '--name', 'Import Bench High'], env).stdout.trim().split('\n').at(-1)

  const first = cli(['import', 'oneroster', dir, '--school', school, '--json'], env)
  const second = cli(['import', 'oneroster', dir, '--school', school, '--json'], env)
  const [firstSummary, secondSummary] = [JSON.parse(first.stdout), JSON.parse(second.stdout)]
  const counts = await admin(dbUrl.toString(), async (c) => (await c.query(
    'SELECT (SELECT count(*) FROM students)::int AS students, (SELECT count(*) FROM changes)::int AS changes')).rows[0])
  if (counts.students !== students) throw new Error(`expected ${students} students in the database, found ${counts.students}`)
  const untouched = ['classrooms', 'teachers', 'students', 'teacherAssignments'].every((k) => secondSummary[k].created === 0 && secondSummary[k].updated === 0)
  if (!untouched) throw new Error(`the re-import changed rows: ${second.stdout}`)

  const line = (label, s) => `${label.padEnd(22)} ${s.toFixed(1).padStart(6)} s   ${(s / TARGET_SECONDS * 100).toFixed(0).padStart(3)}% of the ${TARGET_SECONDS} s target`
  process.stdout.write([
    `Bundle: ${students.toLocaleString('en')} students, ${shape.teacherCount.toLocaleString('en')} teachers, ${shape.classCount.toLocaleString('en')} classes, ${shape.enrollmentCount.toLocaleString('en')} enrollments (OneRoster 1.2 CSV)`,
    `Database: ${database} on ${dbUrl.host} (the CLI as a user runs it: a new process each time, timed from start to exit)`,
    line('first import', first.seconds) + `   created ${firstSummary.students.created} students`,
    line('re-import (no change)', second.seconds) + `   ${secondSummary.students.unchanged} students unchanged, 0 rows written`,
    `Change feed entries after both runs: ${counts.changes.toLocaleString('en')}`,
    first.seconds < TARGET_SECONDS ? 'PASS: under the target' : 'FAIL: over the target',
    ''
  ].join('\n'))
  if (first.seconds >= TARGET_SECONDS) process.exitCode = 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
