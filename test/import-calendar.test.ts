// academicSessions.csv and courses.csv kept by the OneRoster import (src/import/calendar.ts,
// write-calendar.ts): bulk and delta, line-numbered refusals, and two schools whose sourcedIds
// collide. In-process (importOneRoster, the CLI's own function) on this file's database: PostgreSQL
// as the service role, or an embedded database in a temporary folder.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { bundleWriter, type Files } from './fixtures/csv-bundle.js'
import { openDatabase, type Database } from '../src/db/client.js'
import { formatSummary, importOneRoster, type ImportSummary } from '../src/import/index.js'
import { testDatabase, testDatabaseUrl } from './helper.js'

let url: string | undefined
let work: string
let dataDir: string

t.before(async () => {
  url = await testDatabaseUrl()
  work = mkdtempSync(join(tmpdir(), 'sds-import-calendar-'))
  dataDir = join(work, 'data')
  t.teardown(() => rmSync(work, { recursive: true, force: true }))
})

/** The database the import writes to (the embedded one only while no import holds it). */
async function inspect<T> (read: (db: Database) => Promise<T>): Promise<T> {
  if (url !== undefined) return await read(await testDatabase())
  const db = await openDatabase({ dataDir, migrate: true })
  try {
    return await read(db)
  } finally {
    await db.close()
  }
}

let schools = 0
async function newSchool (): Promise<string> {
  return await inspect(async (db) => (await db.prisma.school.create({ data: { name: `Calendar School ${++schools} ${process.pid}` } })).id)
}

const writeFolder = bundleWriter(() => work)

const SESSION_HEADER = ['sourcedId', 'status', 'dateLastModified', 'title', 'type', 'startDate', 'endDate', 'parentSourcedId', 'schoolYear']
const COURSE_HEADER = ['sourcedId', 'status', 'dateLastModified', 'schoolYearSourcedId', 'title', 'courseCode', 'grades', 'orgSourcedId', 'subjects', 'subjectCodes']

/** A OneRoster 1.2 bundle of a school year, two terms, a grading period and two courses, and no one. */
function calendar (mode: 'bulk' | 'delta' = 'bulk'): Files {
  return {
    manifest: [['propertyName', 'value'], ['manifest.version', '1.0'], ['oneroster.version', '1.2'],
      ['file.academicSessions', mode], ['file.courses', mode], ['file.users', 'absent'], ['file.classes', 'absent'],
      ['file.enrollments', 'absent'], ['file.orgs', 'absent']],
    academicSessions: [SESSION_HEADER,
      ['y-2027', '', '', '2026-2027', 'schoolYear', '2026-08-20', '2027-06-18', '', '2027'],
      ['t-fall', '', '', 'Fall', 'term', '2026-08-20', '2027-01-15', 'y-2027', '2027'],
      ['t-spring', '', '', 'Spring', 'term', '2027-01-19', '2027-06-18', 'y-2027', '2027'],
      ['gp-1', '', '', 'Quarter 1', 'gradingPeriod', '2026-08-20', '2026-10-23', 't-fall', '2027']
    ],
    courses: [COURSE_HEADER,
      ['c-alg', '', '', 'y-2027', 'Algebra I', 'MATH-101', '09,10', 'org-1', 'Mathematics', '02052'],
      ['c-art', '', '', '', 'Studio Art, "Drawing"', '', '', 'org-1', '', '']
    ]
  }
}

const run = async (files: Files, school: string, dryRun = false): Promise<ImportSummary> =>
  await importOneRoster({ path: writeFolder(files), schoolId: school, databaseUrl: url, dataDir, dryRun })

const failure = async (files: Files, school: string): Promise<string> =>
  await run(files, school).then(() => 'no error', (err: Error) => `${err.name}: ${err.message}`)

const counts = (created: number, updated: number, unchanged: number, removed = 0): Record<string, number> => ({ created, updated, unchanged, removed })

async function snapshot (school: string): Promise<{ sessions: Array<Record<string, unknown>>, courses: Array<Record<string, unknown>> }> {
  return await inspect(async (db) => {
    const tenant = db.forSchool(school)
    const sessions = await tenant.academicSession.findMany({ orderBy: { sourcedId: 'asc' }, include: { parent: { select: { sourcedId: true } } } })
    const courses = await tenant.course.findMany({ orderBy: { sourcedId: 'asc' }, include: { schoolYear: { select: { sourcedId: true } } } })
    return {
      sessions: sessions.map((s) => ({ sourcedId: s.sourcedId, title: s.title, type: s.type, startDate: s.startDate.toISOString().slice(0, 10), endDate: s.endDate.toISOString().slice(0, 10), schoolYear: s.schoolYear, parent: s.parent?.sourcedId ?? null, version: s.version })),
      courses: courses.map((c) => ({ sourcedId: c.sourcedId, title: c.title, courseCode: c.courseCode, grades: c.grades, subjects: c.subjects, subjectCodes: c.subjectCodes, schoolYear: c.schoolYear?.sourcedId ?? null, version: c.version }))
    }
  })
}

t.test('a bulk bundle of sessions and courses is kept; a second run changes nothing; a changed row is updated', async (t) => {
  const school = await newSchool()
  const first = await run(calendar(), school)
  t.same(first.academicSessions, counts(4, 0, 0))
  t.same(first.courses, counts(2, 0, 0))
  t.same(first.students, counts(0, 0, 0), 'no one: the people files are absent')
  t.match(formatSummary(first), /academic sessions\s+4 created/)
  t.same(await snapshot(school), {
    sessions: [
      { sourcedId: 'gp-1', title: 'Quarter 1', type: 'GRADING_PERIOD', startDate: '2026-08-20', endDate: '2026-10-23', schoolYear: 2027, parent: 't-fall', version: 1 },
      { sourcedId: 't-fall', title: 'Fall', type: 'TERM', startDate: '2026-08-20', endDate: '2027-01-15', schoolYear: 2027, parent: 'y-2027', version: 1 },
      { sourcedId: 't-spring', title: 'Spring', type: 'TERM', startDate: '2027-01-19', endDate: '2027-06-18', schoolYear: 2027, parent: 'y-2027', version: 1 },
      { sourcedId: 'y-2027', title: '2026-2027', type: 'SCHOOL_YEAR', startDate: '2026-08-20', endDate: '2027-06-18', schoolYear: 2027, parent: null, version: 1 }
    ],
    courses: [
      { sourcedId: 'c-alg', title: 'Algebra I', courseCode: 'MATH-101', grades: ['09', '10'], subjects: ['Mathematics'], subjectCodes: ['02052'], schoolYear: 'y-2027', version: 1 },
      { sourcedId: 'c-art', title: 'Studio Art, "Drawing"', courseCode: null, grades: [], subjects: [], subjectCodes: [], schoolYear: null, version: 1 }
    ]
  }, 'every column as the files give it')

  const again = await run(calendar(), school)
  t.same([again.academicSessions, again.courses], [counts(0, 0, 4), counts(0, 0, 2)], 'the same bundle again changes nothing')

  const files = calendar()
  files.academicSessions![2]![3] = 'Autumn'
  files.courses![1]![6] = '09,10,11'
  const changed = await run(files, school)
  t.same([changed.academicSessions, changed.courses], [counts(0, 1, 3), counts(0, 1, 1)])
  const after = await snapshot(school)
  t.same(after.sessions.find((s) => s.sourcedId === 't-fall'), { sourcedId: 't-fall', title: 'Autumn', type: 'TERM', startDate: '2026-08-20', endDate: '2027-01-15', schoolYear: 2027, parent: 'y-2027', version: 2 })
  t.same(after.courses.find((c) => c.sourcedId === 'c-alg')?.grades, ['09', '10', '11'])
})

t.test('bulk removes what the file leaves out; delta changes what it lists', async (t) => {
  const school = await newSchool()
  await run(calendar(), school)

  // Bulk: the grading period and the art course go.
  const files = calendar()
  files.academicSessions = files.academicSessions!.filter((r) => r[0] !== 'gp-1')
  files.courses = files.courses!.filter((r) => r[0] !== 'c-art')
  const dry = await run(files, school, true)
  t.same(dry.removals?.academicSessions.map((s) => s.sourcedId), ['gp-1'], 'a dry run lists the session it would remove')
  t.same(dry.removals?.courses.map((c) => c.sourcedId), ['c-art'])
  t.equal((await snapshot(school)).sessions.length, 4, 'and writes nothing')
  const bulk = await run(files, school)
  t.same([bulk.academicSessions, bulk.courses], [counts(0, 0, 3, 1), counts(0, 0, 1, 1)])

  // Delta: a new grading period, Spring gone with it... refused while Spring has it; then both go.
  const delta = calendar('delta')
  delta.academicSessions = [SESSION_HEADER,
    ['gp-3', 'active', '2026-10-01T08:00:00Z', 'Quarter 3', 'gradingPeriod', '2027-01-19', '2027-03-26', 't-spring', '2027']]
  delta.courses = [COURSE_HEADER,
    ['c-bio', 'active', '2026-10-01T08:00:00Z', 'y-2027', 'Biology', 'SCI-1', '10', 'org-1', 'Science', '']]
  const added = await run(delta, school)
  t.same([added.academicSessions, added.courses], [counts(1, 0, 0), counts(1, 0, 0)], 'a delta adds and leaves the rest alone')
  t.same((await snapshot(school)).sessions.map((s) => s.sourcedId), ['gp-3', 't-fall', 't-spring', 'y-2027'])

  delta.academicSessions = [SESSION_HEADER, ['t-spring', 'tobedeleted', '2026-10-02T08:00:00Z', 'Spring', 'term', '2027-01-19', '2027-06-18', 'y-2027', '2027']]
  delta.courses = [COURSE_HEADER]
  t.equal(await failure(delta, school), 'ImportError: academicSessions.csv:2: academic session "t-spring" is removed, but it is the parent of "gp-3", which stays')
  delta.academicSessions.push(['gp-3', 'tobedeleted', '2026-10-02T08:00:00Z', '', '', '', '', '', ''])
  const removed = await run(delta, school)
  t.same(removed.academicSessions, counts(0, 0, 0, 2), 'a parent and its child go together')

  delta.academicSessions = [SESSION_HEADER, ['y-2027', 'tobedeleted', '2026-10-03T08:00:00Z', '', '', '', '', '', '']]
  t.match(await failure(delta, school), /^ImportError: academicSessions\.csv:2: academic session "y-2027" is removed, but it is the parent of "t-fall", which stays/)
  const bulkYear = calendar()
  bulkYear.academicSessions = [SESSION_HEADER]
  t.equal(await failure(bulkYear, school), 'ImportError: courses.csv:2: schoolYearSourcedId: academic session "y-2027" is one this import removes (academicSessions.csv leaves it out or marks it tobedeleted)',
    'a course of the file may not name a school year the import removes')
  delete bulkYear.courses
  bulkYear.manifest = bulkYear.manifest!.map(([k, v]) => [k!, k === 'file.courses' ? 'absent' : v!])
  t.equal(await failure(bulkYear, school), 'ImportError: academicSessions.csv: academic session "y-2027" is removed, but it is the school year of course "c-alg", which stays',
    'nor one that a course the import keeps names')
  t.same((await snapshot(school)).sessions.map((s) => s.sourcedId), ['t-fall', 'y-2027'], 'a refused import writes nothing')
})

t.test('a bad row stops the import with its file, line and reason, and writes nothing', async (t) => {
  const school = await newSchool()
  const cases: Array<[string, (f: Files) => void, string]> = [
    ['unknown type', (f) => { f.academicSessions![2]![4] = 'quarter' }, 'academicSessions.csv:3: type "quarter" is not a session type (schoolYear, term, gradingPeriod, semester)'],
    ['bad date', (f) => { f.academicSessions![3]![5] = '2027-02-30' }, 'academicSessions.csv:4: startDate "2027-02-30" is not a date (YYYY-MM-DD)'],
    ['no end date', (f) => { f.academicSessions![1]![6] = '' }, 'academicSessions.csv:2: endDate is empty'],
    ['end before start', (f) => { f.academicSessions![4]![6] = '2026-08-01' }, 'academicSessions.csv:5: endDate 2026-08-01 is before startDate 2026-08-20'],
    ['school year not a year', (f) => { f.academicSessions![1]![8] = '26/27' }, 'academicSessions.csv:2: schoolYear "26/27" is not a year (YYYY)'],
    ['unknown parent', (f) => { f.academicSessions![4]![7] = 't-winter' }, 'academicSessions.csv:5: parentSourcedId: academic session "t-winter" is neither in academicSessions.csv nor in the school'],
    ['own parent', (f) => { f.academicSessions![2]![7] = 't-fall' }, 'academicSessions.csv:3: parentSourcedId is the session itself'],
    ['parents in a circle', (f) => { f.academicSessions![1]![7] = 'gp-1' }, 'academicSessions.csv:2: the parents of academic session "y-2027" lead back to it'],
    ['duplicate sourcedId', (f) => { f.academicSessions![3]![0] = 't-fall' }, 'academicSessions.csv:4: sourcedId "t-fall" is already on line 3'],
    ['tobedeleted in bulk', (f) => { f.courses![2]![1] = 'tobedeleted' }, 'courses.csv:3: status tobedeleted is for delta files: the manifest marks courses.csv bulk, where a record is removed by leaving its row out'],
    ['unknown school year', (f) => { f.courses![1]![3] = 'y-2030' }, 'courses.csv:2: schoolYearSourcedId: academic session "y-2030" is neither in academicSessions.csv nor in the school'],
    ['bad grade', (f) => { f.courses![1]![6] = '09,14' }, 'courses.csv:2: grade "14" is not a OneRoster grade (IT, PR, PK, TK, KG, 01 to 13, UG, Other)'],
    ['no title', (f) => { f.courses![2]![4] = '' }, 'courses.csv:3: title is empty'],
    ['missing column', (f) => { f.academicSessions = f.academicSessions!.map((r) => r.slice(0, 8)) }, 'academicSessions.csv:1: missing column "schoolYear"']
  ]
  for (const [name, change, message] of cases) {
    const files = calendar()
    change(files)
    t.equal(await failure(files, school), `ImportError: ${message}`, name)
  }
  t.same(await snapshot(school), { sessions: [], courses: [] }, 'nothing was written')
})

t.test('two schools with the same sourcedIds keep their own sessions and courses', async (t) => {
  const [a, b] = [await newSchool(), await newSchool()]
  await run(calendar(), a)
  const files = calendar()
  files.academicSessions = files.academicSessions!.map((r, i) => i === 0 ? r : [...r.slice(0, 3), `B ${r[3]!}`, ...r.slice(4)])
  files.courses = [COURSE_HEADER, ['c-alg', '', '', 'y-2027', 'B Algebra', '', '', 'org-2', '', '']]
  const second = await run(files, b)
  t.same([second.academicSessions, second.courses], [counts(4, 0, 0), counts(1, 0, 0)], 'school B creates its own, matching nothing of A')
  const [snapA, snapB] = [await snapshot(a), await snapshot(b)]
  t.same(snapA.sessions.map((s) => s.title), ['Quarter 1', 'Fall', 'Spring', '2026-2027'], 'A is as it was')
  t.same(snapA.courses.map((c) => c.title), ['Algebra I', 'Studio Art, "Drawing"'])
  t.same(snapB.sessions.map((s) => s.title), ['B Quarter 1', 'B Fall', 'B Spring', 'B 2026-2027'])
  t.same(snapB.courses.map((c) => [c.title, c.schoolYear]), [['B Algebra', 'y-2027']], 'B\'s course names B\'s school year')
})
