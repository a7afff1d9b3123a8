// OneRoster 1.2's rostering REST binding, read-only, under /ims/oneroster/rostering/v1p2: the
// caller's school as an org, its students, teachers and students' agents as users, its academic
// sessions (terms and grading periods among them), its courses, its classes (classes.ts),
// enrollments (enrollments.ts) and demographics (demographics.ts) (docs/api/oneroster.md). The
// same access tokens, scopes, rate limits and access audit as the GraphQL endpoint, and the same
// read path: each route asks src/auth/school-access.ts for the caller's school client and reads
// through the record kinds (users.ts, orgs.ts, records.ts).
//
// Every hook of these routes lives in this plugin's encapsulated context, in the order they run:
// the rate limits and the check of the query string's encoding (onRequest, malformed.ts), the
// access audit's tally around the handler (preHandler), and every
// refusal in the binding's imsx_StatusInfo (the error and not-found handlers; onSend for a refusal
// another plugin made before the routes ran: the shutdown's, the overload's, the timeout's).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { LRUCache } from 'lru-cache'
import { accessOf } from '../auth/identity.js'
import { schoolScopeOf } from '../auth/school-access.js'
import { holds, type Scope } from '../auth/scopes.js'
import { DATABASE_RETRY_AFTER, DATABASE_UNAVAILABLE_MESSAGE, databaseUnavailable } from '../db/unavailable.js'
import type { ListCondition } from '../db/typed-reads.js'
import {
  ACADEMIC_SESSION_FIELDS, ACADEMIC_SESSIONS, COURSE_FIELDS, COURSES, AGENT_USERS, STUDENT_USERS, TEACHER_USERS, type Kind
} from './kinds.js'
import { checkQueryString } from './malformed.js'
import { registerClassRoutes } from './classes.js'
import { registerDemographicsRoutes } from './demographics.js'
import { registerEnrollmentRoutes } from './enrollments.js'
import { orgAnswer, orgsPage, schoolRow } from './orgs.js'
import { DESCRIPTION_PATH, ONEROSTER_PATH, oneRosterDescription, scopesOf } from './openapi.js'
import { collectionQuery, fieldsOf, linkHeader, type CollectionQuery } from './query.js'
import { codeMinorOfStatus, OneRosterError, statusInfo } from './status-info.js'
import { pageOfRecords, recordBySourcedId, type RecordCollection } from './records.js'
import { collectionDeletions, type Deletions } from './record-deletions.js'
import { pageOfUsers, userBySourcedId } from './users.js'
import type { Caller, Handler, Params } from './route.js'

const USERS: readonly Kind[] = [STUDENT_USERS, TEACHER_USERS, AGENT_USERS]

const SESSIONS: RecordCollection = { kind: ACADEMIC_SESSIONS, names: ACADEMIC_SESSION_FIELDS, noun: 'academic sessions' }
const COURSE_RECORDS: RecordCollection = { kind: COURSES, names: COURSE_FIELDS, noun: 'courses' }

/** The academic sessions of one type (1EdTech's spelling): /terms, /gradingPeriods. */
const ofType = (type: 'term' | 'gradingPeriod'): ListCondition[] => [{ kind: 'equals', field: 'type', value: type }]
const TERMS = ofType('term')
const GRADING_PERIODS = ofType('gradingPeriod')
// A delta's deletions (record-deletions.ts) of each collection: the tombstones of its kind (of its
// type: a term, a grading period), without the sourcedIds it answers live. A term's grading periods
// have none: a tombstone keeps no parent.
const SESSION_DELETIONS = collectionDeletions('ACADEMIC_SESSION', ACADEMIC_SESSIONS, [])
const TERM_DELETIONS = collectionDeletions('ACADEMIC_SESSION', ACADEMIC_SESSIONS, TERMS, (tombstone) => tombstone.fields.type === 'term')
const GRADING_PERIOD_DELETIONS = collectionDeletions('ACADEMIC_SESSION', ACADEMIC_SESSIONS, GRADING_PERIODS, (tombstone) => tombstone.fields.type === 'gradingPeriod')
const COURSE_DELETIONS = collectionDeletions('COURSE', COURSES, [])

export default fp(async (app) => {
  await app.register(async (routes) => { registerRoutes(app, routes) }, { prefix: ONEROSTER_PATH })
}, { name: 'oneroster', dependencies: ['config', 'database', 'auth', 'rate-limit', 'access-audit'] })

function registerRoutes (app: FastifyInstance, routes: FastifyInstance): void {
  const limitRequest = app.limits.limitRequest
  if (limitRequest !== undefined) {
    routes.addHook('onRequest', async function limitOneRosterRequest (request: FastifyRequest, reply: FastifyReply) {
      const refusal = await limitRequest(request, reply)
      if (refusal === undefined) return
      return await reply.code(429).send(statusInfo('server_busy',
        `Too many requests: the ${refusal.limit} limit of ${refusal.max} requests per minute is reached; retry in ${refusal.retryAfter} s`))
    })
  }
  // A query string that is not valid percent-encoding: 400 invaliddata, before any route reads it.
  routes.addHook('onRequest', checkQueryString)
  routes.addHook('preHandler', app.audit.scope)

  // A refusal made by another plugin's hook (Fastify's form, or GraphQL's) in the binding's form.
  routes.addHook('onSend', (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    if (reply.statusCode < 400 || typeof payload !== 'string') {
      done(null, payload)
      return
    }
    let body: { imsx_codeMajor?: unknown, message?: unknown, errors?: Array<{ message?: unknown }> } | undefined
    try {
      body = JSON.parse(payload) as typeof body
    } catch {}
    if (body?.imsx_codeMajor !== undefined) {
      done(null, payload)
      return
    }
    const message = body?.errors?.[0]?.message ?? body?.message
    reply.header('content-type', 'application/json; charset=utf-8')
    done(null, JSON.stringify(statusInfo(codeMinorOfStatus(reply.statusCode), typeof message === 'string' ? message : 'The request was refused')))
  })

  routes.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    if (error instanceof OneRosterError) {
      if (error.codeMinor === 'unauthorisedrequest') void reply.header('www-authenticate', 'Bearer')
      return reply.code(error.statusCode).send(error.body)
    }
    if (databaseUnavailable(error)) {
      request.log.warn({ err: error }, 'database unavailable')
      return reply.code(503).header('retry-after', String(DATABASE_RETRY_AFTER)).send(statusInfo('server_busy', DATABASE_UNAVAILABLE_MESSAGE))
    }
    const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500
    if (status >= 500) {
      request.log.error({ err: error }, 'request failed')
      return reply.code(500).send(statusInfo('internal_server_error', `Internal server error (request ${request.id})`))
    }
    return reply.code(status).send(statusInfo(codeMinorOfStatus(status), error.message))
  })
  routes.setNotFoundHandler((request, reply) => reply.code(404).send(statusInfo('unknownobject', `No OneRoster endpoint ${request.method} ${request.url.split('?', 1)[0]!}`)))

  // The description of what is served, as JSON (no token: a consumer reads it before it has one).
  routes.get(DESCRIPTION_PATH.slice(ONEROSTER_PATH.length), async () => oneRosterDescription)

  /** A GET route that needs one of the scopes 1EdTech's description gives its operation. */
  const get = (url: string, operationId: string, handler: Handler): void => {
    const scopes = scopesOf(operationId)
    routes.get(url, async (request, reply) => {
      // The access audit and the request log name a request by its operation.
      request.graphqlOperation = operationId
      return await handler(request, reply, callerOf(app, request, scopes))
    })
  }

  get('/orgs', 'getAllOrgs', async (request, reply, caller) => await orgs(request, reply, caller))
  get('/schools', 'getAllSchools', async (request, reply, caller) => await orgs(request, reply, caller))
  get('/orgs/:sourcedId', 'getOrg', async (request, _reply, caller) => await org(request, caller, 'org'))
  get('/schools/:sourcedId', 'getSchool', async (request, _reply, caller) => await org(request, caller, 'school'))
  get('/users', 'getAllUsers', async (request, reply, caller) => await users(request, reply, caller, USERS))
  get('/students', 'getAllStudents', async (request, reply, caller) => await users(request, reply, caller, [STUDENT_USERS]))
  get('/teachers', 'getAllTeachers', async (request, reply, caller) => await users(request, reply, caller, [TEACHER_USERS]))
  get('/users/:sourcedId', 'getUser', async (request, _reply, caller) => await user(request, caller, USERS, 'user'))
  get('/students/:sourcedId', 'getStudent', async (request, _reply, caller) => await user(request, caller, [STUDENT_USERS], 'student'))
  get('/teachers/:sourcedId', 'getTeacher', async (request, _reply, caller) => await user(request, caller, [TEACHER_USERS], 'teacher'))
  get('/schools/:schoolSourcedId/students', 'getStudentsForSchool', async (request, reply, caller) => {
    requireSchool(request, caller)
    return await users(request, reply, caller, [STUDENT_USERS])
  })
  get('/schools/:schoolSourcedId/teachers', 'getTeachersForSchool', async (request, reply, caller) => {
    requireSchool(request, caller)
    return await users(request, reply, caller, [TEACHER_USERS])
  })

  get('/academicSessions', 'getAllAcademicSessions', async (request, reply, caller) => await records(request, reply, caller, SESSIONS, 'academicSessions', [], undefined, SESSION_DELETIONS))
  get('/academicSessions/:sourcedId', 'getAcademicSession', async (request, _reply, caller) => await record(request, caller, SESSIONS, 'academicSession', 'academic session'))
  get('/terms', 'getAllTerms', async (request, reply, caller) => await records(request, reply, caller, SESSIONS, 'academicSessions', TERMS, undefined, TERM_DELETIONS))
  get('/terms/:sourcedId', 'getTerm', async (request, _reply, caller) => await record(request, caller, SESSIONS, 'academicSession', 'term', TERMS))
  get('/gradingPeriods', 'getAllGradingPeriods', async (request, reply, caller) => await records(request, reply, caller, SESSIONS, 'academicSessions', GRADING_PERIODS, undefined, GRADING_PERIOD_DELETIONS))
  get('/gradingPeriods/:sourcedId', 'getGradingPeriod', async (request, _reply, caller) =>
    await record(request, caller, SESSIONS, 'academicSession', 'grading period', GRADING_PERIODS))
  get('/courses', 'getAllCourses', async (request, reply, caller) => await records(request, reply, caller, COURSE_RECORDS, 'courses', [], undefined, COURSE_DELETIONS))
  get('/courses/:sourcedId', 'getCourse', async (request, _reply, caller) => await record(request, caller, COURSE_RECORDS, 'course', 'course'))
  get('/schools/:schoolSourcedId/courses', 'getCoursesForSchool', async (request, reply, caller) => {
    requireSchool(request, caller)
    return await records(request, reply, caller, COURSE_RECORDS, 'courses', [], undefined, COURSE_DELETIONS)
  })
  get('/schools/:schoolSourcedId/terms', 'getTermsForSchool', async (request, reply, caller) => {
    requireSchool(request, caller)
    return await records(request, reply, caller, SESSIONS, 'academicSessions', TERMS, undefined, TERM_DELETIONS)
  })
  get('/terms/:termSourcedId/gradingPeriods', 'getGradingPeriodsForTerm', async (request, reply, caller) => {
    const query = collectionQuery(request.query as Record<string, unknown>)
    const { termSourcedId } = request.params as Params
    const term = await recordBySourcedId(caller.db, SESSIONS, termSourcedId!, ['sourcedId'], caller.context, TERMS)
    if (term === null) throw unknownObject('term', termSourcedId!)
    return await records(request, reply, caller, SESSIONS, 'academicSessions', [...GRADING_PERIODS, { kind: 'equals', field: 'parentId', value: term.id }], query)
  })
  registerClassRoutes(get, { requireSchool, unknownObject, records, record })
  registerEnrollmentRoutes(get, { requireSchool, unknownObject, page })
  registerDemographicsRoutes(get, { unknownObject, page })
}

/** Origins as a URL writes them, by the scheme and host a request named: a few in practice, bounded as the host is the client's to say. */
const ORIGINS = new LRUCache<string, string>({ max: 100 })

/** The scheme and host the request came to (behind a proxy TRUST_PROXY names, what it forwarded), as a URL writes them. */
function originOf (request: FastifyRequest): string {
  const given = `${request.protocol}://${request.host}`
  let origin = ORIGINS.get(given)
  if (origin === undefined) {
    origin = new URL(given).origin
    ORIGINS.set(given, origin)
  }
  return origin
}

/** The caller's school client; 401 without a valid token, 403 without a school or one of `scopes`. */
function callerOf (app: FastifyInstance, request: FastifyRequest, scopes: readonly Scope[]): Caller {
  const scope = schoolScopeOf(app.db, request.identity)
  if (scope === 'unauthenticated') {
    throw new OneRosterError('unauthorisedrequest', 'Authentication required: send a valid access token as "Authorization: Bearer <ACCESS_TOKEN>"')
  }
  if (scope === 'no-school') throw new OneRosterError('forbidden', 'Your account is not assigned to a school')
  const access = accessOf(request.identity)!
  if (!scopes.some((scope) => holds(access, scope))) {
    throw new OneRosterError('forbidden', `This endpoint needs the scope ${scopes.join(' or ')}`)
  }
  const origin = originOf(request)
  return {
    db: scope.db,
    schoolId: scope.schoolId,
    context: {
      schoolId: scope.schoolId,
      school: { href: `${origin}${ONEROSTER_PATH}/orgs/${encodeURIComponent(scope.schoolId)}`, sourcedId: scope.schoolId, type: 'org' },
      base: `${origin}${ONEROSTER_PATH}`
    }
  }
}

/** A collection's answer: the paging headers, and the records in the binding's envelope. */
function page (request: FastifyRequest, reply: FastifyReply, envelope: string, records: unknown[], total: number, query: CollectionQuery): Record<string, unknown> {
  void reply.header('x-total-count', String(total))
  void reply.header('link', linkHeader(new URL(request.url, originOf(request)), query, total))
  return { [envelope]: records }
}

async function orgs (request: FastifyRequest, reply: FastifyReply, { db }: Caller): Promise<Record<string, unknown>> {
  const query = collectionQuery(request.query as Record<string, unknown>)
  const { orgs, total } = orgsPage(await schoolRow(db), query)
  return page(request, reply, 'orgs', orgs, total, query)
}

const unknownObject = (what: string, sourcedId: string): OneRosterError =>
  new OneRosterError('unknownobject', `Unknown Object: no ${what} with sourcedId ${sourcedId}`)

/** The caller's school by its sourcedId (its id); any other is unknown. */
function requireSchool (request: FastifyRequest, { schoolId }: Caller): void {
  const { schoolSourcedId } = request.params as Params
  if (schoolSourcedId !== schoolId) throw unknownObject('school', schoolSourcedId!)
}

async function org (request: FastifyRequest, { db, schoolId }: Caller, what: string): Promise<Record<string, unknown>> {
  const { sourcedId } = request.params as Params
  const fields = fieldsOf(request.query as Record<string, unknown>)
  if (sourcedId !== schoolId) throw unknownObject(what, sourcedId!)
  return { org: orgAnswer(await schoolRow(db), fields) }
}

async function users (request: FastifyRequest, reply: FastifyReply, { db, context }: Caller, kinds: readonly Kind[]): Promise<Record<string, unknown>> {
  const query = collectionQuery(request.query as Record<string, unknown>)
  const { users, total } = await pageOfUsers(db, kinds, query, context)
  return page(request, reply, 'users', users, total, query)
}

async function user (request: FastifyRequest, { db, context }: Caller, kinds: readonly Kind[], what: string): Promise<Record<string, unknown>> {
  const { sourcedId } = request.params as Params
  const found = await userBySourcedId(db, kinds, sourcedId!, fieldsOf(request.query as Record<string, unknown>), context)
  if (found === null) throw unknownObject(what, sourcedId!)
  return { user: found }
}

/** A page of a one-table collection: the route's conditions (a type, a parent) and the request's. */
async function records (
  request: FastifyRequest, reply: FastifyReply, { db, context }: Caller, collection: RecordCollection, envelope: string,
  route: readonly ListCondition[] = [], query = collectionQuery(request.query as Record<string, unknown>), deletions?: Deletions
): Promise<Record<string, unknown>> {
  const { records, total } = await pageOfRecords(db, collection, query, context, route, deletions)
  return page(request, reply, envelope, records, total, query)
}

/** One record of a one-table collection by sourcedId, when it meets the route's conditions (a term is a session of type term). */
async function record (
  request: FastifyRequest, { db, context }: Caller, collection: RecordCollection, envelope: string, what: string, route: readonly ListCondition[] = []
): Promise<Record<string, unknown>> {
  const { sourcedId } = request.params as Params
  const found = await recordBySourcedId(db, collection, sourcedId!, fieldsOf(request.query as Record<string, unknown>), context, route)
  if (found === null) throw unknownObject(what, sourcedId!)
  return { [envelope]: found.record }
}
