// dateLastModified as the binding writes it (ISO 8601, milliseconds, UTC) from the UTC text the
// statement reads (src/db/typed-reads.ts modifiedAt, src/oneroster/kinds.ts isoOfUtcText): every
// fraction PostgreSQL may print (none, one to three digits, more), and through the API a record's
// updated_at to the millisecond, on a page, one record, a sorted page and a filter.
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { isoOfUtcText } from '../src/oneroster/kinds.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { build, testDatabase, unique } from './helper.js'
import { checkedAnswers } from './oneroster/answers.js'
import { schoolCallers } from './oneroster/callers.js'

t.test("isoOfUtcText writes PostgreSQL's UTC text as ISO 8601 with milliseconds", async (t) => {
  t.equal(isoOfUtcText('2026-01-31 08:00:00'), '2026-01-31T08:00:00.000Z', 'no fraction')
  t.equal(isoOfUtcText('2026-01-31 08:00:00.1'), '2026-01-31T08:00:00.100Z', 'one digit')
  t.equal(isoOfUtcText('2026-01-31 08:00:00.12'), '2026-01-31T08:00:00.120Z', 'two digits')
  t.equal(isoOfUtcText('2026-01-31 08:00:00.123'), '2026-01-31T08:00:00.123Z', 'three digits')
  t.equal(isoOfUtcText('2026-01-31 08:00:00.123456'), '2026-01-31T08:00:00.123Z', 'microseconds (a timestamptz without (3))')
})

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
