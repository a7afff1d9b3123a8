// Opaque random credentials (refresh tokens, client secrets): 256 random bits, base64url. Only
// their SHA-256 is stored, so a database leak leaks nothing usable. A slow password hash (argon2)
// adds nothing here: it guards guessable secrets, and 256 random bits cannot be guessed.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** The form of every token randomToken() makes: 32 bytes, base64url without padding. */
export const OPAQUE_TOKEN = /^[A-Za-z0-9_-]{43}$/

export function randomToken (): string {
  return randomBytes(32).toString('base64url')
}

export function tokenDigest (token: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(createHash('sha256').update(token).digest())
}

/** Whether two digests are equal, in a time that does not depend on where they differ. */
export function sameDigest (a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b)
}
