// The one place that reads the environment. Everything else receives a validated Config.
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { join, resolve } from 'node:path'
import envSchema from 'env-schema'
import type { FromSchema } from 'json-schema-to-ts'
import { MAX_ACCESS_TOKEN_TTL } from './auth/access-changes.js'
import { readDocumentManifest } from './graphql/document-manifest.js'
import { MIN_SECRET_BYTES, secretTooShort } from './validators.js'

const integer = (minimum: number, maximum: number | undefined, fallback: number) =>
  ({ type: 'integer', minimum, ...(maximum !== undefined && { maximum }), default: fallback }) as const

/**
 * Every environment variable, declared once: its JSON schema (validated and coerced by env-schema)
 * gives the type (json-schema-to-ts, at compile time only), and its name gives the Config key (camel case; SCHOOL_DATA_ENV is `env`).
 * Variables without a default are optional. Those parsed further (lists, secrets, paths) are
 * checked in loadConfig.
 */
export const ENV_SCHEMA = {
  type: 'object',
  // The environment's other variables are dropped (env-schema's removeAdditional), never refused.
  additionalProperties: false,
  properties: {
    SCHOOL_DATA_ENV: { type: 'string', enum: ['sandbox', 'production'], default: 'sandbox' },
    HOST: { type: 'string', minLength: 1, default: '127.0.0.1' },
    PORT: integer(0, 65535, 4000),
    // PostgreSQL server; unset: the embedded database under DATA_DIR.
    DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://' },
    // Connections in the PostgreSQL pool of each API process.
    DATABASE_POOL_SIZE: integer(1, 1000, 10),
    // Streaming replicas of DATABASE_URL that serve reads of school data (none: all on the primary).
    DATABASE_REPLICA_URLS: { type: 'string', pattern: '^\\s*postgres(ql)?://[^,]+(,\\s*postgres(ql)?://[^,]+)*$' },
    DATA_DIR: { type: 'string', minLength: 1, default: '.data' },
    // Signs access tokens (and verifies them). Lengths in bytes are checked in loadConfig (JSON
    // Schema counts characters).
    JWT_SECRET: { type: 'string' },
    // Former signing keys, verify only: their tokens stay valid until they expire.
    JWT_PREVIOUS_SECRETS: { type: 'string' },
    // Fastify's trustProxy: whether and which proxies' X-Forwarded-For to believe (unset: none).
    TRUST_PROXY: { type: 'string' },
    // Origins whose browser apps may call the API (CORS); each is checked in loadConfig (the message
    // names the one that is not an origin).
    CORS_ORIGINS: { type: 'string' },
    // At most a day: every node must still know each access change a live token predates.
    ACCESS_TOKEN_TTL: integer(1, MAX_ACCESS_TOKEN_TTL, 900),
    REFRESH_TOKEN_TTL: integer(1, undefined, 604800),
    // Seconds an answer to a read may be reused (0: no response cache), and megabytes of answers
    // each API process may keep.
    RESPONSE_CACHE_TTL: integer(0, 86400, 60),
    RESPONSE_CACHE_MB: integer(1, 4096, 32),
    // Access audit: milliseconds between writes of the queued rows; rows per INSERT (a full batch is
    // written at once); rows that may wait in memory (more are dropped, counted and logged).
    AUDIT_FLUSH_MS: integer(10, 60000, 1000),
    AUDIT_BATCH_SIZE: integer(1, 10000, 500),
    AUDIT_MAX_QUEUE: integer(1, 10000000, 100000),
    // Bearer token GET /metrics requires; unset: open (sandbox) or not served (production).
    METRICS_TOKEN: { type: 'string', minLength: 16 },
    // Milliseconds the whole shutdown on SIGTERM may take before the process exits with status 1,
    // and of draining first (readiness fails, answers close their connections).
    SHUTDOWN_TIMEOUT_MS: integer(100, 600000, 20000),
    SHUTDOWN_DRAIN_MS: integer(0, 600000, 5000),
    // Redis shared by the API nodes for rate-limit counters (unset: counters in memory), and the
    // prefix of every key of this service there (deployments may share one Redis).
    REDIS_URL: { type: 'string', pattern: '^rediss?://' },
    REDIS_KEY_PREFIX: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{0,64}$', default: 'sds:' },
    // Requests per minute per user, per client (OAuth client credentials), per school and per client
    // address of anonymous calls (0: off).
    RATE_LIMIT_USER_PER_MINUTE: integer(0, undefined, 600),
    RATE_LIMIT_CLIENT_PER_MINUTE: integer(0, undefined, 600),
    RATE_LIMIT_SCHOOL_PER_MINUTE: integer(0, undefined, 6000),
    RATE_LIMIT_ADDRESS_PER_MINUTE: integer(0, undefined, 300),
    // Record mutations per minute per user or client, beside its requests (0: off).
    RATE_LIMIT_WRITES_PER_MINUTE: integer(0, undefined, 120),
    // Failed logins per account and per client address before locks begin (0: off); seconds after
    // which failed logins are forgotten, and the longest lock.
    LOGIN_FAILURES_PER_ACCOUNT: integer(0, 1000, 5),
    LOGIN_FAILURES_PER_ADDRESS: integer(0, 100000, 100),
    LOGIN_FAILURE_WINDOW: integer(1, 86400, 900),
    LOGIN_LOCK_MAX: integer(1, 86400, 900),
    // Query limits (src/graphql/limits.ts); graphql-armor's defaults.
    QUERY_MAX_DEPTH: integer(1, 100, 6),
    QUERY_MAX_ALIASES: integer(0, 10000, 15),
    QUERY_MAX_DIRECTIVES: integer(0, 10000, 50),
    QUERY_MAX_TOKENS: integer(10, 1000000, 1000),
    QUERY_MAX_COST: integer(1, 100000000, 5000),
    QUERY_MAX_BYTES: integer(100, 10485760, 15000),
    // Seconds a document registered by Apollo's automatic persisted queries is kept (0: APQ off), and
    // how many are kept at most (in Redis, and in each process's memory).
    PERSISTED_QUERY_TTL: integer(0, 2592000, 86400),
    PERSISTED_QUERY_MAX_DOCUMENTS: integer(1, 1000000, 10000),
    // The only operations executed, by hash (src/graphql/document-manifest.ts); unset: any query
    // within the limits, and APQ.
    TRUSTED_DOCUMENTS: { type: 'string', minLength: 1 },
    // Largest request body accepted (413 above).
    BODY_LIMIT_BYTES: integer(1024, 104857600, 102400),
    // Milliseconds to receive a whole request (Node's requestTimeout; 408 after; 0: none).
    REQUEST_TIMEOUT_MS: integer(0, 3600000, 30000),
    // Milliseconds a route may take to answer (503 after; 0: none).
    HANDLER_TIMEOUT_MS: integer(0, 3600000, 10000),
    // Milliseconds to wait for a PostgreSQL connection, new or from the pool.
    DATABASE_CONNECT_TIMEOUT_MS: integer(1, 600000, 5000),
    // PostgreSQL statement_timeout of the service's connections (0: none; the embedded database ignores it).
    DATABASE_STATEMENT_TIMEOUT_MS: integer(0, 3600000, 5000),
    // Overload (503 with Retry-After): mean event loop delay, heap and RSS thresholds (0: not
    // checked), and the seconds a client is told to wait.
    PRESSURE_MAX_EVENT_LOOP_DELAY_MS: integer(0, 600000, 1000),
    PRESSURE_MAX_HEAP_MB: integer(0, 1048576, 0),
    PRESSURE_MAX_RSS_MB: integer(0, 1048576, 0),
    PRESSURE_RETRY_AFTER: integer(1, 3600, 10),
    // GraphQL subscriptions over WebSocket (src/plugins/subscriptions.ts): open subscriptions per API
    // node and per caller on a node; bytes a socket may hold unsent before it is closed (a
    // subscriber that does not read); milliseconds between WebSocket pings (0: none).
    SUBSCRIPTIONS_PER_NODE: integer(0, 1000000, 10000),
    SUBSCRIPTIONS_PER_CALLER: integer(0, 10000, 20),
    SUBSCRIPTION_MAX_BUFFERED_BYTES: integer(1024, 1073741824, 1048576),
    SUBSCRIPTION_KEEPALIVE_MS: integer(0, 3600000, 30000),
    LOG_LEVEL: { type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' }
  }
} as const

type Env = FromSchema<typeof ENV_SCHEMA>
export type EnvName = keyof Env

type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Lowercase<Head>}${Capitalize<CamelCase<Tail>>}`
  : Lowercase<S>
type ConfigKey<K extends EnvName> = K extends 'SCHOOL_DATA_ENV' ? 'env' : CamelCase<K>

/** The Config key of an environment variable: DATABASE_POOL_SIZE is `databasePoolSize`. */
export function configKey<K extends EnvName> (name: K): ConfigKey<K> {
  if (name === 'SCHOOL_DATA_ENV') return 'env' as ConfigKey<K>
  // The runtime twin of CamelCase above.
  return name.toLowerCase().replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()) as ConfigKey<K>
}

/** Each variable under its Config key, with its validated value (undefined when unset and optional). */
type Settings = { -readonly [K in EnvName as ConfigKey<K>]-?: Env[K] | (undefined extends Env[K] ? undefined : never) }

/** Variables whose value loadConfig parses or completes further. */
interface Parsed {
  /** Resolved against the working directory. */
  dataDir: string
  /** Always set: generated outside production, '' for commands that sign no tokens. */
  jwtSecret: string
  jwtPreviousSecrets: string[]
  databaseReplicaUrls: string[]
  trustProxy: boolean | string[]
  corsOrigins: string[]
  trustedDocuments: ReadonlyMap<string, string> | undefined
}

export type Config = Omit<Settings, keyof Parsed> & Parsed
export type Environment = Config['env']

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/**
 * Validates the environment. Outside production a missing JWT_SECRET is generated once and kept
 * in DATA_DIR, so tokens survive restarts of a developer's server. `needsSecret: false` is for
 * commands that sign no tokens.
 */
export function loadConfig (env: NodeJS.ProcessEnv = process.env, { needsSecret = true } = {}): Config {
  // Empty variables count as unset: `FOO= cmd` is a common way to clear one.
  const data = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''))
  let raw: Env
  try {
    raw = envSchema<Env>({ schema: ENV_SCHEMA, data, env: false })
  } catch (err) {
    throw new ConfigError(`Invalid configuration: ${(err as Error).message.replace(/env\//g, '')}`)
  }
  if (raw.SHUTDOWN_DRAIN_MS >= raw.SHUTDOWN_TIMEOUT_MS) {
    throw new ConfigError(`Invalid configuration: SHUTDOWN_DRAIN_MS (${raw.SHUTDOWN_DRAIN_MS}) must be less than SHUTDOWN_TIMEOUT_MS (${raw.SHUTDOWN_TIMEOUT_MS}), which bounds the whole shutdown`)
  }
  if (raw.DATABASE_REPLICA_URLS !== undefined && raw.DATABASE_URL === undefined) {
    throw new ConfigError('Invalid configuration: DATABASE_REPLICA_URLS needs DATABASE_URL (replicas of that primary)')
  }
  const dataDir = resolve(raw.DATA_DIR)
  let jwtSecret = raw.JWT_SECRET
  if (jwtSecret !== undefined && secretTooShort(jwtSecret)) {
    throw new ConfigError(`Invalid configuration: JWT_SECRET must have at least ${MIN_SECRET_BYTES} bytes (got ${Buffer.byteLength(jwtSecret, 'utf8')})`)
  }
  const jwtPreviousSecrets = previousSecrets(raw.JWT_PREVIOUS_SECRETS)
  let trustedDocuments: ReadonlyMap<string, string> | undefined
  if (raw.TRUSTED_DOCUMENTS !== undefined) {
    try {
      trustedDocuments = readDocumentManifest(resolve(raw.TRUSTED_DOCUMENTS))
    } catch (err) {
      throw new ConfigError(`Invalid configuration: TRUSTED_DOCUMENTS: ${(err as Error).message}`)
    }
  }
  if (jwtSecret === undefined && !needsSecret) {
    // Commands that issue no tokens (the CLI's data commands) neither need nor create a secret.
    jwtSecret = ''
  } else if (jwtSecret === undefined) {
    if (raw.SCHOOL_DATA_ENV === 'production') {
      throw new ConfigError(`Invalid configuration: JWT_SECRET is required when SCHOOL_DATA_ENV=production (at least ${MIN_SECRET_BYTES} bytes)`)
    }
    jwtSecret = localSecret(dataDir)
  }
  return {
    ...settingsOf(raw),
    dataDir,
    jwtSecret,
    jwtPreviousSecrets,
    databaseReplicaUrls: raw.DATABASE_REPLICA_URLS?.split(',').map((url) => url.trim()) ?? [],
    trustProxy: trustProxy(raw.TRUST_PROXY),
    corsOrigins: corsOrigins(raw.CORS_ORIGINS),
    trustedDocuments
  }
}

/** Every variable of the schema under its Config key, unset ones included (as undefined). */
function settingsOf (raw: Env): Settings {
  const names = Object.keys(ENV_SCHEMA.properties) as EnvName[]
  // Object.fromEntries cannot carry the renamed keys' types; the names come from the schema itself.
  return Object.fromEntries(names.map((name) => [configKey(name), raw[name]])) as Settings
}

function previousSecrets (value: string | undefined): string[] {
  if (value === undefined) return []
  const secrets = value.split(',').map((secret) => secret.trim()).filter((secret) => secret !== '')
  secrets.forEach((secret, i) => {
    if (secretTooShort(secret)) {
      throw new ConfigError(`Invalid configuration: JWT_PREVIOUS_SECRETS: secret #${i + 1} must have at least ${MIN_SECRET_BYTES} bytes`)
    }
  })
  return secrets
}

// proxy-addr's names for well-known ranges, accepted by Fastify's trustProxy.
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/**
 * TRUST_PROXY: unset or `false`, `true` (any peer), or comma-separated addresses / CIDR ranges of
 * the proxies. No hop count: Fastify 5 trusts nothing for one, as it cannot check the peer.
 */
function trustProxy (value: string | undefined): boolean | string[] {
  const text = value?.trim().toLowerCase()
  if (text === undefined || text === 'false') return false
  if (text === 'true') return true
  const entries = text.split(',').map((entry) => entry.trim())
  for (const entry of entries) {
    const [address = '', prefix, extra] = entry.split('/')
    const family = isIP(address)
    const bits = family === 4 ? 32 : 128
    const valid = NAMED_RANGES.has(entry) ||
      (family !== 0 && extra === undefined && (prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= bits)))
    if (!valid) {
      throw new ConfigError(`Invalid configuration: TRUST_PROXY must be true, false or comma-separated IP addresses or CIDR ranges (got "${entry}")`)
    }
  }
  return entries
}

/**
 * CORS_ORIGINS: comma-separated exact origins, e.g. `https://app.example.org,http://localhost:5173`.
 * An origin is a scheme, a host and an optional port, nothing more (no path, no trailing slash, no
 * wildcard): what a browser sends in `Origin`, compared as it is.
 */
function corsOrigins (value: string | undefined): string[] {
  if (value === undefined) return []
  const origins = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  for (const origin of origins) {
    let parsed: URL | undefined
    try {
      parsed = new URL(origin)
    } catch {}
    if (parsed === undefined || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
      throw new ConfigError(`Invalid configuration: CORS_ORIGINS must be comma-separated origins such as https://app.example.org (scheme, host and port only, no path or trailing slash; got "${origin}")`)
    }
  }
  return [...new Set(origins)]
}

function localSecret (dataDir: string): string {
  const file = join(dataDir, 'jwt-secret')
  try {
    return readFileSync(file, 'utf8').trim()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  mkdirSync(dataDir, { recursive: true })
  const secret = randomBytes(48).toString('base64url')
  // 'wx' fails if another process created it first; then read theirs.
  try {
    writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' })
    return secret
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    return readFileSync(file, 'utf8').trim()
  }
}
