// The OAuth 2.0 token endpoint, POST /oauth/token: programs (clients) exchange their credentials
// for an access token (RFC 6749 §4.4, client credentials; no refresh token). Form bodies are parsed
// only in this plugin's encapsulated context, so the GraphQL endpoint still takes JSON alone.
// Every answer is JSON with `Cache-Control: no-store` and `Pragma: no-cache` (§5.1); refusals are
// §5.2's `{ error, error_description }`. Failed client authentications are throttled per client
// id and per address, as logins are. While the database is out of reach, a 503 with Retry-After.
import formbody from '@fastify/formbody'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { fullScopeName } from '../auth/scopes.js'
import { invalidClient, oauthError, readTokenRequest, scopeNotHeld, TOKEN_PATH, type OAuthError } from '../auth/token-request.js'
import { DATABASE_RETRY_AFTER, DATABASE_UNAVAILABLE_MESSAGE, databaseUnavailable } from '../db/unavailable.js'

function refuse (reply: FastifyReply, failure: OAuthError, { basic = false, status = 400 } = {}): FastifyReply {
  // §5.2: a client that tried HTTP Basic gets 401 and the scheme to use.
  if (failure.error === 'invalid_client' && basic) {
    reply.header('www-authenticate', 'Basic realm="school-data", charset="UTF-8"')
    status = status === 400 ? 401 : status
  }
  return reply.code(status).send(failure)
}

async function tokenEndpoint (app: FastifyInstance): Promise<void> {
  await app.register(formbody)

  app.addHook('onSend', (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    reply.header('cache-control', 'no-store')
    reply.header('pragma', 'no-cache')
    done(null, payload)
  })

  // Malformed bodies, other media types, bodies over the limit: an OAuth refusal, not Fastify's.
  // The database out of reach: retry in a moment; anything else: a generic server error.
  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    const status = error.statusCode ?? 500
    if (status >= 400 && status < 500) {
      return refuse(reply, oauthError('invalid_request', error.message), { status: status === 413 ? 413 : 400 })
    }
    if (databaseUnavailable(error)) {
      request.log.error({ err: error }, 'token request failed: the database is out of reach')
      reply.header('retry-after', DATABASE_RETRY_AFTER)
      return refuse(reply, oauthError('temporarily_unavailable', DATABASE_UNAVAILABLE_MESSAGE), { status: 503 })
    }
    request.log.error({ err: error }, 'token request failed')
    return reply.code(500).send({ error: 'server_error', error_description: 'Internal server error' })
  })

  app.post(TOKEN_PATH, async (request, reply) => {
    const mediaType = request.headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase()
    const read = readTokenRequest(request.headers.authorization, mediaType, request.body)
    if (!read.ok) return refuse(reply, read.failure, { basic: read.basic })
    const { clientId, secret, method, scopes, fullScopeNames } = read.request
    const basic = method === 'client_secret_basic'

    // Counted before the secret is checked, as a login is: concurrent guesses cannot pass the limit.
    const attempt = await app.limits.clientAuth.attempt(clientId, request.ip)
    if (!attempt.allowed) {
      const retryAfter = Math.ceil(attempt.retryAfterMs / 1000)
      app.limits.refused('client-auth')
      reply.header('retry-after', retryAfter)
      return refuse(reply, oauthError('invalid_client', `Too many failed client authentications: retry in ${retryAfter} s`), { status: 429 })
    }
    const result = await app.auth.clientToken(clientId, secret, scopes)
    if ('error' in result) {
      if (result.error === 'invalid_client') return refuse(reply, invalidClient(), { basic })
      // The credentials were right: only the scope was not.
      await attempt.succeeded()
      return refuse(reply, scopeNotHeld())
    }
    await attempt.succeeded()
    return reply.send({
      access_token: result.accessToken,
      token_type: 'Bearer',
      expires_in: app.config.accessTokenTtl,
      scope: result.scopes.map((scope) => fullScopeNames ? fullScopeName(scope) : scope).join(' ')
    })
  })
}

export default fp(async (app) => {
  await app.register(tokenEndpoint)
}, { name: 'oauth', dependencies: ['config', 'auth', 'rate-limit'] })
