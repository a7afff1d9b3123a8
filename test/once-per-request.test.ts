// Per request, each thing once (issue 29 point 3): the query text parsed by Mercurius alone (its
// cache, once per distinct text), the operation named once for the log, the metrics and the audit,
// and the Prisma select of a field worked out once per parsed operation and place in the answer.
import * as graphql from 'graphql'
import t from 'tap'
import type { buildApp as BuildApp } from '../src/app.js'
import { prismaSelect, type SelectionMap } from '../src/graphql/selection.js'
import { gql, login, seedSchool, testConfig, testDatabase } from './helper.js'

// Mercurius parses with its own copy of graphql-js (CommonJS), once per distinct text (its cache);
// the spy sees the service's own modules that had parsed it again: the response cache's lookup and
// the audit's operation name. (tap's mocks reach the modules a mocked module imports directly, so
// each is mocked where it is imported.)
t.test('no module of the service parses the query again: not the response cache, not the audit, not the metrics', async (t) => {
  let parses = 0
  const spy = {
    ...graphql,
    parse: (...args: Parameters<typeof graphql.parse>) => {
      parses++
      return graphql.parse(...args)
    }
  }
  const responseCache = await t.mockImport('../src/graphql/response-cache.js', { graphql: spy })
  const graphqlPlugin = await t.mockImport('../src/plugins/graphql.js', { graphql: spy, '../src/graphql/response-cache.js': responseCache })
  const { buildApp } = await t.mockImport<{ buildApp: typeof BuildApp }>('../src/app.js', {
    graphql: spy,
    '../src/plugins/graphql.js': graphqlPlugin,
    '../src/audit/plugin.js': await t.mockImport('../src/audit/plugin.js', { graphql: spy }),
    '../src/plugins/metrics.js': await t.mockImport('../src/plugins/metrics.js', { graphql: spy })
  })
  // The response cache on (its lookup parsed ahead of Mercurius), the audit on (it parsed to name the operation).
  const app = await buildApp(testConfig({ responseCacheTtl: 60 }), { database: await testDatabase(), logger: false })
  t.teardown(() => app.close())
  const school = await seedSchool('Parsed Once Elementary', [['Ada Lovelace'], ['Grace Hopper']])
  const { accessToken } = await login(app, school.username)
  // The school's own record: a model query. (A list would be a typed statement, whose registry the
  // mocked module graph holds a fresh copy of, apart from the one the test's database checks.)
  const query = 'query Home { school { id name } }'
  parses = 0
  const documents = new Set<unknown>()
  app.graphql.addHook('preExecution', async (_schema, document) => { documents.add(document) })
  const first = await gql(app, query, { token: accessToken })
  t.equal(first.headers['x-cache'], 'miss')
  t.equal((first.body.data?.school as { name: string }).name, 'Parsed Once Elementary')
  const second = await gql(app, query, { token: accessToken })
  t.equal(second.headers['x-cache'], 'hit')
  // A mutation's text: parsed once by Mercurius, never kept, never served from the cache.
  const mutation = 'mutation Out { logout(refreshToken: "none") }'
  for (let i = 0; i < 2; i++) t.equal((await gql(app, mutation, { token: accessToken })).headers['x-cache'], undefined)
  t.equal(documents.size, 2, "Mercurius's one document per text, executed")
  t.equal(parses, 0, 'Mercurius parsed, nothing else')
  await app.audit.flush()
})

/** Runs `query` on a schema whose list items each resolve `detail` by calling prismaSelect. */
async function selectsOfItems (query: string, variables: Record<string, unknown> = {}): Promise<unknown[]> {
  const schema = graphql.buildSchema(`
    type Query { items: [Item!]! }
    type Item { id: ID!, detail: Detail! }
    type Detail { id: ID!, name: String!, code: String! }
  `)
  const map: SelectionMap = { name: { name: true }, code: { code: true } }
  const selects: unknown[] = []
  const result = await graphql.graphql({
    schema,
    source: query,
    variableValues: variables,
    rootValue: { items: () => Array.from({ length: 5 }, (_, i) => ({ id: String(i) })) },
    fieldResolver: (source, _args, _context, info) => {
      if (info.fieldName !== 'detail') return graphql.defaultFieldResolver(source, _args, _context, info)
      selects.push(prismaSelect(info, 'Detail', map))
      return { id: 'd', name: 'n', code: 'c' }
    }
  })
  if (result.errors !== undefined) throw new Error(result.errors.map((error) => error.message).join('; '))
  return selects
}

t.test('the select of a field is worked out once per operation and place, not per item of a page', async (t) => {
  const document = graphql.parse('{ items { id detail { name } } }')
  const printed = graphql.print(document)
  const selects = await selectsOfItems(printed)
  t.equal(selects.length, 5)
  t.same(selects[0], { id: true, name: true })
  t.ok(selects.every((select) => select === selects[0]), 'one object for the five items')
  t.ok(Object.isFrozen(selects[0]), 'frozen: a caller copies it to add to it')
})

t.test('an operation whose @include takes a variable is selected by its variables', async (t) => {
  const query = 'query ($code: Boolean!) { items { detail { name code @include(if: $code) } } }'
  t.same((await selectsOfItems(query, { code: true }))[0], { id: true, name: true, code: true })
  t.same((await selectsOfItems(query, { code: false }))[0], { id: true, name: true })
})
