// What a OneRoster sync walks beyond the users, for the REST rows of `npm run bench` (issue 37):
// each seeded school's calendar (a school year, two terms, four grading periods), its courses, its
// classrooms made classes (a course and both terms), and demographics (every student's, every
// tenth teacher's). Written by the project's own import (`school-data import oneroster`, as an
// operator runs it), one bundle per school: academicSessions.csv and courses.csv bulk, classes.csv
// and demographics.csv delta (a class whose title is a classroom's name, made without a sourcedId,
// becomes that classroom: docs/running/import.md). Deterministic: the same bundle on every run.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { csv } from './bundle.mjs'
import { importBundle } from './dataset.mjs'

export const COURSES_PER_SCHOOL = 10
const MODIFIED = '2026-09-01T00:00:00Z'
const SESSIONS = [
  ['y-2027', 'School year 2026-2027', 'schoolYear', '2026-08-20', '2027-06-18', ''],
  ['t-fall', 'Fall', 'term', '2026-08-20', '2027-01-15', 'y-2027'],
  ['t-spring', 'Spring', 'term', '2027-01-19', '2027-06-18', 'y-2027'],
  ['gp-1', 'Quarter 1', 'gradingPeriod', '2026-08-20', '2026-10-23', 't-fall'],
  ['gp-2', 'Quarter 2', 'gradingPeriod', '2026-10-26', '2027-01-15', 't-fall'],
  ['gp-3', 'Quarter 3', 'gradingPeriod', '2027-01-19', '2027-03-26', 't-spring'],
  ['gp-4', 'Quarter 4', 'gradingPeriod', '2027-03-29', '2027-06-18', 't-spring']
]

const pad = (n, width) => String(n).padStart(width, '0')

/** One school's bundle: `names` of its classrooms, the sourcedIds of its students and teachers (as the data set seeds them). */
function writeSchoolBundle (dir, school, { classrooms, students, teachers }) {
  const manifest = [['propertyName', 'value'], ['manifest.version', '1.0'], ['oneroster.version', '1.2'],
    ['file.academicSessions', 'bulk'], ['file.courses', 'bulk'], ['file.classes', 'delta'], ['file.demographics', 'delta'],
    ['file.users', 'absent'], ['file.roles', 'absent'], ['file.enrollments', 'absent'], ['file.orgs', 'absent']]
  const academicSessions = [['sourcedId', 'status', 'dateLastModified', 'title', 'type', 'startDate', 'endDate', 'parentSourcedId', 'schoolYear'],
    ...SESSIONS.map(([id, title, type, start, end, parent]) => [id, '', '', `${school.tag} ${title}`, type, start, end, parent, '2027'])]
  const courses = [['sourcedId', 'status', 'dateLastModified', 'schoolYearSourcedId', 'title', 'courseCode', 'grades', 'orgSourcedId', 'subjects', 'subjectCodes'],
    ...Array.from({ length: COURSES_PER_SCHOOL }, (_, i) => [`course-${pad(i + 1, 2)}`, '', '', 'y-2027', `${school.tag} Course ${pad(i + 1, 2)}`, `C${pad(i + 1, 2)}`, '', '', '', ''])]
  const classes = [['sourcedId', 'status', 'dateLastModified', 'title', 'grades', 'courseSourcedId', 'classCode', 'classType', 'location', 'schoolSourcedId', 'termSourcedIds', 'subjects', 'subjectCodes', 'periods'],
    ...classrooms.map((name, i) => [`class-${pad(i + 1, 3)}`, 'active', MODIFIED, name, '', `course-${pad(i % COURSES_PER_SCHOOL + 1, 2)}`, `K${pad(i + 1, 3)}`, 'scheduled', '', '', 't-fall,t-spring', '', '', ''])]
  const demographics = [['sourcedId', 'status', 'dateLastModified', 'birthDate', 'sex', 'white', 'hispanicOrLatinoEthnicity', 'countryOfBirthCode'],
    ...students.map((id, i) => [id, 'active', MODIFIED, `${2010 + (i % 8)}-${pad(1 + (i % 12), 2)}-${pad(1 + (i % 28), 2)}`, i % 2 === 0 ? 'female' : 'male', i % 3 === 0 ? 'true' : '', i % 5 === 0 ? 'true' : 'false', 'US']),
    ...teachers.filter((_, i) => i % 10 === 0).map((id, i) => [id, 'active', MODIFIED, `${1970 + (i % 25)}-0${1 + (i % 9)}-15`, 'unspecified', '', '', ''])]
  for (const [name, rows] of Object.entries({ manifest, academicSessions, courses, classes, demographics })) writeFileSync(join(dir, `${name}.csv`), csv(rows))
}

/**
 * Imports each school's calendar, courses, classes and demographics (above) with the project's
 * CLI; `client` reads the school's classroom names and user sourcedIds. Returns the rows written.
 */
export async function importRosterData (projectDir, url, client, schools) {
  const root = mkdtempSync(join(tmpdir(), 'sds-bench-oneroster-'))
  try {
    for (const school of schools) {
      const names = async (sql) => (await client.query(sql, [school.id])).rows.map((r) => r.v)
      const dir = join(root, school.tag)
      mkdirSync(dir)
      writeSchoolBundle(dir, school, {
        classrooms: await names('SELECT name AS v FROM classrooms WHERE school_id = $1 ORDER BY name'),
        students: await names('SELECT sourced_id AS v FROM students WHERE school_id = $1 AND sourced_id IS NOT NULL ORDER BY sourced_id'),
        teachers: await names('SELECT sourced_id AS v FROM teachers WHERE school_id = $1 AND sourced_id IS NOT NULL ORDER BY sourced_id')
      })
      await importBundle(projectDir, url, dir, school.id)
    }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}
