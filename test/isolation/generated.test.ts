// Generated queries over the whole schema (property-based): random root fields, selections down
// to three levels, aliases, inline fragments and arguments drawn from both schools' ids. The
// oracle: no object in any response belongs to another school than the caller's.
import fc from 'fast-check'
import {
  getNamedType,
  isLeafType,
  isObjectType,
  type GraphQLField,
  type GraphQLObjectType
} from 'graphql'
import t from 'tap'
import { testDatabase } from '../helper.js'
import { foreignIds, gql, mirror, type MirrorSchool } from './mirror.js'

const MISSING = '00000000-0000-4000-8000-000000000000'

t.test('no generated query returns a record of another school', async (t) => {
  const m = await mirror(t, await testDatabase())
  const schema = m.app.graphql.schema
  const allIds = [...m.a.ids, ...m.b.ids, MISSING]
  let alias = 0

  function argsArb (field: GraphQLField<unknown, unknown>): fc.Arbitrary<string> {
    if (field.args.length === 0) return fc.constant('')
    const parts = field.args.map((arg) => {
      const type = getNamedType(arg.type).name
      if (type === 'ID') return fc.constantFrom(...allIds).map((id) => `${arg.name}: "${id}"`)
      if (type === 'Int') return fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }).map((n) => (n === undefined ? '' : `${arg.name}: ${n}`))
      throw new Error(`No generator for argument ${field.name}(${arg.name}: ${type}): add one`)
    })
    return fc.tuple(...parts).map((list) => {
      const text = list.filter((p) => p !== '').join(', ')
      return text === '' ? '' : `(${text})`
    })
  }

  function selectionArb (type: GraphQLObjectType, depth: number): fc.Arbitrary<string> {
    const fields = Object.values(type.getFields()).filter((f) => depth > 0 || isLeafType(getNamedType(f.type)))
    return fc.subarray(fields, { minLength: 1 }).chain((chosen) =>
      fc.tuple(...chosen.map((field) => fieldArb(field, depth))).map((parts) => parts.join(' '))
    ).chain((body) => fc.boolean().map((inline) => (inline ? `... on ${type.name} { ${body} }` : body)))
  }

  function fieldArb (field: GraphQLField<unknown, unknown>, depth: number): fc.Arbitrary<string> {
    const named = getNamedType(field.type)
    const sub = isObjectType(named) ? selectionArb(named, depth - 1).map((s) => ` { ${s} }`) : fc.constant('')
    return fc.tuple(argsArb(field), sub, fc.boolean()).map(([args, selection, aliased]) => {
      alias += 1
      // Every aliased field has a name of its own, so differing arguments never conflict.
      return `${aliased ? `f${alias}: ` : ''}${field.name}${args}${selection}`
    })
  }

  const query = schema.getQueryType()!
  const roots = Object.values(query.getFields())
  const documentArb = fc.subarray(roots, { minLength: 1, maxLength: 3 }).chain((chosen) =>
    fc.tuple(...chosen.map((field) => fieldArb(field, 3)))
  ).map((parts) => `{ ${parts.map((p, i) => (p.includes(':') && /^f\d+: /.test(p) ? p : `r${i}: ${p}`)).join(' ')} }`)

  let checked = 0
  await fc.assert(fc.asyncProperty(documentArb, fc.boolean(), async (document, asA) => {
    const caller: MirrorSchool = asA ? m.a : m.b
    const res = await gql(m.app, document, { token: caller.token })
    checked += 1
    if (res.body.errors !== undefined) throw new Error(`errors for ${document}: ${JSON.stringify(res.body.errors)}`)
    const leaked = foreignIds(res, caller)
    if (leaked.length > 0) throw new Error(`records of another school in ${document}: ${leaked.join(', ')}`)
  }), { numRuns: 300 })
  t.equal(checked >= 300, true, `${checked} generated documents checked`)
})
