// Every root field and argument, replayed by school A with school B's ids (by id, lists, nested
// relations, aliases, fragments, variables), each beside its positive control (A reads A).
import t, { type Test } from 'tap'
import { testDatabase } from '../helper.js'
import { foreignIds, gql, mirror, type Mirror, type MirrorSchool } from './mirror.js'

const BY_ID = {
  student: 'id fullName classroomName classroom { id name students { id fullName } teachers { id } }',
  teacher: 'id fullName classrooms { id name students { id } teachers { id } }',
  classroom: 'id name students { id fullName classroom { id } } teachers { id fullName classrooms { id } }'
} as const

type ByIdField = keyof typeof BY_ID

function idsOf (school: MirrorSchool, field: ByIdField): string[] {
  return field === 'student' ? school.studentIds : field === 'teacher' ? school.teacherIds : school.classroomIds
}

const typeOf = (field: ByIdField): string => field[0]!.toUpperCase() + field.slice(1)

/** The same lookup written four ways: a variable, an inline literal, an alias, a fragment. */
function forms (field: ByIdField, id: string): Array<{ name: string, query: string, variables?: Record<string, unknown>, path: string }> {
  return [
    { name: 'variable', query: `query Q($id: ID!) { ${field}(id: $id) { ${BY_ID[field]} } }`, variables: { id }, path: field },
    { name: 'literal', query: `{ ${field}(id: "${id}") { ${BY_ID[field]} } }`, path: field },
    { name: 'alias', query: `{ other: ${field}(id: "${id}") { key: id ${BY_ID[field]} } }`, path: 'other' },
    {
      name: 'fragment',
      query: `query { ${field}(id: "${id}") { ...F } } fragment F on ${typeOf(field)} { ${BY_ID[field]} }`,
      path: field
    }
  ]
}

async function check (t: Test, m: Mirror, caller: MirrorSchool, other: MirrorSchool): Promise<void> {
  for (const field of Object.keys(BY_ID) as ByIdField[]) {
    for (const [own, theirs] of idsOf(caller, field).map((id, i) => [id, idsOf(other, field)[i]!] as const)) {
      for (const form of forms(field, theirs)) {
        const res = await gql(m.app, form.query, { token: caller.token, variables: form.variables })
        t.same(res.body.errors, undefined, `${field} by another school's id (${form.name}): no error`)
        t.equal(res.body.data?.[form.path], null, `${field} by another school's id (${form.name}) is not found`)
      }
      for (const form of forms(field, own)) {
        const res = await gql(m.app, form.query, { token: caller.token, variables: form.variables })
        t.equal(res.body.data?.[form.path]?.id, own, `control: ${field} by own id (${form.name}) is found`)
        t.same(foreignIds(res, caller), [], `${field} by own id (${form.name}): nothing of another school`)
      }
    }
  }
  // Several lookups of both schools in one document, through aliases.
  const mixed = await gql(m.app, `{
    mine: student(id: "${caller.studentIds[0]}") { id }
    theirs: student(id: "${other.studentIds[0]}") { id }
    room: classroom(id: "${other.classroomIds[0]}") { id }
    all: students(limit: 1000) { id classroom { id students { id } teachers { id } } }
  }`, { token: caller.token })
  t.equal(mixed.body.data?.mine?.id, caller.studentIds[0], 'control: own student beside a foreign one')
  t.equal(mixed.body.data?.theirs, null)
  t.equal(mixed.body.data?.room, null)
  t.same(foreignIds(mixed, caller), [])

  // Lists and nested relations.
  const lists = await gql(m.app, `{
    school { id name }
    students(limit: 1000) { id fullName classroomName classroom { id name students { id } teachers { id classrooms { id } } } }
    teachers(limit: 1000) { id fullName classrooms { id students { id classroom { id } } teachers { id } } }
    classrooms(limit: 1000) { id name students { id } teachers { id } }
  }`, { token: caller.token })
  t.same(lists.body.errors, undefined)
  t.equal(lists.body.data?.school.id, caller.schoolId, 'control: the caller\'s school')
  t.equal(lists.body.data?.students.length, caller.studentIds.length, 'control: all own students')
  t.equal(lists.body.data?.teachers.length, caller.teacherIds.length, 'control: all own teachers')
  t.equal(lists.body.data?.classrooms.length, caller.classroomIds.length, 'control: all own classrooms')
  t.same(foreignIds(lists, caller), [], 'lists and nested relations hold nothing of another school')
}

t.test('school A replaying school B\'s ids finds nothing of B; A finds all of A (and the mirror)', async (t) => {
  const m = await mirror(t, await testDatabase())
  await check(t, m, m.a, m.b)
  await check(t, m, m.b, m.a)
})
