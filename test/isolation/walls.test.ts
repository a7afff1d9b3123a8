// Each wall on its own stops the leaks: the same probes run with both walls, with wall 1 alone
// (a role that bypasses row-level security), with wall 2 alone (the extension's filters off), and,
// as the control that shows the probes can fail, with neither. Contacts (agents) too: each school's
// have the other's sourcedIds, and one lists a student of the other school, which no wall follows.
import pg from 'pg'
import t from 'tap'
import type { PGlite } from '@electric-sql/pglite'
import { setLocalStatements } from '../../src/db/school-session.js'
import { withoutSchoolConditions } from '../../src/db/typed-reads.js'
import { insertStudents, studentsBySourcedId, updateStudents } from '../../src/db/typed-writes.js'
import { createTestDatabase, testDatabase, type TestDatabaseOptions } from '../helper.js'
import { foreignIds, gql, mirror, outOfReachIds, seedContacts, type Mirror, type MirrorSchool } from './mirror.js'

/** Responses to school A's probes that hold records of school B. */
async function leaks (m: Mirror, caller: MirrorSchool, other: MirrorSchool): Promise<number> {
  const queries = [
    '{ school { id name } }',
    '{ students(limit: 1000) { id fullName classroom { id students { id } teachers { id } } } }',
    '{ teachers(limit: 1000) { id classrooms { id students { id } } } }',
    '{ classrooms(limit: 1000) { id students { id } teachers { id } } }',
    ...other.studentIds.map((id) => `{ student(id: "${id}") { id classroom { id } } }`),
    ...other.teacherIds.map((id) => `{ teacher(id: "${id}") { id classrooms { id } } }`),
    ...other.classroomIds.map((id) => `{ classroom(id: "${id}") { id students { id } } }`),
    '{ contacts(limit: 1000) { id students { id contacts { id } } } contactsPage(limit: 1000) { nodes { id } } }',
    '{ students(limit: 1000) { id contacts { id students { id } } } }',
    '{ contacts(filter: { role: RELATIVE }) { id students { id classroom { id } } } }',
    ...other.contactIds.map((id) => `{ contact(id: "${id}") { id students { id } } }`),
    ...other.studentIds.map((id) => `{ contacts(filter: { studentId: "${id}" }) { id } student(id: "${id}") { id contacts { id } } }`)
  ]
  let leaked = 0
  for (const query of queries) {
    const res = await gql(m.app, query, { token: caller.token })
    if (foreignIds(res, caller).length > 0) leaked += 1
  }
  return leaked
}

/** Responses to a teacher's probes that hold records outside her reach (her own school's or the other's). */
async function teacherLeaks (m: Mirror, caller: MirrorSchool, other: MirrorSchool): Promise<number> {
  const outside = [...caller.ids, ...other.ids].filter((id) => !caller.teacherReach.has(id))
  const queries = [
    '{ school { id name } }',
    '{ students(limit: 1000) { id classroom { id students { id } teachers { id } teacherAssignments { teacher { id } } } } }',
    '{ teachers(limit: 1000) { id classrooms { id students { id } } classroomAssignments { classroom { id } teacher { id } } } }',
    '{ classrooms(limit: 1000) { id students { id } teachers { id classrooms { id } } teacherAssignments { teacher { id } classroom { id } } } }',
    '{ studentsPage(limit: 1000) { nodes { id } } teachersPage(limit: 1000) { nodes { id } } classroomsPage(limit: 1000) { nodes { id } } }',
    // Her own feed: nothing has left her reach in the mirror, so every entry names a record in it.
    '{ changes(limit: 1000) { changes { id student { id } teacher { id } classroom { id } } } }',
    ...outside.map((id) => `{ students(filter: { classroomId: "${id}" }) { id } teachers(filter: { classroomId: "${id}" }) { id } }`),
    ...outside.map((id) => `{ student(id: "${id}") { id } teacher(id: "${id}") { id } classroom(id: "${id}") { id } }`)
  ]
  let leaked = 0
  for (const query of queries) {
    const res = await gql(m.app, query, { token: caller.teacherToken })
    if (outOfReachIds(res, caller).length > 0) leaked += 1
  }
  return leaked
}

/** A teacher's operations selecting contacts (her own school's or the other's) that are not refused before they run. */
async function teacherContactLeaks (m: Mirror, caller: MirrorSchool, other: MirrorSchool): Promise<number> {
  const queries = [
    '{ contacts(limit: 1000) { id } }',
    '{ contactsPage { nodes { id } } }',
    '{ students(limit: 1000) { id contacts { id } } }',
    ...[...caller.contactIds, ...other.contactIds].map((id) => `{ contact(id: "${id}") { id } }`)
  ]
  let leaked = 0
  for (const query of queries) {
    const res = await gql(m.app, query, { token: caller.teacherToken })
    if (res.body.data != null || res.body.errors?.[0]?.extensions?.code !== 'FORBIDDEN') leaked += 1
  }
  return leaked
}

/**
 * Mutations of school A's administrator naming B's records by id: a write that runs, or any refusal
 * but NOT_FOUND (a version conflict tells the record exists), is a leak. None deletes: a delete
 * names a version the record does not have, so that the control leaves the mirror whole.
 */
async function writeLeaks (m: Mirror, caller: MirrorSchool, other: MirrorSchool): Promise<number> {
  const [student] = caller.studentIds
  const [teacher] = caller.teacherIds
  const probes = [
    ...other.studentIds.flatMap((id) => [
      `mutation { changeStudent(student: { id: "${id}" }, input: { preferredName: "probe" }) { id } }`,
      `mutation { deleteStudent(student: { id: "${id}" }, expectedVersion: 999) { id } }`,
      `mutation { removeStudentFromClassroom(student: { id: "${id}" }) { id } }`
    ]),
    ...other.teacherIds.flatMap((id) => [
      `mutation { changeTeacher(teacher: { id: "${id}" }, input: { preferredName: "probe" }) { id } }`,
      `mutation { deleteTeacher(teacher: { id: "${id}" }, expectedVersion: 999) { id } }`,
      `mutation { endTeacherAssignment(teacher: { id: "${id}" }, classroom: { id: "${caller.classroomIds[0]}" }) { role } }`
    ]),
    ...other.classroomIds.flatMap((id) => [
      `mutation { changeClassroom(classroom: { id: "${id}" }, input: { subject: "probe" }) { id } }`,
      `mutation { deleteClassroom(classroom: { id: "${id}" }, expectedVersion: 999) { id } }`,
      `mutation { placeStudent(student: { id: "${student}" }, classroom: { id: "${id}" }) { id } }`,
      `mutation { assignTeacher(teacher: { id: "${teacher}" }, classroom: { id: "${id}" }) { role } }`,
      `mutation { createStudent(input: { fullName: "Probe", classroom: { id: "${id}" } }) { id } }`
    ])
  ]
  let leaked = 0
  for (const query of probes) {
    const res = await gql(m.app, query, { token: caller.token })
    if (res.body.errors?.[0]?.extensions?.code !== 'NOT_FOUND') leaked += 1
  }
  return leaked
}

/**
 * Bulk upserts of school A's administrator by a sourcedId B's student has (the statements of
 * typed-writes.ts on this client: the read by sourcedId, the INSERT, the UPDATE): A's own student
 * created, then changed; a leak when an answer names B's student, or B's records change.
 */
async function upsertLeaks (m: Mirror, caller: MirrorSchool, other: MirrorSchool, key: string): Promise<number> {
  const UPSERT = 'mutation ($items: [StudentUpsert!]!) { upsertStudents(items: $items) { items { id outcome } } }'
  const theirs = await gql(m.app, UPSERT, { token: other.token, variables: { items: [{ sourcedId: key, fullName: 'Theirs', studentNumber: key }] } })
  const theirId: string = theirs.body.data?.upsertStudents.items[0].id
  const snapshot = async (): Promise<string> => JSON.stringify((await gql(m.app, '{ students(limit: 1000) { id fullName version gradeLevel } }', { token: other.token })).body)
  const before = await snapshot()
  let leaked = 0
  for (const [item, outcome] of [[{ sourcedId: key, fullName: 'Mine', studentNumber: key }, 'CREATED'], [{ sourcedId: key, fullName: 'Mine, changed', gradeLevel: 'GRADE_4' }, 'CHANGED']] as const) {
    const res = await gql(m.app, UPSERT, { token: caller.token, variables: { items: [item] } })
    const [answer] = res.body.data?.upsertStudents.items ?? []
    if (answer?.outcome !== outcome || answer.id === theirId) leaked += 1
  }
  if (await snapshot() !== before) leaked += 1
  return leaked
}

/** What a teacher's lists return: exactly her reach, the school aside. */
async function teacherReads (m: Mirror, caller: MirrorSchool): Promise<string[]> {
  const res = await gql(m.app, '{ students(limit: 1000) { id } teachers(limit: 1000) { id } classrooms(limit: 1000) { id } }', { token: caller.teacherToken })
  const data = res.body.data ?? {}
  return [...(data.students ?? []), ...(data.teachers ?? []), ...(data.classrooms ?? [])].map((r: { id: string }) => r.id).sort()
}

const CONFIGURATIONS: Array<{ name: string, options: TestDatabaseOptions, rowSecurity: boolean, leaks: boolean }> = [
  { name: 'both walls', options: {}, rowSecurity: true, leaks: false },
  { name: 'wall 1 alone (role bypasses row-level security)', options: { role: 'owner' }, rowSecurity: false, leaks: false },
  { name: 'wall 2 alone (tenant extension filters off)', options: { tenantFilter: false }, rowSecurity: true, leaks: false },
  { name: 'no wall (control: the probes detect a leak)', options: { role: 'owner', tenantFilter: false }, rowSecurity: false, leaks: true }
]

for (const config of CONFIGURATIONS) {
  t.test(config.name, async (t) => {
    const db = await createTestDatabase(config.options)
    t.equal(db.rowSecurity, config.rowSecurity, 'row-level security applies as configured')
    const m = await mirror(t, db)
    await seedContacts(db, m)
    const found = (await leaks(m, m.a, m.b)) + (await leaks(m, m.b, m.a))
    if (config.leaks) t.ok(found > 0, `without either wall, B's records reach A (${found} probes leaked)`)
    else t.equal(found, 0, 'no probe returns a record of the other school')
    // A teacher: the same walls confine her to her reach inside her school.
    const teacherFound = (await teacherLeaks(m, m.a, m.b)) + (await teacherLeaks(m, m.b, m.a))
    if (config.leaks) t.ok(teacherFound > 0, `without either wall, records outside a teacher's reach reach her (${teacherFound} probes leaked)`)
    else t.equal(teacherFound, 0, 'no probe returns a record outside the teacher\'s reach')
    // Contacts: refused to a teacher before anything runs, whatever the walls.
    t.equal((await teacherContactLeaks(m, m.a, m.b)) + (await teacherContactLeaks(m, m.b, m.a)), 0, 'every teacher\'s operation selecting a contact is refused')
    // Mutations: the same walls stop a write naming another school's record, each alone.
    const writesFound = (await writeLeaks(m, m.a, m.b)) + (await writeLeaks(m, m.b, m.a))
    if (config.leaks) t.ok(writesFound > 0, `without either wall, mutations reach B's records (${writesFound} probes leaked)`)
    else t.equal(writesFound, 0, 'no mutation reaches a record of the other school: each is refused as a missing one')
    if (!config.leaks) {
      const expected = [...m.a.teacherReach].filter((id) => id !== m.a.schoolId).sort()
      t.same(await teacherReads(m, m.a), expected, 'the teacher\'s lists hold all of her reach')
    }
    if (!config.leaks) {
      // Interleaved concurrent requests of both schools: each runs under its own school, never the other's.
      const responses = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
        const [caller, other] = i % 2 === 0 ? [m.a, m.b] : [m.b, m.a]
        const res = await gql(m.app, `{ school { id } students(limit: 1000) { id } other: student(id: "${other.studentIds[0]}") { id }
          own: classroom(id: "${caller.classroomIds[0]}") { id students { id } } }`, { token: caller.token })
        return { res, caller }
      }))
      t.equal(responses.filter(({ res, caller }) => foreignIds(res, caller).length > 0).length, 0, 'concurrent requests never mix schools')
      t.equal(responses.filter(({ res, caller }) => res.body.data?.students?.length !== caller.studentIds.length ||
        res.body.data?.own?.id !== caller.classroomIds[0]).length, 0, 'and each reads all of its own')
    }
    // The bulk upsert's statements (after the reads above, which count each school's students): a
    // sourcedId of the other school's is the caller's own.
    const upsertsFound = (await upsertLeaks(m, m.a, m.b, 'probe-1')) + (await upsertLeaks(m, m.b, m.a, 'probe-2'))
    if (config.leaks) t.ok(upsertsFound > 0, `without either wall, a bulk upsert reads and writes B's student (${upsertsFound} probes leaked)`)
    else t.equal(upsertsFound, 0, 'no bulk upsert reads or writes a student of the other school')
    // Positive control in every configuration: each school reads its own records.
    const own = await gql(m.app, '{ students(limit: 1000) { id } }', { token: m.a.token })
    t.ok(m.a.studentIds.every((id) => own.body.data?.students.some((s: { id: string }) => s.id === id)), 'A reads all of A')
    if (!config.leaks) {
      const contacts = await gql(m.app, '{ contacts { id students { id } } }', { token: m.a.token })
      t.same(contacts.body.data?.contacts, [
        { id: m.a.contactIds[0], students: m.a.studentIds.slice(0, 2).map((id) => ({ id })) },
        { id: m.a.contactIds[1], students: [{ id: m.a.studentIds[2] }] }
      ], 'A reads its contacts, and of their students only its own')
    }
  })
}

// Wall 2 straight at the database, as the service role.

interface Sql {
  query (text: string, params?: unknown[]): Promise<{ rows: any[], count: number }>
  /** The school (and teacher) of the open transaction: set_config, or on a Citus coordinator the service's SET LOCALs that reach the workers. */
  setSchool (schoolId: string, teacherId?: string): Promise<void>
  close (): Promise<void>
}

/** What a write that would move a row out of the school meets: row-level security, or on Citus its refusal to change a row's distribution column first. */
const MOVE_REFUSED = /row-level security|modifying the partition value of rows is not allowed/

async function serviceSql (): Promise<Sql> {
  const db = await testDatabase()
  if ('pglite' in db.migrationTarget) {
    // The embedded database runs the whole session as the service role.
    const pglite: PGlite = db.migrationTarget.pglite
    return {
      async query (text, params) {
        const res = await pglite.query<any>(text, params)
        return { rows: res.rows, count: res.affectedRows ?? res.rows.length }
      },
      async setSchool (schoolId, teacherId) {
        await pglite.query("SELECT set_config('app.school_id', $1, true), set_config('app.teacher_id', $2, true)", [schoolId, teacherId ?? ''])
      },
      async close () {}
    }
  }
  const client = new pg.Client({ connectionString: db.migrationTarget.url })
  await client.connect()
  return {
    async query (text, params) {
      const res = await client.query(text, params)
      return { rows: res.rows, count: res.rowCount ?? 0 }
    },
    async setSchool (schoolId, teacherId) {
      if (db.citus) {
        for (const statement of setLocalStatements({ schoolId, teacherId }, true)) await client.query(statement)
        return
      }
      await client.query("SELECT set_config('app.school_id', $1, true), set_config('app.teacher_id', $2, true)", [schoolId, teacherId ?? ''])
    },
    close: () => client.end()
  }
}

t.test('wall 2 at the database: the service role with no school sees and writes nothing', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  const sql = await serviceSql()
  t.teardown(() => sql.close())
  for (const table of ['students', 'teachers', 'classrooms', 'teacher_classrooms']) {
    const { rows } = await sql.query(`SELECT count(*)::int AS n FROM ${table}`)
    t.equal(rows[0].n, 0, `no school set: ${table} reads 0 rows`)
    const updated = await sql.query(`UPDATE ${table} SET created_at = created_at`)
    t.equal(updated.count, 0, `no school set: ${table} updates 0 rows`)
  }
  await t.rejects(sql.query("INSERT INTO students (school_id, id, full_name, updated_at) VALUES ($1, gen_random_uuid(), 'Intruder', now())", [m.a.schoolId]),
    /row-level security/, 'no school set: an insert is refused')
})

t.test('wall 2 at the database: with school A set, B\'s rows can be neither read nor written', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  const sql = await serviceSql()
  t.teardown(() => sql.close())
  await sql.query('BEGIN')
  try {
    await sql.setSchool(m.a.schoolId)
    const { rows } = await sql.query('SELECT DISTINCT school_id FROM students')
    t.same(rows.map((r) => r.school_id), [m.a.schoolId], 'control: A reads only A')
    const byId = await sql.query('SELECT id FROM students WHERE id = $1', [m.b.studentIds[0]])
    t.equal(byId.rows.length, 0, "B's student by id is invisible")
    const updated = await sql.query("UPDATE students SET full_name = 'Hacked' WHERE school_id = $1", [m.b.schoolId])
    t.equal(updated.count, 0, "B's students cannot be updated")
    const deleted = await sql.query('DELETE FROM teachers WHERE school_id = $1', [m.b.schoolId])
    t.equal(deleted.count, 0, "B's teachers cannot be deleted")
    const moved = sql.query('UPDATE students SET school_id = $1 WHERE id = $2', [m.b.schoolId, m.a.studentIds[0]])
    await t.rejects(moved, MOVE_REFUSED, "A's student cannot be moved to B")
  } finally {
    await sql.query('ROLLBACK')
  }
  await sql.query('BEGIN')
  try {
    await sql.setSchool(m.a.schoolId)
    await t.rejects(sql.query("INSERT INTO students (school_id, id, full_name, updated_at) VALUES ($1, gen_random_uuid(), 'Intruder', now())", [m.b.schoolId]),
      /row-level security/, 'a row of B cannot be inserted')
  } finally {
    await sql.query('ROLLBACK')
  }
  // The setting lived only in its transaction.
  const after = await sql.query("SELECT current_setting('app.school_id', true) AS school")
  t.ok(after.rows[0].school === null || after.rows[0].school === '', 'the school does not outlive its transaction')
  const count = await sql.query('SELECT count(*)::int AS n FROM students')
  t.equal(count.rows[0].n, 0)
  const still = await db.forSchool(m.b.schoolId).student.count()
  t.equal(still, m.b.studentIds.length, "B's students are all still there")
})

t.test('wall 2 at the database: the bulk upsert\'s statements with another school bound as $1 write nothing of it', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  const sql = await serviceSql()
  t.teardown(() => sql.close())
  const id = '01900000-0000-7000-8000-00000000b001'
  const insert = insertStudents(['sourcedId', 'fullName'], [{ id, data: { sourcedId: 'intruder', fullName: 'Intruder' } }])
  const update = updateStudents(['fullName'], [{ id: m.b.studentIds[0]!, changes: { fullName: 'Hacked' } }])
  const lookup = studentsBySourcedId(['intruder'])
  await sql.query('BEGIN')
  try {
    await sql.setSchool(m.a.schoolId)
    await t.rejects(sql.query(insert.statement.sql, [m.b.schoolId, ...insert.values]), /row-level security/, 'school A set: the INSERT of a row of B is refused (WITH CHECK)')
  } finally {
    await sql.query('ROLLBACK')
  }
  await sql.query('BEGIN')
  try {
    await sql.setSchool(m.a.schoolId)
    t.equal((await sql.query(update.statement.sql, [m.b.schoolId, ...update.values])).count, 0, 'school A set: the UPDATE of B\'s student by id and school changes nothing')
    t.equal((await sql.query(withoutSchoolConditions(update.statement.sql), [m.b.schoolId, ...update.values])).count, 0, 'nor without its school condition')
  } finally {
    await sql.query('ROLLBACK')
  }
  await sql.query('BEGIN')
  try {
    await sql.setSchool(m.b.schoolId)
    t.equal((await sql.query(insert.statement.sql, [m.b.schoolId, ...insert.values])).count, 1, 'control: school B set, B\'s INSERT is written')
    await sql.setSchool(m.a.schoolId)
    t.equal((await sql.query(withoutSchoolConditions(lookup.statement.sql), [m.b.schoolId, ...lookup.values])).rows.length, 0, 'and school A set, the read by sourcedId without its condition does not see it')
  } finally {
    await sql.query('ROLLBACK')
  }
})

t.test('wall 2 at the database: with a teacher set, only her reach can be read or written', async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  await seedContacts(db, m)
  const sql = await serviceSql()
  t.teardown(() => sql.close())
  const teacherId = m.a.teacherIds[0]!
  await sql.query('BEGIN')
  try {
    await sql.setSchool(m.a.schoolId, teacherId)
    const seen: string[] = []
    for (const table of ['students', 'teachers', 'classrooms']) {
      const { rows } = await sql.query(`SELECT id FROM ${table}`)
      seen.push(...rows.map((r) => r.id as string))
    }
    t.same(seen.sort(), [...m.a.teacherReach].filter((id) => id !== m.a.schoolId).sort(), 'students, teachers and classrooms: exactly her reach')
    const assignments = await sql.query('SELECT DISTINCT classroom_id FROM teacher_classrooms')
    t.ok(assignments.rows.every((r) => m.a.teacherReach.has(r.classroom_id)), 'assignments: only those of her classrooms')
    const colleagues = await sql.query('SELECT classroom_id FROM teacher_classrooms WHERE teacher_id = $1', [m.a.teacherIds[1]])
    t.equal(colleagues.rows.length, 1, "a colleague's assignments: only the classroom they share")
    const feed = await sql.query('SELECT count(*)::int AS n FROM changes')
    t.equal(feed.rows[0].n, 0, "the school's change feed is not hers")
    const agents = await sql.query('SELECT count(*)::int AS n FROM agents')
    t.equal(agents.rows[0].n, 0, 'no contact (agent) is hers, not even her students\'')
    const outside = m.a.studentIds.filter((id) => !m.a.teacherReach.has(id))
    const updated = await sql.query("UPDATE students SET full_name = 'Hacked' WHERE id = ANY($1::uuid[])", [outside])
    t.equal(updated.count, 0, 'a student outside her reach cannot be updated')
    await t.rejects(sql.query('UPDATE students SET classroom_id = $1 WHERE id = $2', [m.a.classroomIds.find((id) => !m.a.teacherReach.has(id)), m.a.studentIds.find((id) => m.a.teacherReach.has(id))]),
      /row-level security/, 'a student in reach cannot be moved out of it')
  } finally {
    await sql.query('ROLLBACK')
  }
  // The teacher lived only in its transaction: the school alone sees the whole school again.
  await sql.query('BEGIN')
  try {
    await sql.setSchool(m.a.schoolId)
    const { rows } = await sql.query('SELECT count(*)::int AS n FROM students')
    t.equal(rows[0].n, m.a.studentIds.length, 'after her transaction, the school alone reads every student')
    const agents = await sql.query('SELECT id FROM agents ORDER BY id')
    t.same(agents.rows.map((r) => r.id), [...m.a.contactIds].sort(), 'and its own contacts only')
  } finally {
    await sql.query('ROLLBACK')
  }
})
