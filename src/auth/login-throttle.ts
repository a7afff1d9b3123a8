// Login throttling per account and per client address, with growing lock times.
//
// Every attempt counts as a failure from the moment it starts (before the password is checked), so
// concurrent or aliased attempts cannot slip past the limit while their hashes are computed. After
// `max` counted failures within the window, each further attempt locks the key for 1 s, 2 s, 4 s
// ... up to the cap; a locked key refuses attempts without checking the password (refusals do not
// extend the lock). A successful login forgets the account's failures and gives the address back
// the one attempt it counted (so a user's own successes cannot wash out an address's failures).
//
// The counters live in Redis when one is configured (shared by every API node, one Lua script per
// step, Redis's clock) and in a bounded LRU in memory otherwise. When Redis fails, this process's
// memory counters take over until it answers again: login stays available and still throttled,
// per node instead of across nodes.
import { createHash } from 'node:crypto'
import { normalizeIP } from '@fastify/rate-limit'
import type { Redis } from 'ioredis'
import { LRUCache } from 'lru-cache'
import { normalizeUsername } from './auth-service.js'

export interface LoginThrottleOptions {
  /** Counted failures per account before locks begin; 0 turns the account counter off. */
  accountMax: number
  /** Counted failures per client address before locks begin; 0 turns the address counter off. */
  addressMax: number
  /** Failures are forgotten this long after a key's last attempt. */
  windowMs: number
  /** The longest lock. */
  lockMaxMs: number
  /** The first lock (doubled for each further failure). */
  lockBaseMs?: number
  /** Keys the memory store keeps at most (least recently used first out). */
  memoryKeys?: number
  /** Called when Redis fails and the memory counters answer instead. */
  onStoreError?: (err: unknown) => void
  /**
   * What is throttled, the first part of every key: `login` (users' logins, the default) or
   * `client-auth` (clients' authentications at the token endpoint, by client id).
   */
  prefix?: string
}

export type LoginAttempt =
  | { allowed: true, succeeded: () => Promise<void> }
  | { allowed: false, retryAfterMs: number }

export interface LoginThrottle {
  readonly enabled: boolean
  /** Counts one attempt for the account and the address; refused while either is locked. */
  attempt (username: string, address: string): Promise<LoginAttempt>
}

/** One counter: its key and its threshold (0: off). */
interface Counter { key: string, max: number }

interface Limits { windowMs: number, lockBaseMs: number, lockMaxMs: number }

/** Where the counters live: in memory or in Redis. */
export interface ThrottleStore {
  /** Refusal wait in ms when a counter is locked (nothing counted); else counts one on each, 0. */
  begin (counters: Counter[], limits: Limits): Promise<number>
  /** A success: the account's counter is forgotten, the address's gets its attempt back. */
  succeed (account: Counter, address: Counter): Promise<void>
}

function lockMs (count: number, max: number, { lockBaseMs, lockMaxMs }: Limits): number {
  return Math.min(lockBaseMs * 2 ** (count - max), lockMaxMs)
}

interface Entry { n: number, until: number, expires: number }

export class MemoryThrottleStore implements ThrottleStore {
  private readonly entries: LRUCache<string, Entry>

  constructor (maxKeys = 100_000) {
    this.entries = new LRUCache({ max: maxKeys })
  }

  private live (key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key)
    if (entry !== undefined && entry.expires <= now) {
      this.entries.delete(key)
      return undefined
    }
    return entry
  }

  async begin (counters: Counter[], limits: Limits): Promise<number> {
    const now = Date.now()
    let wait = 0
    for (const { key, max } of counters) {
      if (max <= 0) continue
      const entry = this.live(key, now)
      if (entry !== undefined && entry.until > now) wait = Math.max(wait, entry.until - now)
    }
    if (wait > 0) return wait
    for (const { key, max } of counters) {
      if (max <= 0) continue
      const entry = this.live(key, now) ?? { n: 0, until: 0, expires: 0 }
      entry.n += 1
      let ttl = limits.windowMs
      if (entry.n >= max) {
        const lock = lockMs(entry.n, max, limits)
        entry.until = now + lock
        ttl = Math.max(ttl, lock)
      }
      entry.expires = now + ttl
      this.entries.set(key, entry)
    }
    return 0
  }

  async succeed (account: Counter, address: Counter): Promise<void> {
    if (account.max > 0) this.entries.delete(account.key)
    if (address.max <= 0) return
    const entry = this.live(address.key, Date.now())
    if (entry === undefined) return
    entry.n -= 1
    if (entry.n <= 0) this.entries.delete(address.key)
    else if (entry.n < address.max) entry.until = 0
  }
}

// KEYS: the counters; ARGV: window, base, cap, then each key's threshold. Returns the wait (ms)
// when a counter is locked, else 0 after counting. Redis's clock, so nodes' clocks need not agree.
const BEGIN = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local base = tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
local wait = 0
for i, key in ipairs(KEYS) do
  if tonumber(ARGV[3 + i]) > 0 then
    local u = tonumber(redis.call('HGET', key, 'until') or '0')
    if u - now > wait then wait = u - now end
  end
end
if wait > 0 then return wait end
for i, key in ipairs(KEYS) do
  local max = tonumber(ARGV[3 + i])
  if max > 0 then
    local n = redis.call('HINCRBY', key, 'n', 1)
    local ttl = window
    if n >= max then
      local lock = math.min(base * 2 ^ (n - max), cap)
      redis.call('HSET', key, 'until', math.floor(now + lock))
      if lock > ttl then ttl = lock end
    end
    redis.call('PEXPIRE', key, math.floor(ttl))
  end
end
return 0
`

// KEYS: account, address; ARGV: account threshold, address threshold.
const SUCCEED = `
if tonumber(ARGV[1]) > 0 then redis.call('DEL', KEYS[1]) end
local max = tonumber(ARGV[2])
if max > 0 and redis.call('EXISTS', KEYS[2]) == 1 then
  local n = redis.call('HINCRBY', KEYS[2], 'n', -1)
  if n <= 0 then
    redis.call('DEL', KEYS[2])
  elseif n < max then
    redis.call('HDEL', KEYS[2], 'until')
  end
end
return 0
`

interface ThrottleCommands {
  sdsLoginBegin (...args: Array<string | number>): Promise<number>
  sdsLoginSucceed (...args: Array<string | number>): Promise<number>
}

export class RedisThrottleStore implements ThrottleStore {
  private readonly redis: Redis & ThrottleCommands

  constructor (redis: Redis) {
    this.redis = redis as Redis & ThrottleCommands
    // The client's key prefix applies to these keys too; EVALSHA, with EVAL on a script cache miss.
    if (typeof this.redis.sdsLoginBegin !== 'function') {
      redis.defineCommand('sdsLoginBegin', { numberOfKeys: 2, lua: BEGIN })
      redis.defineCommand('sdsLoginSucceed', { numberOfKeys: 2, lua: SUCCEED })
    }
  }

  async begin (counters: Counter[], limits: Limits): Promise<number> {
    const [a, b] = counters as [Counter, Counter]
    return Number(await this.redis.sdsLoginBegin(a.key, b.key, limits.windowMs, limits.lockBaseMs, limits.lockMaxMs, a.max, b.max))
  }

  async succeed (account: Counter, address: Counter): Promise<void> {
    await this.redis.sdsLoginSucceed(account.key, address.key, account.max, address.max)
  }
}

/** The account as login compares it; hashed, so keys are short and hold no usernames. */
function accountKey (prefix: string, username: string): string {
  return `${prefix}:account:` + createHash('sha256').update(normalizeUsername(username)).digest('base64url').slice(0, 32)
}

/** IPv6 addresses count by /64, as one host usually holds a whole /64. */
function addressKey (prefix: string, address: string): string {
  return `${prefix}:address:` + normalizeIP(address, 64)
}

export function createLoginThrottle (redis: Redis | undefined, options: LoginThrottleOptions): LoginThrottle {
  const limits: Limits = { windowMs: options.windowMs, lockBaseMs: options.lockBaseMs ?? 1000, lockMaxMs: options.lockMaxMs }
  const memory = new MemoryThrottleStore(options.memoryKeys)
  const shared = redis === undefined ? undefined : new RedisThrottleStore(redis)
  const onStoreError = options.onStoreError ?? (() => {})
  // Redis first; when it fails, this process's memory counters answer (and keep counting).
  const begin = async (counters: Counter[]): Promise<[wait: number, store: ThrottleStore]> => {
    if (shared !== undefined) {
      try {
        return [await shared.begin(counters, limits), shared]
      } catch (err) {
        onStoreError(err)
      }
    }
    return [await memory.begin(counters, limits), memory]
  }
  const enabled = options.accountMax > 0 || options.addressMax > 0
  const prefix = options.prefix ?? 'login'
  const allowed: LoginAttempt = { allowed: true, succeeded: async () => {} }

  return {
    enabled,
    async attempt (username, address) {
      if (!enabled) return allowed
      const account = { key: accountKey(prefix, username), max: options.accountMax }
      const client = { key: addressKey(prefix, address), max: options.addressMax }
      const [wait, store] = await begin([account, client])
      if (wait > 0) return { allowed: false, retryAfterMs: wait }
      return {
        allowed: true,
        // The store that counted the attempt gives it back; a failure leaves it counted.
        succeeded: () => store.succeed(account, client).catch(onStoreError)
      }
    }
  }
}
