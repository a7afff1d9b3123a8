// Login under attack: every refusal looks and costs the same, passwords are hashed with OWASP's
// argon2id parameters (and upgraded on login), long passwords are refused, and X-Forwarded-For
// counts only from configured proxies.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as argon2 from '@node-rs/argon2'
import t, { type Test } from 'tap'
import { createUser, disableUser } from '../src/admin/users.js'
import { passwordWork, PasswordPolicyError } from '../src/auth/passwords.js'
import { loadConfig } from '../src/config.js'
import { build, gql, login, LOGIN, PASSWORD, seedSchool, testDatabase, unique } from './helper.js'

const OWASP_PREFIX = '$argon2id$v=19$m=19456,t=2,p=1$'

/** argon2 verifications so far in this process: every login must cost exactly one. */
const verifications = (): number => passwordWork.verifications

t.test('unknown user, wrong password, user with no school and disabled user: one answer, one argon2 verification each', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const school = await seedSchool('Same Answer School')
  const schoolless = unique('schoolless')
  await createUser(db, { username: schoolless, password: PASSWORD })
  const disabled = unique('disabled')
  await createUser(db, { username: disabled, password: PASSWORD, schoolId: school.schoolId })
  await disableUser(db, disabled)

  const attempts: Record<string, [string, string]> = {
    'unknown user': [unique('nobody'), PASSWORD],
    'wrong password': [school.username, 'not the password'],
    'wrong password of a user with no school': [schoolless, 'not the password'],
    'right password of a disabled user': [disabled, PASSWORD]
  }
  const bodies: unknown[] = []
  for (const [name, [username, password]] of Object.entries(attempts)) {
    const before = verifications()
    const hashesBefore = passwordWork.hashes
    const res = await gql(app, LOGIN, { variables: { username, password } })
    t.equal(res.statusCode, 200, name)
    t.same(res.body, {
      data: null,
      errors: [{ message: 'Invalid credentials', locations: [{ line: 2, column: 3 }], path: ['login'], extensions: { code: 'INVALID_CREDENTIALS' } }]
    }, name)
    t.equal(verifications() - before, 1, `${name}: one argon2 verification`)
    t.equal(passwordWork.hashes - hashesBefore, 0, `${name}: no hashing (the decoy is made at start)`)
    bodies.push(res.body)
  }
  t.ok(bodies.every((body) => JSON.stringify(body) === JSON.stringify(bodies[0])), 'the answers cannot be told apart')

  const ok = await gql(app, LOGIN, { variables: { username: schoolless, password: PASSWORD } })
  t.type(ok.body.data?.login.accessToken, 'string', 'a user with no school and the right password logs in (and then gets FORBIDDEN on data)')
})

t.test('passwords are stored with argon2id at OWASP parameters', async (t) => {
  const db = await testDatabase()
  const username = unique('stored')
  const id = await createUser(db, { username, password: PASSWORD })
  const { passwordHash } = await db.prisma.user.findUniqueOrThrow({ where: { id }, select: { passwordHash: true } })
  t.ok(passwordHash.startsWith(OWASP_PREFIX), passwordHash.slice(0, 40))
})

t.test('a hash with weaker parameters is upgraded at the next login', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const school = await seedSchool('Rehash School')
  const weak = await argon2.hash(PASSWORD, { algorithm: 2, memoryCost: 4096, timeCost: 1, parallelism: 1 })
  await db.prisma.user.update({ where: { username: school.username }, data: { passwordHash: weak } })
  await login(app, school.username)
  const { passwordHash } = await db.prisma.user.findUniqueOrThrow({ where: { username: school.username }, select: { passwordHash: true } })
  t.ok(passwordHash.startsWith(OWASP_PREFIX), 'stored anew with OWASP parameters')
  t.not(passwordHash, weak)
  await login(app, school.username)
  const again = await db.prisma.user.findUniqueOrThrow({ where: { username: school.username }, select: { passwordHash: true } })
  t.equal(again.passwordHash, passwordHash, 'a current hash is left alone')
})

t.test('a password longer than 256 characters is refused: unhashed at login, clearly at creation', async (t) => {
  const app = await build(t)
  const school = await seedSchool('Long Password School')
  const before = verifications()
  for (const password of ['x'.repeat(257), 'x'.repeat(100_000)]) {
    const res = await gql(app, LOGIN, { variables: { username: school.username, password } })
    t.equal(res.statusCode, 200)
    t.equal(res.body.errors?.[0]?.message, 'Invalid credentials')
    t.same(res.body.errors?.[0]?.extensions, { code: 'INVALID_CREDENTIALS' })
  }
  t.equal(verifications(), before, 'no hashing spent on them')

  const db = await testDatabase()
  await t.rejects(createUser(db, { username: unique('long'), password: 'x'.repeat(257) }),
    new PasswordPolicyError('The password must have at most 256 characters'))
  t.ok(await createUser(db, { username: unique('max'), password: 'x'.repeat(256) }), '256 characters are fine')
  await t.rejects(createUser(db, { username: unique('short'), password: 'x'.repeat(7) }), { name: 'PasswordPolicyError' })
})

async function clientIp (t: Test, trustProxy: boolean | string[], headers: Record<string, string>): Promise<string> {
  const app = await build(t, { trustProxy })
  app.get('/test/ip', async (request) => ({ ip: request.ip }))
  const res = await app.inject({ method: 'GET', url: '/test/ip', headers, remoteAddress: '127.0.0.1' })
  return res.json().ip
}

t.test('X-Forwarded-For counts only when TRUST_PROXY names the proxy', async (t) => {
  const forwarded = { 'x-forwarded-for': '203.0.113.7' }
  t.equal(await clientIp(t, false, forwarded), '127.0.0.1', 'ignored by default')
  t.equal(await clientIp(t, ['10.0.0.0/8'], forwarded), '127.0.0.1', 'ignored from a peer that is not a configured proxy')
  t.equal(await clientIp(t, ['127.0.0.1'], forwarded), '203.0.113.7', 'honoured from a configured proxy')
  t.equal(await clientIp(t, ['127.0.0.0/8', '10.0.0.0/8'], { 'x-forwarded-for': '198.51.100.1, 10.1.2.3' }), '198.51.100.1', 'through a chain of configured proxies')
  t.equal(await clientIp(t, true, forwarded), '203.0.113.7', 'true trusts any peer')
})

t.test('TRUST_PROXY is read and checked', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sds-login-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const read = (value?: string) => loadConfig({ DATA_DIR: dir, ...(value === undefined ? {} : { TRUST_PROXY: value }) }).trustProxy
  t.equal(read(), false, 'off by default')
  t.equal(read('false'), false)
  t.equal(read('true'), true)
  t.same(read('10.0.0.0/8, 192.168.1.4,::1,fd00::/8,loopback'), ['10.0.0.0/8', '192.168.1.4', '::1', 'fd00::/8', 'loopback'])
  for (const bad of ['banana', '2', '10.0.0.0/33', '10.0.0.1/8/1', '300.1.1.1']) {
    t.throws(() => read(bad), { name: 'ConfigError', message: /TRUST_PROXY/ }, bad)
  }
})
