// Password storage: argon2id with OWASP's minimum parameters (19 MiB, 2 passes, 1 lane).
import { randomBytes } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { hash, verify, type Options } from '@node-rs/argon2'
import pLimit from 'p-limit'
import { isStorableText, NUL_REFUSED } from '../validators.js'

// `Algorithm.Argon2id`; the package exports it as a const enum, which isolated modules cannot inline.
const ARGON2ID = 2
const OPTIONS: Options = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 }

/**
 * Hashes run at most this many at once (each takes 19 MiB for tens of milliseconds); the others
 * wait their turn. A burst of logins then costs bounded memory and leaves CPU for reads.
 */
const hashing = pLimit(Math.max(2, availableParallelism()))

/** argon2 work done by this process (for metrics, and tests that check every login costs the same). */
export const passwordWork = { verifications: 0, hashes: 0 }

async function argon2Verify (hashed: string, password: string): Promise<boolean> {
  passwordWork.verifications += 1
  return await verify(hashed, password)
}

async function argon2Hash (password: string | Buffer): Promise<string> {
  passwordWork.hashes += 1
  return await hash(password, OPTIONS)
}

/** Longer passwords are refused: hashing them would only cost time (a denial-of-service lever). */
export const MAX_PASSWORD_LENGTH = 256
export const MIN_PASSWORD_LENGTH = 8

export class PasswordPolicyError extends Error {
  override name = 'PasswordPolicyError'
}

export function checkPasswordPolicy (password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new PasswordPolicyError(`The password must have at least ${MIN_PASSWORD_LENGTH} characters`)
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw new PasswordPolicyError(`The password must have at most ${MAX_PASSWORD_LENGTH} characters`)
  }
  // Hashed, a NUL would be stored well; but login refuses it, as every text argument of the API.
  if (!isStorableText(password)) throw new PasswordPolicyError(`The password ${NUL_REFUSED}`)
}

export async function hashPassword (password: string): Promise<string> {
  checkPasswordPolicy(password)
  return await hashing(() => argon2Hash(password))
}

/** A password that just verified, hashed under today's parameters (no policy: it is already in use). */
export async function rehashPassword (password: string): Promise<string> {
  return await hashing(() => argon2Hash(password))
}

const PHC = /^\$(argon2(?:id|i|d))\$v=(\d+)\$m=(\d+),t=(\d+),p=(\d+)\$/

/**
 * True when a stored hash was made with other parameters than today's (an older policy, or another
 * argon2 variant): login then stores the password anew (argon2-cffi's check_needs_rehash rule).
 */
export function needsRehash (storedHash: string): boolean {
  const m = PHC.exec(storedHash)
  if (m === null) return true
  return m[1] !== 'argon2id' || Number(m[2]) !== 19 || Number(m[3]) !== OPTIONS.memoryCost ||
    Number(m[4]) !== OPTIONS.timeCost || Number(m[5]) !== OPTIONS.parallelism
}

let decoy: Promise<string> | undefined

/**
 * Makes the decoy hash ahead of the first login, which would otherwise pay for it and so tell an
 * unknown username apart once.
 */
export async function prepareDecoy (): Promise<void> {
  decoy ??= argon2Hash(randomBytes(32))
  try {
    await decoy
  } catch (err) {
    decoy = undefined // the next caller tries again
    throw err
  }
}

/**
 * Checks a password against a stored hash, or, when there is no user, against a decoy hash of
 * the same parameters, so an unknown username costs the same time as a wrong password.
 */
export async function verifyPassword (storedHash: string | undefined, password: string): Promise<boolean> {
  // Refused unhashed whoever the user is: the answer stays the same, only its cost is spared.
  if (password.length > MAX_PASSWORD_LENGTH) return false
  if (storedHash === undefined) {
    await prepareDecoy()
    const decoyHash = await decoy!
    await hashing(() => argon2Verify(decoyHash, password))
    return false
  }
  try {
    return await hashing(() => argon2Verify(storedHash, password))
  } catch {
    return false
  }
}
