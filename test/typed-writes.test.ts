// The bulk upsert's statements (src/db/typed-writes.ts, issue 30 point 9): wall 1 binds the school
// to them and refuses, before it runs, a write that does not take it where the placement rule says;
// the upsert (upsertStudents, src/records/students.ts) answers through them on an administrator's
// client and through the model operations on a narrower one; and on this path each wall alone
// stops a read or a write of another school's row.
import t from 'tap'
import { upsertStudents } from '../src/records/students.js'
import { schoolTarget } from '../src/records/writes.js'
import { deniedColumns } from '../src/auth/scopes.js'
import { TenantViolationError } from '../src/db/tenant.js'
import { registerStatement, schoolPlacementError } from '../src/db/typed-reads.js'
import { insertStudents, studentsBySourcedId, updateStudents } from '../src/db/typed-writes.js'
import { createTestDatabase, testDatabase, unlessCitus, type TestDatabaseOptions } from './helper.js'
import { mirror } from './isolation/mirror.js'

const ID = '01900000-0000-7000-8000-000000000001'

// On Citus the upsert keeps the model operations (src/db/school-client.ts, $typedWrites).
const statementsRun = { skip: await unlessCitus('the upsert keeps the model operations there') }

/** What these tests use of the client of a school client's interactive transaction. */
interface Tx { $queryRawUnsafe: <T = unknown>(sql: string, ...values: unknown[]) => Promise<T> }

t.test('the placement rule: the upsert\'s statements take the school where wall 1 puts it; any other write is refused', async (t) => {
  const statements = [
    studentsBySourcedId(['a']).statement,
    insertStudents(['sourcedId', 'fullName'], [{ id: ID, data: { sourcedId: 'a', fullName: 'A' } }]).statement,
    insertStudents(['sourcedId', 'dateOfBirth', 'gradeLevel', 'status'], []).statement,
    updateStudents(['gradeLevel'], [{ id: ID, changes: { gradeLevel: 'GRADE_1' } }]).statement,
    updateStudents(['fullName', 'studentNumber', 'enrollmentEndDate'], []).statement
  ]
  for (const { sql } of statements) t.equal(schoolPlacementError(sql), null, sql.slice(0, 60))
  const insert = statements[1]!.sql
  const update = statements[3]!.sql
  const refused: Array<[string, string]> = [
    [insert.replace('SELECT $1::uuid, u.id', 'SELECT $2::uuid, u.id'), 'the school from a parameter of the caller\'s'],
    [insert.replace('(school_id, id,', '(id, school_id,'), 'school_id not the first column'],
    [insert.replace('INSERT INTO students', 'INSERT INTO users'), 'another table'],
    [insert.replace(' RETURNING', ' ON CONFLICT DO NOTHING RETURNING'), 'ON CONFLICT'],
    [insert.replace('now() FROM', 'now() FROM unnest($9::text[]) AS v(x), students FROM'), 'another FROM'],
    [insert.replace('$2::uuid[]', '(SELECT array_agg(id) FROM students)'), 'a subquery'],
    [insert.replace('u.id, ', '$1::uuid, '), 'the school twice'],
    [update.replace('WHERE s.school_id = $1 AND s.id = u.id', 'WHERE s.id = u.id'), 'no school condition'],
    [update.replace('WHERE s.school_id = $1 AND s.id = u.id', 'WHERE s.id = u.id AND s.school_id = $1'), 'the school condition not the first'],
    [update.replace('s.id = u.id', 's.id = u.id OR true'), 'an OR that escapes it'],
    [update.replace('SET grade_level', 'SET school_id = u.id, grade_level'), 'a move to another school'],
    [update.replace('UPDATE students s', 'UPDATE users s'), 'another table'],
    [update.replace('FROM unnest(', 'FROM students t, unnest('), 'another table read'],
    [update.replace('WHERE s.school_id = $1', 'WHERE t.school_id = $1'), 'the condition on another alias'],
    [update + '; DELETE FROM students s WHERE s.school_id = $1', 'two statements'],
    ['DELETE FROM students s WHERE s.school_id = $1', 'a DELETE'],
    ['WITH x AS (DELETE FROM students RETURNING id) SELECT s.id FROM students s WHERE s.school_id = $1', 'a CTE that writes']
  ]
  for (const [sql, what] of refused) t.not(schoolPlacementError(sql), null, `refused: ${what}`)
})

t.test('wall 1 binds the school to the upsert\'s statements, and refuses a write that does not take it before it runs', statementsRun, async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  const client = db.forSchool(m.a.schoolId)
  t.equal(client.$typedWrites(), true, 'an administrator\'s client writes through them')
  const target = await schoolTarget(db, m.a.schoolId)
  const [created] = await upsertStudents(target, [{ sourcedId: 'bound-1', fullName: 'Bound One', dateOfBirth: '2015-03-01', gradeLevel: '03' }])
  const row = await client.student.findFirst({ where: { sourcedId: 'bound-1' }, select: { id: true, schoolId: true, fullName: true, givenName: true, dateOfBirth: true, gradeLevel: true, status: true } })
  t.same(row, { id: created!.id, schoolId: m.a.schoolId, fullName: 'Bound One', givenName: 'Bound', dateOfBirth: new Date('2015-03-01T00:00:00Z'), gradeLevel: 'GRADE_3', status: 'ACTIVE' },
    'the student is the school\'s, its day as given, its defaults and derived names as a model create makes them')

  await t.rejects(client.$transaction(async (tx: Tx) => await tx.$queryRawUnsafe('UPDATE students s SET full_name = u.x FROM unnest($2::text[]) AS u(x) WHERE s.school_id = $1 AND s.id = s.id RETURNING s.id', ['x'])),
    TenantViolationError, 'a write not built by typed-writes.ts is refused')
  // A column that does not exist: had the statement run, PostgreSQL would have refused it instead.
  const noSchool = registerStatement({
    sql: 'UPDATE students s SET no_such_column = u.x FROM unnest($2::text[]) AS u(id, x) WHERE s.id = u.id RETURNING s.id AS "id"',
    model: 'Student',
    joined: [],
    columns: [],
    operation: 'updateManyAndReturn'
  })
  await t.rejects(client.$transaction(async (tx: Tx) => await tx.$queryRawUnsafe(noSchool.sql, ['x'])), { name: 'TenantViolationError', message: /does not take the school/ },
    'a registered write without the school condition is refused before it runs')
  const otherSchool = registerStatement({
    sql: 'INSERT INTO students (school_id, id, no_such_column) SELECT $2::uuid, u.id, u.x FROM unnest($3::uuid[], $4::text[]) AS u(id, x) RETURNING id AS "id"',
    model: 'Student',
    joined: [],
    columns: [],
    operation: 'createManyAndReturn'
  })
  await t.rejects(client.$transaction(async (tx: Tx) => await tx.$queryRawUnsafe(otherSchool.sql, m.b.schoolId, [ID], ['x'])), { name: 'TenantViolationError', message: /does not take the school/ },
    'and one that would write the school a caller gives')
})

t.test('the upsert answers through the statements on an administrator\'s client, through the model operations on a narrower one', statementsRun, async (t) => {
  const db = await testDatabase()
  const m = await mirror(t, db)
  // The raw statements the upsert's transaction sends, seen through a proxy of its client.
  const sent: string[] = []
  const spied = <T extends object>(client: T): T => new Proxy(client, {
    get (target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver)
      if (key !== '$transaction' || typeof value !== 'function') return value
      return async (work: (tx: object) => Promise<unknown>) => await (value as (w: unknown) => Promise<unknown>).call(target, async (tx: object) => await work(new Proxy(tx, {
        get (inner, name, innerReceiver) {
          const method: unknown = Reflect.get(inner, name, innerReceiver)
          if (name !== '$queryRawUnsafe' || typeof method !== 'function') return method
          return (sql: string, ...values: unknown[]) => {
            sent.push(sql.slice(0, sql.indexOf(' ')))
            return (method as (...args: unknown[]) => unknown).call(inner, sql, ...values)
          }
        }
      })))
    }
  })
  const admin = { schoolId: m.a.schoolId, tenant: spied(db.forSchool(m.a.schoolId)) }
  const items = [{ sourcedId: 's-1', fullName: 'One' }, { sourcedId: 's-2', givenName: 'Two', familyName: 'Second', studentNumber: 'N-2' }]
  t.same((await upsertStudents(admin, items)).map((i) => [i.outcome, i.version]), [['CREATED', 1], ['CREATED', 1]])
  t.same(sent, ['SELECT', 'INSERT', 'INSERT'], 'one read, one INSERT per set of fields given')
  sent.length = 0
  t.same((await upsertStudents(admin, [{ ...items[0]!, gradeLevel: 'KG' }, items[1]!, { sourcedId: 's-3', fullName: 'Three' }])).map((i) => [i.outcome, i.version]),
    [['CHANGED', 2], ['UNCHANGED', 1], ['CREATED', 1]])
  t.same(sent, ['SELECT', 'UPDATE', 'INSERT'], 'one UPDATE of the changed, one INSERT of the new')
  const many = Array.from({ length: 250 }, (_, i) => ({ sourcedId: `many-${i}`, fullName: `Many ${i}` }))
  await upsertStudents(admin, many)
  sent.length = 0
  const changedMany = await upsertStudents(admin, many.map((item, i) => ({ ...item, gradeLevel: i % 2 === 0 ? 'GRADE_1' : 'GRADE_2' })))
  t.ok(changedMany.every((i) => i.outcome === 'CHANGED' && i.version === 2), 'every one changed, at version 2')
  t.same(sent, ['SELECT', 'UPDATE'], 'one UPDATE per set of fields changed, whatever the values')

  const narrow = db.forSchool(m.a.schoolId, { deniedColumns: deniedColumns(['roster.readonly']) })
  t.equal(narrow.$typedWrites(), false, 'a client without every scope does not write through them')
  sent.length = 0
  // Answered or refused by callerReach (a column it may not read): either way by the model operations.
  await upsertStudents({ schoolId: m.a.schoolId, tenant: spied(narrow) }, [{ sourcedId: 's-4', fullName: 'Four' }]).catch(() => undefined)
  t.same(sent, [], 'its upsert sends no statement: the model operations, which callerReach confines')
})

/** Reads and writes of school B's rows on school A's write path: the upsert, and its statements sent as A. */
async function crossSchoolWrites (options: TestDatabaseOptions, t: { equal: (a: unknown, b: unknown, message: string) => void, teardown: (fn: () => unknown) => void }): Promise<number> {
  const db = await createTestDatabase(options)
  const m = await mirror(t, db)
  const a = { schoolId: m.a.schoolId, tenant: db.forSchool(m.a.schoolId) }
  const b = { schoolId: m.b.schoolId, tenant: db.forSchool(m.b.schoolId) }
  t.equal(a.tenant.$typedWrites(), true, 'the statements are taken')
  const [theirs] = await upsertStudents(b, [{ sourcedId: 'shared-1', fullName: 'Theirs', studentNumber: 'B-1' }])
  const before = JSON.stringify(await b.tenant.student.findMany({ orderBy: { id: 'asc' } }))
  let found = 0
  // The same sourcedId in A: A's own student, created, then changed; B's is neither read nor written.
  const [created] = await upsertStudents(a, [{ sourcedId: 'shared-1', fullName: 'Mine', studentNumber: 'B-1' }])
  if (created!.outcome !== 'CREATED' || created!.id === theirs!.id) found += 1
  const [changed] = await upsertStudents(a, [{ sourcedId: 'shared-1', fullName: 'Mine, changed', gradeLevel: 'GRADE_4' }])
  if (changed!.id === theirs!.id) found += 1
  // The statements themselves, as A, naming B's student.
  await a.tenant.$transaction(async (tx: Tx) => {
    const lookup = studentsBySourcedId(['shared-1'])
    const rows = await tx.$queryRawUnsafe<Array<{ id: string }>>(lookup.statement.sql, ...lookup.values)
    found += rows.filter((row) => row.id === theirs!.id).length
    const update = updateStudents(['fullName'], [{ id: theirs!.id, changes: { fullName: 'Overwritten by A' } }])
    found += (await tx.$queryRawUnsafe<unknown[]>(update.statement.sql, ...update.values)).length
  })
  if (JSON.stringify(await b.tenant.student.findMany({ orderBy: { id: 'asc' } })) !== before) found += 1
  return found
}

t.test('on the write path each wall alone stops a read or write of another school\'s row', statementsRun, async (t) => {
  t.equal(await crossSchoolWrites({}, t), 0, 'both walls: none')
  t.equal(await crossSchoolWrites({ role: 'owner' }, t), 0, 'wall 1 alone (a role that bypasses row-level security): none')
  t.equal(await crossSchoolWrites({ tenantFilter: false }, t), 0, 'wall 2 alone (the school conditions taken out): none')
  t.ok(await crossSchoolWrites({ role: 'owner', tenantFilter: false }, t) > 0, 'control: with neither wall, A reads and writes B\'s student')
})
