// 1,000 interleaved concurrent requests of two mirrored schools: no response holds a record of
// the other school, and each holds all of its own (scoped clients and transactions never mix).
import t from 'tap'
import { testDatabase } from '../helper.js'
import { foreignIds, gql, mirror } from './mirror.js'

t.test('1,000 interleaved concurrent requests of two schools never mix', async (t) => {
  const m = await mirror(t, await testDatabase())
  const requests = Array.from({ length: 1000 }, (_, i) => {
    const [caller, other] = i % 2 === 0 ? [m.a, m.b] : [m.b, m.a]
    const query = `{
      school { id }
      students(limit: 1000) { id classroom { id } }
      mine: student(id: "${caller.studentIds[i % caller.studentIds.length]}") { id }
      theirs: student(id: "${other.studentIds[i % other.studentIds.length]}") { id }
    }`
    return gql(m.app, query, { token: caller.token }).then((res) => ({ res, caller, i }))
  })
  let mixed = 0
  let incomplete = 0
  for (const { res, caller, i } of await Promise.all(requests)) {
    if (foreignIds(res, caller).length > 0) mixed += 1
    const data = res.body.data
    if (res.body.errors !== undefined || data?.school?.id !== caller.schoolId || data?.students?.length !== caller.studentIds.length ||
      data?.mine?.id !== caller.studentIds[i % caller.studentIds.length] || data?.theirs !== null) incomplete += 1
  }
  t.equal(mixed, 0, 'no response holds a record of the other school')
  t.equal(incomplete, 0, 'every response holds all of its own school (positive control)')
})
