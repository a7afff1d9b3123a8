// A teacher's change feed at the database (table teacher_changes, written by the triggers of the
// migration teacher_change_feed, in the form of teacher_feed_relations; on Citus, on the shards):
// what enters, changes in and leaves each teacher's reach, for every kind of write and cascade; no
// change for a write that changes nothing; row-level security; pruning; and a consumer applying
// the feed ends with exactly what the teacher can read.
import fc from 'fast-check'
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import type { Database } from '../src/db/client.js'
import { setLocalStatements } from '../src/db/school-session.js'
import { createClassroomAssignment } from './fixtures.js'
import { serverUrl, serviceConnection, testDatabase, unique } from './helper.js'

interface FeedRow {
  id: bigint
  type: 'CREATED' | 'UPDATED' | 'DELETED'
  record_type: 'STUDENT' | 'TEACHER' | 'CLASSROOM'
  record_id: string
  sourced_id: string | null
  student_number: string | null
}

/**
 * A query in a transaction of `schoolId` (and of `teacherId`, when given), as the service role,
 * with the school set as the service sets it (on Citus, in the form that reaches the workers).
 */
async function inSession<T> (db: Database, schoolId: string, teacherId: string | null, sql: string, ...values: unknown[]): Promise<T[]> {
  return await db.prisma.$transaction(async (tx) => {
    for (const statement of settings(db, schoolId, teacherId)) await tx.$executeRawUnsafe(statement)
    return await tx.$queryRawUnsafe<T[]>(sql, ...values)
  })
}

/** The settings of such a transaction; `writer`, as the feed's trigger functions write. */
function settings (db: Database, schoolId: string, teacherId: string | null, writer = false): string[] {
  return [
    ...setLocalStatements({ schoolId, teacherId: teacherId ?? undefined }, db.citus),
    ...(writer ? ["SET LOCAL app.writing_teacher_feed = 'on'"] : [])
  ]
}

/** A school, its records named for the assertions, and each teacher's feed read as that teacher. */
class School {
  readonly names = new Map<string, string>()
  private readonly read = new Map<string, bigint>()
  private constructor (readonly db: Database, readonly id: string) {}

  static async create (name: string): Promise<School> {
    const db = await testDatabase()
    return new School(db, await createSchool(db, unique(name)))
  }

  get scoped () {
    return this.db.forSchool(this.id)
  }

  async teacher (name: string, sourcedId?: string): Promise<string> {
    const id = await createTeacher(this.db, { schoolId: this.id, fullName: name, sourcedId })
    this.names.set(id, name)
    return id
  }

  async classroom (name: string): Promise<string> {
    const { id } = await this.scoped.classroom.create({ data: { schoolId: this.id, name }, select: { id: true } })
    this.names.set(id, name)
    return id
  }

  async student (name: string, classroom?: string, keys: { sourcedId?: string, studentNumber?: string } = {}): Promise<string> {
    const id = await createStudent(this.db, { schoolId: this.id, fullName: name, classroom, ...keys })
    this.names.set(id, name)
    return id
  }

  async assign (teacherId: string, classroom: string, role: 'PRIMARY' | 'ASSISTANT' = 'PRIMARY'): Promise<void> {
    this.names.set(await createClassroomAssignment(this.db, this.id, teacherId, classroom, role), classroom)
  }

  /** The id of the record named `name`. */
  named (name: string): string {
    for (const [id, known] of this.names) if (known === name) return id
    throw new Error(`No record named ${name}`)
  }

  async unassign (teacherId: string, classroomId: string): Promise<void> {
    await this.scoped.teacherClassroom.deleteMany({ where: { teacherId, classroomId } })
  }

  async move (studentId: string, classroomId: string | null): Promise<void> {
    await this.scoped.student.updateMany({ where: { id: studentId }, data: { classroomId } })
  }

  /** The rows of the teacher's feed since the last call, as the teacher reads them. */
  async rows (teacherId: string): Promise<FeedRow[]> {
    const rows = await inSession<FeedRow>(this.db, this.id, teacherId,
      'SELECT id, type::text, record_type::text, record_id::text, sourced_id, student_number FROM teacher_changes WHERE id > $1 ORDER BY id',
      this.read.get(teacherId) ?? 0n)
    if (rows.length > 0) this.read.set(teacherId, rows[rows.length - 1]!.id)
    return rows
  }

  /** The teacher's news since the last call, as "TYPE name", in order. */
  async news (teacherId: string): Promise<string[]> {
    return (await this.rows(teacherId)).map((row) => `${row.type} ${this.names.get(row.record_id) ?? row.record_id}`)
  }

  /** Marks every teacher's feed as read. */
  async skip (...teacherIds: string[]): Promise<void> {
    for (const teacherId of teacherIds) await this.rows(teacherId)
  }
}

t.test("a student created in, updated in, moved out of and into a teacher's classroom, and deleted", async (t) => {
  const school = await School.create('Student Moves School')
  const ada = await school.teacher('Ada Teacher')
  t.same(await school.news(ada), ['CREATED Ada Teacher'], "a teacher's own record is in their reach from the start")
  const bob = await school.teacher('Bob Teacher')
  await school.assign(ada, 'Room A')
  t.same(await school.news(ada), ['UPDATED Ada Teacher', 'CREATED Room A'], 'an assignment: the classroom, and the teacher record updated')
  await school.assign(bob, 'Room B')
  await school.skip(bob)
  t.same(await school.news(ada), [], "another teacher's assignment elsewhere is not in the feed")
  const [roomA, roomB] = [school.named('Room A'), school.named('Room B')]

  const sam = await school.student('Sam Student', 'Room A', { sourcedId: 'sis-sam', studentNumber: 'S-1' })
  t.same(await school.news(ada), ['CREATED Sam Student'], 'created in the classroom')
  t.same(await school.news(bob), [], 'not in the other classroom')
  await school.scoped.student.updateMany({ where: { id: sam }, data: { email: 'sam@example.org' } })
  t.same(await school.news(ada), ['UPDATED Sam Student'])
  await school.scoped.student.updateMany({ where: { id: sam }, data: { email: 'sam@example.org' } })
  t.same(await school.news(ada), [], 'an update that changes nothing is not a change')

  await school.move(sam, roomB)
  const [left] = await school.rows(ada)
  t.match(left, { type: 'DELETED', record_id: sam, sourced_id: 'sis-sam', student_number: 'S-1' }, 'moved out: a deletion with its tombstone')
  t.same(await school.news(bob), ['CREATED Sam Student'], 'moved in: a creation')
  await school.move(sam, null)
  t.same(await school.news(bob), ['DELETED Sam Student'], 'moved to no classroom: gone')
  await school.move(sam, roomA)
  t.same(await school.news(ada), ['CREATED Sam Student'])

  // Ada also teaches Room B: Bob becomes her colleague, Room B and its students enter her reach.
  await school.assign(ada, 'Room B', 'ASSISTANT')
  t.same(await school.news(ada), ['UPDATED Ada Teacher', 'CREATED Bob Teacher', 'CREATED Room B'])
  t.same(await school.news(bob), ['CREATED Ada Teacher'], 'a colleague newly sharing a classroom')
  await school.move(sam, roomB)
  t.same(await school.news(ada), ['UPDATED Sam Student'], 'moved between two classrooms of the teacher: an update')
  t.same(await school.news(bob), ['CREATED Sam Student'])
  await school.scoped.student.deleteMany({ where: { id: sam } })
  const deleted = await school.rows(ada)
  t.match(deleted, [{ type: 'DELETED', record_id: sam, sourced_id: 'sis-sam', student_number: 'S-1' }], 'deleted, with its tombstone')
  t.same(await school.news(bob), ['DELETED Sam Student'])

  // Several students in one statement, in and out of the classroom.
  const [one, two] = [await school.student('One Student', 'Room A'), await school.student('Two Student')]
  await school.skip(ada, bob)
  await school.scoped.student.updateMany({ where: { id: { in: [one, two] } }, data: { classroomId: roomB } })
  t.same((await school.news(bob)).sort(), ['CREATED One Student', 'CREATED Two Student'])
  t.same((await school.news(ada)).sort(), ['CREATED Two Student', 'UPDATED One Student'])
})

t.test('assignments: a colleague shares and stops sharing classrooms, a role changes', async (t) => {
  const school = await School.create('Assignment School')
  const ada = await school.teacher('Ada Teacher', 'sis-ada')
  const bob = await school.teacher('Bob Teacher')
  await school.assign(ada, 'Room A')
  await school.assign(ada, 'Room B')
  await school.student('Ann Student', 'Room A')
  await school.student('Ben Student', 'Room B')
  await school.skip(ada, bob)
  const [roomA, roomB] = [school.named('Room A'), school.named('Room B')]

  await school.assign(bob, 'Room A')
  t.same(await school.news(bob), ['CREATED Ann Student', 'CREATED Ada Teacher', 'UPDATED Bob Teacher', 'CREATED Room A'],
    'the new classroom, its students and its teachers enter the reach')
  t.same(await school.news(ada), ['CREATED Bob Teacher'])
  await school.assign(bob, 'Room B', 'ASSISTANT')
  t.same(await school.news(bob), ['CREATED Ben Student', 'UPDATED Bob Teacher', 'CREATED Room B'], 'a colleague already shared is not created again')
  t.same(await school.news(ada), ['UPDATED Bob Teacher'], "the colleague's assignments are part of their record")

  await school.scoped.teacherClassroom.updateMany({ where: { teacherId: bob, classroomId: roomB }, data: { role: 'PRIMARY' } })
  t.same(await school.news(bob), ['UPDATED Bob Teacher'], 'a role changed: the teacher updated, nothing enters or leaves')
  t.same(await school.news(ada), ['UPDATED Bob Teacher'])
  await school.scoped.teacherClassroom.updateMany({ where: { teacherId: bob, classroomId: roomB }, data: { role: 'PRIMARY' } })
  t.same([await school.news(bob), await school.news(ada)], [[], []], 'an assignment updated to what it was is no change')

  await school.unassign(bob, roomA)
  t.same(await school.news(bob), ['DELETED Ann Student', 'UPDATED Bob Teacher', 'DELETED Room A'], 'still sharing Room B: Ada stays')
  t.same(await school.news(ada), ['UPDATED Bob Teacher'])
  await school.unassign(bob, roomB)
  const left = await school.rows(bob)
  t.same(left.map((row) => `${row.type} ${school.names.get(row.record_id)}`),
    ['DELETED Ben Student', 'DELETED Ada Teacher', 'UPDATED Bob Teacher', 'DELETED Room B'], 'no classroom shared any more')
  t.equal(left.find((row) => row.record_id === ada)?.sourced_id, 'sis-ada', 'a colleague leaving the reach keeps its tombstone')
  t.same(await school.news(ada), ['DELETED Bob Teacher'])

  // Two assignments in one statement, and their removal in one statement.
  await school.scoped.teacherClassroom.createMany({ data: [roomA, roomB].map((classroomId) => ({ schoolId: school.id, teacherId: bob, classroomId })) })
  t.same(await school.news(bob), ['CREATED Ann Student', 'CREATED Ben Student', 'CREATED Ada Teacher', 'UPDATED Bob Teacher', 'CREATED Room A', 'CREATED Room B'])
  t.same(await school.news(ada), ['CREATED Bob Teacher'])
  await school.scoped.teacherClassroom.deleteMany({ where: { teacherId: bob } })
  t.same(await school.news(bob), ['DELETED Ann Student', 'DELETED Ben Student', 'DELETED Ada Teacher', 'UPDATED Bob Teacher', 'DELETED Room A', 'DELETED Room B'])
  t.same(await school.news(ada), ['DELETED Bob Teacher'])
})

t.test('records updated: a classroom to its teachers, a teacher to themselves and their colleagues', async (t) => {
  const school = await School.create('Update School')
  const ada = await school.teacher('Ada Teacher')
  const bob = await school.teacher('Bob Teacher')
  const cal = await school.teacher('Cal Teacher')
  await school.assign(ada, 'Room A')
  await school.assign(bob, 'Room A')
  await school.assign(cal, 'Room C')
  await school.skip(ada, bob, cal)
  const roomA = school.named('Room A')

  await school.scoped.classroom.updateMany({ where: { id: roomA }, data: { subject: 'History' } })
  t.same([await school.news(ada), await school.news(bob), await school.news(cal)], [['UPDATED Room A'], ['UPDATED Room A'], []])
  await school.scoped.classroom.updateMany({ where: { id: roomA }, data: { subject: 'History' } })
  await school.scoped.teacher.updateMany({ where: { id: ada }, data: { fullName: 'Ada Teacher' } })
  t.same([await school.news(ada), await school.news(bob)], [[], []], 'updates that change nothing are no change')
  await school.scoped.teacher.updateMany({ where: { id: ada }, data: { title: 'Head of History' } })
  t.same([await school.news(ada), await school.news(bob), await school.news(cal)], [['UPDATED Ada Teacher'], ['UPDATED Ada Teacher'], []])
  const dan = await school.teacher('Dan Teacher')
  t.same([await school.news(dan), await school.news(ada)], [['CREATED Dan Teacher'], []], 'a new teacher is in their own reach only')
})

t.test('cascades: a classroom deleted, a teacher deleted, a school deleted', async (t) => {
  const school = await School.create('Cascade School')
  const ada = await school.teacher('Ada Teacher')
  const bob = await school.teacher('Bob Teacher')
  const cal = await school.teacher('Cal Teacher')
  await school.assign(ada, 'Room A')
  await school.assign(bob, 'Room A')
  await school.assign(ada, 'Room Shared')
  await school.assign(bob, 'Room Shared')
  await school.assign(cal, 'Room Shared')
  await school.assign(cal, 'Room C')
  await school.student('Cay Student', 'Room C', { sourcedId: 'sis-cay' })
  await school.skip(ada, bob, cal)
  const room = (name: string) => school.named(name)

  // Its assignments go by cascade; Ada and Bob still share Room A, Cal shares nothing with them.
  await school.scoped.classroom.deleteMany({ where: { id: room('Room Shared') } })
  t.same(await school.news(ada), ['DELETED Room Shared', 'UPDATED Ada Teacher', 'UPDATED Bob Teacher', 'DELETED Cal Teacher'])
  t.same(await school.news(bob), ['DELETED Room Shared', 'UPDATED Ada Teacher', 'UPDATED Bob Teacher', 'DELETED Cal Teacher'])
  t.same(await school.news(cal), ['DELETED Room Shared', 'DELETED Ada Teacher', 'DELETED Bob Teacher', 'UPDATED Cal Teacher'])

  // Cal's own feed loses the whole reach; Cal's colleagues lose Cal; nothing twice.
  await school.assign(ada, 'Room C')
  await school.skip(ada, bob, cal)
  await school.scoped.teacher.deleteMany({ where: { id: cal } })
  t.same((await school.news(cal)).sort(), ['DELETED Ada Teacher', 'DELETED Cal Teacher', 'DELETED Cay Student', 'DELETED Room C'])
  t.same(await school.news(ada), ['DELETED Cal Teacher'], 'a colleague loses the teacher, once')
  t.same(await school.news(bob), [], 'who shared nothing with them hears nothing')

  // Deleting the school deletes its feeds too, and the cascade writes nothing for it.
  const other = await School.create('Deleted School')
  const eve = await other.teacher('Eve Teacher')
  await other.assign(eve, 'Room E')
  await other.student('Eli Student', 'Room E')
  await other.db.prisma.school.delete({ where: { id: other.id } })
  const left = await inSession<{ n: number }>(other.db, other.id, eve, 'SELECT count(*)::int AS n FROM teacher_changes')
  t.same(left, [{ n: 0 }], "the school's feeds went with it")
})

t.test('row-level security: a teacher reads their own feed only; no other session reads or writes it', async (t) => {
  const school = await School.create('Wall School')
  const ada = await school.teacher('Ada Teacher')
  const bob = await school.teacher('Bob Teacher')
  await school.assign(ada, 'Room A')
  await school.assign(bob, 'Room A')
  const other = await School.create('Other Wall School')
  const eve = await other.teacher('Eve Teacher')

  const audiences = async (schoolId: string, teacherId: string | null) =>
    (await inSession<{ teacher_id: string }>(school.db, schoolId, teacherId, 'SELECT DISTINCT teacher_id::text FROM teacher_changes')).map((r) => r.teacher_id)
  t.same(await audiences(school.id, ada), [ada], "a teacher's session: their own rows")
  t.same(await audiences(school.id, null), [], 'a session of the school with no teacher: none')
  t.same(await audiences(other.id, ada), [], "the teacher with another school's id: none")
  t.same(await audiences(school.id, eve), [], "another school's teacher: none")
  t.same(await audiences(other.id, eve), [eve])
  const insert = 'INSERT INTO teacher_changes (school_id, teacher_id, type, record_type, record_id) VALUES ($1::uuid, $2::uuid, \'CREATED\', \'TEACHER\', $2::uuid)'
  await t.rejects(inSession(school.db, school.id, null, insert, school.id, ada), /row-level security/, 'the service cannot write a feed row itself')
  await t.rejects(inSession(school.db, school.id, ada, insert, school.id, ada), /row-level security/, 'nor a teacher their own')
  const deleted = await school.db.prisma.$transaction(async (tx) => {
    for (const statement of settings(school.db, school.id, ada)) await tx.$executeRawUnsafe(statement)
    return await tx.$executeRawUnsafe('DELETE FROM teacher_changes')
  })
  t.equal(deleted, 0, 'nor delete from it')
  t.same(await audiences(school.id, ada), [ada])
})

t.test("pruning: rows older than 91 days go, but each teacher's newest such row stays as the mark", async (t) => {
  const school = await School.create('Prune School')
  const ada = await school.teacher('Ada Teacher')
  const bob = await school.teacher('Bob Teacher')
  await school.assign(ada, 'Room A')
  await school.student('First Student', 'Room A')
  const all = await school.rows(ada)
  t.equal(all.length, 4)
  // Age Ada's rows and Bob's (as the feed's writer: no session of the service may).
  await school.db.prisma.$transaction(async (tx) => {
    for (const statement of settings(school.db, school.id, null, true)) await tx.$executeRawUnsafe(statement)
    await tx.$executeRawUnsafe("UPDATE teacher_changes SET at = now() - interval '92 days'")
  })
  await school.student('Second Student')
  const ids = async (teacherId: string) =>
    (await inSession<{ id: bigint }>(school.db, school.id, teacherId, 'SELECT id FROM teacher_changes ORDER BY id')).map((r) => r.id)
  t.same(await ids(ada), [all[3]!.id], "Ada's old rows are pruned but the newest")
  t.equal((await ids(bob)).length, 1, "and Bob's")
  await school.student('Third Student', 'Room A')
  t.equal((await ids(ada)).length, 2, 'newer rows follow the mark')
})

// The teacher's reach as row-level security gives it to the teacher's own session: what their
// lists show.
async function reach (school: School, teacherId: string): Promise<string[]> {
  const rows = await inSession<{ id: string }>(school.db, school.id, teacherId, `
    SELECT id::text FROM students UNION ALL SELECT id::text FROM teachers UNION ALL SELECT id::text FROM classrooms`)
  return rows.map((r) => r.id).sort()
}

t.test('a consumer applying the feed holds exactly what the teacher reads, through moves and assignments', async (t) => {
  const school = await School.create('Mirror School')
  const teachers = [await school.teacher('Ada Teacher'), await school.teacher('Bob Teacher'), await school.teacher('Cal Teacher')]
  const mirrors = new Map(teachers.map((id) => [id, new Set<string>()]))
  const check = async (step: string) => {
    for (const [teacherId, mirror] of mirrors) {
      for (const row of await school.rows(teacherId)) {
        if (row.type === 'DELETED') mirror.delete(row.record_id)
        else mirror.add(row.record_id)
      }
      t.same([...mirror].sort(), await reach(school, teacherId), `${step}: ${school.names.get(teacherId)}`)
    }
  }
  const [ada, bob, cal] = teachers as [string, string, string]
  await school.assign(ada, 'Room A')
  await school.assign(bob, 'Room B')
  const room = (name: string) => school.named(name)
  const students = [await school.student('S1', 'Room A'), await school.student('S2', 'Room A'), await school.student('S3', 'Room B'), await school.student('S4')]
  await check('set up')
  await school.move(students[0]!, room('Room B'))
  await check('a student moved from A to B')
  await school.assign(cal, 'Room A', 'ASSISTANT')
  await school.assign(cal, 'Room B', 'ASSISTANT')
  await check('Cal assigned to both')
  await school.move(students[3]!, room('Room A'))
  await school.move(students[1]!, null)
  await check('a student moved in, one out')
  await school.unassign(cal, room('Room A'))
  await check('Cal unassigned from A')
  await school.assign(ada, 'Room B')
  await school.unassign(bob, room('Room B'))
  await check('Bob leaves B, Ada joins it')
  await school.scoped.teacherClassroom.deleteMany({ where: { classroomId: room('Room B') } })
  await school.scoped.student.updateMany({ where: { classroomId: room('Room B') }, data: { classroomId: room('Room A') } })
  await check('B emptied')
  await school.scoped.classroom.deleteMany({ where: { id: room('Room B') } })
  await school.assign(bob, 'Room A')
  await check('B deleted, Bob in A')
  await school.scoped.teacher.deleteMany({ where: { id: cal } })
  await school.scoped.student.deleteMany({ where: { id: students[2]! } })
  await check('Cal and a student deleted')
})

// Random writes of every kind, single and several rows at once, cascades included: after each,
// every teacher's mirror (deleted teachers' too) equals what that teacher reads, and no entry is
// out of turn (a creation of a record held, an update or deletion of one not held).
const OPERATIONS = [
  'create student', 'move student', 'move classroom', 'update student', 'delete student',
  'assign', 'assign everywhere', 'unassign', 'unassign everywhere', 'change role',
  'create teacher', 'update teacher', 'delete teacher', 'create classroom', 'update classroom', 'delete classroom'
] as const
const operationArb = fc.record({ kind: fc.constantFrom(...OPERATIONS), a: fc.nat(50), b: fc.nat(50), same: fc.boolean() })

t.test('random writes: every teacher\'s mirror stays what the teacher reads', async (t) => {
  let checked = 0
  await fc.assert(fc.asyncProperty(fc.array(operationArb, { minLength: 1, maxLength: 20 }), async (operations) => {
    const school = await School.create('Random Feed School')
    const scoped = school.scoped
    const teachers = [await school.teacher('T0'), await school.teacher('T1')]
    const rooms = [await school.classroom('R0'), await school.classroom('R1')]
    const students = [await school.student('S0', 'R0'), await school.student('S1', 'R1')]
    let made = 0
    const pick = <T>(list: T[], n: number): T | undefined => list.length === 0 ? undefined : list[n % list.length]
    const mirrors = new Map<string, Set<string>>()
    const verify = async (step: string): Promise<boolean> => {
      for (const teacherId of teachers.concat([...mirrors.keys()].filter((id) => !teachers.includes(id)))) {
        const mirror = mirrors.get(teacherId) ?? new Set<string>()
        mirrors.set(teacherId, mirror)
        for (const row of await school.rows(teacherId)) {
          // Strictly: a record is created when it enters, updated or deleted only while held.
          if (mirror.has(row.record_id) === (row.type === 'CREATED')) {
            t.fail(`${step}: ${row.type} ${row.record_type} ${row.record_id} to ${teacherId}, ${mirror.has(row.record_id) ? 'held' : 'not held'}`)
            return false
          }
          if (row.type === 'DELETED') mirror.delete(row.record_id)
          else mirror.add(row.record_id)
        }
        const expected = await reach(school, teacherId)
        checked += 1
        if (JSON.stringify([...mirror].sort()) !== JSON.stringify(expected)) {
          t.same([...mirror].sort(), expected, `${step}: the mirror of ${teacherId}`)
          return false
        }
      }
      return true
    }
    if (!await verify('set up')) return false
    for (const { kind, a, b, same } of operations) {
      made += 1
      const student = pick(students, a)
      const teacher = pick(teachers, a)
      const room = pick(rooms, b)
      const fromRoom = pick(rooms, a)
      switch (kind) {
        case 'create student':
          students.push(await school.student(`S${made}`, same ? undefined : school.names.get(room ?? '')))
          break
        case 'move student':
          if (student !== undefined) await school.move(student, same ? null : room ?? null)
          break
        case 'move classroom':
          if (fromRoom !== undefined) await scoped.student.updateMany({ where: { classroomId: fromRoom }, data: { classroomId: same ? null : room ?? null } })
          break
        case 'update student':
          if (student !== undefined) await scoped.student.updateMany({ where: { id: student }, data: { email: same ? null : `s${made}@example.org` } })
          break
        case 'delete student':
          if (student !== undefined) {
            await scoped.student.deleteMany({ where: { id: student } })
            students.splice(students.indexOf(student), 1)
          }
          break
        case 'assign':
          if (teacher !== undefined && room !== undefined) {
            await scoped.teacherClassroom.createMany({ data: [{ schoolId: school.id, teacherId: teacher, classroomId: room, role: same ? 'ASSISTANT' : 'PRIMARY' }], skipDuplicates: true })
          }
          break
        case 'assign everywhere':
          if (teacher !== undefined && rooms.length > 0) {
            await scoped.teacherClassroom.createMany({ data: rooms.map((classroomId) => ({ schoolId: school.id, teacherId: teacher, classroomId })), skipDuplicates: true })
          }
          break
        case 'unassign':
          if (teacher !== undefined && room !== undefined) await school.unassign(teacher, room)
          break
        case 'unassign everywhere':
          if (same && room !== undefined) await scoped.teacherClassroom.deleteMany({ where: { classroomId: room } })
          else if (teacher !== undefined) await scoped.teacherClassroom.deleteMany({ where: { teacherId: teacher } })
          break
        case 'change role':
          if (teacher !== undefined) await scoped.teacherClassroom.updateMany({ where: { teacherId: teacher }, data: { role: same ? 'ASSISTANT' : 'PRIMARY' } })
          break
        case 'create teacher':
          teachers.push(await school.teacher(`T${made}`))
          break
        case 'update teacher':
          if (teacher !== undefined) await scoped.teacher.updateMany({ where: { id: teacher }, data: { title: same ? null : `Title ${made}` } })
          break
        case 'delete teacher':
          if (teacher !== undefined) {
            await scoped.teacher.deleteMany({ where: same ? { id: { in: teachers.slice(0, 2) } } : { id: teacher } })
            for (const gone of same ? teachers.slice(0, 2) : [teacher]) teachers.splice(teachers.indexOf(gone), 1)
          }
          break
        case 'create classroom':
          rooms.push(await school.classroom(`Room ${made}`))
          break
        case 'update classroom':
          if (room !== undefined) await scoped.classroom.updateMany({ where: { id: room }, data: { subject: same ? null : `Subject ${made}` } })
          break
        case 'delete classroom':
          if (room !== undefined) {
            // Its students hold it (the foreign key restricts): they go to another classroom first.
            await scoped.student.updateMany({ where: { classroomId: room }, data: { classroomId: pick(rooms.filter((r) => r !== room), a) ?? null } })
            await scoped.classroom.deleteMany({ where: { id: room } })
            rooms.splice(rooms.indexOf(room), 1)
          }
          break
      }
      if (!await verify(`${kind} (${a}, ${b}, ${same})`)) return false
    }
    return true
  }), { numRuns: 40 })
  t.ok(checked > 300, `${checked} mirrors checked`)
})

t.test('two writers of one school at once: the later one sees the other and writes the entry', {
  skip: serverUrl === undefined ? 'PostgreSQL only: two concurrent transactions on two connections (TEST_DATABASE_URL)' : false
}, async (t) => {
  const school = await School.create('Concurrent Feed School')
  const ada = await school.teacher('Ada Teacher')
  await school.assign(ada, 'Room Other')
  const roomA = await school.classroom('Room A')
  const sam = await school.student('Sam Student')
  await school.skip(ada)
  const connect = async () => await serviceConnection(t)
  const [one, two] = [await connect(), await connect()]
  for (const client of [one, two]) {
    await client.query('BEGIN')
    for (const statement of settings(school.db, school.id, null)) await client.query(statement)
  }
  // Sam is moved into Room A while Ada is assigned to it: whichever commits second sees the other.
  await one.query('UPDATE students SET classroom_id = $1 WHERE id = $2', [roomA, sam])
  const assigning = two.query('INSERT INTO teacher_classrooms (school_id, teacher_id, classroom_id) VALUES ($1, $2, $3)', [school.id, ada, roomA])
  // The assignment waits for the move's lock on the school (on Citus, on the school's worker, as the
  // shard's statement: INSERT INTO public.teacher_classrooms_<shard> ...).
  const watcher = await connect()
  let waiting = false
  for (let i = 0; i < 500 && !waiting; i++) {
    const { rows } = await watcher.query(
      `SELECT count(*)::int AS n FROM ${school.db.citus ? 'citus_stat_activity' : 'pg_stat_activity'} WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO %teacher_classrooms%'`)
    waiting = rows[0].n > 0
    if (!waiting) await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.ok(waiting, 'the assignment waits for the move')
  await one.query('COMMIT')
  await assigning
  await two.query('COMMIT')
  t.same(await school.news(ada), ['CREATED Sam Student', 'UPDATED Ada Teacher', 'CREATED Room A'], 'the student enters the reach once')
  t.same((await reach(school, ada)).includes(sam), true)
})
