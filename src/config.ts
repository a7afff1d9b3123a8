// The one place that reads the environment. Everything else receives a validated Config.
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import envSchema from 'env-schema'

export type Environment = 'sandbox' | 'production'

export interface Config {
  env: Environment
  host: string
  port: number
  /** PostgreSQL server; undefined means the embedded database under dataDir. */
  databaseUrl: string | undefined
  /** Connections in the PostgreSQL pool of each API process. */
  databasePoolSize: number
  dataDir: string
  jwtSecret: string
  accessTokenTtl: number
  refreshTokenTtl: number
  logLevel: string
  /** Seconds an answer to a read may be reused (0: no response cache). */
  responseCacheTtl: number
  /** Megabytes of answers each API process may keep. */
  responseCacheMb: number
  /** Bearer token GET /metrics requires; unset: open (sandbox) or not served (production). */
  metricsToken: string | undefined
  /** Milliseconds SIGTERM waits for in-flight requests before exiting with status 1. */
  shutdownTimeoutMs: number
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
    DATA_DIR: { type: 'string', minLength: 1, default: '.data' },
    JWT_SECRET: { type: 'string', minLength: 32 },
    ACCESS_TOKEN_TTL: { type: 'integer', minimum: 1, default: 900 },
    REFRESH_TOKEN_TTL: { type: 'integer', minimum: 1, default: 604800 },
    RESPONSE_CACHE_TTL: { type: 'integer', minimum: 0, maximum: 86400, default: 60 },
    RESPONSE_CACHE_MB: { type: 'integer', minimum: 1, maximum: 4096, default: 32 },
    METRICS_TOKEN: { type: 'string', minLength: 16 },
    SHUTDOWN_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 600000, default: 10000 },
    REDIS_URL: { type: 'string', pattern: '^rediss?://' },
    REDIS_KEY_PREFIX: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{0,64}$', default: 'sds:' },
    RATE_LIMIT_USER_PER_MINUTE: { type: 'integer', minimum: 0, default: 600 },
    RATE_LIMIT_SCHOOL_PER_MINUTE: { type: 'integer', minimum: 0, default: 6000 },
    RATE_LIMIT_ADDRESS_PER_MINUTE: { type: 'integer', minimum: 0, default: 300 },
    LOGIN_FAILURES_PER_ACCOUNT: { type: 'integer', minimum: 0, maximum: 1000, default: 5 },
    LOGIN_FAILURES_PER_ADDRESS: { type: 'integer', minimum: 0, maximum: 100000, default: 100 },
    LOGIN_FAILURE_WINDOW: { type: 'integer', minimum: 1, maximum: 86400, default: 900 },
    LOGIN_LOCK_MAX: { type: 'integer', minimum: 1, maximum: 86400, default: 900 },
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
  DATA_DIR: string
  JWT_SECRET?: string
  ACCESS_TOKEN_TTL: number
  REFRESH_TOKEN_TTL: number
  LOG_LEVEL: string
  RESPONSE_CACHE_TTL: number
  RESPONSE_CACHE_MB: number
  METRICS_TOKEN?: string
  SHUTDOWN_TIMEOUT_MS: number
  REDIS_URL?: string
  REDIS_KEY_PREFIX: string
  RATE_LIMIT_USER_PER_MINUTE: number
  RATE_LIMIT_SCHOOL_PER_MINUTE: number
  RATE_LIMIT_ADDRESS_PER_MINUTE: number
  LOGIN_FAILURES_PER_ACCOUNT: number
  LOGIN_FAILURES_PER_ADDRESS: number
  LOGIN_FAILURE_WINDOW: number
  LOGIN_LOCK_MAX: number
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
  const dataDir = resolve(raw.DATA_DIR)
  let jwtSecret = raw.JWT_SECRET
  if (jwtSecret === undefined && !needsSecret) {
    // Commands that issue no tokens (the CLI's data commands) neither need nor create a secret.
    jwtSecret = ''
  } else if (jwtSecret === undefined) {
    if (raw.SCHOOL_DATA_ENV === 'production') {
      throw new ConfigError('Invalid configuration: JWT_SECRET is required when SCHOOL_DATA_ENV=production (at least 32 characters)')
    }
    jwtSecret = localSecret(dataDir)
  }
  return {
    env: raw.SCHOOL_DATA_ENV,
    host: raw.HOST,
    port: raw.PORT,
    databaseUrl: raw.DATABASE_URL,
    databasePoolSize: raw.DATABASE_POOL_SIZE,
    dataDir,
    jwtSecret,
    accessTokenTtl: raw.ACCESS_TOKEN_TTL,
    refreshTokenTtl: raw.REFRESH_TOKEN_TTL,
    logLevel: raw.LOG_LEVEL,
    responseCacheTtl: raw.RESPONSE_CACHE_TTL,
    responseCacheMb: raw.RESPONSE_CACHE_MB,
    metricsToken: raw.METRICS_TOKEN,
    shutdownTimeoutMs: raw.SHUTDOWN_TIMEOUT_MS,
    redisUrl: raw.REDIS_URL,
    redisKeyPrefix: raw.REDIS_KEY_PREFIX,
    rateLimitUserPerMinute: raw.RATE_LIMIT_USER_PER_MINUTE,
    rateLimitSchoolPerMinute: raw.RATE_LIMIT_SCHOOL_PER_MINUTE,
    rateLimitAddressPerMinute: raw.RATE_LIMIT_ADDRESS_PER_MINUTE,
    loginFailuresPerAccount: raw.LOGIN_FAILURES_PER_ACCOUNT,
    loginFailuresPerAddress: raw.LOGIN_FAILURES_PER_ADDRESS,
    loginFailureWindow: raw.LOGIN_FAILURE_WINDOW,
    loginLockMax: raw.LOGIN_LOCK_MAX
  }
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
