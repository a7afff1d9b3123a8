import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { configKey, ENV_SCHEMA, loadConfig, type EnvName } from '../src/config.js'

const tempDir = (t: { teardown: (fn: () => void) => void }): string => {
  const dir = mkdtempSync(join(tmpdir(), 'sds-config-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('defaults follow the contract', async (t) => {
  const config = loadConfig({ DATA_DIR: tempDir(t) })
  t.equal(config.env, 'sandbox')
  t.equal(config.host, '127.0.0.1')
  t.equal(config.port, 4000)
  t.equal(config.accessTokenTtl, 900)
  t.equal(config.refreshTokenTtl, 604800)
  t.equal(config.databaseUrl, undefined)
})

t.test('values are read and coerced from the environment', async (t) => {
  const config = loadConfig({
    PORT: '8080',
    HOST: '0.0.0.0',
    ACCESS_TOKEN_TTL: '60',
    REFRESH_TOKEN_TTL: '3600',
    DATABASE_URL: 'postgresql://app@db:5432/school',
    JWT_SECRET: 's'.repeat(32),
    SCHOOL_DATA_ENV: 'production',
    DATABASE_POOL_SIZE: '30'
  })
  t.match(config, { port: 8080, host: '0.0.0.0', accessTokenTtl: 60, refreshTokenTtl: 3600, env: 'production', databaseUrl: 'postgresql://app@db:5432/school', databasePoolSize: 30 })
})

t.test('bad configuration stops with a message naming the variable', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'eighty' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ ACCESS_TOKEN_TTL: '0' }, /ACCESS_TOKEN_TTL/],
    // Longer than access changes can be relied on to be kept (test/access-changes-retention).
    [{ ACCESS_TOKEN_TTL: '86401' }, /ACCESS_TOKEN_TTL must be <= 86400/],
    [{ REFRESH_TOKEN_TTL: '-5' }, /REFRESH_TOKEN_TTL/],
    [{ SHUTDOWN_DRAIN_MS: '20000' }, /SHUTDOWN_DRAIN_MS \(20000\) must be less than SHUTDOWN_TIMEOUT_MS/],
    [{ SCHOOL_DATA_ENV: 'staging' }, /SCHOOL_DATA_ENV/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
    [{ DATABASE_POOL_SIZE: '0' }, /DATABASE_POOL_SIZE/],
    [{ JWT_SECRET: 'short' }, /JWT_SECRET/],
    [{ SCHOOL_DATA_ENV: 'production' }, /JWT_SECRET is required/],
    [{ PERSISTED_QUERY_TTL: '-1' }, /PERSISTED_QUERY_TTL/],
    [{ PERSISTED_QUERY_MAX_DOCUMENTS: '0' }, /PERSISTED_QUERY_MAX_DOCUMENTS/],
    // The manifest's own checks: persisted-queries.test.ts.
    [{ TRUSTED_DOCUMENTS: 'no-such-persisted-documents.json' }, /TRUSTED_DOCUMENTS: cannot read/]
  ]
  for (const [env, message] of cases) {
    t.throws(() => loadConfig({ DATA_DIR: tempDir(t), ...env }), { name: 'ConfigError', message }, JSON.stringify(env))
  }
})

t.test('outside production a JWT secret is generated once and kept in the data folder', async (t) => {
  const dir = tempDir(t)
  const first = loadConfig({ DATA_DIR: dir })
  const second = loadConfig({ DATA_DIR: dir })
  t.ok(first.jwtSecret.length >= 32)
  t.equal(second.jwtSecret, first.jwtSecret)
  t.equal(readFileSync(join(dir, 'jwt-secret'), 'utf8').trim(), first.jwtSecret)
  t.equal(statSync(join(dir, 'jwt-secret')).mode & 0o777, 0o600, 'readable by its owner only')
})

t.test('CORS_ORIGINS: comma-separated exact origins, none by default; anything else stops start-up naming it', async (t) => {
  const dir = tempDir(t)
  t.same(loadConfig({ DATA_DIR: dir }).corsOrigins, [])
  t.same(loadConfig({ DATA_DIR: dir, CORS_ORIGINS: 'https://app.example.org, http://localhost:5173,https://app.example.org' }).corsOrigins,
    ['https://app.example.org', 'http://localhost:5173'])
  for (const bad of ['*', 'app.example.org', 'https://app.example.org/', 'https://app.example.org/path', 'ftp://files.example.org', 'https://a.example.org,null']) {
    t.throws(() => loadConfig({ DATA_DIR: dir, CORS_ORIGINS: bad }), { name: 'ConfigError', message: /^Invalid configuration: CORS_ORIGINS must be comma-separated origins/ }, bad)
  }
})

const variables = Object.keys(ENV_SCHEMA.properties) as EnvName[]

t.test('the configuration holds one value per variable of the schema, under its camel-case name', async (t) => {
  const config = loadConfig({ DATA_DIR: tempDir(t) })
  t.same(Object.keys(config).sort(), variables.map(configKey).sort())
  t.equal(configKey('DATABASE_POOL_SIZE'), 'databasePoolSize')
  t.equal(configKey('SCHOOL_DATA_ENV'), 'env')
})

t.test('the configuration table (docs/running/configuration.md) lists every variable of the schema, with its default', async (t) => {
  const section = readFileSync(new URL('../docs/running/configuration.md', import.meta.url), 'utf8')
  const listed = new Map<string, string | undefined>()
  for (const row of section.split('\n').filter((line) => /^\| `[A-Z_]+`/.test(line))) {
    const [names = '', defaults = ''] = row.split('|').slice(1).map((cell) => cell.trim())
    const keys = [...names.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]!)
    // A default written as code values, one per variable of the row: compared with the schema's.
    const values = /^`[^`]*`(, `[^`]*`)*$/.test(defaults) ? [...defaults.matchAll(/`([^`]*)`/g)].map((m) => m[1]!) : []
    keys.forEach((key, i) => listed.set(key, values.length === keys.length ? values[i] : undefined))
  }
  t.same([...listed.keys()].sort(), [...variables].sort())
  for (const name of variables) {
    const fallback = (ENV_SCHEMA.properties[name] as { default?: string | number | boolean }).default
    if (fallback !== undefined) t.equal(listed.get(name), String(fallback), `${name}'s default`)
  }
})
