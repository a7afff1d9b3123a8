// A browser app on another origin calls the API as Apollo Client and urql do (POST and GET, with a
// bearer token and their Accept), reads the exposed headers, and reads a 429's code: in a real
// headless Chromium (Debian's `chromium`, driven by playwright-core, as test/graphiql.test.ts).
import { existsSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromium } from 'playwright-core'
import t from 'tap'
import { build } from './helper.js'

const CHROMIUM = '/usr/bin/chromium'
// Without the browser the test is skipped on a developer's machine, and fails in CI.
const missing = existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing: install Debian's chromium package (.ci/run does)`

interface Answer { status: number, type: string | null, limit: string | null, retryAfter: string | null, requestId: string | null, body: any }

t.test('a page of a listed origin calls the API and reads its refusals; another origin is blocked', {
  skip: process.env.CI !== 'true' && missing !== undefined ? missing : false
}, async (t) => {
  if (missing !== undefined) return t.fail(missing)
  // The browser app's own origin: another port, so another origin.
  const pages = createServer((_req, res) => { res.setHeader('content-type', 'text/html'); res.end('<!doctype html><title>app</title>') })
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => pages.close(resolve)))
  const pagePort = (pages.address() as AddressInfo).port

  const app = await build(t, { corsOrigins: [`http://127.0.0.1:${pagePort}`], rateLimitAddressPerMinute: 2 })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const api = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/`

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    // Root (CI containers) cannot use Chromium's sandbox; nothing but this test's page is opened.
    chromiumSandbox: false,
    args: ['--headless=new', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync']
  })
  t.teardown(() => browser.close())
  const page = await browser.newPage()
  page.setDefaultTimeout(60_000)

  const call = async (origin: string, how: 'apollo' | 'urql'): Promise<Answer | string> => {
    await page.goto(`${origin}/`)
    return await page.evaluate(async ({ api, how }) => {
      const query = '{ __typename }'
      try {
        const res = how === 'apollo'
          ? await fetch(api, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json,application/json;q=0.9', authorization: 'Bearer not-a-valid-token' },
            body: JSON.stringify({ query })
          })
          : await fetch(`${api}?query=${encodeURIComponent(query)}`, {
            headers: { accept: 'application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed' }
          })
        return {
          status: res.status,
          type: res.headers.get('content-type'),
          limit: res.headers.get('ratelimit-limit'),
          retryAfter: res.headers.get('retry-after'),
          requestId: res.headers.get('x-request-id'),
          body: await res.json()
        }
      } catch (err) {
        return `blocked: ${(err as Error).message}`
      }
    }, { api, how })
  }

  const posted = await call(`http://127.0.0.1:${pagePort}`, 'apollo') as Answer
  t.equal(posted.status, 200)
  t.match(posted.type, /^application\/graphql-response\+json/)
  t.same(posted.body, { data: { __typename: 'Query' } })
  t.equal(posted.limit, '2', 'RateLimit-Limit is readable')
  t.ok(posted.requestId, 'X-Request-Id is readable')

  const got = await call(`http://127.0.0.1:${pagePort}`, 'urql') as Answer
  t.equal(got.status, 200, 'a GET query, as urql sends it')
  t.same(got.body, { data: { __typename: 'Query' } })

  const refused = await call(`http://127.0.0.1:${pagePort}`, 'apollo') as Answer
  t.equal(refused.status, 429)
  t.match(refused.type, /^application\/graphql-response\+json/)
  t.equal(refused.body.errors[0].extensions.code, 'TOO_MANY_REQUESTS', 'the app reads the code')
  t.ok(Number(refused.retryAfter) > 0, 'Retry-After is readable')

  // localhost is another origin than 127.0.0.1, and not listed.
  t.match(await call(`http://localhost:${pagePort}`, 'apollo'), /^blocked: /)
})
