// CORS for browser apps of the origins CORS_ORIGINS lists (none by default), with @fastify/cors.
// An origin not listed (or a request with no Origin) gets no CORS header at all, and its preflight
// is a 404. No credentials mode: the API authenticates by bearer token only, never by cookie.
//
// Registered before every plugin that may refuse a request (overload, rate limits), so that their
// refusals carry the headers too and the browser app can read them.
import cors from '@fastify/cors'
import fp from 'fastify-plugin'

/** Request headers a browser app may send: ours, and those Apollo Client and urql send. */
const ALLOWED_HEADERS = [
  'Accept',
  'Authorization',
  'Content-Type',
  'X-Request-Id',
  'apollographql-client-name',
  'apollographql-client-version',
  'apollo-require-preflight',
  'x-apollo-operation-name'
]

/** Response headers the app may read: the rate limits' and the request id. */
const EXPOSED_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy', 'Retry-After', 'X-Request-Id']

/** Seconds a browser may keep a preflight's answer (Chromium keeps at most 2 hours). */
const PREFLIGHT_MAX_AGE = 7200

export default fp(async (app) => {
  const allowed = new Set(app.config.corsOrigins)
  if (allowed.size === 0) return
  await app.register(cors, {
    origin: (origin, callback) => { callback(null, origin !== undefined && allowed.has(origin) ? origin : false) },
    methods: ['GET', 'POST'],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    credentials: false,
    maxAge: PREFLIGHT_MAX_AGE
  })
}, { name: 'cors', dependencies: ['config'] })
