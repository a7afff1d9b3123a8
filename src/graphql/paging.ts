import { badUserInput } from './errors.js'

export const DEFAULT_LIMIT = 100
export const MAX_LIMIT = 1000

/** The number of records a list returns for its `limit` argument. */
export function pageSize (limit: number | null | undefined): number {
  if (limit === null || limit === undefined) return DEFAULT_LIMIT
  if (limit < 0 || limit > MAX_LIMIT) {
    throw badUserInput(`limit must be between 0 and ${MAX_LIMIT} (got ${limit})`)
  }
  return limit
}
