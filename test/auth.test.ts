// Login, refresh and logout of users, and the lifetimes of their access and refresh tokens.
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { assignUser, createUser } from '../src/admin/users.js'
import { build, gql, login, LOGIN, PASSWORD, seedSchool, testClock, testDatabase, unique } from './helper.js'

const REFRESH = 'mutation($t: String!) { refreshToken(refreshToken: $t) { accessToken } }'
const LOGOUT = 'mutation($t: String!) { logout(refreshToken: $t) }'
const STUDENTS = '{ students(limit: 5) { id fullName } }'

t.test('login returns an access token and a refresh token that open the API', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Login School', [['Ada Lovelace', 'Room 1']])
  const res = await gql(app, LOGIN, { variables: { username: school.username, password: PASSWORD } })
  t.equal(res.statusCode, 200)
  const { accessToken, refreshToken } = res.body.data!.login
  t.match(accessToken, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'the access token is a JWT')
  t.type(refreshToken, 'string')
  const students = await gql(app, STUDENTS, { token: accessToken })
  t.same(students.body.data!.students.map((s: { fullName: string }) => s.fullName), ['Ada Lovelace'])
})

t.test('the access token carries the user and school and expires after ACCESS_TOKEN_TTL', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Claims School')
  const { accessToken } = await login(app, school.username)
  const claims = app.jwt.decode<{ sub: string, school: string, iat: number, exp: number }>(accessToken)!
  t.equal(claims.school, school.schoolId)
  t.equal(claims.exp - claims.iat, 900, '15 minutes by default')
  t.match(claims.sub, /^[0-9a-f-]{36}$/)
})

t.test('usernames are compared trimmed and case-insensitively', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Case School')
  const res = await gql(app, LOGIN, { variables: { username: `  ${school.username.toUpperCase()} `, password: PASSWORD } })
  t.type(res.body.data?.login.accessToken, 'string')
})

t.test('a wrong password and an unknown user get the same Invalid credentials error', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Wrong Password School')
  const wrong = await gql(app, LOGIN, { variables: { username: school.username, password: 'not the password' } })
  const unknown = await gql(app, LOGIN, { variables: { username: unique('nobody'), password: PASSWORD } })
  for (const res of [wrong, unknown]) {
    t.equal(res.statusCode, 200)
    t.equal(res.body.data, null)
    t.equal(res.body.errors!.length, 1)
    t.equal(res.body.errors![0]!.message, 'Invalid credentials')
    t.same(res.body.errors![0]!.extensions, { code: 'INVALID_CREDENTIALS' })
    t.same(res.body.errors![0]!.path, ['login'])
  }
  t.same(wrong.body, unknown.body, 'the two answers cannot be told apart')
})

t.test('a refresh token gives a new access token and stays usable within its lifetime', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Refresh School', [['Grace Hopper']])
  const { refreshToken } = await login(app, school.username)
  for (let i = 0; i < 2; i++) {
    const res = await gql(app, REFRESH, { variables: { t: refreshToken } })
    t.equal(res.statusCode, 200)
    const accessToken = res.body.data!.refreshToken.accessToken
    const students = await gql(app, STUDENTS, { token: accessToken })
    t.equal(students.body.data!.students[0].fullName, 'Grace Hopper', `refresh #${i + 1} works`)
  }
})

t.test('refreshToken with an unknown or malformed token is refused', async (t) => {
  const app = await build(t)
  for (const token of ['', 'garbage', 'A'.repeat(43), 'x'.repeat(5000)]) {
    const res = await gql(app, REFRESH, { variables: { t: token } })
    t.equal(res.body.errors![0]!.message, 'Invalid or expired refresh token', JSON.stringify(token.slice(0, 10)))
    t.same(res.body.errors![0]!.extensions, { code: 'INVALID_REFRESH_TOKEN' })
    t.same(res.body.errors![0]!.path, ['refreshToken'])
  }
})

t.test('an access token is refused as a refresh token, and a refresh token as an access token', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Misuse School')
  const { accessToken, refreshToken } = await login(app, school.username)
  const refresh = await gql(app, REFRESH, { variables: { t: accessToken } })
  t.equal(refresh.body.errors![0]!.message, 'Invalid or expired refresh token')
  const query = await gql(app, STUDENTS, { token: refreshToken })
  t.equal(query.body.errors![0]!.extensions!.code, 'UNAUTHENTICATED')
  t.same(query.body.errors![0]!.path, ['students'])
})

t.test('an access token is refused from its expiry on, and a refresh brings access back at once', async (t) => {
  const clock = testClock()
  const app = await build(t, {}, { now: clock.now })
  const school = await seedSchool('Expiry School', [['Alan Turing']])
  const { accessToken, refreshToken } = await login(app, school.username)
  const { exp } = app.jwt.decode<{ exp: number }>(accessToken)!
  clock.advance(exp * 1000 - 1 - clock.now())
  t.equal((await gql(app, STUDENTS, { token: accessToken })).body.data!.students.length, 1, 'valid until the last millisecond before exp')
  clock.advance(1)
  const expired = await gql(app, STUDENTS, { token: accessToken })
  t.equal(expired.statusCode, 200)
  t.equal(expired.body.errors![0]!.extensions!.code, 'UNAUTHENTICATED', 'refused at exp')
  t.same(expired.body.errors![0]!.path, ['students'])
  // The clock stands still: the refreshed token cannot lapse before its use.
  const refreshed = await gql(app, REFRESH, { variables: { t: refreshToken } })
  const again = await gql(app, STUDENTS, { token: refreshed.body.data!.refreshToken.accessToken })
  t.equal(again.body.data!.students[0].fullName, 'Alan Turing')
})

t.test('a refresh token is refused from its expiry on, for refresh and logout alike', async (t) => {
  const clock = testClock()
  const app = await build(t, { refreshTokenTtl: 60 }, { now: clock.now })
  const school = await seedSchool('Refresh Expiry School')
  const { accessToken, refreshToken } = await login(app, school.username)
  clock.advance(60_000 - 1)
  t.type((await gql(app, REFRESH, { variables: { t: refreshToken } })).body.data?.refreshToken.accessToken, 'string', 'usable until the last millisecond')
  clock.advance(1)
  const res = await gql(app, REFRESH, { variables: { t: refreshToken } })
  t.equal(res.body.errors![0]!.message, 'Invalid or expired refresh token', 'refused at its expiry')
  // The access token (15 minutes) is still valid; the refresh token has nothing left to revoke.
  t.same((await gql(app, LOGOUT, { variables: { t: refreshToken }, token: accessToken })).body.data, { logout: false })
})

t.test('missing, malformed and forged access tokens are UNAUTHENTICATED', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Forgery School')
  const { accessToken } = await login(app, school.username)
  const [header, payload] = accessToken.split('.')
  const forgedPayload = Buffer.from(JSON.stringify({ sub: 'x', school: 'y', iat: 1, exp: 9999999999 })).toString('base64url')
  const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')
  const cases: Record<string, Record<string, string>> = {
    missing: {},
    'not bearer': { authorization: `Basic ${accessToken}` },
    garbage: { authorization: 'Bearer not.a.jwt' },
    'bad signature': { authorization: `Bearer ${header}.${forgedPayload}.${accessToken.split('.')[2]}` },
    'alg none': { authorization: `Bearer ${none}.${payload}.` },
    'other secret': { authorization: `Bearer ${(await build(t, { jwtSecret: 'another-secret-another-secret-another-secret' })).jwt.sign({ sub: 'u' })}` }
  }
  for (const [name, headers] of Object.entries(cases)) {
    const res = await app.inject({ method: 'POST', url: '/', headers, payload: { query: STUDENTS } })
    t.equal(res.statusCode, 200, name)
    t.equal(res.json().errors[0].extensions.code, 'UNAUTHENTICATED', name)
    t.same(res.json().errors[0].path, ['students'], name)
  }
})

t.test('a user with no school can log in but gets FORBIDDEN on every data field', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const username = unique('schoolless')
  await createUser(db, { username, password: PASSWORD })
  const { accessToken } = await login(app, username)
  for (const [field, query] of [['students', STUDENTS], ['teachers', '{ teachers { id } }'], ['school', '{ school { name } }']] as const) {
    const res = await gql(app, query, { token: accessToken })
    t.equal(res.statusCode, 200)
    t.equal(res.body.errors![0]!.extensions!.code, 'FORBIDDEN', field)
    t.same(res.body.errors![0]!.path, [field])
  }
})

t.test('refreshing reads the user\'s current school', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const username = unique('newcomer')
  await createUser(db, { username, password: PASSWORD })
  const { refreshToken } = await login(app, username)
  const schoolId = await createSchool(db, 'Assigned Later School')
  await assignUser(db, username, schoolId)
  const res = await gql(app, REFRESH, { variables: { t: refreshToken } })
  const school = await gql(app, '{ school { id name } }', { token: res.body.data!.refreshToken.accessToken })
  t.same(school.body.data!.school, { id: schoolId, name: 'Assigned Later School' })
})

t.test('moving a user to another school revokes their refresh tokens', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const school = await seedSchool('Old School')
  const { refreshToken } = await login(app, school.username)
  await assignUser(db, school.username, await createSchool(db, 'New School'))
  const res = await gql(app, REFRESH, { variables: { t: refreshToken } })
  t.equal(res.body.errors![0]!.message, 'Invalid or expired refresh token')
})

t.test('logout revokes the refresh token; it needs an access token and is idempotent', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Logout School')
  const { accessToken, refreshToken } = await login(app, school.username)
  const anonymous = await gql(app, LOGOUT, { variables: { t: refreshToken } })
  t.equal(anonymous.body.errors![0]!.extensions!.code, 'UNAUTHENTICATED')
  t.same(anonymous.body.errors![0]!.path, ['logout'])
  t.same((await gql(app, LOGOUT, { variables: { t: refreshToken }, token: accessToken })).body.data, { logout: true })
  t.same((await gql(app, LOGOUT, { variables: { t: refreshToken }, token: accessToken })).body.data, { logout: false }, 'second time: nothing to revoke')
  const refresh = await gql(app, REFRESH, { variables: { t: refreshToken } })
  t.equal(refresh.body.errors![0]!.message, 'Invalid or expired refresh token')
})

t.test("logout cannot revoke another user's refresh token", async (t) => {
  const app = await build(t)
  const alice = await seedSchool('Alice School')
  const bob = await seedSchool('Bob School')
  const aliceTokens = await login(app, alice.username)
  const bobTokens = await login(app, bob.username)
  const res = await gql(app, LOGOUT, { variables: { t: aliceTokens.refreshToken }, token: bobTokens.accessToken })
  t.same(res.body.data, { logout: false })
  t.type((await gql(app, REFRESH, { variables: { t: aliceTokens.refreshToken } })).body.data?.refreshToken.accessToken, 'string')
})
