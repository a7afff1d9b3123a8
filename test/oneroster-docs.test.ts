// The curl session of docs/api/oneroster.md, run: each `curl` of its section "A first session with
// curl" is read from the Markdown (sh's words, $API, $CLIENT_ID, $CLIENT_SECRET, $TOKEN and $SINCE
// filled in), sent through the app, and its answer compared with the block that follows it: JSON
// exactly but for the ids and times the page writes as `0198...` and `<date-time>`, and for `curl
// -i` the status line and the headers shown too. The next page's URL is the first page's
// `Link: rel="next"`, as the page says.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import type { Tokens } from 'marked'
import { createSchool } from '../src/admin/schools.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { difference, shellWords } from './fixtures/doc-examples.js'
import { markdown, section } from './fixtures/markdown.js'
import { seedClient } from './fixtures/oauth.js'
import { build, testDatabase, unique } from './helper.js'

const PAGE = 'docs/api/oneroster.md'
const API = 'http://127.0.0.1:4000'

interface Request { method: 'GET' | 'POST', url: string, headers: Record<string, string>, body: string | undefined, include: boolean }

/** A curl command as these examples write it: -s, -i, -G, -u, -H, -d and --data-urlencode. */
function curlRequest (command: string, env: Record<string, string>): Request {
  const [curl, ...args] = shellWords(command, env)
  if (curl !== 'curl') throw new Error(`not a curl command: ${command}`)
  const headers: Record<string, string> = {}
  const data: string[] = []
  let url = ''
  let get = false
  let include = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '-s') continue
    if (arg === '-i') include = true
    else if (arg === '-G') get = true
    else if (arg === '-u') headers.authorization = 'Basic ' + Buffer.from(args[++i]!).toString('base64')
    else if (arg === '-H') {
      const header = args[++i]!
      const colon = header.indexOf(':')
      headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim()
    } else if (arg === '-d') data.push(args[++i]!)
    else if (arg === '--data-urlencode') {
      const [name, ...value] = args[++i]!.split('=')
      data.push(`${name!}=${encodeURIComponent(value.join('='))}`)
    } else if (arg.startsWith('-')) throw new Error(`curl option ${arg} is not read by this test`)
    else url = arg
  }
  if (!url.startsWith(API)) throw new Error(`${url} is not under $API`)
  const path = url.slice(API.length)
  if (data.length === 0 || get) {
    return { method: 'GET', url: data.length === 0 ? path : `${path}${path.includes('?') ? '&' : '?'}${data.join('&')}`, headers, body: undefined, include }
  }
  return { method: 'POST', url: path, headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: data.join('&'), include }
}

/** The section's code blocks in order: each curl (sh) and the answer shown after it (json, or http for curl -i). */
function session (): Tokens.Code[] {
  return section(markdown(PAGE), 'A first session with curl')
    .filter((token): token is Tokens.Code => token.type === 'code' && ['sh', 'json', 'http'].includes(token.lang ?? ''))
}

/** The school of the page: three students and a teacher with the sourcedIds shown, and a client with roster.readonly. */
async function school (): Promise<{ clientId: string, secret: string, alan: string, schoolId: string }> {
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Docs OneRoster School'))
  await createStudent(db, { schoolId, sourcedId: 'stu-0001', fullName: 'Ada Lovelace', givenName: 'Ada', familyName: 'Lovelace', preferredName: 'Countess', studentNumber: 'S-1001', email: 'ada@example.org', gradeLevel: '03' })
  const alan = await createStudent(db, { schoolId, sourcedId: 'stu-0002', fullName: 'Alan Turing', givenName: 'Alan', familyName: 'Turing', studentNumber: 'S-1002', gradeLevel: '04', status: 'INACTIVE' })
  await createStudent(db, { schoolId, sourcedId: 'stu-0003', fullName: 'Grace Hopper', givenName: 'Grace', familyName: 'Hopper', studentNumber: 'S-1003', email: 'grace@example.org', gradeLevel: '05' })
  await createTeacher(db, { schoolId, sourcedId: 'tea-0001', fullName: 'Mary Same', givenName: 'Mary', familyName: 'Same', email: 'mary@example.org' })
  const client = await seedClient(schoolId, ['roster.readonly'])
  return { ...client, alan, schoolId }
}

t.test('the curl session of the OneRoster page answers as the page shows', async (t) => {
  const app: FastifyInstance = await build(t)
  const { clientId, secret, alan, schoolId } = await school()
  // The last sync began after the school was written; Alan Turing's record changed since.
  const tenant = (await testDatabase()).forSchool(schoolId)
  const latest = await tenant.student.findFirstOrThrow({ orderBy: { updatedAt: 'desc' }, select: { updatedAt: true } })
  const teacher = await tenant.teacher.findFirstOrThrow({ select: { updatedAt: true } })
  const since = new Date(Math.max(latest.updatedAt.getTime(), teacher.updatedAt.getTime()))
  await tenant.student.updateMany({ where: { id: alan }, data: { preferredName: null, updatedAt: new Date(since.getTime() + 1000) } })
  const env: Record<string, string> = { API, CLIENT_ID: clientId, CLIENT_SECRET: secret, TOKEN: '', SINCE: since.toISOString() }

  const blocks = session()
  t.ok(blocks.filter((block) => block.lang === 'sh').length >= 5, 'a token, a page, the next page, a delta, a refusal')
  let request: Request | undefined
  let next: string | undefined
  for (const block of blocks) {
    if (block.lang === 'sh') {
      request = curlRequest(block.text, env)
      continue
    }
    if (request === undefined) throw new Error('an answer before any curl')
    if (request.url.includes('offset=') && next !== undefined) t.equal(API + request.url, next, 'the next page is the Link header\'s next')
    const res = await app.inject({ method: request.method, url: request.url, headers: { host: '127.0.0.1:4000', ...request.headers }, ...(request.body !== undefined && { payload: request.body }) })
    let shown = block.text
    if (block.lang === 'http') {
      t.ok(request.include, 'an http answer follows curl -i')
      const [head, ...body] = shown.split('\n\n')
      const [status, ...headers] = head!.split('\n')
      t.equal(status, `HTTP/1.1 ${res.statusCode} ${res.statusMessage}`, 'the status line')
      for (const line of headers) {
        const colon = line.indexOf(':')
        t.equal(String(res.headers[line.slice(0, colon).toLowerCase()]), line.slice(colon + 1).trim(), `the header ${line.slice(0, colon)}`)
      }
      shown = body.join('\n\n')
    }
    const answer: unknown = res.json()
    t.equal(difference(JSON.parse(shown), answer), '', `${request.method} ${request.url.slice(0, 80)} answers as shown`)
    if (request.url === '/oauth/token') env.TOKEN = (answer as { access_token: string }).access_token
    next = /<([^>]+)>; rel="next"/.exec(String(res.headers.link))?.[1] ?? next
    request = undefined
  }
})
