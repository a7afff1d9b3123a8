// Validators of client and operator input, each defined once.

/** A UUID in its text form (any case); PostgreSQL's uuid type accepts exactly these (and more). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const isUuid = (text: string): boolean => UUID.test(text)

/**
 * A UUID in the one form the service compares and stores (lower case; RFC 9562 §4: UUIDs are read
 * in any case), or undefined for text that is not one. Every id taken from outside goes through it.
 */
export function parseUuid (text: string): string | undefined {
  return UUID.test(text) ? text.toLowerCase() : undefined
}

/** An HS256 key should be at least as long as the hash (RFC 7518 §3.2); counted in UTF-8 bytes. */
export const MIN_SECRET_BYTES = 32

export const secretTooShort = (secret: string): boolean => Buffer.byteLength(secret, 'utf8') < MIN_SECRET_BYTES

/** PostgreSQL's text holds any Unicode but NUL (U+0000): such a parameter fails the statement. */
export const isStorableText = (text: string): boolean => !text.includes('\u0000')

/** What is said of a text refused for its NUL, wherever one is (after what the text is). */
export const NUL_REFUSED = 'must not contain a NUL character (U+0000)'

/**
 * The paths of the texts in `value`, nested in arrays and objects (a request's arguments, a file's
 * records), that PostgreSQL cannot store; each path starts with `path`.
 */
export function unstorableTexts (value: unknown, path: ReadonlyArray<string | number> = []): Array<Array<string | number>> {
  if (typeof value === 'string') return isStorableText(value) ? [] : [[...path]]
  if (Array.isArray(value)) return value.flatMap((item: unknown, i) => unstorableTexts(item, [...path, i]))
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    return Object.entries(value).flatMap(([key, inner]) => unstorableTexts(inner, [...path, key]))
  }
  return []
}

/** An ISO 8601 UTC timestamp as toISOString writes it, within PostgreSQL's timestamptz (years 1 to 9999). */
const ISO_TIMESTAMP = /^(\d{4})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The instant of an ISO 8601 UTC timestamp written by toISOString, or null for any other text. */
export function parseTimestamp (text: string): Date | null {
  const match = ISO_TIMESTAMP.exec(text)
  if (match === null || Number(match[1]) < 1) return null
  const date = new Date(text)
  return Number.isNaN(date.getTime()) || date.toISOString() !== text ? null : date
}
