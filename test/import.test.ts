// `school-data import oneroster` as a user runs it (in process, through the CLI's main) on this file's database
// (PostgreSQL as the service role, or an embedded database in a temporary folder), with OneRoster
// CSV bundles generated here, as folders and as zip files.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { strToU8, zipSync } from 'fflate'
import t from 'tap'
import { bundleWriter, csv, type Files } from './fixtures/csv-bundle.js'
import { openDatabase, type Database } from '../src/db/client.js'
import { engineIndependentSkip, serverUrl, serviceConnection, testDatabase, testDatabaseUrl, unlessCitus } from './helper.js'
import { runCli, type CliRun } from './fixtures/cli.js'
import { inSchoolTransaction } from '../src/import/connection.js'
import { importOneRoster } from '../src/import/index.js'
import { emptyPlan } from '../src/import/oneroster.js'
import { writePlan, type Sql } from '../src/import/write.js'

// Some thirty CLI processes, each opening the database anew; a busy machine takes its time (over
// 600 s on PGlite while other suites ran).
t.setTimeout(1_200_000)

type Run = CliRun

let env: NodeJS.ProcessEnv
let dataDir: string
let work: string

const cli = async (args: string[]): Promise<CliRun> => await runCli(args, env)
const lastLine = (text: string): string => text.trimEnd().split('\n').at(-1) ?? ''

/** Reads the database the CLI writes to (the embedded one only while no CLI process holds it). */
async function inspect<T> (read: (db: Database) => Promise<T>): Promise<T> {
  if (env.DATABASE_URL !== undefined) return await read(await testDatabase())
  const db = await openDatabase({ dataDir, migrate: false })
  try {
    return await read(db)
  } finally {
    await db.close()
  }
}

/** A small OneRoster 1.2 bundle: two classes, three students, two teachers, a parent (Ada's and Alan's) and an administrator. */
function bundle12 (): Files {
  return {
    manifest: [['propertyName', 'value'], ['manifest.version', '1.0'], ['oneroster.version', '1.2'],
      ['file.users', 'bulk'], ['file.roles', 'bulk'], ['file.classes', 'bulk'], ['file.enrollments', 'bulk'],
      ['file.demographics', 'bulk'], ['file.orgs', 'absent']],
    users: [
      ['sourcedId', 'status', 'dateLastModified', 'enabledUser', 'username', 'userIds', 'givenName', 'familyName', 'middleName', 'identifier', 'email', 'sms', 'phone', 'agentSourcedIds', 'grades', 'password', 'userMasterIdentifier', 'resourceSourcedIds', 'preferredGivenName', 'preferredMiddleName', 'preferredFamilyName', 'primaryOrgSourcedId', 'pronouns'],
      ['stu-1', 'active', '2026-08-01T00:00:00Z', 'true', 'ada', '{Fed:1234},{State:NY-55:1}', 'Ada', 'Lovelace', 'Augusta', '1001', 'ada@example.org', '+15550001', '555-0001', 'par-1', '03', '', '', '', 'Addie', 'Gus', 'King', 'org-1', 'she/her'],
      ['stu-2', '', '', 'true', 'alan', '', 'Alan', 'Turing', '', '1002', '', '', '', '', 'KG', '', '', '', '', '', '', 'org-1', ''],
      ['stu-3', '', '', 'false', 'kat', '', 'Katherine', 'Johnson', '', '1003', '', '', '', '', 'Other', '', '', '', '', '', '', 'org-1', ''],
      ['tea-1', '', '', 'true', 'grace', 'District:G-1', 'Grace', 'Hopper', 'Brewster', 'T1', 'grace@example.org', '', '555-0101', '', '', '', '', '', '', '', '', 'org-1', ''],
      ['tea-2', '', '', 'true', 'edsger', '', 'Edsger', 'Dijkstra', '', 'T2', '', '', '', '', '', '', '', '', '', '', '', 'org-1', ''],
      ['par-1', '', '', 'true', 'parent', '{Family:F-7}', 'Pat', 'Lovelace', 'Q', '', 'pat@example.org', '+15550009', '555-0009', 'stu-2', '', '', '', '', '', '', '', 'org-1', 'they/them'],
      ['adm-1', '', '', 'true', 'admin', '', 'Ann', 'Admin', '', '', '', '', '', '', '', '', '', '', '', '', '', 'org-1', '']
    ],
    roles: [
      ['sourcedId', 'status', 'dateLastModified', 'userSourcedId', 'roleType', 'role', 'beginDate', 'endDate', 'orgSourcedId', 'userProfileSourcedId'],
      ['r1', '', '', 'stu-1', 'primary', 'student', '', '', 'org-1', ''],
      ['r2', '', '', 'stu-2', 'primary', 'student', '', '', 'org-1', ''],
      ['r3', '', '', 'stu-3', 'primary', 'student', '', '', 'org-1', ''],
      ['r4', '', '', 'tea-1', 'primary', 'teacher', '', '', 'org-1', ''],
      ['r5', '', '', 'tea-2', 'primary', 'teacher', '', '', 'org-1', ''],
      ['r6', '', '', 'par-1', 'primary', 'parent', '', '', 'org-1', ''],
      ['r7', '', '', 'adm-1', 'primary', 'administrator', '', '', 'org-1', '']
    ],
    classes: [
      ['sourcedId', 'status', 'dateLastModified', 'title', 'grades', 'courseSourcedId', 'classCode', 'classType', 'location', 'schoolSourcedId', 'termSourcedIds', 'subjects', 'subjectCodes', 'periods'],
      ['cls-1', '', '', 'Room 3', '03', 'c1', 'R3', 'homeroom', '', 'org-1', 't1', 'Homeroom', '', ''],
      ['cls-2', '', '', 'Math 3', '03,04', 'c2', 'M3', 'scheduled', '', 'org-1', 't1', 'Mathematics,Geometry', '', '']
    ],
    enrollments: [
      ['sourcedId', 'status', 'dateLastModified', 'classSourcedId', 'schoolSourcedId', 'userSourcedId', 'role', 'primary', 'beginDate', 'endDate'],
      ['e1', '', '', 'cls-2', 'org-1', 'stu-1', 'student', 'false', '2026-09-01', '2027-06-15'],
      ['e2', '', '', 'cls-1', 'org-1', 'stu-1', 'student', 'false', '2026-09-02', '2027-06-14'],
      ['e3', '', '', 'cls-2', 'org-1', 'stu-2', 'student', 'false', '2026-09-01', ''],
      ['e4', '', '', 'cls-1', 'org-1', 'tea-1', 'teacher', 'true', '', ''],
      ['e5', '', '', 'cls-1', 'org-1', 'tea-2', 'teacher', 'false', '', ''],
      ['e6', '', '', 'cls-2', 'org-1', 'tea-2', 'teacher', 'true', '', '']
    ],
    demographics: [
      ['sourcedId', 'status', 'dateLastModified', 'birthDate', 'sex'],
      ['stu-1', '', '', '2017-12-10', 'female'],
      ['par-1', '', '', '1980-01-01', 'male']
    ]
  }
}

const writeFolder = bundleWriter(() => work)

let zips = 0
function writeZip (files: Files): string {
  const path = join(work, `bundle-${++zips}.zip`)
  // Zipped the way "compress folder" does it: the files inside a folder.
  writeFileSync(path, zipSync(Object.fromEntries(Object.entries(files).map(([name, rows]) => [`oneroster/${name}.csv`, strToU8(csv(rows))]))))
  return path
}

async function newSchool (name: string): Promise<string> {
  const run = await cli(['school', 'create', '--name', name])
  if (run.code !== 0) throw new Error(run.stderr)
  return run.stdout.trim().split('\n').at(-1)!
}

async function importJson (path: string, school: string, ...extra: string[]): Promise<Run & { summary: Record<string, any> }> {
  const run = await cli(['import', 'oneroster', path, '--school', school, '--json', ...extra])
  return { ...run, summary: run.code === 0 ? JSON.parse(run.stdout) : {} }
}

/** Everything an import may write for a school, in a stable order. */
async function snapshot (schoolId: string): Promise<Record<string, unknown>> {
  return await inspect(async (db) => {
    const tenant = db.forSchool(schoolId)
    return {
      students: await tenant.student.findMany({ orderBy: { sourcedId: 'asc' }, include: { classroom: { select: { name: true } } } }),
      teachers: await tenant.teacher.findMany({ orderBy: { sourcedId: 'asc' }, include: { classrooms: { select: { role: true, sourcedId: true, beginDate: true, endDate: true, updatedAt: true, classroom: { select: { name: true } } }, orderBy: { classroomId: 'asc' } } } }),
      classrooms: await tenant.classroom.findMany({ orderBy: { sourcedId: 'asc' } }),
      agents: await tenant.agent.findMany({ orderBy: { sourcedId: 'asc' } }),
      changes: await tenant.change.findMany({ orderBy: { seq: 'asc' }, select: { seq: true, type: true, recordType: true, sourcedId: true } })
    }
  })
}

const counts = (created: number, updated: number, unchanged: number, removed = 0): { created: number, updated: number, unchanged: number, removed: number } =>
  ({ created, updated, unchanged, removed })

/** The rows of a file but those whose column `column` (default: the sourcedId) is one of `ids`; the header stays. */
const without = (rows: string[][], ids: string[], column = 0): string[][] => rows.filter((r, i) => i === 0 || !ids.includes(r[column]!))

/** The school's change feed entries after the first `from`, as "TYPE RECORD sourcedId", sorted. */
const feedAfter = (snap: any, from: number): string[] =>
  snap.changes.slice(from).map((c: any) => `${c.type} ${c.recordType} ${c.sourcedId ?? '-'}`).sort()

/** bundle12 as a delta: the manifest marks `files` delta and every other file absent; rows are given by the test. */
function delta (files: Record<string, string[][]>): Files {
  const modes = ['users', 'roles', 'classes', 'enrollments', 'demographics'].map((name) => [`file.${name}`, name in files ? 'delta' : 'absent'])
  return {
    manifest: [['propertyName', 'value'], ['manifest.version', '1.0'], ['oneroster.version', '1.2'], ...modes, ['file.orgs', 'absent']],
    ...files
  }
}

const MODIFIED = '2026-10-01T08:00:00Z'

t.before(async () => {
  const url = await testDatabaseUrl()
  work = mkdtempSync(join(tmpdir(), 'sds-import-'))
  dataDir = join(work, 'data')
  t.teardown(() => rmSync(work, { recursive: true, force: true }))
  env = { PATH: process.env.PATH, DATA_DIR: dataDir, ...(url !== undefined && { DATABASE_URL: url }) }
})

t.test('a OneRoster 1.2 folder is imported; a second run changes nothing; a changed row is updated', async (t) => {
  const school = await newSchool('Import Academy')
  const files = bundle12()
  const folder = writeFolder(files)

  const first = await cli(['import', 'oneroster', folder, '--school', school])
  t.equal(first.code, 0, first.stderr)
  t.match(first.stdout, /students\s+3 created\s+0 updated\s+0 unchanged/)
  t.match(first.stdout, /teacher assignments\s+3 created/)
  t.match(first.stdout, /skipped: 1 users of other roles/)
  t.equal(first.stderr, '', 'no progress bar when standard error is not a terminal')

  const after = await snapshot(school) as any
  t.same(after.students.map((s: any) => [s.sourcedId, s.fullName, s.givenName, s.familyName, s.preferredName, s.studentNumber, s.email, s.gradeLevel, s.status, s.classroom?.name ?? null]), [
    ['stu-1', 'Ada Lovelace', 'Ada', 'Lovelace', 'Addie', '1001', 'ada@example.org', 'GRADE_3', 'ACTIVE', 'Room 3'],
    ['stu-2', 'Alan Turing', 'Alan', 'Turing', null, '1002', null, 'KINDERGARTEN', 'ACTIVE', 'Math 3'],
    ['stu-3', 'Katherine Johnson', 'Katherine', 'Johnson', null, '1003', null, 'UNGRADED', 'INACTIVE', null]
  ], 'students, each in its homeroom class or else its first class')
  const ada = after.students[0]
  t.equal(ada.dateOfBirth.toISOString().slice(0, 10), '2017-12-10', 'birth date from demographics.csv')
  const details = (x: any): unknown[] => [x.sourcedId, x.username, x.userIds, x.middleName, x.preferredMiddleName, x.preferredLastName, x.pronouns, x.sms, x.phone]
  t.same([...after.students, ...after.teachers].map(details), [
    ['stu-1', 'ada', ['Fed:1234', 'State:NY-55:1'], 'Augusta', 'Gus', 'King', 'she/her', '+15550001', '555-0001'],
    ['stu-2', 'alan', [], null, null, null, null, null, null],
    ['stu-3', 'kat', [], null, null, null, null, null, null],
    ['tea-1', 'grace', ['District:G-1'], 'Brewster', null, null, null, null, '555-0101'],
    ['tea-2', 'edsger', [], null, null, null, null, null, null]
  ], "users.csv's username, userIds, middle and preferred names, pronouns, sms and phone, as given; none is filled in")
  t.equal(ada.enrollmentStartDate.toISOString().slice(0, 10), '2026-09-02', 'enrollment dates of the homeroom enrollment')
  t.equal(ada.enrollmentEndDate.toISOString().slice(0, 10), '2027-06-14')
  t.same(after.students.map((s: any) => s.enrollmentSourcedId), ['e2', 'e3', null], "each student keeps the sourcedId of the enrollment that placed them (OneRoster's enrollments)")
  t.same(after.teachers.map((x: any) => x.classrooms.map((c: any) => `${c.classroom.name}:${c.sourcedId}`).sort()), [['Room 3:e4'], ['Math 3:e6', 'Room 3:e5']],
    "each assignment keeps its enrollment's sourcedId")
  t.same(after.teachers.flatMap((x: any) => x.classrooms.map((c: any) => [c.beginDate, c.endDate])), [[null, null], [null, null], [null, null]])
  t.same(after.teachers.map((x: any) => [x.sourcedId, x.fullName, x.email, x.classrooms.map((c: any) => `${c.classroom.name}:${c.role}`).sort()]), [
    ['tea-1', 'Grace Hopper', 'grace@example.org', ['Room 3:PRIMARY']],
    ['tea-2', 'Edsger Dijkstra', null, ['Math 3:PRIMARY', 'Room 3:ASSISTANT']]
  ])
  t.same(after.classrooms.map((c: any) => [c.sourcedId, c.name, c.gradeLevel, c.subject]), [
    ['cls-1', 'Room 3', 'GRADE_3', 'Homeroom'],
    ['cls-2', 'Math 3', null, 'Mathematics, Geometry']
  ], 'one grade gives the level; several give none')
  const studentKey = new Map(after.students.map((s: any) => [s.id, s.sourcedId]))
  t.same(after.agents.map((a: any) => [a.sourcedId, a.role, a.givenName, a.familyName, a.middleName, a.username, a.userIds, a.email, a.sms, a.phone, a.pronouns, a.status,
    a.studentIds.map((id: string) => studentKey.get(id))]), [
    ['par-1', 'parent', 'Pat', 'Lovelace', 'Q', 'parent', ['Family:F-7'], 'pat@example.org', '+15550009', '555-0009', 'they/them', 'ACTIVE', ['stu-1', 'stu-2']]
  ], "the parent is kept as an agent of Ada (her row's agentSourcedIds) and of Alan (the parent's row's): linked both ways")
  t.match(first.stdout, /agents\s+1 created/)
  const created = after.changes.filter((c: any) => c.type === 'CREATED').map((c: any) => c.sourcedId).sort()
  t.same(created, ['cls-1', 'cls-2', 'stu-1', 'stu-2', 'stu-3', 'tea-1', 'tea-2'], 'one CREATED entry per record')

  const second = await importJson(folder, school)
  t.equal(second.code, 0, second.stderr)
  t.same(second.summary.students, counts(0, 0, 3))
  t.same(second.summary.teachers, counts(0, 0, 2))
  t.same(second.summary.classrooms, counts(0, 0, 2))
  t.same(second.summary.agents, counts(0, 0, 1))
  t.same(second.summary.teacherAssignments, counts(0, 0, 3))
  t.same(await snapshot(school), after, 'the second run wrote nothing: same rows, same updatedAt, no change feed entry')

  // Alan moves to grade 1 and changes his family name; Grace becomes an assistant.
  files.users![2]![7] = 'Turing-Smith'
  files.users![2]![14] = '01'
  files.enrollments![4]![7] = 'false'
  files.enrollments![4]![8] = '2026-09-05'
  const third = await importJson(writeFolder(files), school)
  t.equal(third.code, 0, third.stderr)
  t.same(third.summary.students, counts(0, 1, 2))
  t.same(third.summary.teacherAssignments, counts(0, 1, 2))
  t.same(third.summary.classrooms, counts(0, 0, 2))
  const changed = await snapshot(school) as any
  const alan = changed.students[1]
  t.equal(alan.fullName, 'Alan Turing-Smith', 'the derived full name follows the names')
  t.equal(alan.gradeLevel, 'GRADE_1')
  t.ok(alan.updatedAt > after.students[1].updatedAt)
  t.same(changed.students[0], after.students[0], 'the other students are untouched')
  const grace = changed.teachers[0].classrooms[0]
  t.same([grace.role, grace.sourcedId, grace.beginDate.toISOString().slice(0, 10)], ['ASSISTANT', 'e4', '2026-09-05'], "the assignment takes the enrollment's role and begin date")
  t.ok(grace.updatedAt > after.teachers[0].classrooms[0].updatedAt, "the assignment's dateLastModified moves")
  const added = changed.changes.slice(after.changes.length).map((c: any) => `${c.type} ${c.recordType} ${c.sourcedId}`).sort()
  t.same(added, ['UPDATED STUDENT stu-2', 'UPDATED TEACHER tea-1'], 'the change feed has exactly the two updates')
})

t.test('a zip of a OneRoster 1.1 bundle (role in users.csv) is imported', async (t) => {
  const school = await newSchool('Zip Academy')
  const files = bundle12()
  // 1.1: users.csv carries the role; there is no roles.csv.
  const role = new Map(files.roles!.slice(1).map((r) => [r[3]!, r[5]!]))
  files.users = files.users!.map((r, i) => [...r.slice(0, 5), i === 0 ? 'role' : role.get(r[0]!)!, ...r.slice(5, 17)])
  delete files.roles
  files.manifest = files.manifest!.filter((r) => r[0] !== 'file.roles').map((r) => r[0] === 'oneroster.version' ? [r[0], '1.1'] : r)
  const zip = writeZip(files)
  const run = await importJson(zip, school)
  t.equal(run.code, 0, run.stderr)
  t.same(run.summary.students, counts(3, 0, 0))
  t.same(run.summary.teachers, counts(2, 0, 0))
  t.equal(run.summary.skippedUsers, 1)
  const again = await importJson(zip, school)
  t.same(again.summary.students, counts(0, 0, 3), 'a second run changes nothing')
})

t.test('a bad row stops the import with file:line: reason, and nothing is written', { skip: engineIndependentSkip }, async (t) => {
  const school = await newSchool('Careful Academy')
  const good = await importJson(writeFolder(bundle12()), school)
  t.equal(good.code, 0, good.stderr)
  const before = await snapshot(school)

  const cases: Array<[string, (f: Files) => void, RegExp]> = [
    ['unknown grade', (f) => { f.users![3]![14] = '14' }, /^error: users\.csv:4: grade "14" is not a OneRoster grade/m],
    ['missing sourcedId', (f) => { f.users![5]![0] = '' }, /^error: users\.csv:6: sourcedId is empty/m],
    ['enrollment to an unknown class', (f) => { f.enrollments![3]![3] = 'cls-404' }, /^error: enrollments\.csv:4: class "cls-404" is neither in classes\.csv nor in the school/m],
    ['bad date', (f) => { f.demographics![1]![3] = '2017-02-30' }, /^error: demographics\.csv:2: birthDate "2017-02-30" is not a date/m],
    ['bad userIds', (f) => { f.users![2]![5] = '{Fed}' }, /^error: users\.csv:3: userIds: "Fed" is not \{type:identifier\}/m],
    ['unknown sex', (f) => { f.demographics![1]![4] = 'M' }, /^error: demographics\.csv:2: sex "M" is not one of male, female, unspecified, other or an extension ext:name/m],
    ["a teacher's unknown sex", (f) => { f.demographics!.push(['tea-1', '', '', '', 'X']) }, /^error: demographics\.csv:4: sex "X" is not one of male, female/m],
    ['demographics of an unknown user', (f) => { f.demographics!.push(['nobody', '', '', '1990-01-01', 'male']) },
      /^error: demographics\.csv:4: user "nobody" is neither a student nor a teacher of users\.csv or of the school: demographics\.csv keeps theirs only/m],
    ['demographics of a user the bundle removes', (f) => { f.users = without(f.users!, ['stu-3']); f.demographics!.push(['stu-3', '', '', '', 'female']) },
      /^error: demographics\.csv:4: user "stu-3" is a student this import removes \(users\.csv leaves it out or marks it tobedeleted\)/m],
    ['bad enrollment date', (f) => { f.enrollments![6]![8] = 'soon' }, /^error: enrollments\.csv:7: beginDate "soon" is not a date/m],
    ['duplicate sourcedId', (f) => { f.classes![2]![0] = 'cls-1' }, /^error: classes\.csv:3: sourcedId "cls-1" is already on line 2/m],
    ['duplicate student number', (f) => { f.users![2]![9] = '1001' }, /^error: users\.csv:3: identifier "1001" is already the student number on line 2/m],
    ['missing column', (f) => { f.enrollments = f.enrollments!.map((r) => r.slice(0, 3)) }, /^error: enrollments\.csv:1: missing column "classSourcedId"/m],
    ['missing file', (f) => { delete f.classes }, /^error: classes\.csv: the manifest lists it \(bulk\), but the bundle has no such file/m],
    ['no manifest', (f) => { delete f.manifest }, /^error: manifest\.csv: the bundle has no manifest\.csv/m],
    ['a deletion in a bulk file', (f) => { f.users![1]![1] = 'tobedeleted' }, /^error: users\.csv:2: status tobedeleted is for delta files: the manifest marks users\.csv bulk, where a record is removed by leaving its row out/m],
    ['an unknown status', (f) => { f.users![2]![1] = 'archived' }, /^error: users\.csv:3: status must be active or empty in a bulk file \(got "archived"\)/m],
    ['an unknown status in a delta file', (f) => { f.manifest = f.manifest!.map((r) => r[0] === 'file.users' ? [r[0], 'delta'] : r); f.users![1]![1] = 'archived' },
      /^error: users\.csv:2: status must be active or tobedeleted \(got "archived"\)/m],
    ['a delta row without its date', (f) => { f.manifest = f.manifest!.map((r) => r[0] === 'file.users' ? [r[0], 'delta'] : r); f.users![1]![2] = '' },
      /^error: users\.csv:2: dateLastModified is empty: every row of a delta file has one/m],
    ['a file the manifest does not name', (f) => { f.manifest = f.manifest!.filter((r) => r[0] !== 'file.users') },
      /^error: manifest\.csv: file\.users is not given, but the bundle has users\.csv: say bulk, delta or absent/m],
    ['an enrollment in a class the bundle removes', (f) => { f.classes = without(f.classes!, ['cls-2']) },
      /^error: enrollments\.csv:2: class "cls-2" is a classroom this import removes \(classes\.csv leaves it out or marks it tobedeleted\)/m],
    ['a removal, then a bad row', (f) => { f.users = without(f.users!, ['stu-3']); f.enrollments![6]![8] = 'soon' }, /^error: enrollments\.csv:7: beginDate "soon" is not a date/m],
    ['a NUL in a value the import writes', (f) => { f.users![3]![6] = 'Kath\u0000erine' }, /^error: users\.csv:4: column "givenName" must not contain a NUL character \(U\+0000\)/m],
    ['a student\'s agent that is a teacher', (f) => { f.users![3]![13] = 'tea-1' },
      /^error: users\.csv:4: agentSourcedIds: user "tea-1" is a teacher: a student's agents are guardians, parents or relatives/m],
    ['a student\'s agent of a role not kept', (f) => { f.users![3]![13] = 'adm-1' },
      /^error: users\.csv:4: agentSourcedIds: user "adm-1" is of a role this service does not keep/m],
    ['a parent\'s agent that is unknown', (f) => { f.users![6]![13] = 'stu-404' },
      /^error: users\.csv:7: agentSourcedIds: user "stu-404" is neither in users\.csv nor in the school: a parent's agents are the students it is an agent of/m],
    ['a bad row after a quoted field with a line break', (f) => { f.users![1]![8] = 'two\nlines'; f.users![3]![14] = '14' }, /^error: users\.csv:5: grade "14"/m]
  ]
  for (const [index, [label, spoil, message]] of cases.entries()) {
    const files = bundle12()
    // Every good row changes, so that a partial write would show.
    for (const row of files.users!.slice(1)) row[7] = `${row[7]!}-changed`
    spoil(files)
    const folder = writeFolder(files)
    if (index < 2) {
      // As a user sees it: the message on standard error after "error: ", a failing exit status.
      const run = await cli(['import', 'oneroster', folder, '--school', school])
      t.not(run.code, 0, label)
      t.match(run.stderr, message, label)
      t.equal(run.stdout, '', `${label}: nothing on standard output`)
    } else {
      // The rest in this process (a child process apiece costs seconds on the embedded database):
      // the same function and the same message, which the command prints after "error: ".
      const failed = await importOneRoster({ path: folder, schoolId: school, databaseUrl: env.DATABASE_URL, dataDir }).then(() => undefined, (err: unknown) => err)
      t.ok(failed instanceof Error, `${label}: refused`)
      t.match(`error: ${(failed as Error).message}`, message, label)
    }
  }
  t.same(await snapshot(school), before, 'the database is unchanged')
})

t.test('a classroom and a student entered by hand are taken over, not duplicated', async (t) => {
  const school = await newSchool('Hand Made Academy')
  const made = await cli(['student', 'create', '--school', school, '--full-name', 'Ada King', '--classroom', 'Room 3', '--student-number', '1001'])
  t.equal(made.code, 0, made.stderr)
  const studentId = made.stdout.trim().split('\n').at(-1)
  const run = await importJson(writeFolder(bundle12()), school)
  t.equal(run.code, 0, run.stderr)
  t.same(run.summary.classrooms, counts(1, 1, 0), 'Room 3 gets its sourcedId; Math 3 is new')
  t.same(run.summary.students, counts(2, 1, 0), 'student number 1001 is Ada')
  const after = await snapshot(school) as any
  t.same(after.classrooms.map((c: any) => c.name), ['Room 3', 'Math 3'])
  t.same(after.students.map((s: any) => [s.id === studentId, s.sourcedId, s.givenName, s.familyName]),
    [[true, 'stu-1', 'Ada', 'Lovelace'], [false, 'stu-2', 'Alan', 'Turing'], [false, 'stu-3', 'Katherine', 'Johnson']])
})

t.test('the school must exist; a dry run writes nothing', async (t) => {
  const folder = writeFolder(bundle12())
  const missing = await cli(['import', 'oneroster', folder, '--school', '00000000-0000-4000-8000-000000000000'])
  t.not(missing.code, 0)
  t.match(missing.stderr, /School 00000000-0000-4000-8000-000000000000 does not exist/)
  const malformed = await cli(['import', 'oneroster', folder, '--school', 'nope'])
  t.not(malformed.code, 0)
  t.match(malformed.stderr, /School id "nope" is not a UUID/)
  const nowhere = await cli(['import', 'oneroster', join(work, 'no-such-bundle'), '--school', '00000000-0000-4000-8000-000000000000'])
  t.not(nowhere.code, 0)
  t.match(nowhere.stderr, /no such file or folder/)

  const school = await newSchool('Dry Run Academy')
  const dry = await importJson(folder, school, '--dry-run')
  t.equal(dry.code, 0, dry.stderr)
  t.same(dry.summary.students, counts(3, 0, 0), 'counts what an import would do')
  t.equal(dry.summary.dryRun, true)
  const after = await snapshot(school) as any
  t.same([after.students.length, after.teachers.length, after.classrooms.length, after.changes.length], [0, 0, 0, 0])
})

t.test('on a Citus coordinator, the import sets its school with SET LOCAL, after telling Citus to pass it on', {
  skip: serverUrl === undefined
    ? 'the import\'s PostgreSQL connection (set TEST_DATABASE_URL)'
    : await unlessCitus('it reads back, from a plain server, what the Citus form sends (test/citus.test.ts shows the import there)')
}, async (t) => {
  // A plain server takes citus.propagate_set_commands as a placeholder setting: what the import's
  // transaction sent can be read back in it (docs/running/citus.md).
  const school = await newSchool('Citus Import Academy')
  const read = async (sql: Sql): Promise<Array<{ school: string | null, propagate: string | null }>> =>
    await sql.query("SELECT current_setting('app.school_id', true) AS school, current_setting('citus.propagate_set_commands', true) AS propagate")
  const options = { databaseUrl: env.DATABASE_URL, dataDir }
  t.same(await inSchoolTransaction({ ...options, citus: true }, school, read, true), [{ school, propagate: 'local' }], 'on Citus')
  const [plain] = await inSchoolTransaction(options, school, read, true)
  t.same(plain, { school, propagate: null }, 'elsewhere: set_config, as before (the server is asked: no citus extension)')

  // The triggers' notices fire on the workers there: a committed import announces its school itself.
  const listener = await serviceConnection(t)
  const heard: string[] = []
  listener.on('notification', (n) => { heard.push(n.payload ?? '') })
  await listener.query('LISTEN school_data_changed')
  await inSchoolTransaction({ ...options, citus: true }, school, read, true)
  await inSchoolTransaction(options, school, read, false)
  await listener.query('SELECT 1')
  t.same(heard, [], 'not a dry run, nor (writing nothing) an import elsewhere')
  await inSchoolTransaction({ ...options, citus: true }, school, read, false)
  await listener.query('SELECT 1')
  t.same(heard, [school], 'a committed import on Citus')
})

t.test('the import\'s upserts update with no function and no parameter in DO UPDATE SET (Citus refuses both there)', async (t) => {
  const sent: string[] = []
  const recording: Sql = {
    query: async <T>(text: string) => {
      sent.push(text)
      return [] as T[]
    }
  }
  const one = [{}] as never[]
  // A classroom's lists (and a user's identifiers and roles) are written as array literals and JSON: made of its lists, empty here.
  const classroom = [{ termIds: [], periods: [], grades: [], subjects: [], subjectCodes: [] }] as never[]
  const user = [{ userIds: [], secondaryRoles: [] }] as never[]
  const update = [{ secondaryRoles: [] }] as never[]
  await writePlan(recording, '00000000-0000-4000-8000-000000000001', { ...emptyPlan(), classrooms: classroom, students: user, teachers: user, assignments: one, studentUpdates: update }, () => {})
  const upserts = sent.filter((sql) => /ON CONFLICT/.test(sql))
  t.equal(upserts.length, 5, 'one statement per table, and one for the students the users file does not hold')
  for (const sql of upserts) {
    const set = /DO UPDATE SET([\s\S]*?)\n\s*WHERE/.exec(sql)?.[1] ?? ''
    t.ok(set.length > 0 && !/[($]/.test(set), `only columns of the rows: ${set.replace(/\s+/g, ' ').trim().slice(0, 120)}`)
  }
})

t.test('a bulk enrollments.csv ends the enrollments it does not hold; those made by hand stay', async (t) => {
  const school = await newSchool('Bulk Enrollments Academy')
  t.equal((await importJson(writeFolder(bundle12()), school)).code, 0)
  const tea1 = ((await snapshot(school)) as any).teachers[0].id as string
  // By hand: a teacher and a student with no sourcedId in Room 3, and Grace in a classroom of no sourcedId.
  const hand = lastLine((await cli(['teacher', 'create', '--school', school, '--full-name', 'Hal Hand'])).stdout)
  for (const args of [['teacher', 'assign', '--school', school, '--teacher', hand, '--classroom', 'Room 3'],
    ['teacher', 'assign', '--school', school, '--teacher', tea1, '--classroom', 'Art Studio'],
    ['student', 'create', '--school', school, '--full-name', 'Hana Hand', '--classroom', 'Room 3']]) {
    const run = await cli(args)
    t.equal(run.code, 0, run.stderr)
  }
  const before = await snapshot(school) as any

  // Edsger no longer assists in Room 3 (e5); Alan has no class any more (e3).
  const files = bundle12()
  files.enrollments = without(files.enrollments!, ['e5', 'e3'])
  const run = await importJson(writeFolder(files), school)
  t.equal(run.code, 0, run.stderr)
  t.same(run.summary.teacherAssignments, counts(0, 0, 2, 1), 'one assignment ended')
  t.same(run.summary.students, counts(0, 1, 2), 'Alan updated: no classroom')
  t.equal(run.summary.studentEnrollmentsEnded, 1)
  const after = await snapshot(school) as any
  t.same(after.teachers.filter((x: any) => x.sourcedId === 'tea-2')[0].classrooms.map((c: any) => c.classroom.name), ['Math 3'], 'Edsger is out of Room 3')
  const alan = after.students.find((x: any) => x.sourcedId === 'stu-2')
  t.same([alan.classroom, alan.enrollmentStartDate], [null, null], 'Alan is in no classroom, with no enrollment dates')
  t.same(feedAfter(after, before.changes.length), ['UPDATED STUDENT stu-2', 'UPDATED TEACHER tea-2'], 'the change feed: two updates')
  t.same(after.teachers.find((x: any) => x.id === hand).classrooms.map((c: any) => c.classroom.name), ['Room 3'], 'a teacher made by hand keeps her assignment')
  t.same(after.teachers.find((x: any) => x.id === tea1).classrooms.map((c: any) => c.classroom.name).sort(), ['Art Studio', 'Room 3'],
    'an assignment to a classroom of no sourcedId is not the import\'s: it stays')
  t.equal(after.students.find((x: any) => x.fullName === 'Hana Hand').classroom.name, 'Room 3', 'a student made by hand stays in her classroom')

  const again = await importJson(writeFolder(files), school)
  t.same([again.summary.teacherAssignments.removed, again.summary.studentEnrollmentsEnded], [0, 0], 'a second run ends nothing more')
  t.same(await snapshot(school), after, 'and writes nothing')
})

t.test('a bulk users.csv or classes.csv removes the records it does not hold: DELETED tombstones; records made by hand stay', async (t) => {
  const school = await newSchool('Bulk Users Academy')
  t.equal((await importJson(writeFolder(bundle12()), school)).code, 0)
  const handMade = lastLine((await cli(['student', 'create', '--school', school, '--full-name', 'Hugo Hand', '--classroom', 'Math 3'])).stdout)
  const handTeacher = lastLine((await cli(['teacher', 'create', '--school', school, '--full-name', 'Hedda Hand'])).stdout)
  const before = await snapshot(school) as any

  // Katherine and Edsger have left the school, and Math 3 is no more (with its enrollments).
  const files = bundle12()
  files.users = without(files.users!, ['stu-3', 'tea-2'])
  files.roles = without(files.roles!, ['stu-3', 'tea-2'], 3)
  // Nor is Pat any more Ada's and Alan's parent.
  const keepParent = bundle12()
  const parentGone = { ...keepParent, users: without(files.users, ['par-1']).map((r, i) => i === 1 ? [...r.slice(0, 13), 'par-1', ...r.slice(14)] : r) }
  const refused = await importJson(writeFolder(parentGone), school)
  t.not(refused.code, 0)
  t.match(refused.stderr, /users\.csv:2: agentSourcedIds: user "par-1" is a guardian, parent or relative this import removes/, "a student's row naming an agent the import removes is refused by line")
  files.users = without(files.users, ['par-1']).map((r, i) => i === 1 ? [...r.slice(0, 13), '', ...r.slice(14)] : r)
  files.roles = without(files.roles, ['par-1'], 3)
  files.classes = without(files.classes!, ['cls-2'])
  files.enrollments = without(files.enrollments!, ['e1', 'e3', 'e5', 'e6'])
  const run = await importJson(writeFolder(files), school)
  t.equal(run.code, 0, run.stderr)
  t.same(run.summary.students, counts(0, 2, 1, 1), 'Katherine removed; Alan, and the student made by hand, leave Math 3')
  t.same(run.summary.teachers, counts(0, 0, 1, 1), 'Edsger removed')
  t.same(run.summary.agents, counts(0, 0, 0, 1), 'Pat removed')
  t.same(run.summary.classrooms, counts(0, 0, 1, 1), 'Math 3 removed')
  t.same(run.summary.teacherAssignments, counts(0, 0, 1, 0), 'Edsger\'s assignments go with him, not counted again')
  t.equal(run.summary.studentEnrollmentsEnded, 2, 'Alan and the student made by hand leave Math 3')
  const after = await snapshot(school) as any
  t.same(after.students.map((x: any) => [x.sourcedId, x.classroom?.name ?? null]), [['stu-1', 'Room 3'], ['stu-2', null], [null, null]])
  t.equal(after.students[2].id, handMade, 'the student made by hand stays (in no classroom: Math 3 is gone)')
  t.same(after.teachers.map((x: any) => x.sourcedId ?? x.id), ['tea-1', handTeacher], 'the teacher made by hand stays')
  t.same(after.classrooms.map((c: any) => c.sourcedId), ['cls-1'])
  t.same(after.agents, [])
  t.same(feedAfter(after, before.changes.length), [
    'DELETED CLASSROOM cls-2', 'DELETED STUDENT stu-3', 'DELETED TEACHER tea-2', 'UPDATED STUDENT -', 'UPDATED STUDENT stu-2'
  ], 'the change feed: a tombstone per record removed (its sourcedId kept), an update per student moved out')
})

t.test('a bulk classes.csv that replaces a class by another of the same title: the name is freed first', async (t) => {
  const school = await newSchool('Next Year Academy')
  t.equal((await importJson(writeFolder(bundle12()), school)).code, 0)
  const files = bundle12()
  // Next year's Math 3 under a new sourcedId, with its enrollments.
  files.classes![2]![0] = 'cls-9'
  for (const row of files.enrollments!) if (row[3] === 'cls-2') row[3] = 'cls-9'
  const run = await importJson(writeFolder(files), school)
  t.equal(run.code, 0, run.stderr)
  t.same(run.summary.classrooms, counts(1, 0, 1, 1))
  t.same(run.summary.teacherAssignments, counts(1, 0, 2, 0), 'Edsger in the new Math 3 (his old assignment went with the class)')
  const after = await snapshot(school) as any
  t.same(after.classrooms.map((c: any) => [c.sourcedId, c.name]), [['cls-1', 'Room 3'], ['cls-9', 'Math 3']])
  t.equal(after.students.find((x: any) => x.sourcedId === 'stu-2').classroom.name, 'Math 3', 'Alan in the new Math 3')
})

t.test('a delta bundle: rows tobedeleted remove their records and end their enrollments; what it does not list stays', async (t) => {
  const school = await newSchool('Delta Academy')
  const base = bundle12()
  base.enrollments = without(base.enrollments!, ['e1']) // Ada's one class is Room 3
  t.equal((await importJson(writeFolder(base), school)).code, 0)
  const before = await snapshot(school) as any
  const { users, enrollments } = bundle12()
  const row = (rows: string[][], id: string, status: string): string[] => {
    const found = [...rows.find((r) => r[0] === id)!]
    found[1] = status
    found[2] = MODIFIED
    return found
  }
  const renamed = row(users!, 'stu-1', 'active')
  renamed[7] = 'King'
  const files = delta({
    // Alan leaves the school; Ada is renamed (her role is not repeated: she stays a student).
    users: [users![0]!, row(users!, 'stu-2', 'tobedeleted'), renamed],
    enrollments: [enrollments![0]!,
      // Edsger no longer assists in Room 3; Ada leaves it; Katherine, in no class, joins Math 3.
      row(enrollments!, 'e5', 'tobedeleted'), row(enrollments!, 'e2', 'tobedeleted'),
      ['e7', 'active', MODIFIED, 'cls-2', 'org-1', 'stu-3', 'student', 'false', '2026-10-01', '']]
  })
  const run = await importJson(writeFolder(files), school)
  t.equal(run.code, 0, run.stderr)
  t.same(run.summary.students, counts(0, 2, 0, 1), 'Alan removed; Ada updated; Katherine placed (not in the delta\'s users.csv)')
  t.same(run.summary.teacherAssignments, counts(0, 0, 0, 1))
  t.same(run.summary.teachers, counts(0, 0, 0, 0), 'teachers the delta does not list are untouched')
  t.same(run.summary.classrooms, counts(0, 0, 0, 0), 'classes.csv absent: classrooms untouched')
  t.equal(run.summary.studentEnrollmentsEnded, 1, 'Ada')
  const after = await snapshot(school) as any
  t.same(after.students.map((x: any) => [x.sourcedId, x.familyName, x.classroom?.name ?? null]), [['stu-1', 'King', null], ['stu-3', 'Johnson', 'Math 3']])
  t.equal(after.students[0].dateOfBirth.toISOString().slice(0, 10), '2017-12-10', 'demographics.csv absent: the birth date stays')
  t.equal(after.students[1].enrollmentStartDate.toISOString().slice(0, 10), '2026-10-01', 'Katherine\'s enrollment dates are her new class\'s')
  t.same(after.students.map((x: any) => x.enrollmentSourcedId), [null, 'e7'], "Ada's enrollment ended (tobedeleted); Katherine's is e7")
  t.same(after.teachers.map((x: any) => [x.sourcedId, x.classrooms.map((c: any) => c.classroom.name).sort()]), [['tea-1', ['Room 3']], ['tea-2', ['Math 3']]])
  t.same(feedAfter(after, before.changes.length), ['DELETED STUDENT stu-2', 'UPDATED STUDENT stu-1', 'UPDATED STUDENT stu-3', 'UPDATED TEACHER tea-2'])
  t.same(run.summary.agents, counts(0, 1, 0, 0), 'the parent, not in the delta, loses Alan (removed) and keeps Ada (whose row still names her)')
  t.same(after.agents[0].studentIds, [after.students[0].id])

  const again = await importJson(writeFolder(files), school)
  t.equal(again.code, 0, again.stderr)
  t.same([again.summary.students, again.summary.teacherAssignments.removed, again.summary.studentEnrollmentsEnded], [counts(0, 0, 1), 0, 0], 'the same delta again changes nothing')
  t.same(await snapshot(school), after)
})

const DEMOGRAPHICS_HEADER = ['sourcedId', 'status', 'dateLastModified', 'birthDate', 'sex', 'americanIndianOrAlaskaNative', 'asian', 'blackOrAfricanAmerican',
  'nativeHawaiianOrOtherPacificIslander', 'white', 'demographicRaceTwoOrMoreRaces', 'hispanicOrLatinoEthnicity', 'countryOfBirthCode', 'stateOfBirthAbbreviation',
  'cityOfBirth', 'publicSchoolResidenceStatus']

/** A student's or teacher's demographic columns as the database holds them (the date as YYYY-MM-DD). */
const demographicsOf = (student: any): unknown[] => [student.sourcedId, student.dateOfBirth?.toISOString().slice(0, 10) ?? null, student.sex,
  student.americanIndianOrAlaskaNative, student.asian, student.blackOrAfricanAmerican, student.nativeHawaiianOrOtherPacificIslander, student.white,
  student.demographicRaceTwoOrMoreRaces, student.hispanicOrLatinoEthnicity, student.countryOfBirthCode, student.stateOfBirthAbbreviation,
  student.cityOfBirth, student.publicSchoolResidenceStatus]

t.test('demographics.csv: every column of DemographicsDType is kept; a bulk file is all of them, a delta changes those it lists', async (t) => {
  const school = await newSchool('Demographics Academy')
  const files = bundle12()
  files.demographics = [
    DEMOGRAPHICS_HEADER,
    ['stu-1', '', '', '2017-12-10', 'female', 'false', 'true', 'false', 'false', 'true', 'true', 'false', 'GB', '', 'London', '01652'],
    ['stu-2', '', '', '', 'ext:nonbinary', '', '', '', '', 'FALSE', '', '1', '', '', '', ''],
    ['tea-1', '', '', '1970-01-01', 'female', '', '', '', '', '', '', '', '', '', '', '']
  ]
  const first = await importJson(writeFolder(files), school)
  t.equal(first.code, 0, first.stderr)
  let after = await snapshot(school) as any
  t.same(after.students.map(demographicsOf), [
    ['stu-1', '2017-12-10', 'female', false, true, false, false, true, true, false, 'GB', null, 'London', '01652'],
    ['stu-2', null, 'ext:nonbinary', null, null, null, null, false, null, true, null, null, null, null],
    ['stu-3', null, null, null, null, null, null, null, null, null, null, null, null, null]
  ], 'each column as given, the flags as booleans, empty as none')
  t.same(after.teachers.map(demographicsOf), [
    ['tea-1', '1970-01-01', 'female', null, null, null, null, null, null, null, null, null, null, null],
    ['tea-2', null, null, null, null, null, null, null, null, null, null, null, null, null]
  ], "a teacher's row is kept as a student's")

  const again = await importJson(writeFolder(files), school)
  t.same(again.summary.students, counts(0, 0, 3), 'the same bundle again changes nothing')
  t.same(again.summary.teachers, counts(0, 0, 2))

  // A delta: stu-2's and tea-1's demographics taken away, stu-3 and tea-2 given some; stu-1's stay.
  // tobedeleted of a user neither file nor school holds takes nothing away.
  const before = after.changes.length
  const run = await importJson(writeFolder(delta({
    demographics: [DEMOGRAPHICS_HEADER,
      ['stu-2', 'tobedeleted', MODIFIED, '', '', '', '', '', '', '', '', '', '', '', '', ''],
      ['stu-3', 'active', MODIFIED, '2016-05-04', 'male', '', '', '', '', '', '', 'false', 'US', 'TX', 'Austin', ''],
      ['tea-1', 'tobedeleted', MODIFIED, '', '', '', '', '', '', '', '', '', '', '', '', ''],
      ['tea-2', 'active', MODIFIED, '1965-02-03', 'male', '', '', '', '', 'true', '', '', 'NL', '', 'Rotterdam', ''],
      ['gone-1', 'tobedeleted', MODIFIED, '', '', '', '', '', '', '', '', '', '', '', '', '']]
  })), school)
  t.equal(run.code, 0, run.stderr)
  after = await snapshot(school) as any
  t.same(after.students.map(demographicsOf), [
    ['stu-1', '2017-12-10', 'female', false, true, false, false, true, true, false, 'GB', null, 'London', '01652'],
    ['stu-2', null, null, null, null, null, null, null, null, null, null, null, null, null],
    ['stu-3', '2016-05-04', 'male', null, null, null, null, null, null, false, 'US', 'TX', 'Austin', null]
  ], 'a delta changes the rows it lists only')
  t.same(after.teachers.map(demographicsOf), [
    ['tea-1', null, null, null, null, null, null, null, null, null, null, null, null, null],
    ['tea-2', '1965-02-03', 'male', null, null, null, null, true, null, null, 'NL', null, 'Rotterdam', null]
  ], "a delta changes a teacher's the same way, users.csv absent")
  t.same(run.summary.teachers, counts(0, 2, 0), 'the teachers whose demographics changed, updated')
  t.same(feedAfter(after, before), ['UPDATED STUDENT stu-2', 'UPDATED STUDENT stu-3', 'UPDATED TEACHER tea-1', 'UPDATED TEACHER tea-2'])

  const unknown = await importJson(writeFolder(delta({
    demographics: [DEMOGRAPHICS_HEADER, ['nobody', 'active', MODIFIED, '1990-01-01', '', '', '', '', '', '', '', '', '', '', '', '']]
  })), school)
  t.not(unknown.code, 0, 'a delta row of a user neither the bundle nor the school holds is refused')
  t.match(unknown.stderr, /^error: demographics\.csv:2: user "nobody" is neither a student nor a teacher of users\.csv or of the school/m)
  t.same(await snapshot(school), after, 'and nothing is written')

  // A bulk file without stu-1: stu-1 has no demographics any more.
  files.demographics = [DEMOGRAPHICS_HEADER, ['stu-3', '', '', '2016-05-04', 'male', '', '', '', '', '', '', 'false', 'US', 'TX', 'Austin', '']]
  const bulk = await importJson(writeFolder(files), school)
  t.equal(bulk.code, 0, bulk.stderr)
  after = await snapshot(school) as any
  t.same(after.students.map(demographicsOf)[0], ['stu-1', null, null, null, null, null, null, null, null, null, null, null, null, null], 'a bulk file is all of them')
  t.same(after.teachers.map(demographicsOf)[1], ['tea-2', null, null, null, null, null, null, null, null, null, null, null, null, null], "a teacher's too")
})

t.test('--dry-run plans the removals and prints them, and writes nothing', { skip: engineIndependentSkip }, async (t) => {
  const school = await newSchool('Dry Removal Academy')
  t.equal((await importJson(writeFolder(bundle12()), school)).code, 0)
  const before = await snapshot(school)
  const files = bundle12()
  files.users = without(files.users!, ['stu-3'])
  files.enrollments = without(files.enrollments!, ['e5', 'e3'])
  const folder = writeFolder(files)

  const text = await cli(['import', 'oneroster', folder, '--school', school, '--dry-run'])
  t.equal(text.code, 0, text.stderr)
  t.match(text.stdout, /^Dry run: nothing was written\. The import would give:$/m)
  t.match(text.stdout, /^ {2}students\s+0 created\s+1 updated\s+1 unchanged\s+1 removed$/m)
  t.match(text.stdout, /^ {2}teacher assignments\s+0 created\s+0 updated\s+2 unchanged\s+1 removed$/m)
  t.match(text.stdout, /^ {2}student enrollments\s+1 ended/m)
  t.match(text.stdout, /^Would remove:\n {2}student stu-3\n {2}teacher tea-2 from classroom "Room 3"\n {2}student stu-2 from classroom "Math 3"\n$/m)
  const json = await importJson(folder, school, '--dry-run')
  t.equal(json.summary.dryRun, true)
  t.same(json.summary.removals.students.map((s: any) => s.sourcedId), ['stu-3'])
  t.same(json.summary.removals.assignments.map((a: any) => [a.teacher, a.classroom]), [['tea-2', 'Room 3']])
  t.same(await snapshot(school), before, 'nothing was written')

  const real = await importJson(folder, school)
  t.same([real.summary.students.removed, real.summary.teacherAssignments.removed, real.summary.studentEnrollmentsEnded], [1, 1, 1], 'the import then does what the dry run said')
  t.equal(real.summary.removals, undefined, 'and counts, without the list')
})

t.test('all or nothing: a failure after the removals were written leaves every record in place', async (t) => {
  const school = await newSchool('Rollback Academy')
  t.equal((await importJson(writeFolder(bundle12()), school)).code, 0)
  const before = await snapshot(school)
  const files = bundle12()
  files.users = without(files.users!, ['stu-3', 'tea-2'])
  files.enrollments = without(files.enrollments!, ['e5', 'e6', 'e3'])
  const folder = writeFolder(files)
  const options = { databaseUrl: env.DATABASE_URL, dataDir }
  const { readBundle } = await import('../src/import/bundle.js')
  const { planImport } = await import('../src/import/oneroster.js')
  const { readExisting } = await import('../src/import/write.js')
  const bundle = await readBundle(folder)
  await t.rejects(inSchoolTransaction(options, school, async (sql) => {
    const written = await writePlan(sql, school, planImport(bundle, await readExisting(sql)), () => {})
    t.same([written.students.removed, written.teachers.removed], [1, 1], 'the removals ran')
    throw new Error('the disk is full')
  }), /the disk is full/)
  t.same(await snapshot(school), before, 'rolled back: nothing removed, no change feed entry')
})
