// A request to the OAuth 2.0 token endpoint (RFC 6749 §4.4, client credentials), read and checked
// before any credential is: the parameters (form-encoded, each at most once), the client's
// authentication (client_secret_basic or client_secret_post, not both), the grant type and the
// scopes asked for. The answers' shapes and the §5.2 error codes are here too.
import { normalizeScopes, parseScope, type Scope } from './scopes.js'

export const TOKEN_PATH = '/oauth/token'
export const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded'

/**
 * RFC 6749 §5.2's error codes (this endpoint never answers invalid_grant or unauthorized_client),
 * and temporarily_unavailable, which §4.1.2.1 gives the authorization endpoint for a server that
 * cannot answer for now: here with a 503 and Retry-After, while the database is out of reach.
 */
export type OAuthErrorCode = 'invalid_request' | 'invalid_client' | 'invalid_scope' | 'unsupported_grant_type' | 'temporarily_unavailable'

export interface OAuthError {
  error: OAuthErrorCode
  error_description: string
}

export interface TokenRequest {
  clientId: string
  secret: string
  /** How the client authenticated: HTTP Basic, or client_id and client_secret in the body. */
  method: 'client_secret_basic' | 'client_secret_post'
  /** The scopes asked for; undefined: all of the client's. */
  scopes: Scope[] | undefined
  /** Whether the scopes were asked for in OneRoster's full form: the answer names them so too. */
  fullScopeNames: boolean
}

export type ReadTokenRequest =
  | { ok: true, request: TokenRequest }
  /** `basic`: the client tried HTTP Basic (an invalid_client answer is then a 401 with WWW-Authenticate). */
  | { ok: false, failure: OAuthError, basic: boolean }

export const oauthError = (error: OAuthErrorCode, description: string): OAuthError => ({ error, error_description: description })

const INVALID_CLIENT = 'Client authentication failed'

/**
 * HTTP Basic credentials as RFC 6749 §2.3.1 has them: the id and the secret are each
 * form-urlencoded before being joined by a colon and base64-encoded. Null when malformed.
 */
function basicCredentials (authorization: string): { clientId: string, secret: string } | null {
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(authorization)
  if (match === null) return null
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) return null
  try {
    const formDecode = (part: string): string => decodeURIComponent(part.replace(/\+/g, ' '))
    return { clientId: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) }
  } catch {
    return null
  }
}

/**
 * The scope parameter: known scope names separated by spaces, at least one, each in its short form
 * or OneRoster's full form (scopes.ts ONEROSTER_SCOPE_PREFIX); null when malformed.
 */
function requestedScopes (value: string | undefined): { scopes: Scope[] | undefined, fullScopeNames: boolean } | null {
  if (value === undefined) return { scopes: undefined, fullScopeNames: false }
  const names = value.split(' ').filter((name) => name !== '')
  const scopes = names.map(parseScope)
  if (names.length === 0 || !scopes.every((scope) => scope !== undefined)) return null
  return { scopes: normalizeScopes(scopes), fullScopeNames: names.some((name) => name !== parseScope(name)) }
}

/**
 * Reads a token request. `mediaType` is the body's (lower case, no parameters); `body` what the
 * form parser made of it.
 */
export function readTokenRequest (authorization: string | undefined, mediaType: string | undefined, body: unknown): ReadTokenRequest {
  const basicHeader = authorization !== undefined && /^Basic(\s|$)/i.test(authorization)
  const refuse = (error: OAuthErrorCode, description: string): ReadTokenRequest =>
    ({ ok: false, failure: oauthError(error, description), basic: basicHeader })
  if (mediaType !== FORM_MEDIA_TYPE || typeof body !== 'object' || body === null) {
    return refuse('invalid_request', `Send the parameters as ${FORM_MEDIA_TYPE} in the body of a POST`)
  }
  const params: Record<string, string> = {}
  for (const [name, value] of Object.entries(body)) {
    // RFC 6749 §3.2: no parameter more than once.
    if (typeof value !== 'string') return refuse('invalid_request', `Parameter "${name}" is repeated`)
    params[name] = value
  }
  if (params.grant_type === undefined) return refuse('invalid_request', 'Missing parameter "grant_type": send grant_type=client_credentials')
  if (params.grant_type !== 'client_credentials') {
    return refuse('unsupported_grant_type', 'Only grant_type=client_credentials is supported here; users log in with the GraphQL mutation "login"')
  }

  let credentials: { clientId: string, secret: string, method: TokenRequest['method'] }
  if (authorization !== undefined && authorization !== '') {
    if (params.client_secret !== undefined || (params.client_id !== undefined && !basicHeader)) {
      return refuse('invalid_request', 'Use one client authentication: HTTP Basic or client_id and client_secret in the body, not both')
    }
    const basic = basicHeader ? basicCredentials(authorization) : null
    if (basic === null) return { ok: false, failure: oauthError('invalid_client', INVALID_CLIENT), basic: true }
    if (params.client_id !== undefined && params.client_id !== basic.clientId) {
      return refuse('invalid_request', 'client_id in the body differs from the one of HTTP Basic')
    }
    credentials = { ...basic, method: 'client_secret_basic' }
  } else if (params.client_id !== undefined && params.client_secret !== undefined) {
    credentials = { clientId: params.client_id, secret: params.client_secret, method: 'client_secret_post' }
  } else {
    // No client authentication at all: answered as an HTTP Basic challenge (RFC 6749 §5.2).
    return { ok: false, failure: oauthError('invalid_client', 'Client authentication required: HTTP Basic, or client_id and client_secret in the body'), basic: true }
  }

  const scopes = requestedScopes(params.scope)
  if (scopes === null) {
    return refuse('invalid_scope', 'scope must be scope names separated by spaces, e.g. "roster-core.readonly roster-demographics.readonly" ' +
      'or "https://purl.imsglobal.org/spec/or/v1p2/scope/roster-core.readonly"')
  }
  return { ok: true, request: { ...credentials, ...scopes } }
}

/** The answer to a client whose credentials failed (unknown, revoked, wrong secret: all the same). */
export const invalidClient = (): OAuthError => oauthError('invalid_client', INVALID_CLIENT)
export const scopeNotHeld = (): OAuthError => oauthError('invalid_scope', 'The client does not hold every scope asked for')
