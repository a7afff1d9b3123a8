import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createStudent } from '../src/records/students.js'
import { SCALARS, TENANT_MODELS, TENANT_TABLE_OF, TENANT_TABLES } from '../src/db/data-model.js'
import { randomUUID } from 'node:crypto'
import { deniedColumns } from '../src/auth/scopes.js'
import { KEEP_ANSWER, TAKE_KEY } from '../src/db/idempotency-keys.js'
import { callerReach } from '../src/db/reach.js'
import { PRIVATE_MODELS, schoolFilter } from '../src/db/tenant.js'
import { Prisma } from '../src/generated/prisma/client.js'
import { createTestDatabase, testDatabase } from './helper.js'
import type { Database } from '../src/db/client.js'

async function twoSchools (database?: Database) {
  const db = database ?? await testDatabase()
  const a = await createSchool(db, 'Tenant A')
  const b = await createSchool(db, 'Tenant B')
  const studentA = await createStudent(db, { schoolId: a, fullName: 'Same Name', classroom: 'Room' })
  const studentB = await createStudent(db, { schoolId: b, fullName: 'Same Name', classroom: 'Room' })
  return { db, a, b, studentA, studentB, scopedA: db.forSchool(a) }
}

t.test('every model is either a tenant model, a private model or School', async (t) => {
  for (const model of Object.values(Prisma.ModelName)) {
    t.ok(TENANT_MODELS.has(model) || PRIVATE_MODELS.has(model) || model === 'School', model)
  }
})

t.test('the tenant tables are the tables with a school_id under row-level security, each its model\'s', async (t) => {
  const { prisma } = await testDatabase()
  const rows = await prisma.$queryRawUnsafe<Array<{ table: string }>>(`
    SELECT c.relname AS table FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relrowsecurity
      AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'school_id' AND NOT a.attisdropped)`)
  t.same(rows.map((r) => r.table).sort(), [...TENANT_TABLES].sort(), 'the catalog and the list agree')
  t.same([...TENANT_MODELS], Object.keys(TENANT_TABLE_OF), 'the models are the list\'s')
  for (const [model, table] of Object.entries(TENANT_TABLE_OF)) {
    const columns = await prisma.$queryRawUnsafe<Array<{ name: string }>>(
      'SELECT attname AS name FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped', table)
    const fields = [...SCALARS.get(model)!].map((field) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`))
    t.same(columns.map((c) => c.name).sort(), fields.sort(), `${table} holds ${model}'s fields`)
  }
})

t.test('reads of the scoped client see only its school', async (t) => {
  const { a, studentA, studentB, scopedA } = await twoSchools()
  t.same((await scopedA.student.findMany({ select: { id: true } })).map((s) => s.id), [studentA])
  t.equal(await scopedA.student.count(), 1)
  t.equal(await scopedA.student.findFirst({ where: { id: studentB } }), null)
  t.equal(await scopedA.student.findUnique({ where: { schoolId_id: { schoolId: a, id: studentB } } }), null)
  t.same((await scopedA.classroom.findMany({ select: { name: true, students: { select: { id: true } } } })),
    [{ name: 'Room', students: [{ id: studentA }] }], 'nested relation reads stay in the school')
  t.same((await scopedA.school.findMany({ select: { id: true } })).map((s) => s.id), [a])
})

t.test('a filter naming another school is refused', async (t) => {
  const { b, scopedA } = await twoSchools()
  await t.rejects(scopedA.student.findMany({ where: { schoolId: b } }), { name: 'TenantViolationError' })
  await t.rejects(scopedA.school.findFirst({ where: { id: b } }), { name: 'TenantViolationError' })
})

t.test('writes of the scoped client cannot reach or create rows of another school', async (t) => {
  const { db, a, b, studentB, scopedA } = await twoSchools()
  await t.rejects(scopedA.student.create({ data: { schoolId: b, fullName: 'Intruder' } }), { name: 'TenantViolationError' })
  await t.rejects(scopedA.student.createMany({ data: [{ schoolId: a, fullName: 'Ok' }, { schoolId: b, fullName: 'Intruder' }] }), { name: 'TenantViolationError' })
  const moved = await scopedA.student.findFirstOrThrow({ select: { id: true } })
  await t.rejects(scopedA.student.update({ where: { schoolId_id: { schoolId: a, id: moved.id } }, data: { schoolId: b } }), { name: 'TenantViolationError' })
  t.same(await scopedA.student.updateMany({ where: { id: studentB }, data: { fullName: 'Changed' } }), { count: 0 })
  t.same(await scopedA.student.deleteMany({ where: { id: studentB } }), { count: 0 })
  const stillThere = await db.forSchool(b).student.findFirstOrThrow({ where: { id: studentB } })
  t.equal(stillThere.fullName, 'Same Name', "B's student is untouched")
})

t.test('the scoped client refuses raw SQL, users, refresh tokens and school writes', async (t) => {
  const { scopedA } = await twoSchools()
  await t.rejects(scopedA.$queryRaw`SELECT 1`, { name: 'TenantViolationError' })
  await t.rejects(scopedA.$executeRawUnsafe('DELETE FROM students'), { name: 'TenantViolationError' })
  await t.rejects(scopedA.user.findMany(), { name: 'TenantViolationError' })
  await t.rejects(scopedA.refreshToken.count(), { name: 'TenantViolationError' })
  await t.rejects(scopedA.school.create({ data: { name: 'New' } }), { name: 'TenantViolationError' })
  await t.rejects(scopedA.school.deleteMany(), { name: 'TenantViolationError' })
})

t.test('wall 1 lets an idempotency key\'s two statements through, each check alone, and no other raw write; a teacher\'s reach refuses them', async (t) => {
  const { db, a, scopedA } = await twoSchools()
  // Each check of wall 1 alone over the unscoped client, in a transaction (outside a school's
  // session: wall 1 is what is tested here).
  const checks = {
    'the school filter': db.prisma.$extends(schoolFilter(a)),
    'a narrower client\'s reach': db.prisma.$extends(callerReach({ deniedColumns: deniedColumns(['roster-core.readonly']) }))
  }
  for (const [name, client] of Object.entries(checks)) {
    const callerId = randomUUID()
    await client.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(TAKE_KEY, callerId, 'k', 'fingerprint')
      t.equal(await tx.$executeRawUnsafe(KEEP_ANSWER, callerId, 'k', '{"answer":1}'), 1, `${name}: the answer stored`)
    })
    t.match(await db.prisma.idempotencyKey.findMany({ where: { callerId } }), [{ key: 'k', fingerprint: 'fingerprint', response: { answer: 1 } }], `${name}: the key kept`)
    await t.rejects(client.$transaction(async (tx) => await tx.$executeRawUnsafe(`${TAKE_KEY} `, randomUUID(), 'k', 'f')), { name: 'TenantViolationError' }, `${name}: another text is refused`)
    await t.rejects(client.$transaction(async (tx) => await tx.$executeRawUnsafe('DELETE FROM idempotency_keys')), { name: 'TenantViolationError' }, `${name}: another write of the table is refused`)
  }
  const teacher = db.prisma.$extends(callerReach({ teacherId: randomUUID() }))
  await t.rejects(teacher.$transaction(async (tx) => await tx.$executeRawUnsafe(TAKE_KEY, randomUUID(), 'k', 'f')), { name: 'TenantViolationError', message: /teachers only read/ }, 'a teacher\'s reach refuses the key')
  await t.rejects(scopedA.$transaction(async (tx: any) => await tx.$executeRawUnsafe(TAKE_KEY.toLowerCase(), randomUUID(), 'k', 'f')), { name: 'TenantViolationError' }, 'the school client refuses a text not exactly the key\'s')
})

t.test('the database refuses a link between rows of two schools', async (t) => {
  const { db, a, b } = await twoSchools()
  const roomB = await db.forSchool(b).classroom.findFirstOrThrow({ select: { id: true } })
  // Even the unscoped client cannot put A's student in B's classroom: the foreign key includes school_id.
  await t.rejects(db.prisma.student.create({ data: { schoolId: a, fullName: 'Cross', classroomId: roomB.id } }))
})

// ---------------------------------------------------------------------------------------------
// Wall 1, complete: every operation of every tenant model that the generated client offers.

interface ModelProbe {
  delegate: 'classroom' | 'student' | 'teacher' | 'teacherClassroom' | 'change' | 'teacherChange' | 'academicSession' | 'course' | 'agent' | 'rosterTombstone'
  /** Data of a new row (no schoolId). */
  data (n: number, refs: Refs): Record<string, unknown>
  /** The primary key selector of a row. */
  key (row: Record<string, any>): Record<string, unknown>
  /** A filter that finds a row without naming its school. */
  match (row: Record<string, any>): Record<string, unknown>
  /** A harmless change. */
  change: Record<string, unknown>
}

interface Refs { teacherId: string, classroomId: string }

const PROBES: Record<string, ModelProbe> = {
  Classroom: {
    delegate: 'classroom',
    data: (n) => ({ name: `Probe room ${n}` }),
    key: (r) => ({ schoolId_id: { schoolId: r.schoolId, id: r.id } }),
    match: (r) => ({ id: r.id }),
    change: { name: 'Renamed' }
  },
  Student: {
    delegate: 'student',
    data: (n) => ({ fullName: `Probe student ${n}` }),
    key: (r) => ({ schoolId_id: { schoolId: r.schoolId, id: r.id } }),
    match: (r) => ({ id: r.id }),
    change: { fullName: 'Renamed' }
  },
  Teacher: {
    delegate: 'teacher',
    data: (n) => ({ fullName: `Probe teacher ${n}` }),
    key: (r) => ({ schoolId_id: { schoolId: r.schoolId, id: r.id } }),
    match: (r) => ({ id: r.id }),
    change: { fullName: 'Renamed' }
  },
  TeacherClassroom: {
    delegate: 'teacherClassroom',
    data: (_n, refs) => ({ teacherId: refs.teacherId, classroomId: refs.classroomId }),
    key: (r) => ({ schoolId_teacherId_classroomId: { schoolId: r.schoolId, teacherId: r.teacherId, classroomId: r.classroomId } }),
    match: (r) => ({ teacherId: r.teacherId }),
    change: { createdAt: new Date('2020-01-01T00:00:00Z') }
  },
  Change: {
    delegate: 'change',
    data: (n) => ({ seq: BigInt(1_000_000 + n), type: 'CREATED', recordType: 'STUDENT', recordId: '00000000-0000-4000-8000-000000000000' }),
    key: (r) => ({ schoolId_seq: { schoolId: r.schoolId, seq: r.seq } }),
    match: (r) => ({ seq: r.seq }),
    change: { sourcedId: 'Renamed' }
  },
  AcademicSession: {
    delegate: 'academicSession',
    data: (n) => ({ title: `Probe term ${n}`, type: 'TERM', startDate: new Date('2026-09-01'), endDate: new Date('2027-01-31'), schoolYear: 2027 }),
    key: (r) => ({ schoolId_id: { schoolId: r.schoolId, id: r.id } }),
    match: (r) => ({ id: r.id }),
    change: { title: 'Renamed' }
  },
  Course: {
    delegate: 'course',
    data: (n) => ({ title: `Probe course ${n}` }),
    key: (r) => ({ schoolId_id: { schoolId: r.schoolId, id: r.id } }),
    match: (r) => ({ id: r.id }),
    change: { title: 'Renamed' }
  },
  Agent: {
    delegate: 'agent',
    data: (n) => ({ role: 'guardian', givenName: `Probe ${n}`, familyName: 'Agent' }),
    key: (r) => ({ schoolId_id: { schoolId: r.schoolId, id: r.id } }),
    match: (r) => ({ id: r.id }),
    change: { givenName: 'Renamed' }
  },
  RosterTombstone: {
    delegate: 'rosterTombstone',
    data: (n) => ({ kind: 'CLASS', sourcedId: `probe-${n}`, fields: { title: 'Probe' } }),
    key: (r) => ({ schoolId_id: { schoolId: r.schoolId, id: r.id } }),
    match: (r) => ({ id: r.id }),
    change: { sourcedId: 'Renamed' }
  },
  TeacherChange: {
    delegate: 'teacherChange',
    data: (_n, refs) => ({ teacherId: refs.teacherId, type: 'CREATED', recordType: 'TEACHER', recordId: refs.teacherId }),
    key: (r) => ({ schoolId_id: { schoolId: r.schoolId, id: r.id } }),
    match: (r) => ({ id: r.id }),
    change: { sourcedId: 'Renamed' }
  }
}

/** What each operation is asked to do against school B's row, through school A's client. */
type Attack = (d: any, probe: ModelProbe, rowB: Record<string, any>, n: number, refs: Refs, b: string) => Promise<unknown>

const ATTACKS: Record<string, { refused?: Attack, confined: Attack }> = {
  findUnique: { refused: (d, p, r) => d.findUnique({ where: p.key(r) }), confined: (d, p, r) => d.findFirst({ where: p.match(r) }) },
  findUniqueOrThrow: { refused: (d, p, r) => d.findUniqueOrThrow({ where: p.key(r) }), confined: (d, p, r) => d.findFirst({ where: p.match(r) }) },
  findFirst: { refused: (d, _p, _r, _n, _f, b) => d.findFirst({ where: { schoolId: b } }), confined: (d, p, r) => d.findFirst({ where: p.match(r) }) },
  findFirstOrThrow: { refused: (d, _p, _r, _n, _f, b) => d.findFirstOrThrow({ where: { schoolId: b } }), confined: (d, p, r) => d.findFirstOrThrow({ where: p.match(r) }).catch(() => null) },
  findMany: { refused: (d, _p, _r, _n, _f, b) => d.findMany({ where: { OR: [{ schoolId: b }] } }), confined: (d) => d.findMany() },
  count: { refused: (d, _p, _r, _n, _f, b) => d.count({ where: { schoolId: { in: [b] } } }), confined: (d, p, r) => d.count({ where: p.match(r) }) },
  aggregate: { refused: (d, _p, _r, _n, _f, b) => d.aggregate({ where: { schoolId: b }, _count: true }), confined: (d, p, r) => d.aggregate({ where: p.match(r), _count: true }).then((a: any) => (a._count > 0 ? a : null)) },
  groupBy: { refused: (d, _p, _r, _n, _f, b) => d.groupBy({ by: ['schoolId'], having: { schoolId: b } }), confined: (d) => d.groupBy({ by: ['schoolId'] }) },
  create: { refused: (d, p, _r, n, refs, b) => d.create({ data: { ...p.data(n, refs), schoolId: b } }), confined: (d, p, _r, n, refs) => d.create({ data: p.data(n, refs) }) },
  createMany: { refused: (d, p, _r, n, refs, b) => d.createMany({ data: [{ ...p.data(n, refs), schoolId: b }] }), confined: (d, p, _r, n, refs) => d.createMany({ data: [p.data(n, refs)] }) },
  createManyAndReturn: { refused: (d, p, _r, n, refs, b) => d.createManyAndReturn({ data: [{ ...p.data(n, refs), schoolId: b }] }), confined: (d, p, _r, n, refs) => d.createManyAndReturn({ data: [p.data(n, refs)] }) },
  update: { refused: (d, p, r) => d.update({ where: p.key(r), data: p.change }), confined: (d, p, r) => d.updateMany({ where: p.match(r), data: p.change }) },
  updateMany: { refused: (d, p, _r, _n, _f, b) => d.updateMany({ where: { schoolId: b }, data: p.change }), confined: (d, p, r) => d.updateMany({ where: p.match(r), data: p.change }) },
  updateManyAndReturn: { refused: (d, p, r, _n, _f, b) => d.updateManyAndReturn({ where: p.match(r), data: { ...p.change, schoolId: b } }), confined: (d, p, r) => d.updateManyAndReturn({ where: p.match(r), data: p.change }) },
  upsert: { refused: (d, p, r, n, refs) => d.upsert({ where: p.key(r), create: p.data(n, refs), update: p.change }), confined: (d, p, r) => d.updateMany({ where: p.match(r), data: p.change }) },
  delete: { refused: (d, p, r) => d.delete({ where: p.key(r) }), confined: (d, p, r) => d.deleteMany({ where: p.match(r) }) },
  deleteMany: { refused: (d, _p, _r, _n, _f, b) => d.deleteMany({ where: { schoolId: b } }), confined: (d, p, r) => d.deleteMany({ where: p.match(r) }) }
}

/** Operations of a Prisma model delegate that are not queries of this database. */
const NOT_OPERATIONS = new Set(['fields', 'name', '$name', '$parent'])
/** MongoDB-only operations: refused like any operation the extension does not know. */
const MONGO_ONLY = new Set(['findRaw', 'aggregateRaw'])

function rowsOf (result: unknown): Array<Record<string, any>> {
  if (result === null || result === undefined || typeof result !== 'object') return []
  return (Array.isArray(result) ? result : [result]) as Array<Record<string, any>>
}

t.test('wall 1 covers every operation of every tenant model the generated client offers', async (t) => {
  // Wall 2 taken away (a role that bypasses row-level security): what holds here is wall 1 alone.
  const owner = await createTestDatabase({ role: 'owner' })
  t.equal(owner.rowSecurity, false)
  const { db, a, b } = await twoSchools(owner)
  const scopedA = db.forSchool(a) as any
  let rooms = 0
  const refsFor = async (schoolId: string): Promise<Refs> => {
    const scoped = db.forSchool(schoolId)
    const teacher = await scoped.teacher.create({ data: { schoolId, fullName: 'Walk teacher' } })
    rooms += 1
    const room = await scoped.classroom.create({ data: { schoolId, name: `Walk room ${rooms}` } })
    return { teacherId: teacher.id, classroomId: room.id }
  }
  const refsA = await refsFor(a)
  const refsB = await refsFor(b)
  let n = 0

  for (const model of TENANT_MODELS) {
    const probe = PROBES[model]
    t.ok(probe, `${model} has a probe (add one when adding a tenant model)`)
    if (probe === undefined) continue
    const delegate = scopedA[probe.delegate]
    const operations = Object.keys((db.prisma as any)[probe.delegate]).filter((op) => !NOT_OPERATIONS.has(op))
    for (const operation of operations) {
      if (MONGO_ONLY.has(operation)) {
        await t.rejects(delegate[operation]({}), { name: 'TenantViolationError' }, `${model}.${operation} is refused`)
        continue
      }
      const attack = ATTACKS[operation]
      t.ok(attack, `${model}.${operation} is probed (add a probe for a new Prisma operation)`)
      if (attack === undefined) continue
      // A fresh row of B for each operation, since some of them change or delete it.
      n += 1
      const rowB = await (db.forSchool(b) as any)[probe.delegate].create({ data: { ...probe.data(n, refsB), schoolId: b } })
      if (model === 'TeacherClassroom') refsB.teacherId = (await refsFor(b)).teacherId
      if (attack.refused !== undefined) {
        await t.rejects(attack.refused(delegate, probe, rowB, n, refsA, b), { name: 'TenantViolationError' }, `${model}.${operation} naming school B is refused`)
      }
      n += 1
      if (model === 'TeacherClassroom') refsA.teacherId = (await refsFor(a)).teacherId
      const result = await attack.confined(delegate, probe, rowB, n, refsA, b)
      for (const row of rowsOf(result)) {
        if ('schoolId' in row) t.equal(row.schoolId, a, `${model}.${operation} returns only rows of school A`)
      }
      if (typeof result === 'object' && result !== null && 'count' in result && ['updateMany', 'deleteMany', 'update', 'upsert', 'delete'].includes(operation)) {
        t.equal((result as { count: number }).count, 0, `${model}.${operation} does not reach B's row`)
      }
      const still = await (db.forSchool(b) as any)[probe.delegate].findFirst({ where: probe.match(rowB) })
      t.ok(still, `${model}.${operation}: B's row is still there`)
      for (const [field, value] of Object.entries(probe.change)) {
        t.not(String(still?.[field]), String(value), `${model}.${operation}: B's row is unchanged`)
      }
    }
  }
})

t.test('nested writes and private relations are refused on the scoped client', async (t) => {
  const { b, scopedA } = await twoSchools()
  await t.rejects(scopedA.student.create({ data: { fullName: 'Nested', classroom: { create: { name: 'Sneaky', schoolId: b } } } as any }), { name: 'TenantViolationError' })
  await t.rejects(scopedA.classroom.create({ data: { name: 'Nested', students: { connect: [{ schoolId_id: { schoolId: b, id: b } }] } } as any }), { name: 'TenantViolationError' })
  await t.rejects(scopedA.school.findMany({ select: { users: true } } as any), { name: 'TenantViolationError' })
  await t.rejects(scopedA.school.findMany({ where: { users: { some: { username: 'x' } } } } as any), { name: 'TenantViolationError' })
  await t.rejects(scopedA.student.findMany({ where: { school: { users: { some: {} } } } } as any), { name: 'TenantViolationError' })
  await t.rejects(scopedA.userAccessChange.findMany(), { name: 'TenantViolationError' })
  await t.rejects(scopedA.student.findMany({ cursor: { schoolId_id: { schoolId: b, id: b } } }), { name: 'TenantViolationError' })
})

t.test('transactions of the scoped client run in its school', async (t) => {
  const { a, studentA, scopedA } = await twoSchools()
  const [count, rows] = await scopedA.$transaction(async (tx: any) => [await tx.student.count(), await tx.student.findMany({ select: { id: true } })]) as [number, Array<{ id: string }>]
  t.equal(count, 1)
  t.same(rows.map((r) => r.id), [studentA])
  t.throws(() => scopedA.$transaction([scopedA.student.count()]), { name: 'TenantViolationError' }, 'batch transactions are refused')
  const created = await scopedA.$transaction(async (tx: any) => {
    const room = await tx.classroom.create({ data: { name: 'In a transaction' } })
    return await tx.student.create({ data: { fullName: 'Tx student', classroomId: room.id } })
  }) as { schoolId: string }
  t.equal(created.schoolId, a)
})

t.test('the test database runs under row-level security (the service role)', async (t) => {
  const db = await testDatabase()
  t.equal(db.rowSecurity, true)
})
