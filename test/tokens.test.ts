// Access tokens under attack: every forged, malformed or odd token is UNAUTHENTICATED (never a 5xx),
// keys rotate by kid, and production refuses short secrets. Tokens are forged here with node:crypto
// alone, so the tests do not lean on the library under test.
import { createHash, createHmac, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { build, gql, login, seedSchool, testConfig, testDatabase } from './helper.js'

const STUDENTS = '{ students(limit: 5) { id fullName } }'
const REFRESH = 'mutation($t: String!) { refreshToken(refreshToken: $t) { accessToken } }'
const UNAUTHENTICATED_MESSAGE = 'Authentication required: send a valid access token as "Authorization: Bearer <ACCESS_TOKEN>"'
const SECRET = testConfig().jwtSecret
const OLD_SECRET = 'the-previous-signing-key-of-this-test-0123456789'
const NEW_SECRET = 'the-current-signing-key-of-this-test-9876543210'

const b64 = (value: string | Buffer): string => Buffer.from(value).toString('base64url')
const json = (value: unknown): string => b64(JSON.stringify(value))
/** The documented key id: the first 8 bytes of the key's SHA-256, base64url. */
const kidOf = (secret: string): string => createHash('sha256').update(secret).digest().subarray(0, 8).toString('base64url')
const now = (): number => Math.floor(Date.now() / 1000)

/** A JWT from raw segments, signed with HMAC (`sha256` unless told) over `header.payload`. */
function forge (header: string, payload: string, { secret = SECRET, hash = 'sha256' } = {}): string {
  return `${header}.${payload}.${createHmac(hash, secret).update(`${header}.${payload}`).digest('base64url')}`
}

function ourHeader (secret = SECRET, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { alg: 'HS256', typ: 'at+jwt', kid: kidOf(secret), ...extra }
}

async function expectUnauthenticated (
  t: Test,
  app: Awaited<ReturnType<typeof build>>,
  name: string,
  authorization: string
): Promise<void> {
  const res = await app.inject({ method: 'POST', url: '/', headers: { authorization }, payload: { query: STUDENTS } })
  t.equal(res.statusCode, 200, `${name}: status 200`)
  const body = res.json()
  t.same(body.data, null, `${name}: no data`)
  t.same(body.errors, [{
    message: UNAUTHENTICATED_MESSAGE,
    locations: [{ line: 1, column: 3 }],
    path: ['students'],
    extensions: { code: 'UNAUTHENTICATED' }
  }], `${name}: UNAUTHENTICATED`)
}

t.test('a token forged with the right key and header is accepted (control for the cases below)', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Forged Control School', [['Ada Lovelace']])
  const { accessToken } = await login(app, school.username)
  const [header, payload] = accessToken.split('.') as [string, string]
  t.same(JSON.parse(Buffer.from(header, 'base64url').toString()), ourHeader(), 'the service writes this header')
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
  t.same(Object.keys(claims).sort(), ['av', 'exp', 'iat', 'school', 'sub'])
  t.equal(claims.av, 0, 'the access version of a user with no access change')
  const forged = forge(json(ourHeader()), json({ sub: claims.sub, school: school.schoolId, iat: now(), exp: now() + 60 }))
  const res = await gql(app, STUDENTS, { token: forged })
  t.same(res.body.data?.students.map((s: { fullName: string }) => s.fullName), ['Ada Lovelace'])
})

t.test('every malformed, forged or odd access token is UNAUTHENTICATED with a 200, never a 5xx', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Forgery Zoo School', [['Grace Hopper']])
  const { accessToken, refreshToken } = await login(app, school.username)
  const sub = JSON.parse(Buffer.from(accessToken.split('.')[1]!, 'base64url').toString()).sub as string
  const good = { sub, school: school.schoolId, iat: now(), exp: now() + 600 }
  const header = json(ourHeader())
  const signed = (payload: Record<string, unknown>): string => forge(header, json(payload))
  const [h, p, s] = accessToken.split('.') as [string, string, string]
  const without = (claim: string): Record<string, unknown> => Object.fromEntries(Object.entries(good).filter(([k]) => k !== claim))

  const cases: Record<string, string> = {
    // Malformed
    'one segment': 'Bearer abc',
    'two segments': 'Bearer abc.def',
    'four segments': `Bearer ${accessToken}.abc`,
    'empty segments': 'Bearer ..',
    'JSON garbage in the header': `Bearer ${forge(b64('{"alg":"HS256",'), json(good))}`,
    'JSON garbage in the payload': `Bearer ${forge(header, b64('{"sub":'))}`,
    'payload not an object': `Bearer ${forge(header, json(['sub', sub]))}`,
    'payload a string': `Bearer ${forge(header, json('hello'))}`,
    'header not base64url': `Bearer ${h}!.${p}.${s}`,
    'huge token': `Bearer ${forge(header, json({ ...good, pad: 'x'.repeat(100_000) }))}`,
    // Algorithms
    'alg none': `Bearer ${json(ourHeader(SECRET, { alg: 'none' }))}.${json(good)}.`,
    'alg none with a signature': `Bearer ${forge(json(ourHeader(SECRET, { alg: 'none' })), json(good))}`,
    'alg HS512 with the right key': `Bearer ${forge(json(ourHeader(SECRET, { alg: 'HS512' })), json(good), { hash: 'sha512' })}`,
    'alg HS384 with the right key': `Bearer ${forge(json(ourHeader(SECRET, { alg: 'HS384' })), json(good), { hash: 'sha384' })}`,
    'alg RS256 signed with the secret as an HMAC key': `Bearer ${forge(json(ourHeader(SECRET, { alg: 'RS256' })), json(good))}`,
    // Signatures
    'bad signature': `Bearer ${h}.${json({ ...good, school: randomUUID() })}.${s}`,
    'signature of another key': `Bearer ${forge(header, json(good), { secret: 'another-secret-another-secret-another-secret' })}`,
    'no signature': `Bearer ${h}.${p}.`,
    // Time
    expired: `Bearer ${signed({ ...good, iat: now() - 1000, exp: now() - 100 })}`,
    'not yet valid (nbf)': `Bearer ${signed({ ...good, nbf: now() + 3600 })}`,
    'issued in the future': `Bearer ${signed({ ...good, iat: now() + 3600, exp: now() + 4000 })}`,
    'lifetime longer than ACCESS_TOKEN_TTL': `Bearer ${signed({ ...good, exp: now() + 86_400 })}`,
    'exp a string': `Bearer ${signed({ ...good, exp: String(now() + 600) })}`,
    'iat a string': `Bearer ${signed({ ...good, iat: String(now()) })}`,
    // Claims
    'no sub': `Bearer ${signed(without('sub'))}`,
    'no iat': `Bearer ${signed(without('iat'))}`,
    'no exp': `Bearer ${signed(without('exp'))}`,
    'sub a number': `Bearer ${signed({ ...good, sub: 42 })}`,
    'access version negative': `Bearer ${signed({ ...good, av: -1 })}`,
    'access version a fraction': `Bearer ${signed({ ...good, av: 1.5 })}`,
    'access version a string': `Bearer ${signed({ ...good, av: '7' })}`,
    'sub an object': `Bearer ${signed({ ...good, sub: { id: sub } })}`,
    'sub not a UUID': `Bearer ${signed({ ...good, sub: 'admin' })}`,
    'school not a UUID': `Bearer ${signed({ ...good, school: 'any' })}`,
    'school a list': `Bearer ${signed({ ...good, school: [school.schoolId] })}`,
    // Headers
    'no kid': `Bearer ${forge(json({ alg: 'HS256', typ: 'at+jwt' }), json(good))}`,
    'unknown kid': `Bearer ${forge(json(ourHeader(SECRET, { kid: 'AAAAAAAAAAA' })), json(good))}`,
    'kid a number': `Bearer ${forge(json(ourHeader(SECRET, { kid: 7 })), json(good))}`,
    'kid a path': `Bearer ${forge(json(ourHeader(SECRET, { kid: '../../dev/null' })), json(good))}`,
    'typ JWT': `Bearer ${forge(json(ourHeader(SECRET, { typ: 'JWT' })), json(good))}`,
    'no typ': `Bearer ${forge(json({ alg: 'HS256', kid: kidOf(SECRET) }), json(good))}`,
    'jku header': `Bearer ${forge(json(ourHeader(SECRET, { jku: 'https://attacker.example/keys' })), json(good))}`,
    'crit header': `Bearer ${forge(json(ourHeader(SECRET, { crit: ['exp'] })), json(good))}`,
    'header an array': `Bearer ${forge(json(['HS256']), json(good))}`,
    // Scheme
    'Basic scheme': `Basic ${accessToken}`,
    'Token scheme': `Token ${accessToken}`,
    'Bearer with no token': 'Bearer',
    'Bearer with two tokens': `Bearer ${accessToken} ${accessToken}`,
    'the token with no scheme': accessToken,
    // The other kind of token
    'a refresh token as an access token': `Bearer ${refreshToken}`
  }
  for (const [name, authorization] of Object.entries(cases)) {
    await expectUnauthenticated(t, app, name, authorization)
  }
  // The same token, well-formed, still works: the refusals above are about the tokens alone.
  t.equal((await gql(app, STUDENTS, { token: signed(good) })).body.data?.students[0].fullName, 'Grace Hopper')
})

t.test('an access token is refused as a refresh token', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Kinds School')
  const { accessToken } = await login(app, school.username)
  const res = await gql(app, REFRESH, { variables: { t: accessToken } })
  t.equal(res.statusCode, 200)
  t.same(res.body.errors?.[0]?.extensions, { code: 'INVALID_REFRESH_TOKEN' })
})

t.test('keys rotate: the new key signs, the previous one verifies, a removed one does not', async (t) => {
  const db = await testDatabase()
  const app = async (jwtSecret: string, jwtPreviousSecrets: string[] = []) => {
    const instance = await buildApp(testConfig({ jwtSecret, jwtPreviousSecrets }), { database: db, logger: false })
    t.teardown(() => instance.close())
    return instance
  }
  const school = await seedSchool('Rotation School', [['Alan Turing']])
  const before = await app(OLD_SECRET)
  const oldToken = (await login(before, school.username)).accessToken
  t.equal(JSON.parse(Buffer.from(oldToken.split('.')[0]!, 'base64url').toString()).kid, kidOf(OLD_SECRET))

  const during = await app(NEW_SECRET, [OLD_SECRET])
  const newToken = (await login(during, school.username)).accessToken
  t.equal(JSON.parse(Buffer.from(newToken.split('.')[0]!, 'base64url').toString()).kid, kidOf(NEW_SECRET), 'new tokens carry the new kid')
  for (const [name, token] of [['old token', oldToken], ['new token', newToken]]) {
    t.equal((await gql(during, STUDENTS, { token })).body.data?.students[0].fullName, 'Alan Turing', `${name} accepted during the rotation`)
  }

  const after = await app(NEW_SECRET)
  await expectUnauthenticated(t, after, 'token of a removed key', `Bearer ${oldToken}`)
  t.equal((await gql(after, STUDENTS, { token: newToken })).body.data?.students[0].fullName, 'Alan Turing', 'new token still accepted')
  await expectUnauthenticated(t, before, 'token of a key the node does not know yet', `Bearer ${newToken}`)
})

t.test('secrets: production needs one, and every secret needs at least 32 bytes (UTF-8)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sds-tokens-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env = (extra: Record<string, string>) => ({ DATA_DIR: dir, SCHOOL_DATA_ENV: 'production', ...extra })
  t.throws(() => loadConfig(env({})), { name: 'ConfigError', message: /JWT_SECRET is required/ })
  t.throws(() => loadConfig(env({ JWT_SECRET: 'a'.repeat(31) })), { name: 'ConfigError', message: /JWT_SECRET must have at least 32 bytes/ })
  t.throws(() => loadConfig(env({ JWT_SECRET: 'a'.repeat(31), SCHOOL_DATA_ENV: 'sandbox' })), { message: /JWT_SECRET/ }, 'the sandbox refuses a short one too')
  t.equal(loadConfig(env({ JWT_SECRET: 'é'.repeat(16) })).jwtSecret, 'é'.repeat(16), '16 characters of 2 bytes are 32 bytes')
  t.equal(loadConfig(env({ JWT_SECRET: 'a'.repeat(32) })).jwtSecret.length, 32)
  t.throws(() => loadConfig(env({ JWT_SECRET: 'a'.repeat(32), JWT_PREVIOUS_SECRETS: `${'b'.repeat(32)},short` })),
    { name: 'ConfigError', message: /JWT_PREVIOUS_SECRETS: secret #2 must have at least 32 bytes/ })
  t.same(loadConfig(env({ JWT_SECRET: 'a'.repeat(32), JWT_PREVIOUS_SECRETS: ` ${'b'.repeat(32)} , ${'c'.repeat(40)} ` })).jwtPreviousSecrets,
    ['b'.repeat(32), 'c'.repeat(40)])
  t.same(loadConfig(env({ JWT_SECRET: 'a'.repeat(32) })).jwtPreviousSecrets, [])

  // A Config built in code is checked as well: the app does not start.
  const db = await testDatabase()
  await t.rejects(buildApp(testConfig({ env: 'production', jwtSecret: 'ü'.repeat(15) }), { database: db, logger: false }), /JWT_SECRET must have at least 32 bytes/)
  await t.rejects(buildApp(testConfig({ jwtPreviousSecrets: ['short'] }), { database: db, logger: false }), /at least 32 bytes/)
})
