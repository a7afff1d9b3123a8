// The curl examples of docs/api/mutations.md, run: each `curl` of its Examples section is read from
// the Markdown (its -H headers and -d body, $API and $TOKEN filled in with this app and a seeded
// administrator's token), sent through the app, and its answer compared with the JSON block that
// follows it: exactly, but for the ids and other values the page writes as `<hex>...` (any UUID in
// their place). A JSON block that follows another is the answer to the last curl sent again.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import type { Tokens } from 'marked'
import { build, gql, login, seedSchool, testDatabase, unique } from './helper.js'
import { difference, shellWords } from './fixtures/doc-examples.js'
import { markdown, section } from './fixtures/markdown.js'

const PAGE = 'docs/api/mutations.md'

interface Request { url: string, headers: Record<string, string>, body: string }

/** A curl command's URL, -H headers and -d body. */
function curlRequest (command: string, env: Record<string, string>): Request {
  const [curl, ...args] = shellWords(command, env)
  if (curl !== 'curl') throw new Error(`not a curl command: ${command}`)
  const request: Request = { url: '', headers: {}, body: '' }
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '-s') continue
    if (arg === '-H') {
      const header = args[++i]!
      const colon = header.indexOf(':')
      request.headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim()
    } else if (arg === '-d') {
      request.body = args[++i]!
    } else if (arg.startsWith('-')) {
      throw new Error(`curl option ${arg} is not read by this test`)
    } else {
      request.url = arg
    }
  }
  return request
}

/** The Examples section's code blocks, in order: each curl and each documented answer. */
function examples (): Array<{ lang: 'sh' | 'json', text: string }> {
  return (section(markdown(PAGE), 'Examples'))
    .filter((token): token is Tokens.Code => token.type === 'code' && (token.lang === 'sh' || token.lang === 'json'))
    .map((token) => ({ lang: token.lang as 'sh' | 'json', text: token.text }))
}

t.test('the curl helpers read sh as sh does, and the comparison matches ids by pattern only', async (t) => {
  t.same(shellWords('curl -s "$API" -H "A: Bearer $T" \\\n  -d \'{"a":"$T \\"x\\""}\'', { API: 'http://h/', T: 'tok' }), ['curl', '-s', 'http://h/', '-H', 'A: Bearer tok', '-d', '{"a":"$T \\"x\\""}'])
  t.equal(difference({ id: '019a...' }, { id: '0196c1e2-0000-7000-8000-000000000000' }), '')
  t.not(difference({ id: '019a...' }, { id: 'not-an-id' }), '')
  t.not(difference({ a: 1 }, { a: 1, b: 2 }), '', 'an answer with more than the page shows differs')
  t.not(difference({ m: 'Student 019a... is at version 2' }, { m: 'Student 0196c1e2-0000-7000-8000-000000000000 is at version 3' }), '')
})

t.test('every curl example of the mutations page answers as the page shows', async (t) => {
  const app: FastifyInstance = await build(t)
  const school = await seedSchool(unique('Docs Examples School'))
  const token = (await login(app, school.username)).accessToken
  // "in the existing classroom named Room 7"
  const room = await gql(app, 'mutation { createClassroom(input: { name: "Room 7" }) { id } }', { token })
  t.equal(room.body.errors, undefined)
  const env = { API: 'http://127.0.0.1:3000/', TOKEN: token }
  const blocks = examples()
  t.ok(blocks.filter((b) => b.lang === 'sh').length >= 4, 'a create, the same key with another body, a change and a bulk upsert')
  let last: Request | undefined
  let first: { request: Request, body: unknown } | undefined
  let answered = false
  for (const block of blocks) {
    if (block.lang === 'sh') {
      last = curlRequest(block.text, env)
      answered = false
      continue
    }
    if (last === undefined) throw new Error('an answer before any curl')
    const res = await app.inject({ method: 'POST', url: new URL(last.url).pathname, headers: last.headers, payload: last.body })
    const body: unknown = res.json()
    t.equal(difference(JSON.parse(block.text), body), '', `${answered ? 'sent again: ' : ''}${JSON.stringify(JSON.parse(last.body).query).slice(1, 60)}... answers ${block.text.slice(0, 60)}...`)
    t.equal(res.statusCode, 200)
    first ??= { request: last, body }
    answered = true
  }
  // "The same request again ... answers the same, and creates nothing: the student is there once."
  const again = await app.inject({ method: 'POST', url: '/', headers: first!.request.headers, payload: first!.request.body })
  t.same(again.json(), first!.body, 'the create sent again answers the same')
  const db = await testDatabase()
  t.equal(await db.forSchool(school.schoolId).student.count({ where: { sourcedId: 'stu-1001' } }), 1, 'the student is there once')
})
