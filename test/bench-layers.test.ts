// The bench's table of layers (bench/layers.mjs): which file belongs to which layer of the request
// path, and how a CPU profile's samples are charged (the innermost frame of a layer, Node.js and
// shared utilities passing their time to their caller, an unlisted service file shown by its path).
import t from 'tap'

interface Frame { functionName: string, url: string }
interface ProfileNode { id: number, callFrame: Frame, children?: number[] }
interface Profile { nodes: ProfileNode[], samples: number[], timeDeltas: number[], startTime: number, endTime: number }
interface LayersModule {
  LAYERS: string[]
  ELSEWHERE: string
  RULES: Array<{ layer: string | null }>
  ruleOf: (where: string, functionName?: string) => string | null | undefined
  whereOf: (callFrame: Frame, projectDir: string) => string
  layerSamples: (profile: Profile, projectDir: string, windows?: Array<[number, number]>) => {
    total: number
    idle: number
    byLayer: Map<string, number>
    elsewhere: Map<string, number>
  }
}

// A module of the bench (plain JavaScript), loaded by its URL.
const layers = await import(new URL('../bench/layers.mjs', import.meta.url).href) as LayersModule
const PROJECT = '/srv/sds'

t.test('every rule names a layer of the tables, or passes the sample on', async (t) => {
  for (const rule of layers.RULES) {
    if (rule.layer !== null) t.ok(layers.LAYERS.includes(rule.layer), `${rule.layer} is a layer`)
  }
})

t.test('files and packages of the request path have their layers', async (t) => {
  const cases: Array<[string, string | null | undefined]> = [
    ['src/auth/tokens.ts', 'token and revocation'],
    ['npm:fast-jwt/src/verifier.js', 'token and revocation'],
    ['src/plugins/rate-limit.ts', 'rate limit'],
    ['npm:graphql/language/parser.js', 'GraphQL: parse'],
    ['npm:graphql/validation/validate.js', 'GraphQL: validate'],
    ['npm:@escape.tech/graphql-armor-max-depth/dist/index.js', 'GraphQL: limits'],
    ['npm:graphql-jit/dist/execution.js', 'GraphQL: execute'],
    ['npm:mercurius/index.js', 'GraphQL: execute'],
    ['src/graphql/scope-check.ts', 'scope check'],
    ['src/graphql/resolvers/students.ts', 'resolvers and selection'],
    ['src/db/tenant.ts', "school client's steps"],
    ['src/db/school-session.ts', "school client's steps"],
    // The access count is a step of the school client; the rest of the audit is the audit.
    ['src/audit/access.ts', "school client's steps"],
    ['src/audit/writer.ts', 'audit'],
    ['npm:@prisma/client/runtime/client.js', 'Prisma'],
    ['wasm', 'Prisma'],
    ['npm:@prisma/adapter-pg/dist/index.mjs', 'driver'],
    ['npm:pg-protocol/dist/parser.js', 'driver'],
    ['npm:pino/lib/tools.js', 'request log'],
    ['npm:prom-client/lib/histogram.js', 'metrics'],
    ['npm:fastify/lib/reply.js', 'Fastify'],
    ['npm:fastify/lib/logger-factory.js', 'request log'],
    ['(garbage collector)', 'GC'],
    // Passed on to the caller.
    ['node:net', null],
    ['v8:writeUtf8String', null],
    ['npm:graphql/language/visitor.js', null],
    ['npm:lru-cache/dist/esm/index.js', null],
    // Pino's, and Mercurius's for its loaders' keys: its caller's.
    ['npm:safe-stable-stringify/index.js', null],
    // Named by no rule: shown in "everything else".
    ['src/db/notifications.ts', undefined],
    ['npm:some-new-package/index.js', undefined]
  ]
  for (const [where, layer] of cases) t.equal(layers.ruleOf(where), layer, where)
})

t.test('frames are named by their source file, package or kind', async (t) => {
  const at = (url: string, functionName = 'f'): string => layers.whereOf({ url, functionName }, PROJECT)
  t.equal(at(`file://${PROJECT}/dist/db/tenant.js`), 'src/db/tenant.ts')
  t.equal(at(`file://${PROJECT}/node_modules/pg/lib/client.js`), 'npm:pg/lib/client.js')
  t.equal(at(`file://${PROJECT}/bench/ceiling.mjs`), 'bench/ceiling.mjs')
  t.equal(at('node:net'), 'node:net')
  t.equal(at('wasm://wasm/1234'), 'wasm')
  t.equal(at('', '(garbage collector)'), '(garbage collector)')
  t.equal(at('', 'writeUtf8String'), 'v8:writeUtf8String')
})

t.test('a sample is charged to the innermost frame of a layer', async (t) => {
  const frame = (id: number, url: string, functionName: string, children: number[] = []): ProfileNode =>
    ({ id, callFrame: { url, functionName }, children })
  const file = (path: string): string => `file://${PROJECT}/${path}`
  const profile: Profile = {
    nodes: [
      frame(1, '', '(root)', [2, 5, 7, 10, 11, 12, 13]),
      // Fastify writes a reply: Node's socket, then V8's binding.
      frame(2, file('node_modules/fastify/lib/reply.js'), 'writePayload', [3]),
      frame(3, 'node:net', 'Socket._writeGeneric', [4]),
      frame(4, '', 'writeUtf8String'),
      // A renamed service file calling pg: pg's; the file's own time: "everything else" by its path.
      frame(5, file('dist/db/notifications.js'), 'notify', [6]),
      frame(6, file('node_modules/pg/lib/client.js'), 'query'),
      // Node's HTTP parser with nothing of ours above it.
      frame(7, 'node:_http_common', 'parserOnHeadersComplete'),
      frame(10, '', '(garbage collector)'),
      frame(11, '', '(idle)'),
      frame(12, '', '(program)'),
      // A shared utility with nothing of a layer above it.
      frame(13, file('node_modules/lru-cache/dist/esm/index.js'), 'get')
    ],
    samples: [4, 4, 6, 5, 7, 10, 11, 11, 12, 4, 13],
    timeDeltas: [10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10],
    startTime: 1000,
    endTime: 1110
  }
  const all = layers.layerSamples(profile, PROJECT)
  t.equal(all.total, 9, 'idle samples are left out')
  t.equal(all.idle, 2)
  t.equal(all.byLayer.get('Fastify'), 3)
  t.equal(all.byLayer.get('driver'), 1)
  t.equal(all.byLayer.get('GC'), 1)
  t.equal(all.byLayer.get(layers.ELSEWHERE), 4)
  t.same(Object.fromEntries(all.elsewhere), {
    'src/db/notifications.ts (no rule)': 1,
    'node:_http_common (no layer above)': 1,
    '(program)': 1,
    'npm:lru-cache (no layer above)': 1
  })
  // Sample i is at startTime + the sum of the first i + 1 deltas: 1010, 1020, ... 1110.
  const window = layers.layerSamples(profile, PROJECT, [[1015, 1045]])
  t.equal(window.total, 3, 'only the samples in the windows')
  t.equal(window.byLayer.get('Fastify'), 1)
  t.equal(window.byLayer.get('driver'), 1)
})
