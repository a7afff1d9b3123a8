import { badUserInput } from './errors.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Record ids are UUIDs; anything else is refused with BAD_USER_INPUT before reaching the database. */
export function requireUuid (id: string, argument = 'id'): string {
  if (!UUID.test(id)) throw badUserInput(`${argument} must be a UUID (got ${JSON.stringify(id.slice(0, 64))})`)
  return id.toLowerCase()
}
