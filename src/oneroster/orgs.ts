// The caller's school as the binding's org (OrgDType, type school): read through the school client
// (wall 1 admits the caller's own school only, wall 2 its row), as the GraphQL `school` field reads
// it. A collection of one record: the filter is evaluated on the answer itself, with the same
// grammar (filter.ts) and comparisons as the users' statements.
import type { Predicate } from '../db/typed-reads.js'
import type { SchoolDb } from '../db/school-client.js'
import { compareValues } from './filter.js'
import { ORG_FIELDS, parseDateTime, type SchoolRow } from './kinds.js'
import type { CollectionQuery } from './query.js'
import { OneRosterError } from './status-info.js'

const NAMES = Object.keys(ORG_FIELDS)

/** The caller's school's columns an org answers. */
export async function schoolRow (db: SchoolDb): Promise<SchoolRow> {
  return await db.school.findFirstOrThrow({ select: { id: true, name: true, updatedAt: true } })
}

function selectedOrgFields (fields: readonly string[] | undefined): string[] {
  if (fields === undefined) return NAMES
  for (const name of fields) {
    if (!NAMES.includes(name)) throw new OneRosterError('invalid_selection_field', `fields: ${name} is not a field of orgs this service answers (${NAMES.join(', ')})`)
  }
  return NAMES.filter((name) => fields.includes(name))
}

/** The school as an org with the selected fields. */
export function orgAnswer (school: SchoolRow, fields: readonly string[] | undefined): Record<string, string> {
  return Object.fromEntries(selectedOrgFields(fields).map((name) => [name, ORG_FIELDS[name]!.answer(school)]))
}

function holds (predicate: Predicate, school: SchoolRow): boolean {
  switch (predicate.kind) {
    case 'constant': return predicate.value
    case 'all': return predicate.parts.every((part) => holds(part, school))
    case 'any': return predicate.parts.some((part) => holds(part, school))
    case 'compare': {
      const field = ORG_FIELDS[predicate.field]
      if (field === undefined) throw new OneRosterError('invalid_filter_field', `filter: ${predicate.field} is not a field of orgs this service filters by (${NAMES.join(', ')})`)
      if (field.date === true) return compareValues(school.updatedAt.getTime(), predicate.op, parseDateTime('dateLastModified', predicate.op, predicate.value).getTime())
      return compareValues(field.answer(school), predicate.op, predicate.value)
    }
  }
}

/** The orgs of a collection request: the school, when the filter holds for it and the page reaches it. */
export function orgsPage (school: SchoolRow, query: CollectionQuery): { orgs: Array<Record<string, string>>, total: number } {
  if (query.sort !== undefined && !NAMES.includes(query.sort)) {
    throw new OneRosterError('invalid_filter_field', `sort: ${query.sort} is not a field of orgs this service sorts by (${NAMES.join(', ')})`)
  }
  const fields = selectedOrgFields(query.fields)
  const total = query.filter === undefined || holds(query.filter, school) ? 1 : 0
  return { orgs: total > query.offset ? [orgAnswer(school, fields)] : [], total }
}
