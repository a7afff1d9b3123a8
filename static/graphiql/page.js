// The sandbox's GraphiQL page: a login form above GraphiQL, whose requests carry the access token.
//
// Tokens live in this script's memory only, never in localStorage, sessionStorage or a cookie:
// nothing else that runs on this origin later can read them, and a reload or a closed tab ends the
// session (log in again). The access token is renewed with the refresh token shortly before it
// expires, and once more if the API answers UNAUTHENTICATED anyway.
/* global React, ReactDOM, GraphiQL */
'use strict'

;(function () {
  const ENDPOINT = '/'
  const LOGIN = 'mutation Login($username: String!, $password: String!) {\n' +
    '  login(username: $username, password: $password) { accessToken refreshToken }\n}'
  const REFRESH = 'mutation Refresh($refreshToken: String!) {\n' +
    '  refreshToken(refreshToken: $refreshToken) { accessToken }\n}'
  const LOGOUT = 'mutation Logout($refreshToken: String!) { logout(refreshToken: $refreshToken) }'
  const DEFAULT_QUERY = '# Log in above, then run this query (Ctrl-Enter or the \u25B6 button).\n' +
    '{\n  students(limit: 10) {\n    id\n    fullName\n    classroomName\n  }\n}\n'

  const form = document.getElementById('login')
  const username = document.getElementById('username')
  const password = document.getElementById('password')
  const loginButton = document.getElementById('login-button')
  const logoutButton = document.getElementById('logout-button')
  const status = document.getElementById('status')

  /** { username, accessToken, refreshToken } while logged in, else null. */
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

  function errorText (result) {
    return (result.errors || []).map((e) => e.message).join('; ') || 'no answer'
  }

  function hasCode (result, code) {
    return Array.isArray(result.errors) && result.errors.some((e) => e.extensions && e.extensions.code === code)
  }

  /** Seconds between the token's issue and expiry, read from the JWT (no clock comparison). */
  function lifetime (accessToken) {
    try {
      const part = accessToken.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')
      const claims = JSON.parse(atob(part))
      return claims.exp - claims.iat
    } catch {
      return undefined
    }
  }

  function scheduleRenewal () {
    clearTimeout(renewTimer)
    const seconds = lifetime(session.accessToken)
    if (!(seconds > 0)) return
    // A minute early, or a fifth of the lifetime when it is shorter than five minutes.
    const delay = Math.max(1000, seconds * 1000 - Math.min(60000, seconds * 200))
    renewTimer = setTimeout(() => { renew() }, delay)
  }

  function loggedIn (name) {
    form.hidden = true
    logoutButton.hidden = false
    const ends = new Date(Date.now() + (lifetime(session.accessToken) || 0) * 1000)
    show('Logged in as ' + name + '. The access token (valid until ' + ends.toLocaleTimeString() +
      ') is renewed before it expires; a reload logs out.')
  }

  function loggedOut (message, isError) {
    clearTimeout(renewTimer)
    session = null
    form.hidden = false
    logoutButton.hidden = true
    show(message, isError)
  }

  /** A new access token for the session's refresh token; true when it worked. One at a time. */
  function renew () {
    if (session === null) return Promise.resolve(false)
    if (renewing !== null) return renewing
    const current = session
    renewing = post({ query: REFRESH, variables: { refreshToken: current.refreshToken } })
      .then((result) => {
        if (session !== current) return false
        const token = result.data && result.data.refreshToken && result.data.refreshToken.accessToken
        if (!token) {
          loggedOut('Session ended (' + errorText(result) + '): log in again.', true)
          return false
        }
        current.accessToken = token
        scheduleRenewal()
        loggedIn(current.username)
        return true
      }, (err) => {
        // The server may be back soon: keep the session, try again at the next request.
        show('Could not renew the access token: ' + err.message, true)
        return false
      })
      .finally(() => { renewing = null })
    return renewing
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    loginButton.disabled = true
    show('Logging in\u2026')
    try {
      const name = username.value
      const result = await post({ query: LOGIN, variables: { username: name, password: password.value } })
      const tokens = result.data && result.data.login
      if (!tokens) {
        show('Login failed: ' + errorText(result), true)
        return
      }
      password.value = ''
      session = { username: name, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken }
      scheduleRenewal()
      loggedIn(name)
    } catch (err) {
      show('Login failed: ' + err.message, true)
    } finally {
      loginButton.disabled = false
    }
  })

  logoutButton.addEventListener('click', async () => {
    const current = session
    loggedOut('Logged out.')
    if (current === null) return
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
