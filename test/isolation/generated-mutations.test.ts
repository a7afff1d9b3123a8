// Generated mutations (property-based), as test/isolation/generated.test.ts generates queries: a
// random record mutation of an administrator of school A or B, its references drawn from both
// schools' ids, its selection from the fields of its answer. The oracles: no answer holds a record
// of the other school; no mutation changes, adds or removes anything of the other school (its
// records and their versions, read by its own administrator before and after); every refusal is a
// coded one of the mutations (never an internal error). With both walls, and with each alone.
import fc from 'fast-check'
import {
  getNamedType, isEnumType, isInputObjectType, isLeafType, isNonNullType, isObjectType,
  type GraphQLField, type GraphQLInputType, type GraphQLObjectType
} from 'graphql'
import t from 'tap'
import { upsertStudents } from '../../src/records/students.js'
import { createTestDatabase, type TestDatabaseOptions } from '../helper.js'
import { gql, idsIn, mirror, type Mirror, type MirrorSchool } from './mirror.js'

const MISSING = '00000000-0000-4000-8000-000000000000'
/** The refusals a generated mutation may meet: each is the mutation's own, coded. */
const EXPECTED = new Set(['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'VERSION_CONFLICT'])

const WALLS: Array<{ name: string, options: TestDatabaseOptions, runs: number, control?: true }> = [
  { name: 'both walls', options: {}, runs: 150 },
  { name: 'wall 1 alone (role bypasses row-level security)', options: { role: 'owner' }, runs: 75 },
  { name: 'wall 2 alone (the extension\'s filters off)', options: { tenantFilter: false }, runs: 75 },
  { name: 'no wall (control: the oracle detects a leak)', options: { role: 'owner', tenantFilter: false }, runs: 200, control: true }
]

/** Everything of a school its administrator reads, with versions and assignments, as one text, and its ids. */
async function snapshot (m: Mirror, school: MirrorSchool): Promise<{ text: string, ids: Set<string> }> {
  const res = await gql(m.app, `{ school { id } students(limit: 1000) { id version classroom { id } } teachers(limit: 1000) { id version classroomAssignments { role classroom { id } } }
    classrooms(limit: 1000) { id version } }`, { token: school.token })
  // The school's records now (those its mutations created too), and those of the mirror (its own).
  return { text: JSON.stringify(res.body), ids: new Set([...school.ids, ...idsIn(res.body.data)]) }
}

for (const walls of WALLS) {
  t.test(`${walls.name}: no generated mutation of one school reaches the other`, async (t) => {
    const db = await createTestDatabase(walls.options)
    const m = await mirror(t, db)
    // A sourcedId of each school that the generated upserts give (the String values): the bulk
    // upsert's read by sourcedId, INSERT and UPDATE (typed-writes.ts) meet the other school's
    // student of that sourcedId, which without a wall they would read and change.
    await upsertStudents({ schoolId: m.a.schoolId, tenant: db.forSchool(m.a.schoolId) }, [{ sourcedId: 'gen-1', fullName: 'Generated A' }])
    await upsertStudents({ schoolId: m.b.schoolId, tenant: db.forSchool(m.b.schoolId) }, [{ sourcedId: 'Generated', fullName: 'Generated B' }])
    const schema = m.app.graphql.schema
    const allIds = [...m.a.ids, ...m.b.ids, MISSING]
    let alias = 0

    function valueArb (type: GraphQLInputType, name: string): fc.Arbitrary<string> {
      const named = getNamedType(type)
      let value: fc.Arbitrary<string>
      if (named.name === 'ID') value = fc.constantFrom(...allIds).map((id) => `"${id}"`)
      else if (named.name === 'Int') value = fc.integer({ min: 0, max: 3 }).map(String)
      else if (named.name === 'Date') value = fc.constantFrom('"2015-01-01"', '"2020-09-01"')
      else if (named.name === 'String') value = fc.constantFrom('"Room 1"', '"Room 2"', '"Generated"', '"gen-1"')
      else if (isEnumType(named)) value = fc.constantFrom(...named.getValues().map((v) => v.name))
      else if (isInputObjectType(named)) {
        const fields = Object.values(named.getFields())
        value = fc.tuple(...fields.map((f) => valueArb(f.type, f.name).map((v) => (v === '' ? '' : `${f.name}: ${v}`))))
          .map((parts) => `{ ${parts.filter((p) => p !== '').join(', ')} }`)
      } else throw new Error(`No generator for ${name}: ${named.name}: add one`)
      if (named.name === 'String' && name === 'idempotencyKey') return fc.constant('')
      return isNonNullType(type) ? value : fc.option(value, { nil: '', freq: 2 })
    }

    function argsArb (field: GraphQLField<unknown, unknown>): fc.Arbitrary<string> {
      if (field.args.length === 0) return fc.constant('')
      const parts = field.args.map((arg) => {
        const value = getNamedType(arg.type).name === 'StudentUpsert' && isNonNullType(arg.type)
          ? fc.array(valueArb(getNamedType(arg.type) as GraphQLInputType, 'item'), { minLength: 1, maxLength: 3 }).map((items) => `[${items.join(', ')}]`)
          : valueArb(arg.type, arg.name)
        return value.map((v) => (v === '' ? '' : `${arg.name}: ${v}`))
      })
      return fc.tuple(...parts).map((list) => {
        const text = list.filter((p) => p !== '').join(', ')
        return text === '' ? '' : `(${text})`
      })
    }

    function selectionArb (type: GraphQLObjectType, depth: number): fc.Arbitrary<string> {
      const fields = Object.values(type.getFields()).filter((f) => depth > 0 || isLeafType(getNamedType(f.type)))
      return fc.subarray(fields, { minLength: 1 }).chain((chosen) =>
        fc.tuple(...chosen.map((field) => fieldArb(field, depth))).map((parts) => parts.join(' ')))
    }

    function fieldArb (field: GraphQLField<unknown, unknown>, depth: number): fc.Arbitrary<string> {
      const named = getNamedType(field.type)
      const sub = isObjectType(named) ? selectionArb(named, depth - 1).map((s) => ` { ${s} }`) : fc.constant('')
      const args = field.name === 'students' || field.name === 'teachers' || field.name === 'classrooms' ? fc.constant('') : argsArb(field)
      return fc.tuple(args, sub).map(([a, s]) => {
        alias += 1
        return `f${alias}: ${field.name}${a}${s}`
      })
    }

    const records = Object.values(schema.getMutationType()!.getFields()).filter((f) => !['login', 'refreshToken', 'logout'].includes(f.name))
    const documentArb = fc.constantFrom(...records).chain((field) => fieldArb(field, 2)).map((field) => `mutation { ${field} }`)

    let checked = 0
    const property = fc.asyncProperty(documentArb, fc.boolean(), async (document, asA) => {
      const [school, other] = asA ? [m.a, m.b] : [m.b, m.a]
      const before = await snapshot(m, other)
      const res = await gql(m.app, document, { token: school.token })
      checked += 1
      for (const error of res.body.errors ?? []) {
        if (!EXPECTED.has(String(error.extensions?.code))) throw new Error(`unexpected error for ${document}: ${JSON.stringify(error)}`)
      }
      const leaked = idsIn(res.body.data).filter((id) => before.ids.has(id))
      if (leaked.length > 0) throw new Error(`records of the other school in the answer to ${document}: ${leaked.join(', ')}`)
      if ((await snapshot(m, other)).text !== before.text) throw new Error(`${document} changed the other school's records`)
    })
    if (walls.control === true) {
      const found = await fc.check(property, { numRuns: walls.runs })
      t.ok(found.failed, `without either wall, a generated mutation reaches the other school (after ${checked} mutations)`)
      return
    }
    await fc.assert(property, { numRuns: walls.runs })
    t.ok(checked >= walls.runs, `${checked} generated mutations checked`)
  })
}
