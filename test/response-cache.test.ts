// The response cache: keyed by school (an answer is never served to another school), invalidated
// by writes (from this node, another node or outside the API), never keeping mutations or errors,
// and never skipping the token checks.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createSchool } from '../src/admin/schools.js'
import { assignUser } from '../src/admin/users.js'
import { createStudent } from '../src/records/students.js'
import { buildApp } from '../src/app.js'
import { openDatabase, type Database } from '../src/db/client.js'
import { build, login, seedSchool, testConfig, testDatabase } from './helper.js'

const STUDENTS = '{ students { id fullName } }'
const CACHED = { responseCacheTtl: 60 }

async function post (app: FastifyInstance, query: string, token: string) {
  const res = await app.inject({ method: 'POST', url: '/', headers: { authorization: `Bearer ${token}` }, payload: { query } })
  return { cache: res.headers['x-cache'], body: res.json() }
}

/**
 * Whether `check` comes true within `limit` ms: far under the answers' 60 s lifetime, so only the
 * notification can explain a new answer, and far over a notification's time on a busy machine.
 */
async function until (check: () => Promise<boolean>, limit = 20_000): Promise<boolean> {
  const start = Date.now()
  while (Date.now() - start < limit) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return false
}

t.test('an answer is reused within its school only', async (t) => {
  const app = await build(t, CACHED)
  const a = await seedSchool('Cache A', [['Same Name']])
  const b = await seedSchool('Cache B', [['Same Name']])
  const tokenA = (await login(app, a.username)).accessToken
  const tokenB = (await login(app, b.username)).accessToken

  const first = await post(app, STUDENTS, tokenA)
  t.equal(first.cache, 'miss')
  const again = await post(app, STUDENTS, tokenA)
  t.equal(again.cache, 'hit', 'the same query of the same school is served from the cache')
  t.same(again.body, first.body)

  const other = await post(app, STUDENTS, tokenB)
  t.equal(other.cache, 'miss', 'the same query of another school is not')
  t.same(other.body.data.students.map((s: { id: string }) => s.id), b.studentIds, "and answers that school's records")
  t.equal((await post(app, STUDENTS, tokenB)).cache, 'hit')
  t.same((await post(app, STUDENTS, tokenA)).body.data.students.map((s: { id: string }) => s.id), a.studentIds)
})

t.test('a hit sends the very bytes of the first answer (UTF-8 names included), as JSON', async (t) => {
  const app = await build(t, CACHED)
  const school = await seedSchool('Cache Bytes', [['Zoë Ñúñez-Łukasz 李']])
  const token = (await login(app, school.username)).accessToken
  const ask = async () => await app.inject({ method: 'POST', url: '/', headers: { authorization: `Bearer ${token}` }, payload: { query: STUDENTS } })
  const miss = await ask()
  const hit = await ask()
  t.equal(miss.headers['x-cache'], 'miss')
  t.equal(hit.headers['x-cache'], 'hit')
  t.equal(hit.headers['content-type'], 'application/json; charset=utf-8')
  t.same(hit.rawPayload, miss.rawPayload, 'byte for byte')
  t.equal(Number(hit.headers['content-length']), hit.rawPayload.length)
  t.equal(hit.json().data.students[0].fullName, 'Zoë Ñúñez-Łukasz 李')
})

t.test('a write to the school, from anywhere, drops its answers on every node', async (t) => {
  const db = await testDatabase()
  const one = await build(t, CACHED)
  let otherDb: Database = db
  if ('url' in db.migrationTarget) {
    otherDb = await openDatabase({ url: db.migrationTarget.url })
    t.teardown(() => otherDb.close())
  }
  const two = await buildApp(testConfig(CACHED), { database: otherDb, logger: false })
  t.teardown(() => two.close())
  const school = await seedSchool('Cache Writes', [['First']])
  const quiet = await seedSchool('Cache Quiet', [['Untouched']])
  const token = (await login(one, school.username)).accessToken
  const quietToken = (await login(one, quiet.username)).accessToken
  for (const app of [one, two]) {
    await post(app, STUDENTS, token)
    t.equal((await post(app, STUDENTS, token)).cache, 'hit', 'cached before the write')
    await post(app, STUDENTS, quietToken)
  }

  const added = await createStudent(db, { schoolId: school.schoolId, fullName: 'Second' })
  for (const [name, app] of [['this node', one], ['another node', two]] as const) {
    t.ok(await until(async () => (await post(app, STUDENTS, token)).body.data.students.some((s: { id: string }) => s.id === added)),
      `${name} answers with the new student`)
  }
  t.equal((await post(two, STUDENTS, quietToken)).cache, 'hit', "another school's answers stay")

  // A write outside the service's code (plain SQL) counts too.
  await db.forSchool(school.schoolId).student.updateMany({ where: { id: added }, data: { fullName: 'Renamed' } })
  t.ok(await until(async () => (await post(one, STUDENTS, token)).body.data.students.some((s: { fullName: string }) => s.fullName === 'Renamed')))
})

t.test('mutations, errors and refused tokens never come from the cache', async (t) => {
  const db = await testDatabase()
  const app = await build(t, CACHED)
  const school = await seedSchool('Cache Rules', [['Someone']])
  const { accessToken, refreshToken } = await login(app, school.username)
  const refresh = `mutation { refreshToken(refreshToken: "${refreshToken}") { accessToken } }`
  t.not((await post(app, refresh, accessToken)).cache, 'hit')
  t.not((await post(app, refresh, accessToken)).cache, 'hit', 'a mutation is never served from the cache')

  const bad = '{ students(limit: -1) { id } }'
  await post(app, bad, accessToken)
  t.equal((await post(app, bad, accessToken)).cache, 'miss', 'an answer with errors is not kept')

  await post(app, STUDENTS, accessToken)
  t.equal((await post(app, STUDENTS, accessToken)).cache, 'hit')
  // The user moves away: the cached answer of the old school is not served to the old token.
  const elsewhere = await createSchool(db, 'Elsewhere')
  await assignUser(db, school.username, elsewhere)
  t.ok(await until(async () => (await post(app, STUDENTS, accessToken)).body.errors?.[0]?.extensions?.code === 'UNAUTHENTICATED'),
    'a revoked token gets UNAUTHENTICATED, not the cached answer')
  t.equal((await post(app, STUDENTS, 'not-a-token')).body.errors?.[0]?.extensions?.code, 'UNAUTHENTICATED')
})
