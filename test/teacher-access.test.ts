// A teacher reads their reach inside the school, through every way the API reads: lists, pages and
// their cursors, by id, nested relations, filters; the school; and only the fields of the
// teacher's scopes. An administrator of the same school keeps reading everything.
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { createClassroomAssignment } from './fixtures.js'
import { build, gql, login, PASSWORD, testDatabase, unique } from './helper.js'

interface Seeded {
  schoolId: string
  rooms: Record<'own' | 'assisted' | 'shared' | 'other', string>
  teachers: Record<'me' | 'colleague' | 'stranger', string>
  students: Record<'own1' | 'own2' | 'assisted' | 'other' | 'unplaced', string>
  teacherUser: string
  adminUser: string
}

async function seed (): Promise<Seeded> {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Reach School'))
  const student = (fullName: string, classroom?: string): Promise<string> => createStudent(db, { schoolId, fullName, classroom })
  const students = {
    own1: await student('Ada Own', 'Own Room'),
    own2: await student('Bea Own', 'Own Room'),
    assisted: await student('Cy Assisted', 'Assisted Room'),
    other: await student('Di Other', 'Other Room'),
    unplaced: await student('Ed Unplaced')
  }
  const teachers = {
    me: await createTeacher(db, { schoolId, fullName: 'Mia Me' }),
    colleague: await createTeacher(db, { schoolId, fullName: 'Cal Colleague' }),
    stranger: await createTeacher(db, { schoolId, fullName: 'Sam Stranger' })
  }
  const own = await createClassroomAssignment(db, schoolId, teachers.me, 'Own Room')
  const assisted = await createClassroomAssignment(db, schoolId, teachers.me, 'Assisted Room', 'ASSISTANT')
  // The colleague shares the assisted room, and teaches the other room too.
  await createClassroomAssignment(db, schoolId, teachers.colleague, 'Assisted Room')
  const other = await createClassroomAssignment(db, schoolId, teachers.colleague, 'Other Room')
  await createClassroomAssignment(db, schoolId, teachers.stranger, 'Other Room', 'ASSISTANT')
  const shared = await createClassroomAssignment(db, schoolId, teachers.stranger, 'Empty Room')
  const teacherUser = unique('teacher')
  await createUser(db, { username: teacherUser, password: PASSWORD, schoolId })
  await db.prisma.user.update({ where: { username: teacherUser }, data: { role: 'TEACHER', teacherId: teachers.me } })
  const adminUser = unique('admin')
  await createUser(db, { username: adminUser, password: PASSWORD, schoolId })
  return { schoolId, rooms: { own, assisted, shared, other }, teachers, students, teacherUser, adminUser }
}

const ids = (rows: Array<{ id: string }> | undefined): string[] => (rows ?? []).map((row) => row.id).sort()
const sorted = (...values: string[]): string[] => [...values].sort()

t.test('a teacher reads their classrooms, their students, their colleagues and the school', async (t) => {
  const app = await build(t)
  const s = await seed()
  const { accessToken: token } = await login(app, s.teacherUser)
  const { accessToken: admin } = await login(app, s.adminUser)
  const ask = async (query: string, variables?: Record<string, unknown>, as = token) => {
    const res = await gql(app, query, { token: as, variables })
    if (res.body.errors !== undefined) throw new Error(JSON.stringify(res.body.errors))
    return res.body.data!
  }

  const lists = await ask('{ school { id } students(limit: 100) { id } teachers(limit: 100) { id } classrooms(limit: 100) { id } }')
  t.equal(lists.school.id, s.schoolId, 'the school')
  t.same(ids(lists.students), sorted(s.students.own1, s.students.own2, s.students.assisted), 'students: those of the classrooms taught, in any role')
  t.same(ids(lists.teachers), sorted(s.teachers.me, s.teachers.colleague), 'teachers: herself and the colleague of a shared classroom')
  t.same(ids(lists.classrooms), sorted(s.rooms.own, s.rooms.assisted), 'classrooms: those she is assigned to, primary or assistant')

  const everything = await ask('{ students(limit: 100) { id } teachers(limit: 100) { id } classrooms(limit: 100) { id } }', {}, admin)
  t.equal(everything.students.length, 5, 'control: an administrator of the school reads every student')
  t.equal(everything.teachers.length, 3, 'and every teacher')
  t.equal(everything.classrooms.length, 4, 'and every classroom')

  // Pages: cursors walk the reach, and nothing beyond it.
  const walked: string[] = []
  let after: string | null = null
  for (let page = 0; page < 10; page++) {
    const data = await ask('query($after: String) { studentsPage(limit: 1, after: $after) { nodes { id } pageInfo { endCursor hasNextPage } } }', { after })
    walked.push(...ids(data.studentsPage.nodes))
    if (data.studentsPage.pageInfo.hasNextPage !== true) break
    after = data.studentsPage.pageInfo.endCursor
  }
  t.same(walked.sort(), ids(lists.students), 'pages of one walk exactly the students of the list')
  const teacherPage = await ask('{ teachersPage(limit: 100) { nodes { id } } classroomsPage(limit: 100) { nodes { id } } }')
  t.same(ids(teacherPage.teachersPage.nodes), ids(lists.teachers), 'teachersPage: the same reach')
  t.same(ids(teacherPage.classroomsPage.nodes), ids(lists.classrooms), 'classroomsPage: the same reach')

  // By id: outside the reach is null, as another school's record is.
  const byId = await ask(`{
    other: student(id: "${s.students.other}") { id } unplaced: student(id: "${s.students.unplaced}") { id }
    stranger: teacher(id: "${s.teachers.stranger}") { id } room: classroom(id: "${s.rooms.other}") { id }
    own: student(id: "${s.students.own1}") { id } colleague: teacher(id: "${s.teachers.colleague}") { id }
  }`)
  t.same(byId, { other: null, unplaced: null, stranger: null, room: null, own: { id: s.students.own1 }, colleague: { id: s.teachers.colleague } },
    'by id: a student of another classroom, one of none, a stranger and a classroom not hers are null')

  // Nested relations: a colleague's classrooms are only those they share with her.
  const nested = await ask(`{ teacher(id: "${s.teachers.colleague}") { classrooms { id students { id } } classroomAssignments { classroom { id } } } }`)
  t.same(ids(nested.teacher.classrooms), [s.rooms.assisted], "a colleague's classrooms: only the shared one")
  t.same(nested.teacher.classroomAssignments.map((a: { classroom: { id: string } }) => a.classroom.id), [s.rooms.assisted], "and a colleague's assignments likewise")
  const room = await ask(`{ classroom(id: "${s.rooms.assisted}") { students { id } teachers { id } teacherAssignments { role teacher { id } } } }`)
  t.same(ids(room.classroom.students), [s.students.assisted], 'a classroom of hers: its students')
  t.same(ids(room.classroom.teachers), sorted(s.teachers.me, s.teachers.colleague), 'and its teachers')

  // Filters: naming something outside the reach finds nothing.
  const filtered = await ask(`{
    students(filter: { classroomId: "${s.rooms.other}" }) { id }
    teachers(filter: { classroomId: "${s.rooms.other}" }) { id }
    mine: students(filter: { classroomId: "${s.rooms.own}" }) { id }
  }`)
  t.same(filtered.students, [], 'students filtered by a classroom not hers: none')
  t.same(filtered.teachers, [], 'teachers filtered by a classroom not hers: none, though her colleague teaches there')
  t.same(ids(filtered.mine), sorted(s.students.own1, s.students.own2), 'filtered by her own classroom: its students')

  // Scopes: a teacher holds the roster, not demographics.
  const email = await gql(app, `{ student(id: "${s.students.own1}") { email studentNumber } }`, { token })
  t.equal(email.body.errors, undefined, 'contact fields (roster.readonly) are hers')
  const dob = await gql(app, `{ student(id: "${s.students.own1}") { dateOfBirth } }`, { token })
  t.equal(dob.body.errors?.[0]?.extensions?.code, 'FORBIDDEN', 'date of birth is refused')
  t.match(dob.body.errors?.[0]?.message, /Student\.dateOfBirth/, 'naming the field')
})

t.test("a teacher's access token names the teacher; a refresh keeps it", async (t) => {
  const app = await build(t)
  const s = await seed()
  const { accessToken, refreshToken } = await login(app, s.teacherUser)
  const claims = JSON.parse(Buffer.from(accessToken.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>
  t.equal(claims.role, 'teacher', 'role claim')
  t.equal(claims.teacher, s.teachers.me, 'teacher claim')
  const admin = JSON.parse(Buffer.from((await login(app, s.adminUser)).accessToken.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>
  t.equal(admin.role, undefined, "an administrator's token has no role claim (the default role)")
  const refreshed = await gql(app, 'mutation($t: String!) { refreshToken(refreshToken: $t) { accessToken } }', { variables: { t: refreshToken } })
  const renewed = refreshed.body.data!.refreshToken.accessToken as string
  const res = await gql(app, '{ students(limit: 100) { id } }', { token: renewed })
  t.same(ids(res.body.data!.students), sorted(s.students.own1, s.students.own2, s.students.assisted), 'the refreshed token reads the same reach')
})

t.test("a teacher's answers are not shared with another teacher or an administrator through the response cache", async (t) => {
  const app = await build(t, { responseCacheTtl: 60 })
  const s = await seed()
  const db = await testDatabase()
  const colleagueUser = unique('colleague')
  await createUser(db, { username: colleagueUser, password: PASSWORD, schoolId: s.schoolId })
  await db.prisma.user.update({ where: { username: colleagueUser }, data: { role: 'TEACHER', teacherId: s.teachers.colleague } })
  const teacher = (await login(app, s.teacherUser)).accessToken
  const colleague = (await login(app, colleagueUser)).accessToken
  const admin = (await login(app, s.adminUser)).accessToken
  const query = '{ students(limit: 100) { id } }'
  const first = await gql(app, query, { token: teacher })
  t.same(ids(first.body.data!.students), sorted(s.students.own1, s.students.own2, s.students.assisted), 'the teacher reads her three students (and the answer is kept)')
  const second = await gql(app, query, { token: colleague })
  t.same(ids(second.body.data!.students), sorted(s.students.assisted, s.students.other), 'her colleague, with the same scopes, asking the same, gets his own answer, not hers')
  const again = await gql(app, query, { token: teacher })
  t.equal(again.body.data!.students.length, 3, 'and she hers again')
  const third = await gql(app, query, { token: admin })
  t.equal(third.body.data!.students.length, 5, 'an administrator reads every student')
})
