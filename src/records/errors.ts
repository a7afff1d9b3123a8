// The refusal of a write (AdminError: bad input, a record or link not there, a conflict with what
// is there, a version moved on) and the small checks of what an operator or a client gives. Shared
// by the record writes (src/records/) and the operators' work (src/admin/); the GraphQL layer turns
// an AdminError into the coded error a client sees (src/graphql/errors.ts).
import { parseUuid } from '../validators.js'

/**
 * What an AdminError is about: bad input; a record (or link) that is not there; a conflict with what
 * is there (a natural key taken, a classroom with students); a record that moved on from the
 * version a change was based on.
 */
export type AdminErrorCode = 'BAD_USER_INPUT' | 'NOT_FOUND' | 'CONFLICT' | 'VERSION_CONFLICT'

/** One invalid field of a write: where it is in the input (e.g. `['input', 'email']`) and why. */
export interface InvalidField {
  path: Array<string | number>
  message: string
}

export interface AdminErrorDetails {
  /** BAD_USER_INPUT of a write: every invalid field, each with its path. */
  invalid?: InvalidField[]
  /** VERSION_CONFLICT: the record's version now. */
  currentVersion?: number
}

export class AdminError extends Error {
  override name = 'AdminError'
  constructor (message: string, readonly code: AdminErrorCode = 'BAD_USER_INPUT', readonly details: AdminErrorDetails = {}) {
    super(message)
  }
}

export function requireText (label: string, value: string, max = 200): string {
  const text = value.trim()
  if (text === '') throw new AdminError(`${label} must not be empty`)
  if (text.length > max) throw new AdminError(`${label} must have at most ${max} characters`)
  return text
}

/** An id an operator gave (`label`: School, Teacher...), in its one form (lower case). */
export function requireId (label: string, text: string): string {
  const id = parseUuid(text)
  if (id === undefined) throw new AdminError(`${label} id "${text}" is not a UUID`)
  return id
}
