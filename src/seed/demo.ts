// `school-data seed demo`: a demo school for the sandbox (and for `npm start` on an empty embedded
// database). Names come from faker with a fixed seed, so every demo school has the same people;
// the demo users' passwords and the demo client's secret are random and printed once.
import { randomBytes } from 'node:crypto'
import { createClient } from '../admin/clients.js'
import { createSchool } from '../admin/schools.js'
import { createUsers } from '../admin/users.js'
import { READ_SCOPES } from '../auth/scopes.js'
import type { Environment } from '../config.js'
import type { Database } from '../db/client.js'
import { v7 as uuidv7 } from 'uuid'
import type { GradeLevel } from '../import/oneroster.js'

export class SeedError extends Error {
  override name = 'SeedError'
}

export const DEMO_USERNAME = 'demo-admin'
/** A teacher's login: the lead teacher of DEMO_TEACHER_CLASSROOM, which has a teaching assistant too. */
export const DEMO_TEACHER_USERNAME = 'demo-teacher'
export const DEMO_TEACHER_CLASSROOM = 'Grade 2 A'
export const DEMO_SCHOOL_NAME = 'Maple Grove School'
export const DEMO_CLIENT_NAME = 'Demo integration'

export interface DemoLogin {
  schoolId: string
  username: string
  password: string
  /** The teacher's login (role teacher), and who the teacher is. */
  teacherUsername: string
  teacherPassword: string
  teacherName: string
  teacherClassroom: string
  /** A client with every read scope (OAuth client credentials). */
  clientId: string
  clientSecret: string
  students: number
  teachers: number
  classrooms: number
}

/** Kindergarten to grade 8, two classrooms each, about twenty students in each classroom. */
const GRADES: Array<{ level: GradeLevel, label: string, age: number }> = [
  { level: 'KINDERGARTEN', label: 'Kindergarten', age: 5 },
  ...Array.from({ length: 8 }, (_, i) => ({ level: `GRADE_${i + 1}` as GradeLevel, label: `Grade ${i + 1}`, age: 6 + i }))
]
const ROOMS_PER_GRADE = 2
const SUBJECTS = ['Homeroom', 'Homeroom', 'Mathematics', 'English Language Arts', 'Science']
const MAIL = 'maple-grove.example'

const day = (date: Date): Date => new Date(date.toISOString().slice(0, 10) + 'T00:00:00Z')

/** Demo data has generated people and a printed password: never in production. */
export function refuseInProduction (env: Environment): void {
  if (env === 'production') {
    throw new SeedError('The demo data is for the sandbox only: `seed demo` is refused when SCHOOL_DATA_ENV=production')
  }
}

export async function seedDemo (db: Database, { env }: { env: Environment }): Promise<DemoLogin> {
  refuseInProduction(env)
  const taken = await db.prisma.user.findFirst({
    where: { username: { in: [DEMO_USERNAME, DEMO_TEACHER_USERNAME] } },
    orderBy: { username: 'asc' },
    select: { username: true, schoolId: true }
  })
  if (taken !== null) {
    throw new SeedError(`The demo data exists already (user ${taken.username}, school ${taken.schoolId ?? 'none'}): nothing was changed`)
  }
  // Loaded on use: faker's name lists are only needed here.
  const { faker } = await import('@faker-js/faker/locale/en_US')
  faker.seed(20260901)

  const today = new Date()
  // The school year began on 1 September of this year, or of last year before September.
  const yearStart = today.getUTCMonth() >= 8 ? today.getUTCFullYear() : today.getUTCFullYear() - 1
  const firstDay = new Date(Date.UTC(yearStart, 8, 1))

  const schoolId = await createSchool(db, DEMO_SCHOOL_NAME, {
    timeZone: 'America/Chicago',
    addressLine1: '1200 Maple Grove Road',
    city: 'Madison',
    region: 'WI',
    postalCode: '53711',
    country: 'US',
    phone: '+1 608 555 0142',
    website: `https://www.${MAIL}`
  })
  const tenant = db.forSchool(schoolId)

  const classrooms = GRADES.flatMap((grade, g) => Array.from({ length: ROOMS_PER_GRADE }, (_, r) => ({
    schoolId,
    id: uuidv7(),
    sourcedId: `demo-class-${g}${'ab'[r]!}`,
    name: `${grade.label} ${'AB'[r]!}`,
    gradeLevel: grade.level,
    subject: grade.level === 'KINDERGARTEN' || g <= 5 ? 'Homeroom' : SUBJECTS[(g + r) % SUBJECTS.length]!,
    age: grade.age
  })))
  await tenant.classroom.createMany({ data: classrooms.map(({ age: _age, ...c }) => c) })

  // A lead teacher per classroom, and aides who assist in the younger grades.
  const teacherRows: Array<{ schoolId: string, id: string, sourcedId: string, givenName: string, familyName: string, preferredName: string, email: string, title: string, status: 'ACTIVE' | 'INACTIVE' }> = []
  const person = (title: string, status: 'ACTIVE' | 'INACTIVE' = 'ACTIVE'): typeof teacherRows[number] => {
    const givenName = faker.person.firstName()
    const familyName = faker.person.lastName()
    const n = teacherRows.length + 1
    const row = {
      schoolId,
      id: uuidv7(),
      sourcedId: `demo-teacher-${String(n).padStart(3, '0')}`,
      givenName,
      familyName,
      preferredName: givenName,
      email: `${givenName}.${familyName}.${n}@${MAIL}`.toLowerCase().replace(/[^a-z0-9.@-]/g, ''),
      title,
      status
    }
    teacherRows.push(row)
    return row
  }
  const assignments: Array<{ schoolId: string, teacherId: string, classroomId: string, role: 'PRIMARY' | 'ASSISTANT' }> = []
  for (const room of classrooms) {
    assignments.push({ schoolId, teacherId: person(`${room.name.replace(/ [AB]$/, '')} Teacher`).id, classroomId: room.id, role: 'PRIMARY' })
  }
  for (let aide = 0; aide < 4; aide++) {
    const teacher = person('Teaching Assistant')
    // Each aide assists in the two classrooms of one of the four youngest grades.
    for (const room of classrooms.slice(aide * ROOMS_PER_GRADE, (aide + 1) * ROOMS_PER_GRADE)) {
      assignments.push({ schoolId, teacherId: teacher.id, classroomId: room.id, role: 'ASSISTANT' })
    }
  }
  person('Reading Specialist', 'INACTIVE')
  await tenant.teacher.createMany({ data: teacherRows })
  await tenant.teacherClassroom.createMany({ data: assignments })

  const students = []
  let number = 1000
  for (const room of classrooms) {
    const size = faker.number.int({ min: 18, max: 24 })
    for (let i = 0; i < size; i++) {
      number += 1
      const sex = faker.helpers.arrayElement(['female', 'male'] as const)
      const givenName = faker.person.firstName(sex)
      const familyName = faker.person.lastName()
      // Born in the year that makes them the grade's age on 1 September.
      const born = faker.date.between({ from: Date.UTC(yearStart - room.age - 1, 8, 2), to: Date.UTC(yearStart - room.age, 8, 1) })
      // Most are active since the first day; a few joined late or have left.
      const leftState = faker.helpers.weightedArrayElement([
        { weight: 92, value: 'ACTIVE' as const },
        { weight: 3, value: 'TRANSFERRED' as const },
        { weight: 3, value: 'WITHDRAWN' as const },
        { weight: 2, value: 'INACTIVE' as const }
      ])
      const start = faker.datatype.boolean({ probability: 0.9 }) ? firstDay : day(faker.date.between({ from: firstDay, to: new Date(firstDay.getTime() + 60 * 86_400_000) }))
      const end = leftState === 'ACTIVE'
        ? new Date(Date.UTC(yearStart + 1, 5, 15))
        : day(faker.date.between({ from: new Date(start.getTime() + 86_400_000), to: new Date(start.getTime() + 90 * 86_400_000) }))
      students.push({
        schoolId,
        id: uuidv7(),
        sourcedId: `demo-student-${number}`,
        givenName,
        familyName,
        preferredName: faker.datatype.boolean({ probability: 0.15 }) ? faker.person.firstName(sex) : givenName,
        studentNumber: `S${number}`,
        email: `${givenName}.${familyName}.${number}@students.${MAIL}`.toLowerCase().replace(/[^a-z0-9.@-]/g, ''),
        dateOfBirth: day(born),
        gradeLevel: room.gradeLevel,
        status: leftState,
        enrollmentStartDate: start,
        enrollmentEndDate: end,
        classroomId: room.id
      })
    }
  }
  await tenant.student.createMany({ data: students })

  const client = await createClient(db, { schoolId, name: DEMO_CLIENT_NAME, scopes: READ_SCOPES })
  // The users come last, both in one transaction: while they do not exist, a failed seed can simply
  // be run again.
  const room = classrooms.find((c) => c.name === DEMO_TEACHER_CLASSROOM)!
  const lead = teacherRows.find((row) => assignments.some((a) => a.classroomId === room.id && a.teacherId === row.id && a.role === 'PRIMARY'))!
  const password = randomBytes(12).toString('base64url')
  const teacherPassword = randomBytes(12).toString('base64url')
  await createUsers(db, [
    { username: DEMO_TEACHER_USERNAME, password: teacherPassword, schoolId, role: 'teacher', teacherId: lead.id },
    { username: DEMO_USERNAME, password, schoolId }
  ])
  return {
    schoolId,
    username: DEMO_USERNAME,
    password,
    teacherUsername: DEMO_TEACHER_USERNAME,
    teacherPassword,
    teacherName: `${lead.givenName} ${lead.familyName}`,
    teacherClassroom: room.name,
    clientId: client.clientId,
    clientSecret: client.secret,
    students: students.length,
    teachers: teacherRows.length,
    classrooms: classrooms.length
  }
}

/** How to log in, for a person reading the terminal. */
export function formatLogin (login: DemoLogin): string {
  return [
    `Demo school "${DEMO_SCHOOL_NAME}" (${login.schoolId}): ${login.classrooms} classrooms, ${login.teachers} teachers, ${login.students} students.`,
    `Log in as "${login.username}" with the password "${login.password}" (shown only now; make another user with \`school-data user create\`).`,
    `A teacher logs in as "${login.teacherUsername}" with the password "${login.teacherPassword}" (shown only now): ${login.teacherName}, lead teacher of ${login.teacherClassroom}, reads that classroom, its students and its teachers (no dates of birth).`,
    'In the sandbox, open /graphiql on the server and use the login form, or call the login mutation.',
    `A program connects as the client "${DEMO_CLIENT_NAME}" with the client id "${login.clientId}" and the secret "${login.clientSecret}" (every read scope; shown only now): POST /oauth/token with grant_type=client_credentials.`,
    login.schoolId
  ].join('\n') + '\n'
}
