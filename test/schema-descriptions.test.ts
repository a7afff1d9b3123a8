// The schema consumers see is documented: every element described at run time (through
// introspection of the served schema, not just in the SDL files), and the custom scalars carry the
// SDL's description and @specifiedBy.
import t, { type Test } from 'tap'
import { buildClientSchema, buildSchema, getIntrospectionQuery, isScalarType, type IntrospectionQuery } from 'graphql'
import { buildSdlSchema } from '../src/graphql/schema.js'
import { build, gql } from './helper.js'
import { undescribed } from './schema-descriptions.js'

async function introspect (t: Test): Promise<IntrospectionQuery> {
  const app = await build(t)
  const res = await gql(app, getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, inputValueDeprecation: true }))
  t.equal(res.statusCode, 200, JSON.stringify(res.body.errors))
  return res.body.data as unknown as IntrospectionQuery
}

t.test('every type, field, argument, input field, enum value and scalar of the served schema is described', async (t) => {
  const app = await build(t)
  await app.ready()
  t.same(undescribed(app.graphql.schema), [], 'the schema Mercurius serves')
  t.same(undescribed(buildClientSchema(await introspect(t))), [], 'the schema introspection shows')
})

t.test('Date and DateTime keep the SDL\'s description and @specifiedBy at run time', async (t) => {
  const sdl = buildSdlSchema()
  const res = await gql(await build(t), `{
    date: __type(name: "Date") { description specifiedByURL }
    dateTime: __type(name: "DateTime") { description specifiedByURL }
  }`)
  for (const [alias, name] of [['date', 'Date'], ['dateTime', 'DateTime']] as const) {
    const declared = sdl.getType(name)
    if (!isScalarType(declared)) throw new Error(`no scalar ${name}`)
    t.match(declared.description, /RFC 3339/)
    t.match(declared.specifiedByURL, /^https:\/\/scalars\.graphql\.org\//)
    t.same(res.body.data?.[alias], { description: declared.description, specifiedByURL: declared.specifiedByURL }, name)
  }
})

t.test('the lint names each undescribed element', async (t) => {
  const schema = buildSchema(`
    "Described."
    type Query {
      "Described."
      a(x: Int, "Described." y: Int): Int
      b: E
      c(i: I): String
    }
    enum E { "Described." ONE TWO }
    input I { "Described." p: Int q: Int }
    "Described."
    scalar S
    "Described."
    scalar T @specifiedBy(url: "https://example.org/t")
    directive @d(n: Int) on FIELD_DEFINITION
  `)
  t.same(undescribed(schema).sort(), [
    '@d', '@d(n:)', 'E', 'E.TWO', 'I', 'I.q', 'Query.a(x:)', 'Query.b', 'Query.c', 'Query.c(i:)', 'S @specifiedBy'
  ])
})
