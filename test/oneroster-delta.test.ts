// Delta sync of OneRoster's users, students and teachers (src/oneroster/deletions.ts): a filter
// that bounds dateLastModified from below answers what changed since, and the students and
// teachers deleted since as users with status tobedeleted (dateLastModified the deletion's time),
// ordered, paged and counted with the rest; only the fields the tombstone keeps and the caller's
// scopes allow; every answer valid against the service's OpenAPI description.
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { createClassroomAssignment } from './fixtures.js'
import { clientToken, seedClient } from './fixtures/oauth.js'
import { build, login, PASSWORD, testDatabase, unique } from './helper.js'
import { type Answer, BASE, checkedAnswers } from './oneroster/answers.js'

/** Every answer of this file is validated against the service's OpenAPI description. */
const answers = checkedAnswers()
const { get, invalid } = answers

/** The database's time now: what a change written after it is later than. */
async function databaseNow (db: Awaited<ReturnType<typeof testDatabase>>): Promise<Date> {
  const [row] = await db.prisma.$queryRaw<Array<{ now: Date }>>`SELECT now() AS now`
  return row!.now
}

const since = (at: Date, op = '>'): string => 'filter=' + encodeURIComponent(`dateLastModified${op}'${at.toISOString()}'`)
const pairs = (res: Answer): string[] => (res.body.users as Array<{ sourcedId: string, status: string }>).map((user) => `${user.sourcedId}:${user.status}`)

t.test('a delta answers the users changed and deleted since its bound', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Delta School'))
  const students: Record<string, string> = {}
  const add = async (sourcedId: string, givenName: string, familyName: string, fields: Record<string, string>, classroom: string): Promise<void> => {
    students[sourcedId] = await createStudent(db, { schoolId, fullName: `${givenName} ${familyName}`, givenName, familyName, classroom, sourcedId, ...fields })
  }
  await add('stu-001', 'Ada', 'Lovelace', { studentNumber: 'N1', email: 'ada@example.org' }, 'Room 1')
  await add('stu-002', 'Alan', 'Turing', { studentNumber: 'N2', status: 'INACTIVE' }, 'Room 1')
  await add('stu-003', 'Grace', 'Hopper', {}, 'Room 2')
  await add('stu-004', 'Edsger', 'Dijkstra', { studentNumber: 'N4' }, 'Room 2')
  const mary = await createTeacher(db, { schoolId, fullName: 'Mary Same', givenName: 'Mary', familyName: 'Same', sourcedId: 'tea-001' })
  const otto = await createTeacher(db, { schoolId, fullName: 'Otto Other', givenName: 'Otto', familyName: 'Other', sourcedId: 'tea-002' })
  await createClassroomAssignment(db, schoolId, mary, 'Room 1')
  await createClassroomAssignment(db, schoolId, otto, 'Room 2')
  const adminName = unique('delta-admin')
  await createUser(db, { username: adminName, password: PASSWORD, schoolId })
  const teacherName = unique('delta-teacher')
  await createUser(db, { username: teacherName, password: PASSWORD, schoolId })
  await db.prisma.user.update({ where: { username: teacherName }, data: { role: 'TEACHER', teacherId: mary } })
  const admin = (await login(app, adminName)).accessToken
  const teacher = (await login(app, teacherName)).accessToken
  const core = await clientToken(app, await seedClient(schoolId, ['roster-core.readonly']))
  const full = await clientToken(app, await seedClient(schoolId, ['roster.readonly']))

  // The bound: the database's time, after every record above was written.
  const bound = await databaseNow(db)
  const tenant = db.forSchool(schoolId)
  await tenant.student.updateMany({ where: { id: students['stu-001']! }, data: { preferredName: 'Countess' } })
  await tenant.student.deleteMany({ where: { id: students['stu-002']! } })
  await tenant.student.deleteMany({ where: { id: students['stu-003']! } })
  await tenant.teacher.deleteMany({ where: { id: otto } })
  const deletedBy = await databaseNow(db)
  const org = { href: `http://localhost${BASE}/orgs/${schoolId}`, sourcedId: schoolId, type: 'org' }

  await t.test('an administrator: what changed, and the deletions with status tobedeleted', async (t) => {
    const users = await get(app, `/users?${since(bound)}`, admin)
    t.equal(users.statusCode, 200)
    t.same(pairs(users).sort(), ['stu-001:active', 'stu-002:tobedeleted', 'stu-003:tobedeleted', 'tea-002:tobedeleted'])
    t.equal(users.headers['x-total-count'], '4', 'X-Total-Count counts the deletions')
    const alan = users.body.users.find((user: { sourcedId: string }) => user.sourcedId === 'stu-002')
    t.same(alan, {
      sourcedId: 'stu-002',
      status: 'tobedeleted',
      dateLastModified: alan.dateLastModified,
      enabledUser: 'false',
      givenName: 'Alan',
      familyName: 'Turing',
      roles: [{ roleType: 'primary', role: 'student', org }],
      primaryOrg: org,
      identifier: 'N2'
    }, 'a deleted student: what the tombstone keeps, nothing invented (no email, no grades)')
    t.ok(new Date(alan.dateLastModified).getTime() > bound.getTime() && new Date(alan.dateLastModified).getTime() <= deletedBy.getTime(), 'dateLastModified is the deletion\'s time')
    const grace = users.body.users.find((user: { sourcedId: string }) => user.sourcedId === 'stu-003')
    t.equal(grace.enabledUser, 'true', 'enabledUser is the status the record had')
    t.notOk('identifier' in grace, 'a student without a number has no identifier')
    const ottoAnswer = users.body.users.find((user: { sourcedId: string }) => user.sourcedId === 'tea-002')
    t.same([ottoAnswer.givenName, ottoAnswer.familyName, ottoAnswer.roles[0].role], ['Otto', 'Other', 'teacher'])

    t.same(pairs(await get(app, `/students?${since(bound)}`, admin)).sort(), ['stu-001:active', 'stu-002:tobedeleted', 'stu-003:tobedeleted'])
    t.same(pairs(await get(app, `/teachers?${since(bound)}`, admin)), ['tea-002:tobedeleted'])
    t.same(pairs(await get(app, `/schools/${schoolId}/teachers?${since(bound, '>=')}`, admin)), ['tea-002:tobedeleted'], 'a school\'s teachers, and >= as >')
  })

  await t.test('the deletions only with a lower bound of dateLastModified, alone or ANDed', async (t) => {
    t.same(pairs(await get(app, '/users', admin)).sort(), ['stu-001:active', 'stu-004:active', 'tea-001:active'], 'no filter: the live records only')
    const before = 'filter=' + encodeURIComponent(`dateLastModified<'${new Date(Date.now() + 86_400_000).toISOString()}'`)
    t.same(pairs(await get(app, `/users?${before}`, admin)).sort(), ['stu-001:active', 'stu-004:active', 'tea-001:active'], 'an upper bound alone: no deletions')
    const either = 'filter=' + encodeURIComponent(`dateLastModified>'${bound.toISOString()}' OR givenName='Mary'`)
    t.same(pairs(await get(app, `/users?${either}`, admin)).sort(), ['stu-001:active', 'tea-001:active'], 'a bound in an OR: no deletions')
    const alan = 'filter=' + encodeURIComponent(`dateLastModified>'${bound.toISOString()}' AND givenName='Alan'`)
    t.same(pairs(await get(app, `/users?${alan}`, admin)), ['stu-002:tobedeleted'], 'ANDed: the other conditions hold for the deletions too')
    const deletedOnly = 'filter=' + encodeURIComponent(`status='tobedeleted' AND dateLastModified>'${bound.toISOString()}'`)
    t.same(pairs(await get(app, `/users?${deletedOnly}`, admin)).sort(), ['stu-002:tobedeleted', 'stu-003:tobedeleted', 'tea-002:tobedeleted'], 'status=tobedeleted: the deletions only')
    const email = 'filter=' + encodeURIComponent(`dateLastModified>'${bound.toISOString()}' AND email~'example'`)
    t.same(pairs(await get(app, `/users?${email}`, admin)), ['stu-001:active'], 'a condition on a field the tombstone does not keep: not met')
    const times = (await get(app, `/users?${since(bound)}`, admin)).body.users.map((user: { dateLastModified: string }) => new Date(user.dateLastModified).getTime())
    const later = new Date(Math.max(...times) + 1)
    t.same(pairs(await get(app, `/users?${since(later)}`, admin)), [], 'a bound after the deletions: none')
    t.same(pairs(await get(app, `/users?${since(new Date(0))}`, admin)).sort(),
      ['stu-001:active', 'stu-002:tobedeleted', 'stu-003:tobedeleted', 'stu-004:active', 'tea-001:active', 'tea-002:tobedeleted'], 'a bound before everything: every record and every deletion kept')
  })

  await t.test('ordered and paged with the rest: sort, orderBy, offset, Link', async (t) => {
    const sorted = await get(app, `/users?${since(bound)}&sort=familyName`, admin)
    t.same(sorted.body.users.map((user: { familyName: string }) => user.familyName), ['Lovelace', 'Other', 'Turing', 'Hopper'].sort())
    const desc = await get(app, `/users?${since(bound)}&sort=familyName&orderBy=desc`, admin)
    t.same(desc.body.users.map((user: { familyName: string }) => user.familyName), ['Lovelace', 'Other', 'Turing', 'Hopper'].sort().reverse())
    const byTime = await get(app, `/users?${since(bound)}&sort=dateLastModified`, admin)
    const times = byTime.body.users.map((user: { dateLastModified: string }) => user.dateLastModified)
    t.same(times, [...times].sort(), 'by dateLastModified: deletions among the changes in time order')
    // A walk by Link, one record a page: every record once, in the order of the whole list.
    const whole = pairs(await get(app, `/users?${since(bound)}&sort=sourcedId`, admin))
    const walked: string[] = []
    let path: string | undefined = `/users?${since(bound)}&sort=sourcedId&limit=1`
    while (path !== undefined) {
      const page: Answer = await get(app, path, admin)
      t.equal(page.headers['x-total-count'], '4', 'every page counts the deletions')
      walked.push(...pairs(page))
      const next = /<([^>]*)>; rel="next"/.exec(String(page.headers.link))?.[1]
      path = next === undefined ? undefined : new URL(next).pathname.slice(BASE.length) + new URL(next).search
      if (walked.length > 10) break
    }
    t.same(walked, whole, 'the walk by Link holds each record once, in order')
    t.same(whole, ['stu-001:active', 'stu-002:tobedeleted', 'stu-003:tobedeleted', 'tea-002:tobedeleted'])
    const past = await get(app, `/users?${since(bound)}&offset=4`, admin)
    t.same([past.body.users, past.headers['x-total-count']], [[], '4'], 'an offset past the end')
    const students = await get(app, `/students?${since(bound)}&limit=1&offset=1&sort=sourcedId`, admin)
    t.same(pairs(students), ['stu-002:tobedeleted'], 'one table and its deletions, paged')
  })

  await t.test('clients: only the fields of their scopes; fields selects among the kept ones', async (t) => {
    const coreAnswer = await get(app, `/students?${since(bound)}&sort=sourcedId`, core)
    const alan = coreAnswer.body.users.find((user: { sourcedId: string }) => user.sourcedId === 'stu-002')
    t.notOk('identifier' in alan, 'roster-core.readonly: no student number for a deletion either')
    t.same(pairs(coreAnswer), ['stu-001:active', 'stu-002:tobedeleted', 'stu-003:tobedeleted'])
    const fullAnswer = await get(app, `/students?${since(bound)}&sort=sourcedId`, full)
    t.equal(fullAnswer.body.users.find((user: { sourcedId: string }) => user.sourcedId === 'stu-002').identifier, 'N2', 'roster.readonly: the student number')
    const selected = await get(app, `/users?${since(bound)}&sort=sourcedId&fields=sourcedId,status,email`, full)
    t.same(selected.body.users, [
      { sourcedId: 'stu-001', status: 'active', email: 'ada@example.org' },
      { sourcedId: 'stu-002', status: 'tobedeleted' },
      { sourcedId: 'stu-003', status: 'tobedeleted' },
      { sourcedId: 'tea-002', status: 'tobedeleted' }
    ])
    const refused = await get(app, `/users?${since(bound)}&fields=identifier`, core)
    t.equal(refused.statusCode, 403, 'a field outside the scopes is refused as ever')
  })

  await t.test('a teacher: her own feed, where what left her reach is deleted for her', async (t) => {
    const users = await get(app, `/users?${since(bound)}`, teacher)
    t.same(pairs(users).sort(), ['stu-001:active', 'stu-002:tobedeleted'], 'her student deleted; another classroom\'s deletions and Otto (no colleague) are not hers')
    t.equal(users.headers['x-total-count'], '2')
    t.same(users.body.users.find((user: { sourcedId: string }) => user.sourcedId === 'stu-002').givenName, 'Alan')
    // Ada moves to Room 2: out of her reach, a deletion for her, named as she was; the school's feed has none.
    const room2 = await tenant.classroom.findFirstOrThrow({ where: { name: 'Room 2' }, select: { id: true } })
    await tenant.student.updateMany({ where: { id: students['stu-001']! }, data: { classroomId: room2.id } })
    const moved = await get(app, `/users?${since(bound)}&sort=sourcedId`, teacher)
    t.same(pairs(moved), ['stu-001:tobedeleted', 'stu-002:tobedeleted'])
    t.same([moved.body.users[0].givenName, moved.body.users[0].familyName, moved.body.users[0].enabledUser], ['Ada', 'Lovelace', 'true'])
    t.same(pairs(await get(app, `/students?${since(bound)}&sort=sourcedId`, admin)), ['stu-001:active', 'stu-002:tobedeleted', 'stu-003:tobedeleted'], 'for the school Ada is still there')
    t.same(pairs(await get(app, `/users?${since(new Date(0))}&sort=sourcedId`, teacher)), ['stu-001:tobedeleted', 'stu-002:tobedeleted', 'tea-001:active'], 'herself, live')
    // Back in Room 1: in her reach again, no deletion.
    const room1 = await tenant.classroom.findFirstOrThrow({ where: { name: 'Room 1' }, select: { id: true } })
    await tenant.student.updateMany({ where: { id: students['stu-001']! }, data: { classroomId: room1.id } })
    t.same(pairs(await get(app, `/users?${since(bound)}&sort=sourcedId`, teacher)), ['stu-001:active', 'stu-002:tobedeleted'], 'back in her reach: live again')
  })

  await t.test('a sourcedId imported again is no deletion; one deleted twice is one', async (t) => {
    const again = await databaseNow(db)
    await tenant.student.deleteMany({ where: { id: students['stu-004']! } })
    await add('stu-004', 'Edsger', 'Dijkstra', { studentNumber: 'N4' }, 'Room 2')
    for (const givenName of ['Barbara', 'Barbra']) {
      await add('stu-009', givenName, 'Liskov', {}, 'Room 2')
      await tenant.student.deleteMany({ where: { id: students['stu-009']! } })
    }
    const delta = await get(app, `/students?${since(again)}&sort=sourcedId`, admin)
    t.same(pairs(delta), ['stu-004:active', 'stu-009:tobedeleted'])
    t.equal(delta.headers['x-total-count'], '2')
    t.equal(delta.body.users[1].givenName, 'Barbra', 'the latest deletion')
    const first = 'filter=' + encodeURIComponent(`dateLastModified>'${again.toISOString()}' AND givenName='Barbara'`)
    t.same(pairs(await get(app, `/students?${first}`, admin)), [], 'the filter meets the latest deletion only')
  })

  t.same(invalid, [], 'every answer validates against the OpenAPI description')
})
