// Administration of schools: creating one, with its optional details. Used by the CLI, the demo
// seed and tests.
import type { Database } from '../db/client.js'
import type { Prisma } from '../generated/prisma/client.js'
import { AdminError, requireText } from '../records/errors.js'

/** A school's optional details (see the School model). */
export interface SchoolDetails {
  timeZone?: string | undefined
  addressLine1?: string | undefined
  addressLine2?: string | undefined
  city?: string | undefined
  region?: string | undefined
  postalCode?: string | undefined
  country?: string | undefined
  phone?: string | undefined
  website?: string | undefined
}

function requireTimeZone (zone: string): string {
  try {
    // Intl knows the IANA names (and refuses others with a RangeError).
    return new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone
  } catch {
    throw new AdminError(`Time zone "${zone}" is not an IANA time zone name (e.g. America/Chicago)`)
  }
}

export async function createSchool (db: Database, name: string, details: SchoolDetails = {}): Promise<string> {
  const data: Prisma.SchoolCreateInput = { name: requireText('School name', name) }
  if (details.timeZone !== undefined) data.timeZone = requireTimeZone(details.timeZone)
  if (details.country !== undefined) {
    if (!/^[A-Za-z]{2}$/.test(details.country)) throw new AdminError(`Country must be an ISO 3166-1 alpha-2 code such as US (got "${details.country}")`)
    data.country = details.country.toUpperCase()
  }
  for (const key of ['addressLine1', 'addressLine2', 'city', 'region', 'postalCode', 'phone', 'website'] as const) {
    const value = details[key]
    if (value !== undefined) data[key] = requireText(key, value)
  }
  const school = await db.prisma.school.create({ data, select: { id: true } })
  return school.id
}
