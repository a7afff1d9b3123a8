// Server CPU by layer of the request path: a V8 CPU profile (node --cpu-prof) of a bench server,
// cut to the measured windows of one workload, with each sample charged to a layer (token and
// revocation, rate limit, GraphQL, the school client's steps, Prisma, the driver, the audit...).
// The one table that says which file belongs to which layer is RULES below; bench/run.mjs turns
// the shares into microseconds per request with the CPU it measured in the same windows.
//
// A sample is charged to the innermost frame of its stack that belongs to a layer: walking from
// the leaf up, frames of Node.js, V8's built-ins and utility packages (NEUTRAL) pass their time to
// their caller, so a socket write is the driver's when pg writes and Fastify's when a reply goes
// out. A frame of the service (src/) or an npm package that no rule names is not passed on: it
// shows in "everything else" with its path, so that a file renamed or added shows up in the table
// instead of being counted silently in another layer.
import { readFileSync } from 'node:fs'

/** The layers, in the order the tables show them. */
export const LAYERS = [
  'token and revocation',
  'login and refresh',
  'rate limit',
  'GraphQL: parse',
  'GraphQL: validate',
  'GraphQL: limits',
  'GraphQL: execute',
  'GraphQL: endpoint rules and hooks',
  'resolvers and selection',
  'scope check',
  'response cache',
  "school client's steps",
  'Prisma',
  'driver',
  'audit',
  'request log',
  'metrics',
  'other hooks of the service',
  'Fastify',
  'bench server (its handlers)',
  'GC',
  'everything else'
]

export const ELSEWHERE = 'everything else'
/** Passes the sample on to the caller. */
const NEUTRAL = null

const npm = (...packages) => new RegExp(`^npm:(?:${packages.join('|')})/`)
const src = (pattern) => new RegExp(`^src/${pattern}`)

/**
 * (where, function name) -> layer; the first rule that matches decides (`fn`, optional, narrows a
 * rule to the functions whose name it matches). `where` is a frame's place
 * as `whereOf` names it: `src/db/tenant.ts` (the service's dist/ mapped back to src/),
 * `npm:pg/lib/client.js`, `node:net`, `wasm`, `v8:<function>` (built-ins, bindings, generated
 * code), `bench/ceiling.mjs`, or V8's own entries `(garbage collector)`, `(program)`. Service files
 * are matched by folder and file name, not by function name: functions are renamed more often.
 */
export const RULES = [
  { layer: 'GC', where: /^\(garbage collector\)$/ },
  // Native code outside any JavaScript stack (the event loop, I/O callbacks' C++ side).
  { layer: ELSEWHERE, where: /^\(program\)$/ },

  // Token and revocation: the bearer token's signature and claims, the user's access version.
  { layer: 'token and revocation', where: src('auth/(?:tokens|identity|access-changes|auth-service)\\.ts$') },
  { layer: 'token and revocation', where: src('plugins/auth\\.ts$') },
  { layer: 'token and revocation', where: npm('@fastify/jwt', 'fast-jwt', 'steed', 'fastparallel', 'fastseries', 'fastfall', 'mnemonist', 'obliterator', 'asn1\\.js', 'bn\\.js', 'ecdsa-sig-formatter', '@lukeed/ms') },

  // Logins and refreshes (their workloads only): passwords, refresh tokens, client credentials.
  { layer: 'login and refresh', where: src('auth/(?:passwords|opaque-tokens|refresh-tokens|client-credentials|token-request)\\.ts$') },
  { layer: 'login and refresh', where: src('graphql/resolvers/auth\\.ts$') },
  { layer: 'login and refresh', where: npm('@node-rs/argon2[^/]*') },

  { layer: 'rate limit', where: src('plugins/rate-limit\\.ts$') },
  { layer: 'rate limit', where: src('auth/login-throttle\\.ts$') },
  { layer: 'rate limit', where: npm('@fastify/rate-limit', 'ip-address') },

  // GraphQL: graphql-js's parser, its validation (the specified rules and ours), the limits
  // (graphql-armor's rules), execution (Mercurius, graphql-jit's compiled queries, loaders).
  { layer: 'GraphQL: parse', where: /^npm:graphql\/language\/(?:parser|lexer|source|blockString|characterClasses|tokenKind|location|printLocation)\.js$/ },
  { layer: 'GraphQL: validate', where: /^npm:graphql\/validation\// },
  { layer: 'GraphQL: limits', where: npm('@escape\\.tech/graphql-armor[^/]*') },
  { layer: 'GraphQL: limits', where: src('graphql/limits\\.ts$') },
  { layer: 'GraphQL: execute', where: /^npm:graphql\/(?:execution\/|graphql\.js|subscription\/)/ },
  { layer: 'GraphQL: execute', where: npm('mercurius', 'graphql-jit', 'dataloader', 'single-user-cache', 'tiny-lru', 'quick-lru', 'p-map', 'generate-function', 'lodash\\.memoize', 'lodash\\.merge', 'lodash\\.mergewith', 'json-schema') },
  // Mercurius's own dependencies for subscriptions and GraphiQL (not on a read's path).
  { layer: 'GraphQL: execute', where: npm('ws', 'duplexify', 'qlobber', 'mqemitter', 'end-of-stream', 'once', 'wrappy', 'stream-shift', 'inherits', '@fastify/websocket', '@fastify/static', '@fastify/send', 'mime', 'escape-html', 'glob', 'minimatch', 'minipass', 'path-scurry', 'jackspeak', 'brace-expansion', 'balanced-match') },
  { layer: 'scope check', where: src('graphql/scope-check\\.ts$') },
  { layer: 'scope check', where: src('auth/scopes\\.ts$') },
  { layer: 'response cache', where: src('graphql/response-cache\\.ts$') },
  // The endpoint's own rules (GraphQL over HTTP, parameters, media types), its hooks, the error
  // formatter, the context, persisted documents.
  { layer: 'GraphQL: endpoint rules and hooks', where: src('plugins/graphql\\.ts$') },
  { layer: 'GraphQL: endpoint rules and hooks', where: src('graphql/(?:http|errors|context|persisted-documents|document-manifest|schema)\\.ts$') },
  { layer: 'GraphQL: endpoint rules and hooks', where: npm('negotiator') },
  // Our resolvers and what they build: the Prisma select from the query, the page plan, ids.
  { layer: 'resolvers and selection', where: src('graphql/resolvers/') },
  { layer: 'resolvers and selection', where: src('graphql/(?:selection|selects|paging|ids|models|generated|typed-lists)\\.ts$') },
  // The typed statements: building a list's SQL (kept per shape) and mapping its rows.
  { layer: 'resolvers and selection', where: src('db/typed-reads\\.ts$') },
  { layer: 'resolvers and selection', where: src('validators\\.ts$') },
  { layer: 'resolvers and selection', where: npm('graphql-parse-resolve-info', 'debug', 'ms') },

  // The school client: its steps (access counting, wall 1, the caller's reach, read routing, wall
  // 2's session and pool) and the database module's per-statement parts (statement names).
  { layer: "school client's steps", where: src('audit/access\\.ts$') },
  { layer: "school client's steps", where: src('db/(?:tenant|reach|school-client|school-session|pg-school-pool|replicas|teacher-rooms|data-model|client)\\.ts$') },
  { layer: "school client's steps", where: /^src\/(?:.*\/)?citus[^/]*(?:\/|\.ts$)/ },
  { layer: 'audit', where: src('audit/') },

  // Prisma: the generated client, the runtime, the query compiler (WebAssembly: Prisma's is the
  // only WebAssembly the servers load).
  { layer: 'Prisma', where: src('generated/prisma/') },
  { layer: 'driver', where: npm('@prisma/adapter-pg', '@prisma/driver-adapter-utils') },
  { layer: 'Prisma', where: /^npm:@prisma\// },
  { layer: 'Prisma', where: /^wasm$/ },
  { layer: 'driver', where: npm('pg', 'pg-[a-z-]+', 'postgres-[a-z-]+', 'pgpass', 'split2', 'xtend') },

  { layer: 'request log', where: src('plugins/logging\\.ts$') },
  { layer: 'request log', where: npm('pino', 'pino-[a-z-]+', '@pinojs/[a-z-]+', 'fast-redact', 'sonic-boom', 'thread-stream', 'quick-format-unescaped', 'atomic-sleep', 'on-exit-leak-free', 'real-require', 'abstract-logging') },
  // Fastify's child logger of each request.
  { layer: 'request log', where: /^npm:fastify\/lib\/logger-factory\.js$/ },

  { layer: 'metrics', where: src('plugins/metrics\\.ts$') },
  { layer: 'metrics', where: npm('prom-client', 'tdigest', 'bintrees') },

  // The service's other plugins with hooks on every request (CORS, handler timeout, load shedding,
  // shutdown), and the app's own hooks.
  { layer: 'other hooks of the service', where: src('plugins/(?:cors|handler-timeout|pressure|shutdown|operations|redis|database|config|oauth|schema-sdl|graphiql)\\.ts$') },
  { layer: 'other hooks of the service', where: src('(?:app|server|config|server-flags)\\.ts$') },
  { layer: 'other hooks of the service', where: npm('@fastify/cors', '@fastify/under-pressure', '@fastify/etag', '@fastify/formbody', 'fastify-plugin') },

  // Fastify itself: routing, hooks, body parsing, the reply and its serialization, its schemas.
  { layer: 'Fastify', where: npm('fastify', 'find-my-way', 'avvio', 'light-my-request', 'secure-json-parse', 'fast-querystring', 'fast-decode-uri-component', 'fast-content-type-parse', 'content-type', 'ajv', 'ajv-formats', 'fast-uri', 'json-schema-traverse', 'fast-deep-equal', 'ret', 'safe-regex2', 'rfdc', 'semver', 'process-warning', 'proxy-addr', 'forwarded', 'ipaddr\\.js', 'http-errors', 'statuses', 'depd', 'cookie', 'set-cookie-parser', '@fastify/(?:error|ajv-compiler|fast-json-stringify-compiler|merge-json-schemas|proxy-addr|forwarded)') },

  // The peers' own code (bench/ceiling.mjs, prisma-minimal.mjs, mercurius-pg.mjs, read-server.mjs).
  { layer: 'bench server (its handlers)', where: /^bench\// },

  // Pass-through: Node.js, V8's built-ins and bindings, generated code (graphql-jit's compiled
  // queries, ajv's validators: their caller's), graphql-js's shared parts (AST visitor, types,
  // utilities, errors), and utility packages several layers use (safe-stable-stringify: pino's,
  // and Mercurius's for its loaders' keys; fast-json-stringify: Fastify's and graphql-jit's).
  { layer: NEUTRAL, where: /^(?:node:|v8:)/ },
  { layer: NEUTRAL, where: /^npm:graphql\/(?:jsutils|type|utilities|error|language|index\.js|version\.js)/ },
  { layer: NEUTRAL, where: npm('lru-cache', 'toad-cache', 'fastq', 'reusify', 'tslib', '@opentelemetry/api', 'p-limit', 'yocto-queue', 'readable-stream', 'events', 'safe-stable-stringify', 'fast-json-stringify') }
]

/** Where a profile's call frame is, as the rules name it (see RULES). */
export function whereOf (callFrame, projectDir) {
  const { url, functionName } = callFrame
  if (url === '') return functionName.startsWith('(') ? functionName : `v8:${functionName}`
  if (url.startsWith('wasm://')) return 'wasm'
  if (url.startsWith('node:')) return url
  const path = decodeURIComponent(url.replace(/^file:\/\//, ''))
  const at = path.lastIndexOf('/node_modules/')
  if (at !== -1) return `npm:${path.slice(at + '/node_modules/'.length)}`
  if (path.startsWith(projectDir + '/')) {
    const inProject = path.slice(projectDir.length + 1)
    // The service runs dist/, which mirrors src/: the table names the source files.
    return inProject.startsWith('dist/') ? inProject.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts') : inProject
  }
  return `file:${path}`
}

/**
 * What "everything else" says of a frame no layer claims: its file or package, and whether no rule
 * names it or it passes its time on with no layer above it.
 */
function elsewhereOf (where, named) {
  const why = named ? 'no layer above' : 'no rule'
  if (where.startsWith('npm:')) {
    const [scope, name] = where.slice(4).split('/')
    return `npm:${scope.startsWith('@') ? `${scope}/${name}` : scope} (${why})`
  }
  if (where.startsWith('src/') || where.startsWith('node:') || where.startsWith('v8:')) return `${where} (${why})`
  return where
}

/**
 * The layer of one frame, or NEUTRAL, or undefined when no rule names it. `functionName`: a rule's
 * optional `fn` pattern is matched against it.
 */
export function ruleOf (where, functionName = '') {
  for (const rule of RULES) {
    if (rule.where.test(where) && (rule.fn === undefined || rule.fn.test(functionName))) return rule.layer
  }
  return undefined
}

/**
 * Charges each profile node's self samples: returns (node id) -> { layer, detail }, where detail
 * names the place for "everything else".
 */
function attribution (profile, projectDir) {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const memo = new Map()
  const charge = (id) => {
    if (memo.has(id)) return memo.get(id)
    const { callFrame } = nodes.get(id)
    const where = whereOf(callFrame, projectDir)
    const layer = ruleOf(where, callFrame.functionName)
    let result
    if (layer === undefined) result = { layer: ELSEWHERE, detail: elsewhereOf(where, false) }
    else if (layer !== NEUTRAL) result = { layer, detail: where }
    else {
      const up = parent.get(id)
      const above = up === undefined || nodes.get(up).callFrame.functionName === '(root)' ? null : charge(up)
      // Nothing above claims it: the leaf's own kind of place.
      result = above ?? { layer: ELSEWHERE, detail: elsewhereOf(where, true) }
    }
    memo.set(id, result)
    return result
  }
  return charge
}

/**
 * The time of each sample of `profile`, in microseconds of the monotonic clock that V8's profiler
 * and process.hrtime share (on Linux, CLOCK_MONOTONIC): the runner's measured windows select them.
 */
export function sampleTimes (profile) {
  const times = new Array(profile.samples.length)
  let t = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0
    times[i] = t
  }
  return times
}

/** Whether time `t` is in one of `windows` ([start, end] microseconds); every time when undefined. */
export const inWindows = (t, windows) => windows === undefined || windows.some(([start, end]) => t >= start && t <= end)

/**
 * Samples by layer within `windows`, idle left out. Samples are counted, not weighted by their
 * time deltas: on a shared machine a delta includes the time the thread was preempted, which
 * would charge other programs' time to whatever function was running.
 */
export function layerSamples (profile, projectDir, windows) {
  const charge = attribution(profile, projectDir)
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const times = sampleTimes(profile)
  const byLayer = new Map(LAYERS.map((layer) => [layer, 0]))
  const elsewhere = new Map()
  let total = 0
  let idle = 0
  profile.samples.forEach((id, i) => {
    if (!inWindows(times[i], windows)) return
    if (nodes.get(id).callFrame.functionName === '(idle)') {
      idle++
      return
    }
    total++
    const { layer, detail } = charge(id)
    byLayer.set(layer, byLayer.get(layer) + 1)
    if (layer === ELSEWHERE) elsewhere.set(detail, (elsewhere.get(detail) ?? 0) + 1)
  })
  return { total, idle, byLayer, elsewhere }
}

/**
 * Microseconds of server CPU per request by layer: each layer's share of the profile's samples
 * times the CPU per request measured in the same windows (which also counts the process's other
 * threads: GC helpers, the thread pool; their time is spread in proportion).
 */
export function layerCosts (file, projectDir, windows, cpuUsPerRequest) {
  const profile = JSON.parse(readFileSync(file, 'utf8'))
  const { total, idle, byLayer, elsewhere } = layerSamples(profile, projectDir, windows)
  const us = (samples) => total === 0 ? NaN : samples / total * cpuUsPerRequest
  return {
    samples: total,
    idleSamples: idle,
    cpuUsPerRequest,
    layers: LAYERS.map((layer) => ({ layer, samples: byLayer.get(layer), share: total === 0 ? NaN : byLayer.get(layer) / total, us: us(byLayer.get(layer)) })),
    elsewhere: [...elsewhere].sort((a, b) => b[1] - a[1]).map(([where, samples]) => ({ where, samples, share: samples / total, us: us(samples) }))
  }
}
