// GraphiQL at /graphiql: served in the sandbox only, every asset from this origin, and tried in a
// real headless Chromium (Debian's `chromium`, driven by playwright-core, never a downloaded one):
// the page logs in through the API (a user, a teacher, or a client with its id and secret) and shows
// what the caller may read.
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { dirname } from 'node:path'
import t, { type Test } from 'tap'
import { chromium, type Page } from 'playwright-core'
import { CONTENT_SECURITY_POLICY } from '../src/plugins/graphiql.js'
import type { Config } from '../src/config.js'
import { createUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { createTeacher } from '../src/records/teachers.js'
import { build, PASSWORD, seedSchool, testDatabase, unique } from './helper.js'
import { seedClient } from './fixtures/oauth.js'

const CHROMIUM = '/usr/bin/chromium'
// Real browser sessions on a machine whose cores the suite's other files share: more than the
// suite's default per file.
t.setTimeout(300_000)
const ASSETS = {
  'react.production.min.js': 'text/javascript; charset=utf-8',
  'react-dom.production.min.js': 'text/javascript; charset=utf-8',
  'graphiql.min.js': 'text/javascript; charset=utf-8',
  'graphiql.min.css': 'text/css; charset=utf-8',
  'page.js': 'text/javascript; charset=utf-8',
  'page.css': 'text/css; charset=utf-8'
}

t.test('the page and its assets are served from this origin, with a strict policy', async (t) => {
  const app = await build(t)
  const page = await app.inject({ method: 'GET', url: '/graphiql' })
  t.equal(page.statusCode, 200)
  t.equal(page.headers['content-type'], 'text/html; charset=utf-8')
  t.equal(page.headers['content-security-policy'], CONTENT_SECURITY_POLICY)
  t.match(CONTENT_SECURITY_POLICY, /script-src 'self'(;|$)/, 'no inline script, no eval')
  t.notMatch(page.body, /<script>|<script [^>]*>[^<]/, 'no inline script in the page')
  // Every script and stylesheet the page names is one of the assets, by an absolute path here.
  const named = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]).filter((url) => url !== 'data:,')
  t.same(named.sort(), Object.keys(ASSETS).map((name) => `/graphiql/assets/${name}`).sort())

  for (const [name, type] of Object.entries(ASSETS)) {
    const res = await app.inject({ method: 'GET', url: `/graphiql/assets/${name}` })
    t.equal(res.statusCode, 200, name)
    t.equal(res.headers['content-type'], type, `${name} is ${type}`)
    t.equal(res.headers['x-content-type-options'], 'nosniff', name)
    t.ok(res.rawPayload.length > 100, `${name} has a body`)
    const again = await app.inject({ method: 'GET', url: `/graphiql/assets/${name}`, headers: { 'if-none-match': String(res.headers.etag) } })
    t.equal(again.statusCode, 304, `${name} unchanged: 304`)
  }
  t.match((await app.inject({ method: 'GET', url: '/graphiql/assets/graphiql.min.js' })).body, /GraphiQL/)

  for (const url of ['/graphiql/assets/package.json', '/graphiql/assets/..%2F..%2Fpackage.json', '/graphiql/assets/constructor']) {
    t.equal((await app.inject({ method: 'GET', url })).statusCode, 404, `${url} is not served`)
  }
})

t.test('production serves no GraphiQL', async (t) => {
  const app = await build(t, { env: 'production' })
  for (const url of ['/graphiql', '/graphiql/assets/graphiql.min.js', '/graphiql/assets/page.js']) {
    t.equal((await app.inject({ method: 'GET', url })).statusCode, 404, url)
  }
})

// Without the browser the test is skipped on a developer's machine, and fails in CI.
const missing = existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing: install Debian's chromium package (.ci/run does)`

const browserTest = { skip: process.env.CI !== 'true' && missing !== undefined ? missing : false }

interface Session {
  page: Page
  /** Script errors, console errors (policy violations among them) and answers of 400 and more. */
  problems: string[]
  /** Requests to any other origin than the app's. */
  elsewhere: string[]
}

/** The app listening on a real socket, and a Chromium page on its GraphiQL with `query`. */
async function openGraphiQL (t: Test, query: string, overrides: Partial<Config> = {}): Promise<Session | undefined> {
  if (missing !== undefined) {
    t.fail(missing)
    return undefined
  }
  const app = await build(t, overrides)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no TCP address')
  const origin = `http://127.0.0.1:${address.port}`

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    // Root (CI containers) cannot use Chromium's sandbox; nothing but this test's page is opened.
    chromiumSandbox: false,
    args: ['--headless=new', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync']
  })
  t.teardown(() => browser.close())
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
  // Patience for a loaded machine (two cores shared by many test processes); not a measurement.
  page.setDefaultTimeout(60_000)
  const session: Session = { page, problems: [], elsewhere: [] }
  page.on('pageerror', (err) => session.problems.push(`page error: ${err.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error') session.problems.push(`console: ${message.text()}`)
  })
  page.on('response', (res) => {
    if (res.status() >= 400) session.problems.push(`${res.status()} ${res.request().method()} ${res.url()}`)
  })
  page.on('request', (request) => {
    const url = new URL(request.url())
    if (url.origin !== origin && url.protocol !== 'data:') session.elsewhere.push(request.url())
  })
  await page.goto(`${origin}/graphiql?query=${encodeURIComponent(query)}`)
  await page.locator('.graphiql-execute-button').waitFor()
  return session
}

async function logIn (page: Page, username: string, password = PASSWORD): Promise<void> {
  await page.fill('#username', username)
  await page.fill('#password', password)
  await page.click('#login-button')
}

const STUDENTS = '{ students(limit: 10) { fullName classroomName } }'

t.test('in Chromium, the page logs in through the API and shows the school\'s students', browserTest, async (t) => {
  const mine = await seedSchool('GraphiQL Academy', [['Ada Lovelace', 'Room 1'], ['Alan Turing', 'Room 2']])
  await seedSchool('Other School', [['Eve Outsider', 'Room 1']])
  const session = await openGraphiQL(t, STUDENTS)
  if (session === undefined) return
  const { page } = session
  const run = page.locator('.graphiql-execute-button')
  const response = page.locator('.graphiql-response')

  // Without logging in, the query goes without a token and the API refuses it.
  await run.click()
  await t.resolves(response.getByText('UNAUTHENTICATED').first().waitFor(), 'refused before login')

  await logIn(page, mine.username, 'not the password')
  await t.resolves(page.locator('#status', { hasText: 'Invalid credentials' }).waitFor(), 'a wrong password is reported')

  await logIn(page, mine.username)
  await t.resolves(page.locator('#status', { hasText: `Logged in as ${mine.username} (admin)` }).waitFor(), 'the status names the role')
  t.equal(await page.inputValue('#password'), '', 'the password field is cleared')

  await run.click()
  await response.getByText('Alan Turing').waitFor()
  const shown = await response.innerText()
  t.match(shown, /"fullName": "Ada Lovelace"/)
  t.match(shown, /"classroomName": "Room 1"/)
  t.match(shown, /"fullName": "Alan Turing"/)
  t.notMatch(shown, /Eve Outsider/, 'another school\'s student is not shown')
  t.notMatch(shown, /UNAUTHENTICATED/)

  // GraphiQL read the schema (introspection stays on in the sandbox): its documentation shows it.
  await page.getByRole('button', { name: 'Show Documentation Explorer' }).click()
  await page.locator('.graphiql-doc-explorer').getByRole('link', { name: 'Query', exact: true }).click()
  await t.resolves(page.locator('.graphiql-doc-explorer-field-name', { hasText: /^students$/ }).waitFor(), 'the schema is documented')

  // The tokens stayed in the page's memory.
  const stored = await page.evaluate('JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie })')
  t.match(stored, /"local":\{"graphiql:/, 'GraphiQL keeps its editor state')
  t.notMatch(stored, /eyJ/, 'no JWT in web storage or cookies')

  const screenshot = process.env.GRAPHIQL_SCREENSHOT
  if (screenshot !== undefined && screenshot !== '') {
    await mkdir(dirname(screenshot), { recursive: true })
    await page.screenshot({ path: screenshot })
  }

  t.same(session.problems, [], 'no script error and no policy violation')
  t.same(session.elsewhere, [], 'nothing was fetched from another origin')
})

t.test('in Chromium, the page renews the access token before it expires, and logs out', browserTest, async (t) => {
  const mine = await seedSchool('Renewal Academy', [['Grace Hopper', 'Room 3']])
  // Three-second access tokens: the page renews each about a second early.
  const session = await openGraphiQL(t, STUDENTS, { accessTokenTtl: 3 })
  if (session === undefined) return
  const { page } = session
  const run = page.locator('.graphiql-execute-button')
  const response = page.locator('.graphiql-response')

  const isRenewal = (request: { postData: () => string | null }): boolean => request.postData()?.includes('refreshToken(refreshToken:') === true
  const renewals: string[] = []
  page.on('request', (request) => { if (isRenewal(request)) renewals.push(request.url()) })
  await logIn(page, mine.username)
  await page.locator('#status', { hasText: `Logged in as ${mine.username}` }).waitFor()

  // Renewed by the timer, with no query asking: twice, so the renewed token is renewed in turn.
  await page.waitForRequest(isRenewal)
  await page.waitForRequest(isRenewal)
  t.ok(renewals.length >= 2, 'the access token was renewed before any query')
  await run.click()
  await response.getByText('Grace Hopper').waitFor()
  t.notMatch(await response.innerText(), /UNAUTHENTICATED/)

  // Editing the query keeps the address in step, so it can be shared.
  await page.locator('.graphiql-query-editor .CodeMirror').click()
  await page.keyboard.press('Control+End')
  await page.keyboard.type('\n# shared')
  await page.waitForURL((url) => url.searchParams.get('query')?.endsWith('# shared') === true)

  await page.click('#logout-button')
  await page.locator('#status', { hasText: 'Logged out' }).waitFor()
  t.ok(await page.locator('#login').isVisible(), 'the login form is back')
  await run.click()
  await t.resolves(response.getByText('UNAUTHENTICATED').first().waitFor(), 'queries go without a token again')

  t.same(session.problems, [], 'no script error and no policy violation')
  t.same(session.elsewhere, [], 'nothing was fetched from another origin')
})

/** What the page must not have done: script errors, policy violations, answers of 400 and more. */
function problemsBut (session: Session, expected: RegExp): string[] {
  return session.problems.filter((p) => !expected.test(p))
}

t.test('in Chromium, a client logs in with its id and secret, reads within its scopes, and renews its token', browserTest, async (t) => {
  const mine = await seedSchool('Client GraphiQL Academy', [['Katherine Johnson', 'Room 4']])
  await seedSchool('Other Client School', [['Mallory Outsider', 'Room 1']])
  const client = await seedClient(mine.schoolId, ['roster-core.readonly'], 'GraphiQL client')
  // Three-second access tokens: a client has no refresh token, the page asks /oauth/token again.
  const session = await openGraphiQL(t, STUDENTS, { accessTokenTtl: 3 })
  if (session === undefined) return
  const { page } = session
  const run = page.locator('.graphiql-execute-button')
  const response = page.locator('.graphiql-response')
  const tokenBodies: string[] = []
  page.on('request', (request) => {
    if (new URL(request.url()).pathname === '/oauth/token') tokenBodies.push(`${request.headers()['content-type'] ?? ''} ${request.postData() ?? ''}`)
  })

  await page.selectOption('#login-kind', 'client')
  t.notOk(await page.locator('#username').isVisible(), 'the user fields are hidden')
  await page.fill('#client-id', client.clientId)
  await page.fill('#client-secret', 'not the secret')
  await page.click('#login-button')
  await t.resolves(page.locator('#status', { hasText: 'Login failed' }).waitFor(), 'a wrong secret is reported')

  await page.fill('#client-secret', client.secret)
  await page.click('#login-button')
  await t.resolves(page.locator('#status', { hasText: `Logged in as the client ${client.clientId} (scopes: roster-core.readonly)` }).waitFor())
  t.equal(await page.inputValue('#client-secret'), '', 'the secret field is cleared')
  t.match(tokenBodies[0], /^application\/x-www-form-urlencoded grant_type=client_credentials&client_id=[0-9a-f-]{36}&client_secret=/,
    'client_secret_post: the id and secret in a form body')

  // Renewed by the timer with the id and secret, twice, so the renewed token is renewed in turn.
  const isTokenRequest = (request: { url: () => string }): boolean => new URL(request.url()).pathname === '/oauth/token'
  await page.waitForRequest(isTokenRequest)
  await page.waitForRequest(isTokenRequest)
  await run.click()
  await response.getByText('Katherine Johnson').waitFor()
  const shown = await response.innerText()
  t.notMatch(shown, /Mallory Outsider/, 'another school\'s student is not shown')
  t.notMatch(shown, /UNAUTHENTICATED/)

  // Its scopes hold: an email needs roster.readonly.
  await page.locator('.graphiql-query-editor .CodeMirror').click()
  await page.keyboard.press('Control+A')
  await page.keyboard.type('{ students { email } }')
  await run.click()
  await t.resolves(response.getByText('Student.email needs the scope roster.readonly').waitFor(), 'a field outside its scopes is refused')

  const stored = await page.evaluate('JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie })')
  t.notMatch(stored, /eyJ/, 'no JWT in web storage or cookies')
  t.notOk(String(stored).includes(client.secret), 'nor the client\'s secret')

  await page.click('#logout-button')
  await page.locator('#status', { hasText: 'Logged out' }).waitFor()
  t.equal(await page.inputValue('#login-kind'), 'client', 'the client login form is back')

  // The wrong secret's answer (400 invalid_client) is the one failure expected.
  t.same(problemsBut(session, /400 POST .*\/oauth\/token|status of 400/), [], 'no script error and no policy violation')
  t.same(session.elsewhere, [], 'nothing was fetched from another origin')
})

t.test('in Chromium, a teacher logs in like an administrator; the page names the role and shows the teacher\'s students', browserTest, async (t) => {
  const db = await testDatabase()
  const mine = await seedSchool('Teacher GraphiQL Academy', [['Mary Jackson', 'Room 5'], ['Eve Otherroom', 'Room 6']])
  const teacherId = await createTeacher(db, { schoolId: mine.schoolId, fullName: 'Dorothy Vaughan' })
  const room = await db.forSchool(mine.schoolId).classroom.findFirstOrThrow({ where: { name: 'Room 5' }, select: { id: true } })
  await db.forSchool(mine.schoolId).teacherClassroom.create({ data: { schoolId: mine.schoolId, teacherId, classroomId: room.id } })
  await createStudent(db, { schoolId: mine.schoolId, fullName: 'Annie Easley', classroom: 'Room 5' })
  const username = unique('teacher')
  await createUser(db, { username, password: PASSWORD, schoolId: mine.schoolId, role: 'teacher', teacherId })

  const session = await openGraphiQL(t, STUDENTS)
  if (session === undefined) return
  const { page } = session
  await logIn(page, username)
  await t.resolves(page.locator('#status', { hasText: `Logged in as ${username} (teacher)` }).waitFor(), 'the status names the role')
  const response = page.locator('.graphiql-response')
  await page.locator('.graphiql-execute-button').click()
  await response.getByText('Annie Easley').waitFor()
  const shown = await response.innerText()
  t.match(shown, /"fullName": "Mary Jackson"/)
  t.notMatch(shown, /Eve Otherroom/, 'a student of another classroom is not shown')
  t.same(session.problems, [], 'no script error and no policy violation')
  t.same(session.elsewhere, [], 'nothing was fetched from another origin')
})
