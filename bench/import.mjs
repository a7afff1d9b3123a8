// npm run bench:import — 100,000 students imported from a OneRoster 1.2 CSV bundle in under a
// minute? Generates the bundle (100k students, ~4k classes, ~5k teachers and their enrollments)
// into a temporary folder, creates a fresh database on the PostgreSQL server of BENCH_DATABASE_URL
// (default postgresql://postgres@127.0.0.1:5432/postgres; database sds_import_bench), migrates it,
// runs `school-data import oneroster` as a user would, then runs it again (a re-import that must
// change nothing), and prints the times and their ratio to the 60 s target.
//
//   BENCH_STUDENTS=100000 npm run bench:import
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'

const TARGET_SECONDS = 60
const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres'
const students = Number(process.env.BENCH_STUDENTS ?? 100_000)
const database = 'sds_import_bench'
const bin = fileURLToPath(new URL('../bin/school-data.js', import.meta.url))

// Deterministic data: the same bundle on every run.
let seed = 42
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
  return seed / 2_147_483_648
}
const pick = (list) => list[Math.floor(random() * list.length)]
const GIVEN = ['Ada', 'Alan', 'Grace', 'Katherine', 'Edsger', 'Barbara', 'Donald', 'Frances', 'John', 'Radia', 'Tim', 'Margaret', 'Ken', 'Dennis', 'Hedy', 'Linus', 'Sophie', 'Mateo', 'Aisha', 'Wei', 'Priya', 'Omar', 'Lena', 'Yuki']
const FAMILY = ['Lovelace', 'Turing', 'Hopper', 'Johnson', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'McCarthy', 'Perlman', 'Berners-Lee', 'Hamilton', 'Thompson', 'Ritchie', 'Lamarr', 'Torvalds', 'Wilson', 'Garcia', 'Khan', 'Chen', 'Patel', 'Haddad', 'Novak', 'Sato']
const GRADES = ['KG', '01', '02', '03', '04', '05', '06', '07', '08', '09', '10', '11', '12']

const csv = (rows) => rows.map((r) => r.map((v) => /[",\n]/.test(String(v)) ? `"${String(v).replaceAll('"', '""')}"` : v).join(',')).join('\n') + '\n'

function writeBundle (dir) {
  const classCount = Math.max(1, Math.round(students / 25))
  const teacherCount = Math.max(1, Math.round(students / 20))
  const users = [['sourcedId', 'status', 'dateLastModified', 'enabledUser', 'username', 'userIds', 'givenName', 'familyName', 'middleName', 'identifier', 'email', 'sms', 'phone', 'agentSourcedIds', 'grades', 'password', 'userMasterIdentifier', 'resourceSourcedIds', 'preferredGivenName', 'preferredMiddleName', 'preferredFamilyName', 'primaryOrgSourcedId', 'pronouns']]
  const roles = [['sourcedId', 'status', 'dateLastModified', 'userSourcedId', 'roleType', 'role', 'beginDate', 'endDate', 'orgSourcedId', 'userProfileSourcedId']]
  const classes = [['sourcedId', 'status', 'dateLastModified', 'title', 'grades', 'courseSourcedId', 'classCode', 'classType', 'location', 'schoolSourcedId', 'termSourcedIds', 'subjects', 'subjectCodes', 'periods']]
  const enrollments = [['sourcedId', 'status', 'dateLastModified', 'classSourcedId', 'schoolSourcedId', 'userSourcedId', 'role', 'primary', 'beginDate', 'endDate']]
  const demographics = [['sourcedId', 'status', 'dateLastModified', 'birthDate', 'sex']]
  for (let c = 0; c < classCount; c++) {
    classes.push([`class-${c}`, '', '', `Section ${c}`, GRADES[c % GRADES.length], 'course-1', `S${c}`, 'homeroom', '', 'org-1', 'term-1', 'Homeroom', '', ''])
  }
  for (let t = 0; t < teacherCount; t++) {
    const given = pick(GIVEN)
    const family = pick(FAMILY)
    users.push([`teacher-${t}`, '', '', 'true', `t${t}`, '', given, family, '', `T${t}`, `t${t}@bench.example`, '', '', '', '', '', '', '', '', '', '', 'org-1', ''])
    roles.push([`role-t${t}`, '', '', `teacher-${t}`, 'primary', 'teacher', '', '', 'org-1', ''])
    // Teachers beyond one per class assist.
    enrollments.push([`enr-t${t}`, '', '', `class-${t % classCount}`, 'org-1', `teacher-${t}`, 'teacher', t < classCount ? 'true' : 'false', '2026-09-01', '2027-06-15'])
  }
  for (let s = 0; s < students; s++) {
    const c = s % classCount
    users.push([`student-${s}`, '', '', 'true', `s${s}`, '', pick(GIVEN), pick(FAMILY), '', `${100000 + s}`, `s${s}@students.bench.example`, '', '', '', GRADES[c % GRADES.length], '', '', '', '', '', '', 'org-1', ''])
    roles.push([`role-s${s}`, '', '', `student-${s}`, 'primary', 'student', '', '', 'org-1', ''])
    enrollments.push([`enr-s${s}`, '', '', `class-${c}`, 'org-1', `student-${s}`, 'student', 'false', '2026-09-01', '2027-06-15'])
    demographics.push([`student-${s}`, '', '', `${2008 + (s % 12)}-0${1 + (s % 9)}-1${s % 10}`, pick(['female', 'male'])])
  }
  const manifest = [['propertyName', 'value'], ['manifest.version', '1.0'], ['oneroster.version', '1.2'],
    ['file.users', 'bulk'], ['file.roles', 'bulk'], ['file.classes', 'bulk'], ['file.enrollments', 'bulk'], ['file.demographics', 'bulk'],
    ['file.orgs', 'absent'], ['file.academicSessions', 'absent'], ['file.courses', 'absent']]
  for (const [name, rows] of Object.entries({ manifest, users, roles, classes, enrollments, demographics })) {
    writeFileSync(join(dir, `${name}.csv`), csv(rows))
  }
  return { classCount, teacherCount, enrollmentCount: enrollments.length - 1 }
}

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
  const shape = writeBundle(dir)
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
