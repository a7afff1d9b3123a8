// GET /schema.graphql publishes the served schema's SDL, with no token and in production too,
// where introspection is refused; cacheable and revalidated with its ETag.
import t from 'tap'
import { buildSchema, printSchema } from 'graphql'
import { buildSdlSchema } from '../src/graphql/schema.js'
import { SDL_PATH } from '../src/plugins/schema-sdl.js'
import { runCli } from './fixtures/cli.js'
import { build, gql } from './helper.js'
import { undescribed } from './schema-descriptions.js'

t.test('the SDL route serves the printed schema of the endpoint, descriptions and @specifiedBy included', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: SDL_PATH })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'text/plain; charset=utf-8')
  t.equal(res.headers['cache-control'], 'public, no-cache')
  t.equal(res.body, printSchema(app.graphql.schema), 'printSchema of the served schema')
  t.equal(res.body, printSchema(buildSdlSchema()), 'the resolvers change nothing a consumer reads')
  t.match(res.body, 'scalar Date @specifiedBy(url: "https://scalars.graphql.org/andimarek/local-date.html")')
  t.match(res.body, 'scalar DateTime @specifiedBy(url: "https://scalars.graphql.org/andimarek/date-time.html")')
  t.match(res.body, '"The user\'s password."')
  t.same(undescribed(buildSchema(res.body)), [], 'a consumer building it gets every description')

  const head = await app.inject({ method: 'HEAD', url: SDL_PATH })
  t.equal(head.statusCode, 200)
  t.equal(head.body, '')
})

t.test('the SDL route answers 304 to its own ETag, 200 to another', async (t) => {
  const app = await build(t)
  const first = await app.inject({ method: 'GET', url: SDL_PATH })
  const tag = first.headers.etag
  t.match(tag, /^"[^"]+"$/, 'a strong ETag')
  const again = await app.inject({ method: 'GET', url: SDL_PATH, headers: { 'if-none-match': tag as string } })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')
  const other = await app.inject({ method: 'GET', url: SDL_PATH, headers: { 'if-none-match': '"another"' } })
  t.equal(other.statusCode, 200)
  t.equal(other.body, first.body)
  const health = await app.inject({ method: 'GET', url: '/health' })
  t.equal(health.headers.etag, undefined, 'the ETag plugin stays inside the route\'s plugin')
})

t.test('in production the SDL is served while introspection is refused', async (t) => {
  const app = await build(t, { env: 'production' })
  const introspection = await gql(app, '{ __schema { types { name } } }', { accept: 'application/graphql-response+json' })
  t.equal(introspection.statusCode, 400)
  t.match(introspection.body.errors![0]!.message, /introspection has been disabled/)
  const res = await app.inject({ method: 'GET', url: SDL_PATH })
  t.equal(res.statusCode, 200)
  t.equal(res.body, printSchema(app.graphql.schema))
  t.match(res.body, '@specifiedBy(url: "https://scalars.graphql.org/andimarek/date-time.html")')
})

t.test('the SDL route needs no token and ignores a bad one', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: SDL_PATH, headers: { authorization: 'Bearer not-a-token' } })
  t.equal(res.statusCode, 200)
  t.equal(res.body, printSchema(app.graphql.schema))
})

t.test('school-data schema prints the SDL the route serves, with no server or database', async (t) => {
  const app = await build(t)
  const route = await app.inject({ method: 'GET', url: SDL_PATH })
  const printed = await runCli(['schema'], { PATH: process.env.PATH })
  t.equal(printed.code, 0, printed.stderr)
  t.equal(printed.stdout, route.body + '\n')
})
