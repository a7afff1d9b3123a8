import t from 'tap'
import { createSchool, createStudent } from '../src/admin/records.js'
import { PRIVATE_MODELS, TENANT_MODELS } from '../src/db/tenant.js'
import { Prisma } from '../src/generated/prisma/client.js'
import { testDatabase } from './helper.js'

async function twoSchools () {
  const db = await testDatabase()
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

t.test('the database refuses a link between rows of two schools', async (t) => {
  const { db, a, b } = await twoSchools()
  const roomB = await db.forSchool(b).classroom.findFirstOrThrow({ select: { id: true } })
  // Even the unscoped client cannot put A's student in B's classroom: the foreign key includes school_id.
  await t.rejects(db.prisma.student.create({ data: { schoolId: a, fullName: 'Cross', classroomId: roomB.id } }))
})
