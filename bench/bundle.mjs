// The OneRoster 1.2 CSV bundle of `npm run bench:import` and of the write workload's import
// comparison (bench/writes.mjs): `students` students, one class per 25, one teacher per 20, their
// enrollments and demographics. Deterministic: the same bundle on every run.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'

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

/** Rows as a CSV file's text, a value with a comma, quote or line break quoted. */
export const csv = (rows) => rows.map((r) => r.map((v) => /[",\n]/.test(String(v)) ? `"${String(v).replaceAll('"', '""')}"` : v).join(',')).join('\n') + '\n'

export function writeBundle (dir, students) {
  seed = 42
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
