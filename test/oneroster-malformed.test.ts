// Malformed requests under the OneRoster binding's prefix (src/oneroster/malformed.ts): a path or
// a query string that is not valid percent-encoding, a path parameter past the router's bound, a
// repeated parameter, a path that matches no endpoint: each answers the binding's imsx_StatusInfo
// (400 invaliddata, 404 unknownobject), valid against the service's OpenAPI description, never
// Fastify's own body; outside the prefix Fastify's body is kept.
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { createSchool } from '../src/admin/schools.js'
import { createUser } from '../src/admin/users.js'
import { build, login, PASSWORD, testDatabase, unique } from './helper.js'
import { validateAnswer, validateStatusInfo } from './oneroster/validate.js'

const BASE = '/ims/oneroster/rostering/v1p2'

async function refusal (t: Test, app: FastifyInstance, url: string, status: number, codeMinor: string, token?: string): Promise<void> {
  const res = await app.inject({ method: 'GET', url, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } })
  t.equal(res.statusCode, status, `${url}: ${status}`)
  t.match(res.headers['content-type'], /^application\/json/, `${url}: JSON`)
  const body = res.json()
  t.match(body, {
    imsx_codeMajor: 'failure',
    imsx_severity: 'error',
    imsx_description: String,
    imsx_CodeMinor: { imsx_codeMinorField: [{ imsx_codeMinorFieldName: 'TargetEndSystem', imsx_codeMinorFieldValue: codeMinor }] }
  }, `${url}: imsx_StatusInfo with ${codeMinor}`)
  t.notOk('code' in body || 'statusCode' in body, `${url}: not Fastify's body`)
  t.equal(res.headers['x-request-id'] !== undefined, true, `${url}: the request id as every answer`)
  t.same(validateStatusInfo(body), [], `${url}: the body validates as imsx_StatusInfoDType`)
}

t.test('malformed requests under the prefix answer imsx_StatusInfo, with or without a token', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const schoolId = await createSchool(db, unique('Malformed School'))
  const admin = unique('or-malformed')
  await createUser(db, { username: admin, password: PASSWORD, schoolId })
  const token = (await login(app, admin)).accessToken
  for (const bearer of [undefined, token]) {
    // The router refuses these before any route or hook of the binding runs.
    await refusal(t, app, `${BASE}/users/%E0%A4%A`, 400, 'invaliddata', bearer)
    await refusal(t, app, `${BASE}/%`, 400, 'invaliddata', bearer)
    await refusal(t, app, `${BASE}/users/${'x'.repeat(200)}`, 414, 'invaliddata', bearer)
    // Fastify's parser keeps these as they came; the binding refuses them.
    await refusal(t, app, `${BASE}/users?filter=%E0%A4%A`, 400, 'invaliddata', bearer)
    await refusal(t, app, `${BASE}/users?fields=sourcedId%ZZ`, 400, 'invaliddata', bearer)
    await refusal(t, app, `${BASE}/nothing/here`, 404, 'unknownobject', bearer)
    await refusal(t, app, `${BASE}/users/stu-1/nothing`, 404, 'unknownobject', bearer)
  }
  // With a token, what the routes read: a parameter given twice, a limit that is no number.
  await refusal(t, app, `${BASE}/users?limit=1&limit=2`, 400, 'invaliddata', token)
  await refusal(t, app, `${BASE}/users?limit=ten`, 400, 'invaliddata', token)

  // Every answer of an operation of the description validates against that operation.
  for (const path of [`${BASE}/users/%E0%A4%A`, `${BASE}/users?filter=%E0%A4%A`, `${BASE}/users?limit=1&limit=2`, `${BASE}/users/${'x'.repeat(200)}`]) {
    const res = await app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${token}` } })
    t.same(validateAnswer({ method: 'GET', path, status: res.statusCode, headers: res.headers, body: res.json() }), [], `${path}: valid against the description`)
  }

  // A well-encoded query still reads: %20 and + are spaces, a quote is %27.
  const res = await app.inject({ method: 'GET', url: `${BASE}/users?filter=givenName%3D%27Nobody+Here%27`, headers: { authorization: `Bearer ${token}` } })
  t.equal(res.statusCode, 200, 'a well-encoded filter is read')
  t.same(res.json(), { users: [] })
})

t.test('outside the prefix a malformed URL keeps Fastify\'s answer', async (t) => {
  const app = await build(t)
  for (const url of ['/%E0%A4%A', '/ims/oneroster/rostering/v1p2x/%']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 400, `${url}: 400`)
    t.same(res.json(), { error: 'Bad Request', code: 'FST_ERR_BAD_URL', message: `'${url}' is not a valid url component`, statusCode: 400 }, `${url}: Fastify's body`)
  }
})
