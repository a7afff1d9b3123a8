// Generated queries over the whole schema (property-based): random root fields, selections down
// to three levels, aliases, inline fragments and arguments drawn from both schools' ids. The
// oracle: no object in any response belongs to another school than the caller's; for a teacher,
// none lies outside her reach. Each caller (an administrator, a teacher, a client with the core
// scope only) is asked only fields its scopes hold (a teacher no contact: outsideTeacherReach),
// and no answer may carry an error. Both schools have contacts with colliding sourcedIds.
import fc from 'fast-check'
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isNonNullType,
  isObjectType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType
} from 'graphql'
import t from 'tap'
import { holds, outsideTeacherReach, requirementOf, ROLE_SCOPES, type Access } from '../../src/auth/scopes.js'
import { createTestDatabase, testDatabase, type TestDatabaseOptions } from '../helper.js'
import { foreignIds, gql, mirror, outOfReachIds, seedContacts, type Mirror, type MirrorSchool } from './mirror.js'

const MISSING = '00000000-0000-4000-8000-000000000000'

interface Caller {
  name: string
  access: Access
  token (school: MirrorSchool): string
  /** Ids in the answer the caller may not see. */
  leaked (res: Parameters<typeof foreignIds>[0], school: MirrorSchool): string[]
  runs: number
}

const CALLERS: Caller[] = [
  { name: 'an administrator', access: { scopes: ROLE_SCOPES.admin, user: true }, token: (s) => s.token, leaked: foreignIds, runs: 300 },
  { name: 'a teacher', access: { scopes: ROLE_SCOPES.teacher, user: true, teacher: true }, token: (s) => s.teacherToken, leaked: outOfReachIds, runs: 200 },
  { name: 'a client with the core scope', access: { scopes: ['roster-core.readonly'], user: false }, token: (s) => s.coreClientToken, leaked: foreignIds, runs: 100 }
]

/**
 * Both walls; then each wall alone, for the administrator (whose lists and relations are typed
 * statements, src/db/typed-reads.ts) and the teacher (model operations); the walls test does the
 * same for schools.
 */
const WALLS: Array<{ name: string, options: TestDatabaseOptions | null, callers: Caller[] }> = [
  { name: 'both walls', options: null, callers: CALLERS },
  { name: 'wall 1 alone (role bypasses row-level security)', options: { role: 'owner' }, callers: [{ ...CALLERS[0]!, runs: 100 }, { ...CALLERS[1]!, runs: 100 }] },
  { name: 'wall 2 alone (the extension\'s filters off)', options: { tenantFilter: false }, callers: [{ ...CALLERS[0]!, runs: 100 }, { ...CALLERS[1]!, runs: 100 }] }
]

const root = t
const mirrors = new Map<string, Promise<Mirror>>()

for (const walls of WALLS) {
  for (const caller of walls.callers) {
    t.test(`${walls.name}: no generated query of ${caller.name} returns a record it may not see`, async (t) => {
      // One pair of mirrored schools per configuration, closed when the file ends.
      let shared = mirrors.get(walls.name)
      if (shared === undefined) {
        shared = (walls.options === null ? testDatabase() : createTestDatabase(walls.options)).then(async (database) => {
          const made = await mirror(root, database)
          await seedContacts(database, made)
          return made
        })
        mirrors.set(walls.name, shared)
      }
      const m = await shared
      const schema = m.app.graphql.schema
      const allIds = [...m.a.ids, ...m.b.ids, MISSING]
      let alias = 0

      /** Whether the caller may select `type.field`: its scopes hold it, and a teacher's reach too. */
      const selectable = (type: string, field: string): boolean => {
        const need = requirementOf(type, field)
        return need !== undefined && holds(caller.access, need) && !(caller.access.teacher === true && outsideTeacherReach(type, field))
      }

      /** A value of an input type (ids of both schools, enum values, filters built of those), or '' for none. */
      function valueArb (type: GraphQLInputType, where: string): fc.Arbitrary<string> {
        const named = getNamedType(type)
        let value: fc.Arbitrary<string>
        if (named.name === 'ID') value = fc.constantFrom(...allIds).map((id) => `"${id}"`)
        else if (named.name === 'Int') value = fc.integer({ min: 0, max: 50 }).map(String)
        else if (isEnumType(named)) value = fc.constantFrom(...named.getValues().map((v) => v.name))
        else if (isInputObjectType(named)) {
          const fields = Object.values(named.getFields()).filter((f) => getNamedType(f.type).name !== 'String')
          value = fc.tuple(...fields.map((f) => valueArb(f.type, `${where}.${f.name}`).map((v) => (v === '' ? '' : `${f.name}: ${v}`))))
            .map((parts) => `{ ${parts.filter((p) => p !== '').join(', ')} }`)
        } else if (named.name === 'String' && !isNonNullType(type)) {
          // Cursors and search texts: left out (a made-up cursor is refused, which is not a leak).
          return fc.constant('')
        } else throw new Error(`No generator for argument ${where}: ${named.name}: add one`)
        return isNonNullType(type) ? value : fc.option(value, { nil: '' })
      }

      function argsArb (field: GraphQLField<unknown, unknown>): fc.Arbitrary<string> {
        if (field.args.length === 0) return fc.constant('')
        const parts = field.args.map((arg) => valueArb(arg.type, `${field.name}(${arg.name})`).map((v) => (v === '' ? '' : `${arg.name}: ${v}`)))
        return fc.tuple(...parts).map((list) => {
          const text = list.filter((p) => p !== '').join(', ')
          return text === '' ? '' : `(${text})`
        })
      }

      function selectionArb (type: GraphQLObjectType, depth: number): fc.Arbitrary<string> {
        const fields = Object.values(type.getFields())
          .filter((f) => depth > 0 || isLeafType(getNamedType(f.type)))
          .filter((f) => selectable(type.name, f.name))
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
      const roots = Object.values(query.getFields()).filter((f) => selectable('Query', f.name))
      const documentArb = fc.subarray(roots, { minLength: 1, maxLength: 3 }).chain((chosen) =>
        fc.tuple(...chosen.map((field) => fieldArb(field, 3)))
      ).map((parts) => `{ ${parts.map((p, i) => (p.includes(':') && /^f\d+: /.test(p) ? p : `r${i}: ${p}`)).join(' ')} }`)

      let checked = 0
      await fc.assert(fc.asyncProperty(documentArb, fc.boolean(), async (document, asA) => {
        const school: MirrorSchool = asA ? m.a : m.b
        const res = await gql(m.app, document, { token: caller.token(school) })
        checked += 1
        if (res.body.errors !== undefined) throw new Error(`errors for ${document}: ${JSON.stringify(res.body.errors)}`)
        const leaked = caller.leaked(res, school)
        if (leaked.length > 0) throw new Error(`records ${caller.name} may not see in ${document}: ${leaked.join(', ')}`)
      }), { numRuns: caller.runs })
      t.equal(checked >= caller.runs, true, `${checked} generated documents checked`)
    })
  }
}
