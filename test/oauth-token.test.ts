// Programs authenticate as clients: OAuth 2.0 client credentials (RFC 6749 §4.4) at
// POST /oauth/token, form-encoded, client_secret_basic or client_secret_post, §5.2's errors, no
// refresh token; secrets rotated with an overlap and revoked at once; failed authentications
// throttled; a client's requests counted under its own rate limit.
import t, { type Test } from 'tap'
import { revokeClient, rotateClientSecret } from '../src/admin/clients.js'
import { SCOPES, type Scope } from '../src/auth/scopes.js'
import { build, gql, seedSchool, testDatabase, unique } from './helper.js'
import { basic, clientToken, FORM, seedClient, tokenRequest } from './fixtures/oauth.js'

const GRANT = { grant_type: 'client_credentials' }
const SCHOOL = '{ school { name } }'

function noStore (t: Test, headers: Record<string, unknown>): void {
  t.equal(headers['cache-control'], 'no-store', 'Cache-Control: no-store')
  t.equal(headers.pragma, 'no-cache', 'Pragma: no-cache')
}

t.test('client_secret_basic gives a Bearer token with the scope and no refresh token, and it reads the school', async (t) => {
  const app = await build(t)
  const school = await seedSchool(unique('Token School'))
  const client = await seedClient(school.schoolId, ['roster-core.readonly', 'roster-demographics.readonly'])
  const res = await tokenRequest(app, GRANT, { authorization: basic(client.clientId, client.secret) })
  t.equal(res.statusCode, 200, JSON.stringify(res.body))
  noStore(t, res.headers)
  t.match(res.headers['content-type'], /^application\/json/)
  t.same(Object.keys(res.body).sort(), ['access_token', 'expires_in', 'scope', 'token_type'], 'no refresh_token')
  t.match(res.body, { token_type: 'Bearer', expires_in: 900, scope: 'roster-core.readonly roster-demographics.readonly' })

  const payload = JSON.parse(Buffer.from(String(res.body.access_token).split('.')[1]!, 'base64url').toString())
  t.match(payload, { sub: client.clientId, client_id: client.clientId, school: school.schoolId, scope: 'roster-core.readonly roster-demographics.readonly' })
  t.type(payload.av, 'number')

  const read = await gql(app, SCHOOL, { token: String(res.body.access_token) })
  t.notOk(read.body.errors, JSON.stringify(read.body.errors))
  t.match(read.body.data?.school?.name, /^Token School/)
})

t.test('client_secret_post works; Basic credentials are form-urlencoded before base64 (RFC 6749 §2.3.1)', async (t) => {
  const app = await build(t)
  const school = await seedSchool(unique('Post School'))
  const client = await seedClient(school.schoolId, ['roster-core.readonly'])
  const post = await tokenRequest(app, { ...GRANT, client_id: client.clientId, client_secret: client.secret })
  t.equal(post.statusCode, 200, JSON.stringify(post.body))
  t.equal(post.body.scope, 'roster-core.readonly')

  // Every character percent-encoded, as a client may send it: still the same credentials.
  const encode = (text: string): string => [...text].map((c) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0')).join('')
  const header = 'Basic ' + Buffer.from(`${encode(client.clientId)}:${encode(client.secret)}`).toString('base64')
  const encoded = await tokenRequest(app, GRANT, { authorization: header })
  t.equal(encoded.statusCode, 200, JSON.stringify(encoded.body))
})

t.test("a scope asked for must be the client's; absent, the token has all of them", async (t) => {
  const app = await build(t)
  const school = await seedSchool(unique('Scope School'))
  const client = await seedClient(school.schoolId, ['roster.readonly', 'roster-demographics.readonly'])
  const auth = { authorization: basic(client.clientId, client.secret) }
  t.equal((await tokenRequest(app, GRANT, auth)).body.scope, 'roster.readonly roster-demographics.readonly')
  t.equal((await tokenRequest(app, { ...GRANT, scope: 'roster-demographics.readonly  roster.readonly' }, auth)).body.scope, 'roster.readonly roster-demographics.readonly')
  const fewer = await tokenRequest(app, { ...GRANT, scope: 'roster.readonly' }, auth)
  t.equal(fewer.body.scope, 'roster.readonly')
  // The narrower token reads what its scope allows, and not the date of birth.
  const narrow = await gql(app, '{ students { dateOfBirth } }', { token: String(fewer.body.access_token) })
  t.equal(narrow.body.errors?.[0]?.extensions?.code, 'FORBIDDEN')

  for (const scope of ['roster.write', '', 'https://purl.imsglobal.org/spec/or/v1p2/scope/roster.write',
    'https://purl.imsglobal.org/spec/or/v1p1/scope/roster.readonly', 'https://purl.imsglobal.org/spec/or/v1p2/scope/']) {
    const res = await tokenRequest(app, { ...GRANT, scope }, auth)
    t.equal(res.statusCode, 400, `scope "${scope}"`)
    t.equal(res.body.error, 'invalid_scope', `scope "${scope}"`)
    t.type(res.body.error_description, 'string')
    noStore(t, res.headers)
  }
})

t.test("OneRoster's full scope names are taken as the short ones, and the answer names the scopes as they were asked", async (t) => {
  const app = await build(t)
  const school = await seedSchool(unique('Full Scope School'))
  const client = await seedClient(school.schoolId, ['roster.readonly', 'roster-demographics.readonly'])
  const auth = { authorization: basic(client.clientId, client.secret) }
  const prefix = 'https://purl.imsglobal.org/spec/or/v1p2/scope/'
  // As OneRoster clients send them (the edfi-oneroster and OneRoster SDKs' form).
  const full = await tokenRequest(app, { ...GRANT, scope: `${prefix}roster-core.readonly ${prefix}roster-demographics.readonly` }, auth)
  t.equal(full.statusCode, 200)
  t.equal(full.body.scope, `${prefix}roster-core.readonly ${prefix}roster-demographics.readonly`)
  const token = String(full.body.access_token)
  const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { scope: string }
  t.equal(payload.scope, 'roster-core.readonly roster-demographics.readonly', 'the token carries the short names')
  t.equal((await gql(app, '{ students { dateOfBirth } }', { token })).body.errors, undefined, 'the token reads what the scopes grant')
  t.equal((await gql(app, '{ students { email } }', { token })).body.errors?.[0]?.extensions?.code, 'FORBIDDEN', 'and nothing more')
  // Both forms in one request; a full name the client does not hold is refused as a short one is.
  t.equal((await tokenRequest(app, { ...GRANT, scope: `roster.readonly ${prefix}roster-demographics.readonly` }, auth)).body.scope,
    `${prefix}roster.readonly ${prefix}roster-demographics.readonly`)
  const notHeld = await tokenRequest(app, { ...GRANT, scope: `${prefix}roster.createput` }, auth)
  t.match(notHeld, { statusCode: 400, body: { error: 'invalid_scope' } })
})

// RFC 6749 §3.3: a client may ask for less than it holds, and its token carries only what it asked
// for. What each scope covers, as the README's field table has it: roster.readonly reads every field
// roster-core.readonly does; roster-demographics.readonly reads its own fields only.
// The read scopes here; the write scopes' pairs are test/mutations-access.test.ts's.
type ReadScope = Extract<Scope, `${string}.readonly`>
const READ_SCOPES = SCOPES.filter((scope): scope is ReadScope => scope.endsWith('.readonly'))
const COVERED_BY: Record<ReadScope, readonly ReadScope[]> = {
  'roster-core.readonly': ['roster-core.readonly', 'roster.readonly'],
  'roster.readonly': ['roster.readonly'],
  'roster-demographics.readonly': ['roster-demographics.readonly']
}
/** A read of a field each scope reads and no narrower scope does (a list of students needs the core scope too). */
const READS: Record<ReadScope, string> = {
  'roster-core.readonly': '{ students { fullName } }',
  'roster.readonly': '{ students { email } }',
  'roster-demographics.readonly': '{ students { dateOfBirth } }'
}
const subsets = <S extends Scope>(scopes: readonly S[]): S[][] =>
  scopes.reduce<S[][]>((sets, scope) => [...sets, ...sets.map((set) => [...set, scope])], [[]]).filter((set) => set.length > 0)

t.test('every pair of held and asked scopes: a narrower scope is granted by what the scopes read, not by their names, and the token carries only it', async (t) => {
  const app = await build(t)
  const school = await seedSchool(unique('Narrow School'), [['Ada Lovelace', 'Room 1']])
  let granted = 0
  for (const held of subsets(READ_SCOPES)) {
    const client = await seedClient(school.schoolId, held)
    const auth = { authorization: basic(client.clientId, client.secret) }
    for (const asked of subsets(READ_SCOPES)) {
      const res = await tokenRequest(app, { ...GRANT, scope: [...asked].reverse().join(' ') }, auth)
      const pair = `holding ${held.join(' ')}, asking ${asked.join(' ')}`
      const expected = asked.every((scope) => COVERED_BY[scope].some((covering) => held.includes(covering)))
      if (!expected) {
        t.match(res, { statusCode: 400, body: { error: 'invalid_scope' } }, `${pair}: refused`)
        continue
      }
      granted++
      t.equal(res.statusCode, 200, `${pair}: granted`)
      t.equal(res.body.scope, asked.join(' '), `${pair}: the token carries what was asked, in order`)
      const token = String(res.body.access_token)
      for (const scope of READ_SCOPES) {
        const read = await gql(app, READS[scope], { token })
        const may = [scope, 'roster-core.readonly' as const].every((needed) => COVERED_BY[needed].some((covering) => asked.includes(covering)))
        t.equal(read.body.errors?.[0]?.extensions?.code, may ? undefined : 'FORBIDDEN', `${pair}: ${may ? 'reads' : 'may not read'} what ${scope} reads`)
      }
    }
  }
  // 19 by the scopes' names alone; roster.readonly covering roster-core.readonly adds 6.
  t.equal(granted, 25, 'the pairs granted: each held set with every set it covers')
})

t.test("RFC 6749 §5.2's errors", async (t) => {
  const app = await build(t)
  const school = await seedSchool(unique('Error School'))
  const client = await seedClient(school.schoolId, SCOPES)
  const good = { authorization: basic(client.clientId, client.secret) }
  const wrong = client.secret.slice(0, -1) + (client.secret.endsWith('A') ? 'B' : 'A')
  const unknown = '01900000-0000-7000-8000-000000000000'

  const cases: Array<[string, Record<string, string | string[]>, Record<string, string>, number, string]> = [
    ['no grant_type', {}, good, 400, 'invalid_request'],
    ['grant_type password', { grant_type: 'password', username: 'a', password: 'b' }, good, 400, 'unsupported_grant_type'],
    ['grant_type repeated', { grant_type: ['client_credentials', 'client_credentials'] }, good, 400, 'invalid_request'],
    ['both Basic and client_secret_post', { ...GRANT, client_id: client.clientId, client_secret: client.secret }, good, 400, 'invalid_request'],
    ['a wrong secret (post)', { ...GRANT, client_id: client.clientId, client_secret: wrong }, {}, 400, 'invalid_client'],
    ['an unknown client (post)', { ...GRANT, client_id: unknown, client_secret: client.secret }, {}, 400, 'invalid_client'],
    ['a client id that is not one (post)', { ...GRANT, client_id: 'x', client_secret: 'y' }, {}, 400, 'invalid_client'],
    ['a wrong secret (Basic)', GRANT, { authorization: basic(client.clientId, wrong) }, 401, 'invalid_client'],
    ['an unknown client (Basic)', GRANT, { authorization: basic(unknown, client.secret) }, 401, 'invalid_client'],
    ['malformed Basic', GRANT, { authorization: 'Basic !!!' }, 401, 'invalid_client'],
    ['no client authentication', GRANT, {}, 401, 'invalid_client']
  ]
  for (const [name, params, headers, status, error] of cases) {
    const res = await tokenRequest(app, params, headers)
    t.equal(res.statusCode, status, name)
    t.equal(res.body.error, error, name)
    t.type(res.body.error_description, 'string', name)
    t.notOk('access_token' in res.body, name)
    noStore(t, res.headers)
    if (status === 401) t.match(res.headers['www-authenticate'], /^Basic /, `${name}: WWW-Authenticate`)
    else t.notOk(res.headers['www-authenticate'], `${name}: no WWW-Authenticate`)
  }
  t.same((await tokenRequest(app, { ...GRANT, client_id: client.clientId, client_secret: wrong })).body,
    (await tokenRequest(app, { ...GRANT, client_id: unknown, client_secret: wrong })).body, 'a wrong secret and an unknown client: the same answer')

  // Only form bodies.
  const json = await app.inject({ method: 'POST', url: '/oauth/token', headers: { ...good, 'content-type': 'application/json' }, payload: GRANT })
  t.equal(json.statusCode, 400)
  t.equal(json.json().error, 'invalid_request')
  noStore(t, json.headers)
  const text = await app.inject({ method: 'POST', url: '/oauth/token', headers: { ...good, 'content-type': 'text/plain' }, payload: 'grant_type=client_credentials' })
  t.equal(text.statusCode, 400)
  t.equal(text.json().error, 'invalid_request')
  noStore(t, text.headers)
})

t.test('the GraphQL endpoint still refuses form bodies', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': FORM }, payload: 'query=%7B__typename%7D' })
  t.equal(res.statusCode, 415)
  t.equal(res.json().errors[0].extensions.code, 'UNSUPPORTED_MEDIA_TYPE')
})

t.test('a rotated secret keeps working for the overlap; with no overlap it stops at once', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const school = await seedSchool(unique('Rotate School'))
  const client = await seedClient(school.schoolId, ['roster-core.readonly'])
  const status = async (secret: string): Promise<number> =>
    (await tokenRequest(app, GRANT, { authorization: basic(client.clientId, secret) })).statusCode

  const second = await rotateClientSecret(db, client.clientId, { overlapHours: 24 })
  t.not(second.secret, client.secret)
  t.ok(Math.abs(second.previousUntil.getTime() - Date.now() - 24 * 3_600_000) < 60_000)
  t.equal(await status(client.secret), 200, 'the first secret, within the overlap')
  t.equal(await status(second.secret), 200, 'the new secret')

  const third = await rotateClientSecret(db, client.clientId, { overlapHours: 0 })
  t.equal(await status(third.secret), 200, 'the newest secret')
  t.equal(await status(second.secret), 401, 'the one before: cut at once')
  t.equal(await status(client.secret), 401, 'and the first')
})

t.test('a revoked client gets no token, and its tokens are refused at once', async (t) => {
  const app = await build(t)
  const school = await seedSchool(unique('Revoke School'))
  const client = await seedClient(school.schoolId, ['roster-core.readonly'])
  const token = await clientToken(app, client)
  t.same((await gql(app, SCHOOL, { token })).body.errors, undefined, 'control: the token works')

  await revokeClient(await testDatabase(), client.clientId)
  const start = Date.now()
  let code: unknown
  while (Date.now() - start < 5000) {
    code = (await gql(app, SCHOOL, { token })).body.errors?.[0]?.extensions?.code
    if (code !== undefined) break
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  t.equal(code, 'UNAUTHENTICATED')
  t.ok(Date.now() - start < 1000, `refused within a second (${Date.now() - start} ms)`)
  const again = await tokenRequest(app, GRANT, { authorization: basic(client.clientId, client.secret) })
  t.equal(again.statusCode, 401)
  t.equal(again.body.error, 'invalid_client')
})

t.test('failed client authentications are throttled per client id, like logins', async (t) => {
  const app = await build(t, { loginFailuresPerAccount: 2, loginFailuresPerAddress: 0 })
  const school = await seedSchool(unique('Throttle School'))
  const client = await seedClient(school.schoolId, ['roster-core.readonly'])
  const other = await seedClient(school.schoolId, ['roster-core.readonly'])
  const attempt = (secret: string, who = client) => tokenRequest(app, { ...GRANT, client_id: who.clientId, client_secret: secret })
  const wrong = 'A'.repeat(43)
  t.equal((await attempt(client.secret)).statusCode, 200, 'a success counts nothing')
  t.equal((await attempt(wrong)).body.error, 'invalid_client')
  t.equal((await attempt(wrong)).body.error, 'invalid_client')
  const locked = await attempt(client.secret)
  t.equal(locked.statusCode, 429, 'locked: even the right secret is refused')
  t.equal(locked.body.error, 'invalid_client')
  t.match(locked.body.error_description, /^Too many failed client authentications: retry in \d+ s$/)
  t.ok(Number(locked.headers['retry-after']) >= 1)
  noStore(t, locked.headers)
  t.equal((await attempt(other.secret, other)).statusCode, 200, 'another client is not locked')
  // Users' logins count apart.
  const login = await gql(app, 'mutation { login(username: "nobody-here", password: "whatever-long") { accessToken } }')
  t.equal(login.body.errors?.[0]?.extensions?.code, 'INVALID_CREDENTIALS')
})

t.test("a client's requests count under its own rate limit", async (t) => {
  const app = await build(t, { rateLimitClientPerMinute: 2, rateLimitUserPerMinute: 100 })
  const school = await seedSchool(unique('Limited School'))
  const client = await seedClient(school.schoolId, ['roster-core.readonly'])
  const other = await seedClient(school.schoolId, ['roster-core.readonly'])
  const token = await clientToken(app, client)
  const ask = async (bearer: string) => await app.inject({ method: 'POST', url: '/', headers: { authorization: `Bearer ${bearer}` }, payload: { query: SCHOOL } })
  t.equal((await ask(token)).statusCode, 200)
  const second = await ask(token)
  t.equal(second.statusCode, 200)
  t.equal(second.headers['ratelimit-policy'], '2;w=60')
  const third = await ask(token)
  t.equal(third.statusCode, 429)
  t.match(third.json().errors[0], { extensions: { code: 'TOO_MANY_REQUESTS', limit: 'client' } })
  t.equal((await ask(await clientToken(app, other))).statusCode, 200, 'another client of the school has its own count')
})
