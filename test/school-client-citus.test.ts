// The school client on a Citus coordinator (school-client.ts, step 0): relations are loaded by
// queries of their own, never by Prisma's LATERAL joins, which Citus refuses under row-level
// security ("Distributed queries with outer joins and pseudoconstant quals are not supported").
// The statements are read from Prisma's query log; the results must be those of plain PostgreSQL's
// form.
import t from 'tap'
import { createSchool, createStudent } from '../src/admin/records.js'
import { schoolClient } from '../src/db/school-client.js'
import { PrismaPg } from '@prisma/adapter-pg'
import { PrismaClient, type Prisma } from '../src/generated/prisma/client.js'
import { serverUrl, testDatabase } from './helper.js'

const onServer = serverUrl === undefined ? 'reads the SQL Prisma sends, on a PostgreSQL server (set TEST_DATABASE_URL)' : false

t.test('on Citus, a school\'s relations are loaded by queries of their own; elsewhere as the caller chose', { skip: onServer }, async (t) => {
  const db = await testDatabase()
  const school = await createSchool(db, 'Citus form')
  await createStudent(db, { schoolId: school, fullName: 'Ada One', classroom: 'Room 1' })
  await createStudent(db, { schoolId: school, fullName: 'Bo Two', classroom: 'Room 2' })
  // The statements Prisma sends, from a client of this database that logs them.
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: db.ownerUrl }), log: [{ emit: 'event', level: 'query' }] })
  t.teardown(() => prisma.$disconnect())
  const statements: string[] = []
  prisma.$on('query', (e) => { statements.push(e.query) })
  const read = {
    relationLoadStrategy: 'join' as const,
    select: { fullName: true, classroom: { select: { name: true } } },
    orderBy: { fullName: 'asc' as const }
  }
  const expected = [{ fullName: 'Ada One', classroom: { name: 'Room 1' } }, { fullName: 'Bo Two', classroom: { name: 'Room 2' } }]
  const joins = (): number => statements.filter((sql) => /LEFT JOIN LATERAL/.test(sql)).length

  const citus = schoolClient(prisma, school, { citus: true })
  t.same(await citus.student.findMany(read), expected, 'on Citus: the same rows')
  t.equal(joins(), 0, 'no LATERAL join, though the caller asked for joins')
  t.ok(statements.some((sql) => /FROM "public"\."classrooms"/.test(sql) && !/"students"/.test(sql)), 'the classrooms by a query of their own')

  statements.length = 0
  t.same(await citus.$transaction(async (tx: Prisma.TransactionClient) => await tx.student.findMany(read)), expected)
  t.equal(joins(), 0, 'in a school\'s interactive transaction too')

  statements.length = 0
  const plain = schoolClient(prisma, school)
  t.same(await plain.student.findMany(read), expected, 'elsewhere: the same rows')
  t.equal(joins(), 1, 'by the join the caller chose')
})
