// The school client on a Citus coordinator (school-client.ts): relations are loaded by queries of
// their own (its relationsByQuery step), never by Prisma's LATERAL joins, which Citus refuses under
// row-level security ("Distributed queries with outer joins and pseudoconstant quals are not
// supported"); and a committed write is announced by the client (its changeAnnounced step), since
// the triggers' notices fire on the workers.
// The statements are read from Prisma's query log; the results must be those of plain PostgreSQL's
// form.
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createStudent } from '../src/records/students.js'
import { DATA_CHANGED_CHANNEL } from '../src/db/notifications.js'
import { schoolClient } from '../src/db/school-client.js'
import { randomUUID } from 'node:crypto'
import { PrismaPg } from '@prisma/adapter-pg'
import pg from 'pg'
import { PrismaClient, type Prisma } from '../src/generated/prisma/client.js'
import { serviceConnection, serverUrl, testDatabase } from './helper.js'

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

t.test('on Citus, each committed write of a school\'s client is announced to every node (NOTIFY school_data_changed)', { skip: onServer }, async (t) => {
  const db = await testDatabase()
  const school = await createSchool(db, 'Citus notices')
  // The triggers' own notices taken away (on Citus they fire on the workers, where nobody listens):
  // what is heard now comes from the school client.
  const owner = new pg.Client({ connectionString: db.ownerUrl })
  await owner.connect()
  t.teardown(() => owner.end())
  await owner.query(`DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT tgname, tgrelid::regclass AS tbl FROM pg_trigger WHERE tgfoid IN ('school_data_changed'::regproc, 'school_changed'::regproc) LOOP
      EXECUTE format('DROP TRIGGER %I ON %s', r.tgname, r.tbl);
    END LOOP;
  END $$`)
  const listener = await serviceConnection(t)
  const heard: string[] = []
  listener.on('notification', (n) => { if (n.channel === DATA_CHANGED_CHANNEL) heard.push(n.payload ?? '') })
  await listener.query(`LISTEN ${DATA_CHANGED_CHANNEL}`)
  const settle = async (): Promise<string[]> => {
    // A round trip on the listening connection delivers what was sent before it.
    await listener.query('SELECT 1')
    const got = [...heard]
    heard.length = 0
    return got
  }

  const citus = schoolClient(db.prisma, school, { citus: true })
  const plain = schoolClient(db.prisma, school)
  await plain.student.create({ data: { schoolId: school, fullName: 'Unheard' } })
  t.same(await settle(), [], 'without Citus the client leaves it to the triggers (taken away here)')
  await citus.student.create({ data: { schoolId: school, fullName: 'Heard' } })
  t.same(await settle(), [school], 'on Citus: a write, once committed')
  await citus.student.findMany({ select: { id: true } })
  t.same(await settle(), [], 'a read: nothing')
  await t.rejects(citus.student.create({ data: { schoolId: school, fullName: 'Nowhere', classroomId: randomUUID() } }), 'a write that fails (no such classroom)')
  t.same(await settle(), [], 'a failed write: nothing')
  await citus.$transaction(async (tx: Prisma.TransactionClient) => {
    await tx.classroom.create({ data: { schoolId: school, name: 'Room' } })
    t.same(await settle(), [], 'inside a transaction: not yet')
  })
  t.same(await settle(), [school], 'a transaction, once committed')
})
