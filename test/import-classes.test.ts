// classes.csv's course, terms, classCode, classType, location, periods, grades, subjects and subject
// codes kept by the OneRoster import (src/import/oneroster.ts resolveClassReferences, write.ts):
// bulk and delta, line-numbered refusals of an unknown course or term. In-process (importOneRoster,
// the CLI's own function) on this file's database: PostgreSQL as the service role, or an embedded
// database in a temporary folder.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { bundleWriter, type Files } from './fixtures/csv-bundle.js'
import { COURSE_HEADER, SESSION_HEADER } from './fixtures/calendar.js'
import { openDatabase, type Database } from '../src/db/client.js'
import { importOneRoster, type ImportSummary } from '../src/import/index.js'
import { testDatabase, testDatabaseUrl } from './helper.js'

let url: string | undefined
let work: string
let dataDir: string

t.before(async () => {
  url = await testDatabaseUrl()
  work = mkdtempSync(join(tmpdir(), 'sds-import-classes-'))
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
  return await inspect(async (db) => (await db.prisma.school.create({ data: { name: `Classes School ${++schools} ${process.pid}` } })).id)
}

const writeFolder = bundleWriter(() => work)

const CLASS_HEADER = ['sourcedId', 'status', 'dateLastModified', 'title', 'grades', 'courseSourcedId', 'classCode', 'classType', 'location', 'schoolSourcedId', 'termSourcedIds', 'subjects', 'subjectCodes', 'periods']

/** A 1.2 bundle: a school year, two terms, two courses and two classes (`classes` mode; the calendar bulk). */
function bundle (mode: 'bulk' | 'delta' = 'bulk'): Files {
  return {
    manifest: [['propertyName', 'value'], ['manifest.version', '1.0'], ['oneroster.version', '1.2'],
      ['file.academicSessions', 'bulk'], ['file.courses', 'bulk'], ['file.users', 'absent'], ['file.classes', mode],
      ['file.enrollments', 'absent'], ['file.orgs', 'absent']],
    academicSessions: [SESSION_HEADER,
      ['y-2027', '', '', '2026-2027', 'schoolYear', '2026-08-20', '2027-06-18', '', '2027'],
      ['t-fall', '', '', 'Fall', 'term', '2026-08-20', '2027-01-15', 'y-2027', '2027'],
      ['t-spring', '', '', 'Spring', 'term', '2027-01-19', '2027-06-18', 'y-2027', '2027']
    ],
    courses: [COURSE_HEADER,
      ['c-alg', '', '', 'y-2027', 'Algebra I', 'MATH-101', '09', 'org-1', 'Mathematics', '02052'],
      ['c-hr', '', '', 'y-2027', 'Homeroom', 'HR', '09', 'org-1', '', '']
    ],
    classes: [CLASS_HEADER,
      ['k-alg', '', '', 'Algebra I - P1', '09,10', 'c-alg', 'ALG-1', 'scheduled', 'Room 19', 'org-1', 't-spring,t-fall', 'Mathematics', '02052', '1,3'],
      ['k-hr', '', '', 'Homeroom 9A', '09', 'c-hr', '', 'Homeroom', '', 'org-1', 't-fall', '', '', '']
    ]
  }
}

const run = async (files: Files, school: string): Promise<ImportSummary> =>
  await importOneRoster({ path: writeFolder(files), schoolId: school, databaseUrl: url, dataDir })

const failure = async (files: Files, school: string): Promise<string> =>
  await run(files, school).then(() => 'no error', (err: Error) => `${err.name}: ${err.message}`)

async function classes (school: string): Promise<Array<Record<string, unknown>>> {
  return await inspect(async (db) => {
    const tenant = db.forSchool(school)
    const sessions = new Map((await tenant.academicSession.findMany({ select: { id: true, sourcedId: true } })).map((s) => [s.id, s.sourcedId]))
    const rows = await tenant.classroom.findMany({ orderBy: { sourcedId: 'asc' }, include: { course: { select: { sourcedId: true } } } })
    return rows.map((c) => ({
      sourcedId: c.sourcedId,
      name: c.name,
      course: c.course?.sourcedId ?? null,
      terms: c.termIds.map((id) => sessions.get(id) ?? id),
      classCode: c.classCode,
      classType: c.classType,
      location: c.location,
      periods: c.periods,
      grades: c.grades,
      subjects: c.subjects,
      subjectCodes: c.subjectCodes,
      gradeLevel: c.gradeLevel,
      subject: c.subject
    }))
  })
}

t.test("a class's course, terms and OneRoster fields are kept as the file gives them; a second run changes nothing", async (t) => {
  const school = await newSchool()
  const first = await run(bundle(), school)
  t.same(first.classrooms, { created: 2, updated: 0, unchanged: 0, removed: 0 })
  t.same(await classes(school), [
    { sourcedId: 'k-alg', name: 'Algebra I - P1', course: 'c-alg', terms: ['t-spring', 't-fall'], classCode: 'ALG-1', classType: 'scheduled', location: 'Room 19', periods: ['1', '3'], grades: ['09', '10'], subjects: ['Mathematics'], subjectCodes: ['02052'], gradeLevel: null, subject: 'Mathematics' },
    { sourcedId: 'k-hr', name: 'Homeroom 9A', course: 'c-hr', terms: ['t-fall'], classCode: null, classType: 'homeroom', location: null, periods: [], grades: ['09'], subjects: [], subjectCodes: [], gradeLevel: 'GRADE_9', subject: null }
  ], 'in the terms\' order of the file; the class type in 1EdTech\'s spelling')
  const again = await run(bundle(), school)
  t.same(again.classrooms, { created: 0, updated: 0, unchanged: 2, removed: 0 }, 'the same bundle again changes nothing')
})

t.test('a delta moves a class to another course and term; a course removed leaves the classes the import keeps naming it refused', async (t) => {
  const school = await newSchool()
  await run(bundle(), school)
  const delta = bundle('delta')
  delta.classes = [CLASS_HEADER, ['k-alg', 'active', '2026-10-01T08:00:00Z', 'Algebra I - P1', '09', 'c-hr', 'ALG-1', 'scheduled', 'Room 20', 'org-1', 't-spring', 'Mathematics', '02052', '2']]
  const moved = await run(delta, school)
  t.same(moved.classrooms, { created: 0, updated: 1, unchanged: 0, removed: 0 })
  t.match((await classes(school)).find((c) => c.sourcedId === 'k-alg'), { course: 'c-hr', terms: ['t-spring'], location: 'Room 20', periods: ['2'] })

  // The course of a class the bulk classes.csv moves goes in the same import.
  const bulk = bundle()
  bulk.courses = bulk.courses!.filter((r) => r[0] !== 'c-alg')
  bulk.classes![1]![5] = 'c-hr'
  const removed = await run(bulk, school)
  t.same(removed.courses, { created: 0, updated: 0, unchanged: 1, removed: 1 })
  t.same((await classes(school)).map((c) => c.course), ['c-hr', 'c-hr'])
})

t.test('an unknown course or term sourcedId is refused with its line, bulk and delta, and nothing is written', async (t) => {
  const school = await newSchool()
  const course = bundle()
  course.classes![2]![5] = 'c-none'
  t.equal(await failure(course, school), 'ImportError: classes.csv:3: courseSourcedId "c-none" is not a course of the school\'s or of courses.csv')
  t.same(await classes(school), [], 'nothing written')

  await run(bundle(), school)
  const delta = bundle('delta')
  delta.classes = [CLASS_HEADER, ['k-new', 'active', '2026-10-01T08:00:00Z', 'Biology', '10', 'c-alg', '', 'scheduled', '', 'org-1', 't-fall, t-summer', '', '', '']]
  t.equal(await failure(delta, school), 'ImportError: classes.csv:2: termSourcedIds: "t-summer" is not an academic session of the school\'s or of academicSessions.csv')

  // A term this import removes is no term of the school's any more.
  const gone = bundle()
  gone.academicSessions = gone.academicSessions!.filter((r) => r[0] !== 't-spring')
  t.equal(await failure(gone, school), 'ImportError: classes.csv:2: termSourcedIds: "t-spring" is not an academic session of the school\'s or of academicSessions.csv')

  const type = bundle()
  type.classes![1]![7] = 'lab'
  t.equal(await failure(type, school), 'ImportError: classes.csv:2: classType "lab" is not a OneRoster class type (homeroom, scheduled or ext:name)')
  t.equal((await classes(school)).length, 2, 'the school keeps what it had')
})

t.test('a bundle without courses.csv and academicSessions.csv may name ones the school lacks: not kept, nothing invented', async (t) => {
  const school = await newSchool()
  const files = bundle()
  files.manifest = files.manifest!.map((row) => row[0] === 'file.academicSessions' || row[0] === 'file.courses' ? [row[0], 'absent'] : row)
  delete files.academicSessions
  delete files.courses
  const first = await run(files, school)
  t.same(first.classrooms, { created: 2, updated: 0, unchanged: 0, removed: 0 }, 'the classes are imported, as before the import kept courses')
  t.same((await classes(school)).map((c) => [c.sourcedId, c.course, c.terms, c.classCode]), [['k-alg', null, [], 'ALG-1'], ['k-hr', null, [], null]])

  // The school's own calendar, imported before, is found by a bundle that leaves it out.
  await run(bundle(), school)
  const again = await run(files, school)
  t.same(again.classrooms, { created: 0, updated: 0, unchanged: 2, removed: 0 })
  t.same((await classes(school)).map((c) => [c.course, c.terms]), [['c-alg', ['t-spring', 't-fall']], ['c-hr', ['t-fall']]])
})
