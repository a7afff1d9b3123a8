// The sandbox's GraphiQL page: a login form above GraphiQL, whose requests carry the access token.
// A user (an administrator, a teacher) logs in with the login mutation; a client (a program) with
// its id and secret at POST /oauth/token (client credentials, client_secret_post).
//
// Tokens, and a client's secret, live in this script's memory only, never in localStorage,
// sessionStorage or a cookie: nothing else that runs on this origin later can read them, and a
// reload or a closed tab ends the session (log in again). The access token is renewed shortly
// before it expires (a user's with the refresh token, a client's with its id and secret: client
// credentials have no refresh token), and once more if the API answers UNAUTHENTICATED anyway.
/* global React, ReactDOM, GraphiQL */
'use strict'

;(function () {
  const ENDPOINT = '/'
  const TOKEN_ENDPOINT = '/oauth/token'
  const LOGIN = 'mutation Login($username: String!, $password: String!) {\n' +
    '  login(username: $username, password: $password) { accessToken refreshToken }\n}'
  const REFRESH = 'mutation Refresh($refreshToken: String!) {\n' +
    '  refreshToken(refreshToken: $refreshToken) { accessToken }\n}'
  const LOGOUT = 'mutation Logout($refreshToken: String!) { logout(refreshToken: $refreshToken) }'
  const DEFAULT_QUERY = '# Log in above, then run this query (Ctrl-Enter or the \u25B6 button).\n' +
    '{\n  students(limit: 10) {\n    id\n    fullName\n    classroomName\n  }\n}\n'

  const form = document.getElementById('login')
  const kind = document.getElementById('login-kind')
  const userFields = document.getElementById('user-fields')
  const clientFields = document.getElementById('client-fields')
  const username = document.getElementById('username')
  const password = document.getElementById('password')
  const clientId = document.getElementById('client-id')
  const clientSecret = document.getElementById('client-secret')
  const loginButton = document.getElementById('login-button')
  const logoutButton = document.getElementById('logout-button')
  const status = document.getElementById('status')

  /**
   * While logged in: { kind: 'user', username, accessToken, refreshToken } or
   * { kind: 'client', clientId, secret, accessToken }; else null.
   */
  let session = null
  let renewTimer
  let renewing = null

  function show (text, isError) {
    status.textContent = text
    status.classList.toggle('sds-error', Boolean(isError))
  }

  /** POST a GraphQL request as JSON; the answer, or a GraphQL-shaped error when it is not JSON. */
  async function post (body, accessToken, extraHeaders) {
    const headers = new Headers({ Accept: 'application/json', 'Content-Type': 'application/json' })
    if (accessToken) headers.set('Authorization', 'Bearer ' + accessToken)
    // Headers typed into GraphiQL's header editor win, an Authorization among them.
    for (const [name, value] of Object.entries(extraHeaders || {})) headers.set(name, String(value))
    const response = await fetch(ENDPOINT, { method: 'POST', headers, body: JSON.stringify(body), credentials: 'omit' })
    const text = await response.text()
    try {
      return JSON.parse(text)
    } catch {
      return { errors: [{ message: 'HTTP ' + response.status + ': ' + text.slice(0, 300) }] }
    }
  }

  /**
   * An access token for a client (RFC 6749 §4.4, the client's id and secret in the form body):
   * { accessToken } or { error }.
   */
  async function clientToken (id, secret) {
    const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: id, client_secret: secret })
    const response = await fetch(TOKEN_ENDPOINT, {
      method: 'POST',
      headers: { Accept: 'application/json', 'Content-Type': 'application/x-www-form-urlencoded' },
      body: body.toString(),
      credentials: 'omit'
    })
    const text = await response.text()
    let answer
    try {
      answer = JSON.parse(text)
    } catch {
      return { error: 'HTTP ' + response.status + ': ' + text.slice(0, 300) }
    }
    if (response.ok && typeof answer.access_token === 'string') return { accessToken: answer.access_token }
    const retry = response.headers.get('Retry-After')
    return {
      error: (answer.error_description || answer.error || 'HTTP ' + response.status) +
        (retry ? ' (try again in ' + retry + ' s)' : '')
    }
  }

  function errorText (result) {
    return (result.errors || []).map((e) => e.message).join('; ') || 'no answer'
  }

  function hasCode (result, code) {
    return Array.isArray(result.errors) && result.errors.some((e) => e.extensions && e.extensions.code === code)
  }

  /** The access token's claims (a JWT's payload; the API checks the signature, not the page). */
  function claimsOf (accessToken) {
    try {
      const part = accessToken.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')
      return JSON.parse(atob(part))
    } catch {
      return {}
    }
  }

  /** Seconds between the token's issue and expiry, read from the JWT (no clock comparison). */
  function lifetime (accessToken) {
    const claims = claimsOf(accessToken)
    return claims.exp - claims.iat
  }

  /** Who the session is, as its token says: the user and their role, or the client and its scopes. */
  function caller (current) {
    const claims = claimsOf(current.accessToken)
    if (current.kind === 'client') {
      return 'the client ' + current.clientId + (typeof claims.scope === 'string' ? ' (scopes: ' + claims.scope.split(' ').join(', ') + ')' : '')
    }
    // A user's token names a role other than the default: no role claim is a school administrator.
    return current.username + ' (' + (typeof claims.role === 'string' ? claims.role : 'admin') + ')'
  }

  function scheduleRenewal () {
    clearTimeout(renewTimer)
    const seconds = lifetime(session.accessToken)
    if (!(seconds > 0)) return
    // A minute early, or a fifth of the lifetime when it is shorter than five minutes.
    const delay = Math.max(1000, seconds * 1000 - Math.min(60000, seconds * 200))
    renewTimer = setTimeout(() => { renew() }, delay)
  }

  function loggedIn () {
    form.hidden = true
    logoutButton.hidden = false
    const ends = new Date(Date.now() + (lifetime(session.accessToken) || 0) * 1000)
    show('Logged in as ' + caller(session) + '. The access token (valid until ' + ends.toLocaleTimeString() +
      ') is renewed before it expires; a reload logs out.')
  }

  function loggedOut (message, isError) {
    clearTimeout(renewTimer)
    session = null
    form.hidden = false
    logoutButton.hidden = true
    show(message, isError)
  }

  /** A new access token: { accessToken } or { error }. */
  async function newAccessToken (current) {
    if (current.kind === 'client') return await clientToken(current.clientId, current.secret)
    const result = await post({ query: REFRESH, variables: { refreshToken: current.refreshToken } })
    const token = result.data && result.data.refreshToken && result.data.refreshToken.accessToken
    return token ? { accessToken: token } : { error: errorText(result) }
  }

  /** A new access token for the session; true when it worked. One at a time. */
  function renew () {
    if (session === null) return Promise.resolve(false)
    if (renewing !== null) return renewing
    const current = session
    renewing = newAccessToken(current)
      .then((result) => {
        if (session !== current) return false
        if (!result.accessToken) {
          loggedOut('Session ended (' + result.error + '): log in again.', true)
          return false
        }
        current.accessToken = result.accessToken
        scheduleRenewal()
        loggedIn()
        return true
      }, (err) => {
        // The server may be back soon: keep the session, try again at the next request.
        show('Could not renew the access token: ' + err.message, true)
        return false
      })
      .finally(() => { renewing = null })
    return renewing
  }

  /** A user's session from the login mutation: { session } or { error }. */
  async function logInUser () {
    const name = username.value
    const result = await post({ query: LOGIN, variables: { username: name, password: password.value } })
    const tokens = result.data && result.data.login
    if (!tokens) return { error: errorText(result) }
    password.value = ''
    return { session: { kind: 'user', username: name, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken } }
  }

  /** A client's session from the token endpoint: { session } or { error }. */
  async function logInClient () {
    const id = clientId.value.trim()
    const secret = clientSecret.value
    const result = await clientToken(id, secret)
    if (!result.accessToken) return { error: result.error }
    clientSecret.value = ''
    return { session: { kind: 'client', clientId: id, secret, accessToken: result.accessToken } }
  }

  /** Shows the fields of the kind of login chosen; the other kind's are disabled (not required). */
  function showKind () {
    const isClient = kind.value === 'client'
    userFields.hidden = userFields.disabled = isClient
    clientFields.hidden = clientFields.disabled = !isClient
  }
  kind.addEventListener('change', showKind)
  showKind()

  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    loginButton.disabled = true
    show('Logging in\u2026')
    try {
      const result = kind.value === 'client' ? await logInClient() : await logInUser()
      if (!result.session) {
        show('Login failed: ' + result.error, true)
        return
      }
      session = result.session
      scheduleRenewal()
      loggedIn()
    } catch (err) {
      show('Login failed: ' + err.message, true)
    } finally {
      loginButton.disabled = false
    }
  })

  logoutButton.addEventListener('click', async () => {
    const current = session
    loggedOut('Logged out.')
    // A client's token cannot be revoked on its own (client credentials): forgotten here, it expires.
    if (current === null || current.kind !== 'user') return
    // Revoke the refresh token too, so it is of no use even if it was copied.
    try {
      await post({ query: LOGOUT, variables: { refreshToken: current.refreshToken } }, current.accessToken)
    } catch {}
  })

  // GraphiQL's fetcher: JSON POSTs to the endpoint with the session's token, renewed and retried
  // once when the API says the token is no longer valid.
  async function fetcher (params, options) {
    const extra = options && options.headers
    const before = session
    let result = await post(params, before && before.accessToken, extra)
    if (before !== null && hasCode(result, 'UNAUTHENTICATED') && await renew()) {
      result = await post(params, session.accessToken, extra)
    }
    return result
  }

  // ?query=... opens GraphiQL with that query (and keeps the address in step, to share a query).
  const search = new URLSearchParams(window.location.search)
  const props = {
    fetcher,
    defaultQuery: DEFAULT_QUERY,
    shouldPersistHeaders: false,
    onEditQuery (query) {
      const next = new URLSearchParams(window.location.search)
      next.set('query', query)
      window.history.replaceState(null, '', '?' + next.toString())
    }
  }
  if (search.has('query')) props.query = search.get('query')
  if (search.has('variables')) props.variables = search.get('variables')

  ReactDOM.createRoot(document.getElementById('graphiql')).render(React.createElement(GraphiQL, props))
})()
