// GraphiQL at /graphiql, for the sandbox only (buildApp registers it outside production). Every
// script and style comes from this origin: GraphiQL's and React's prebuilt bundles out of their npm
// packages, and the page's own files in static/graphiql. Machines that reach no CDN can use it, and
// the Content-Security-Policy allows nothing else.
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply } from 'fastify'

const require = createRequire(import.meta.url)
// Through package.json: these packages' `exports` do not list their bundles.
const packageDir = (name: string): string => dirname(require.resolve(`${name}/package.json`))
// Two levels up from src/plugins and from dist/plugins alike.
const pageDir = fileURLToPath(new URL('../../static/graphiql/', import.meta.url))

const JS = 'text/javascript; charset=utf-8'
const CSS = 'text/css; charset=utf-8'

/** The files /graphiql/assets/ serves: nothing else can be asked for by name. */
function assetFiles (): Record<string, { path: string, type: string }> {
  return {
    'react.production.min.js': { path: join(packageDir('react'), 'umd', 'react.production.min.js'), type: JS },
    'react-dom.production.min.js': { path: join(packageDir('react-dom'), 'umd', 'react-dom.production.min.js'), type: JS },
    'graphiql.min.js': { path: join(packageDir('graphiql'), 'graphiql.min.js'), type: JS },
    'graphiql.min.css': { path: join(packageDir('graphiql'), 'graphiql.min.css'), type: CSS },
    'page.js': { path: join(pageDir, 'page.js'), type: JS },
    'page.css': { path: join(pageDir, 'page.css'), type: CSS }
  }
}

/**
 * No inline script or style, no eval, no other origin. GraphiQL's bundled fonts are data: URLs;
 * connect-src 'self' is the GraphQL endpoint.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join('; ')

interface Asset { body: Buffer, type: string, etag: string }

export default async function graphiqlPlugin (app: FastifyInstance): Promise<void> {
  // Resolved now, so a missing package stops start-up; read on first use, so apps that never serve
  // the page (tests, the CLI) do not load a megabyte of JavaScript.
  const files = assetFiles()
  const cache = new Map<string, Promise<Asset>>()
  const load = (name: string, path: string, type: string): Promise<Asset> => {
    let asset = cache.get(name)
    if (asset === undefined) {
      asset = readFile(path).then((body) => ({
        body,
        type,
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
      }))
      // A failed read is retried on the next request rather than remembered.
      asset.catch(() => cache.delete(name))
      cache.set(name, asset)
    }
    return asset
  }

  const send = (asset: Asset, ifNoneMatch: string | undefined, reply: FastifyReply): FastifyReply => {
    // Revalidated on every load (the bundles change with `npm install`), answered 304 when unchanged.
    reply.header('cache-control', 'no-cache').header('etag', asset.etag).header('x-content-type-options', 'nosniff')
    if (ifNoneMatch === asset.etag) return reply.code(304).send()
    return reply.type(asset.type).send(asset.body)
  }

  app.get('/graphiql', async (request, reply) => {
    const page = await load('index.html', join(pageDir, 'index.html'), 'text/html; charset=utf-8')
    reply
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY')
    return send(page, request.headers['if-none-match'], reply)
  })

  app.get<{ Params: { name: string } }>('/graphiql/assets/:name', async (request, reply) => {
    const { name } = request.params
    const file = Object.hasOwn(files, name) ? files[name] : undefined
    if (file === undefined) return reply.callNotFound()
    return send(await load(name, file.path, file.type), request.headers['if-none-match'], reply)
  })
}
