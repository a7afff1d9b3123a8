// dateLastModified as the binding writes it (ISO 8601, milliseconds, UTC), written by the statement
// (src/db/typed-reads.ts modifiedAt): a record's updated_at to the millisecond, whatever its
// fraction (none, one to three digits), long ago or now, on a page, one record and a sorted page.
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { build, testDatabase, unique } from './helper.js'
import { checkedAnswers } from './oneroster/answers.js'
import { schoolCallers } from './oneroster/callers.js'

t.test("a record's dateLastModified is its updated_at to the millisecond", async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Dates School'))
  const teacherId = await createTeacher(db, { schoolId, fullName: 'Tess Time', givenName: 'Tess', familyName: 'Time', sourcedId: 'dt-t' })
  const callers = await schoolCallers(app, db, schoolId, teacherId, 'dates')
  const stamps = ['2026-01-31T08:00:00.000Z', '2026-01-31T08:00:00.100Z', '2026-01-31T08:00:00.120Z', '2026-01-31T08:00:00.123Z', '1999-12-31T23:59:59.999Z']
  const tenant = db.forSchool(schoolId)
  for (const [i, stamp] of stamps.entries()) {
    const id = await createStudent(db, { schoolId, fullName: `Stu ${i}`, givenName: 'Stu', familyName: String(i), sourcedId: `dt-${i}` })
    await tenant.student.update({ where: { schoolId_id: { schoolId, id } }, data: { updatedAt: new Date(stamp) } })
  }
  const { get, invalid } = checkedAnswers()
  const page = await get(app, '/students?sort=sourcedId', callers.core)
  t.same((page.body.users as Array<{ dateLastModified: string }>).map((user) => user.dateLastModified), stamps, 'a page')
  t.equal((await get(app, '/students/dt-2', callers.core)).body.user.dateLastModified, stamps[2], 'one record')
  const sorted = await get(app, '/students?sort=dateLastModified&orderBy=desc', callers.core)
  t.same((sorted.body.users as Array<{ dateLastModified: string }>).map((user) => user.dateLastModified), [...stamps].sort().reverse(), 'sorted by it')
  const since = await get(app, `/students?filter=${encodeURIComponent("dateLastModified>'2026-01-31T08:00:00.100Z'")}&sort=sourcedId`, callers.core)
  t.same((since.body.users as Array<{ sourcedId: string }>).map((user) => user.sourcedId), ['dt-2', 'dt-3'], 'compared to the millisecond')
  t.same(invalid, [], 'the answers validate against the OpenAPI description')
})
