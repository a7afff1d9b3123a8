import { parseUuid } from '../validators.js'
import { badUserInput } from './errors.js'

/** Record ids are UUIDs; anything else is refused with BAD_USER_INPUT before reaching the database. */
export function requireUuid (id: string, argument = 'id'): string {
  const uuid = parseUuid(id)
  if (uuid === undefined) throw badUserInput(`${argument} must be a UUID (got ${JSON.stringify(id.slice(0, 64))})`)
  return uuid
}
