// The one place that reads the environment. Everything else receives a validated Config.
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { join, resolve } from 'node:path'
import envSchema from 'env-schema'
import { MAX_ACCESS_TOKEN_TTL } from './auth/access-changes.js'
import { readDocumentManifest } from './graphql/document-manifest.js'
import { MIN_SECRET_BYTES, secretTooShort } from './validators.js'

export type Environment = 'sandbox' | 'production'

export interface Config {
  env: Environment
  host: string
  port: number
  /** PostgreSQL server; undefined means the embedded database under dataDir. */
  databaseUrl: string | undefined
  /** Connections in the PostgreSQL pool of each API process. */
  databasePoolSize: number
  /** Streaming replicas of DATABASE_URL that serve reads of school data (none: all on the primary). */
  databaseReplicaUrls: string[]
  dataDir: string
  /** Signs access tokens (and verifies them); at least 32 bytes. */
  jwtSecret: string
  /** Former signing keys, verify only: their tokens stay valid until they expire. */
  jwtPreviousSecrets: string[]
  /** Fastify's trustProxy: whether and which proxies' X-Forwarded-For to believe (false: none). */
  trustProxy: boolean | string[]
  /** Origins (scheme://host[:port]) whose browser apps may call the API (CORS); none by default. */
  corsOrigins: string[]
  accessTokenTtl: number
  refreshTokenTtl: number
  logLevel: string
  /** Seconds an answer to a read may be reused (0: no response cache). */
  responseCacheTtl: number
  /** Megabytes of answers each API process may keep. */
  responseCacheMb: number
  /** Access audit: milliseconds between writes of the queued rows. */
  auditFlushMs: number
  /** Access audit: rows per INSERT; a full batch is written at once. */
  auditBatchSize: number
  /** Access audit: rows that may wait in memory; more are dropped, counted and logged. */
  auditMaxQueue: number
  /** Bearer token GET /metrics requires; unset: open (sandbox) or not served (production). */
  metricsToken: string | undefined
  /** Milliseconds the whole shutdown on SIGTERM may take before the process exits with status 1. */
  shutdownTimeoutMs: number
  /** Milliseconds SIGTERM drains (readiness fails, answers close their connections) before closing. */
  shutdownDrainMs: number
  /** Redis shared by the API nodes for rate-limit counters; undefined: counters in memory. */
  redisUrl: string | undefined
  /** Prefix of every Redis key of this service (deployments may share one Redis). */
  redisKeyPrefix: string
  /** Requests per minute per user, per school and per client address of anonymous calls (0: off). */
  rateLimitUserPerMinute: number
  rateLimitSchoolPerMinute: number
  rateLimitAddressPerMinute: number
  /** Failed logins per account and per client address before locks begin (0: off). */
  loginFailuresPerAccount: number
  loginFailuresPerAddress: number
  /** Seconds after which failed logins are forgotten, and the longest lock. */
  loginFailureWindow: number
  loginLockMax: number
  /** Query limits (src/graphql/limits.ts); graphql-armor's defaults. */
  queryMaxDepth: number
  queryMaxAliases: number
  queryMaxDirectives: number
  queryMaxTokens: number
  queryMaxCost: number
  queryMaxBytes: number
  /** Seconds a document registered by Apollo's automatic persisted queries is kept (0: APQ off). */
  persistedQueryTtl: number
  /** Documents registered by APQ kept at most (in Redis, and in each process's memory). */
  persistedQueryMaxDocuments: number
  /**
   * TRUSTED_DOCUMENTS: the only operations executed, by hash (src/graphql/document-manifest.ts);
   * undefined: any query within the limits, and APQ.
   */
  trustedDocuments: ReadonlyMap<string, string> | undefined
  /** Largest request body accepted (413 above). */
  bodyLimitBytes: number
  /** Milliseconds to receive a whole request (Node's requestTimeout; 408 after; 0: none). */
  requestTimeoutMs: number
  /** Milliseconds a route may take to answer (503 after; 0: none). */
  handlerTimeoutMs: number
  /** Milliseconds to wait for a PostgreSQL connection, new or from the pool. */
  databaseConnectTimeoutMs: number
  /** PostgreSQL statement_timeout of the service's connections (0: none; the embedded database ignores it). */
  databaseStatementTimeoutMs: number
  /** Overload (503 with Retry-After): mean event loop delay, heap and RSS thresholds (0: not checked). */
  pressureMaxEventLoopDelayMs: number
  pressureMaxHeapMb: number
  pressureMaxRssMb: number
  /** Seconds a client is told to wait (Retry-After) when the service is overloaded. */
  pressureRetryAfter: number
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

const schema = {
  type: 'object',
  properties: {
    SCHOOL_DATA_ENV: { type: 'string', enum: ['sandbox', 'production'], default: 'sandbox' },
    HOST: { type: 'string', minLength: 1, default: '127.0.0.1' },
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 4000 },
    DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://' },
    DATABASE_POOL_SIZE: { type: 'integer', minimum: 1, maximum: 1000, default: 10 },
    DATABASE_REPLICA_URLS: { type: 'string', pattern: '^\\s*postgres(ql)?://[^,]+(,\\s*postgres(ql)?://[^,]+)*$' },
    DATA_DIR: { type: 'string', minLength: 1, default: '.data' },
    // Lengths in bytes are checked below (JSON Schema counts characters).
    JWT_SECRET: { type: 'string' },
    JWT_PREVIOUS_SECRETS: { type: 'string' },
    TRUST_PROXY: { type: 'string' },
    // Each origin is checked below (the message names the one that is not an origin).
    CORS_ORIGINS: { type: 'string' },
    // At most a day: every node must still know each access change a live token predates.
    ACCESS_TOKEN_TTL: { type: 'integer', minimum: 1, maximum: MAX_ACCESS_TOKEN_TTL, default: 900 },
    REFRESH_TOKEN_TTL: { type: 'integer', minimum: 1, default: 604800 },
    RESPONSE_CACHE_TTL: { type: 'integer', minimum: 0, maximum: 86400, default: 60 },
    RESPONSE_CACHE_MB: { type: 'integer', minimum: 1, maximum: 4096, default: 32 },
    AUDIT_FLUSH_MS: { type: 'integer', minimum: 10, maximum: 60000, default: 1000 },
    AUDIT_BATCH_SIZE: { type: 'integer', minimum: 1, maximum: 10000, default: 500 },
    AUDIT_MAX_QUEUE: { type: 'integer', minimum: 1, maximum: 10000000, default: 100000 },
    METRICS_TOKEN: { type: 'string', minLength: 16 },
    SHUTDOWN_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 600000, default: 20000 },
    SHUTDOWN_DRAIN_MS: { type: 'integer', minimum: 0, maximum: 600000, default: 5000 },
    REDIS_URL: { type: 'string', pattern: '^rediss?://' },
    REDIS_KEY_PREFIX: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{0,64}$', default: 'sds:' },
    RATE_LIMIT_USER_PER_MINUTE: { type: 'integer', minimum: 0, default: 600 },
    RATE_LIMIT_SCHOOL_PER_MINUTE: { type: 'integer', minimum: 0, default: 6000 },
    RATE_LIMIT_ADDRESS_PER_MINUTE: { type: 'integer', minimum: 0, default: 300 },
    LOGIN_FAILURES_PER_ACCOUNT: { type: 'integer', minimum: 0, maximum: 1000, default: 5 },
    LOGIN_FAILURES_PER_ADDRESS: { type: 'integer', minimum: 0, maximum: 100000, default: 100 },
    LOGIN_FAILURE_WINDOW: { type: 'integer', minimum: 1, maximum: 86400, default: 900 },
    LOGIN_LOCK_MAX: { type: 'integer', minimum: 1, maximum: 86400, default: 900 },
    QUERY_MAX_DEPTH: { type: 'integer', minimum: 1, maximum: 100, default: 6 },
    QUERY_MAX_ALIASES: { type: 'integer', minimum: 0, maximum: 10000, default: 15 },
    QUERY_MAX_DIRECTIVES: { type: 'integer', minimum: 0, maximum: 10000, default: 50 },
    QUERY_MAX_TOKENS: { type: 'integer', minimum: 10, maximum: 1000000, default: 1000 },
    QUERY_MAX_COST: { type: 'integer', minimum: 1, maximum: 100000000, default: 5000 },
    QUERY_MAX_BYTES: { type: 'integer', minimum: 100, maximum: 10485760, default: 15000 },
    PERSISTED_QUERY_TTL: { type: 'integer', minimum: 0, maximum: 2592000, default: 86400 },
    PERSISTED_QUERY_MAX_DOCUMENTS: { type: 'integer', minimum: 1, maximum: 1000000, default: 10000 },
    TRUSTED_DOCUMENTS: { type: 'string', minLength: 1 },
    BODY_LIMIT_BYTES: { type: 'integer', minimum: 1024, maximum: 104857600, default: 102400 },
    REQUEST_TIMEOUT_MS: { type: 'integer', minimum: 0, maximum: 3600000, default: 30000 },
    HANDLER_TIMEOUT_MS: { type: 'integer', minimum: 0, maximum: 3600000, default: 10000 },
    DATABASE_CONNECT_TIMEOUT_MS: { type: 'integer', minimum: 1, maximum: 600000, default: 5000 },
    DATABASE_STATEMENT_TIMEOUT_MS: { type: 'integer', minimum: 0, maximum: 3600000, default: 5000 },
    PRESSURE_MAX_EVENT_LOOP_DELAY_MS: { type: 'integer', minimum: 0, maximum: 600000, default: 1000 },
    PRESSURE_MAX_HEAP_MB: { type: 'integer', minimum: 0, maximum: 1048576, default: 0 },
    PRESSURE_MAX_RSS_MB: { type: 'integer', minimum: 0, maximum: 1048576, default: 0 },
    PRESSURE_RETRY_AFTER: { type: 'integer', minimum: 1, maximum: 3600, default: 10 },
    LOG_LEVEL: {
      type: 'string',
      enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: 'info'
    }
  }
}

interface RawEnv {
  SCHOOL_DATA_ENV: Environment
  HOST: string
  PORT: number
  DATABASE_URL?: string
  DATABASE_POOL_SIZE: number
  DATABASE_REPLICA_URLS?: string
  DATA_DIR: string
  JWT_SECRET?: string
  JWT_PREVIOUS_SECRETS?: string
  TRUST_PROXY?: string
  CORS_ORIGINS?: string
  ACCESS_TOKEN_TTL: number
  REFRESH_TOKEN_TTL: number
  LOG_LEVEL: string
  RESPONSE_CACHE_TTL: number
  RESPONSE_CACHE_MB: number
  AUDIT_FLUSH_MS: number
  AUDIT_BATCH_SIZE: number
  AUDIT_MAX_QUEUE: number
  METRICS_TOKEN?: string
  SHUTDOWN_TIMEOUT_MS: number
  SHUTDOWN_DRAIN_MS: number
  REDIS_URL?: string
  REDIS_KEY_PREFIX: string
  RATE_LIMIT_USER_PER_MINUTE: number
  RATE_LIMIT_SCHOOL_PER_MINUTE: number
  RATE_LIMIT_ADDRESS_PER_MINUTE: number
  LOGIN_FAILURES_PER_ACCOUNT: number
  LOGIN_FAILURES_PER_ADDRESS: number
  LOGIN_FAILURE_WINDOW: number
  LOGIN_LOCK_MAX: number
  QUERY_MAX_DEPTH: number
  QUERY_MAX_ALIASES: number
  QUERY_MAX_DIRECTIVES: number
  QUERY_MAX_TOKENS: number
  QUERY_MAX_COST: number
  QUERY_MAX_BYTES: number
  PERSISTED_QUERY_TTL: number
  PERSISTED_QUERY_MAX_DOCUMENTS: number
  TRUSTED_DOCUMENTS?: string
  BODY_LIMIT_BYTES: number
  REQUEST_TIMEOUT_MS: number
  HANDLER_TIMEOUT_MS: number
  DATABASE_CONNECT_TIMEOUT_MS: number
  DATABASE_STATEMENT_TIMEOUT_MS: number
  PRESSURE_MAX_EVENT_LOOP_DELAY_MS: number
  PRESSURE_MAX_HEAP_MB: number
  PRESSURE_MAX_RSS_MB: number
  PRESSURE_RETRY_AFTER: number
}

/**
 * Validates the environment. Outside production a missing JWT_SECRET is generated once and kept
 * in DATA_DIR, so tokens survive restarts of a developer's server. `needsSecret: false` is for
 * commands that sign no tokens.
 */
export function loadConfig (env: NodeJS.ProcessEnv = process.env, { needsSecret = true } = {}): Config {
  // Empty variables count as unset: `FOO= cmd` is a common way to clear one.
  const data = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''))
  let raw: RawEnv
  try {
    raw = envSchema<RawEnv>({ schema, data, env: false })
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
    env: raw.SCHOOL_DATA_ENV,
    host: raw.HOST,
    port: raw.PORT,
    databaseUrl: raw.DATABASE_URL,
    databasePoolSize: raw.DATABASE_POOL_SIZE,
    databaseReplicaUrls: raw.DATABASE_REPLICA_URLS?.split(',').map((url) => url.trim()) ?? [],
    dataDir,
    jwtSecret,
    jwtPreviousSecrets,
    trustProxy: trustProxy(raw.TRUST_PROXY),
    corsOrigins: corsOrigins(raw.CORS_ORIGINS),
    accessTokenTtl: raw.ACCESS_TOKEN_TTL,
    refreshTokenTtl: raw.REFRESH_TOKEN_TTL,
    logLevel: raw.LOG_LEVEL,
    auditFlushMs: raw.AUDIT_FLUSH_MS,
    auditBatchSize: raw.AUDIT_BATCH_SIZE,
    auditMaxQueue: raw.AUDIT_MAX_QUEUE,
    responseCacheTtl: raw.RESPONSE_CACHE_TTL,
    responseCacheMb: raw.RESPONSE_CACHE_MB,
    metricsToken: raw.METRICS_TOKEN,
    shutdownTimeoutMs: raw.SHUTDOWN_TIMEOUT_MS,
    shutdownDrainMs: raw.SHUTDOWN_DRAIN_MS,
    redisUrl: raw.REDIS_URL,
    redisKeyPrefix: raw.REDIS_KEY_PREFIX,
    rateLimitUserPerMinute: raw.RATE_LIMIT_USER_PER_MINUTE,
    rateLimitSchoolPerMinute: raw.RATE_LIMIT_SCHOOL_PER_MINUTE,
    rateLimitAddressPerMinute: raw.RATE_LIMIT_ADDRESS_PER_MINUTE,
    loginFailuresPerAccount: raw.LOGIN_FAILURES_PER_ACCOUNT,
    loginFailuresPerAddress: raw.LOGIN_FAILURES_PER_ADDRESS,
    loginFailureWindow: raw.LOGIN_FAILURE_WINDOW,
    loginLockMax: raw.LOGIN_LOCK_MAX,
    queryMaxDepth: raw.QUERY_MAX_DEPTH,
    queryMaxAliases: raw.QUERY_MAX_ALIASES,
    queryMaxDirectives: raw.QUERY_MAX_DIRECTIVES,
    queryMaxTokens: raw.QUERY_MAX_TOKENS,
    queryMaxCost: raw.QUERY_MAX_COST,
    queryMaxBytes: raw.QUERY_MAX_BYTES,
    persistedQueryTtl: raw.PERSISTED_QUERY_TTL,
    persistedQueryMaxDocuments: raw.PERSISTED_QUERY_MAX_DOCUMENTS,
    trustedDocuments,
    bodyLimitBytes: raw.BODY_LIMIT_BYTES,
    requestTimeoutMs: raw.REQUEST_TIMEOUT_MS,
    handlerTimeoutMs: raw.HANDLER_TIMEOUT_MS,
    databaseConnectTimeoutMs: raw.DATABASE_CONNECT_TIMEOUT_MS,
    databaseStatementTimeoutMs: raw.DATABASE_STATEMENT_TIMEOUT_MS,
    pressureMaxEventLoopDelayMs: raw.PRESSURE_MAX_EVENT_LOOP_DELAY_MS,
    pressureMaxHeapMb: raw.PRESSURE_MAX_HEAP_MB,
    pressureMaxRssMb: raw.PRESSURE_MAX_RSS_MB,
    pressureRetryAfter: raw.PRESSURE_RETRY_AFTER
  }
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
