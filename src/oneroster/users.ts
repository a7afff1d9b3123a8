// Users, students, teachers and agents (the binding's UserDType), read through the record kinds' one read
// path (src/records/lists.ts: typed statements on the caller's school client, both walls, a
// teacher's reach): the filter, sort and fields of a request turned into a kind's columns
// (kinds.ts), a page by offset with its total, and one record by sourcedId. /users holds three
// tables: students, teachers and agents (guardians, parents, relatives), each read in the order
// asked and merged; a delta's deletions (deletions.ts) are merged in the same way.
import type { SchoolDb } from '../db/school-client.js'
import type { ListCondition, Predicate } from '../db/typed-reads.js'
import { readRowsCounted } from '../records/lists.js'
import { compareSorted, mergedPage, sortValue, type Sorted } from './merge.js'
import { deletedUsers, sortValueOf, tombstoneAnswer, type Tombstone } from './deletions.js'
import { mapComparisons, simplify } from './filter.js'
import { answerOf, readable, readBySourcedId } from './records.js'
import { USER_FIELDS, type AnswerContext, type BindingField, type Kind } from './kinds.js'
import type { CollectionQuery } from './query.js'
import { OneRosterError } from './status-info.js'

type Row = Record<string, unknown>

/** Every field and dotted path of the user kinds: what a filter or sort may name on any user endpoint. */
function knownFields (kinds: readonly Kind[]): Set<string> {
  return new Set(kinds.flatMap((kind) => Object.keys(kind.fields)))
}

/** A field's columns the caller may not read, as the refusal says it (`email needs roster.readonly`). */
function outOfScope (db: SchoolDb, kind: Kind, name: string, field: BindingField, what: string): OneRosterError | undefined {
  // A key of the statement (a student's agentKeys) by the columns it reads (records.ts).
  if (readable(db, kind, field)) return undefined
  return new OneRosterError('forbidden', `${what}: ${name} is outside the scopes of this access token (it needs roster.readonly)`)
}

interface Plan {
  readonly kind: Kind
  /** The kind's conditions; null when the filter holds for none of its records. */
  readonly conditions: ListCondition[] | null
  readonly order: string[]
  readonly columns: string[]
}

/** How to read one kind for a request: its conditions, order and columns. */
function planOf (db: SchoolDb, kind: Kind, all: readonly Kind[], query: Pick<CollectionQuery, 'filter' | 'sort'>, selected: readonly string[], context: AnswerContext): Plan {
  const known = knownFields(all)
  let conditions: ListCondition[] | null = []
  if (query.filter !== undefined) {
    const predicate = simplify(mapComparisons(query.filter, ({ field: name, op, value }): Predicate => {
      if (!known.has(name)) throw new OneRosterError('invalid_filter_field', `filter: ${name} is not a field of users this service filters by (${[...known].join(', ')})`)
      const field = kind.fields[name]
      // A field of users this kind does not hold (a teacher's grades): no value, so only != holds.
      if (field === undefined) return { kind: 'constant', value: op === '!=' }
      const refusal = outOfScope(db, kind, name, field, 'filter')
      if (refusal !== undefined) throw refusal
      return field.compare(op, value, context)
    }))
    conditions = predicate === false ? null : predicate === true ? [] : [{ kind: 'predicate', predicate }]
  }
  let order = ['id']
  if (query.sort !== undefined) {
    if (!known.has(query.sort)) throw new OneRosterError('invalid_filter_field', `sort: ${query.sort} is not a field of users this service sorts by (${[...known].join(', ')})`)
    const field = kind.fields[query.sort]
    if (field !== undefined) {
      const refusal = outOfScope(db, kind, query.sort, field, 'sort')
      if (refusal !== undefined) throw refusal
      if (field.sort !== 'id') order = [field.sort, 'id']
    }
  }
  const columns = new Set<string>(order.filter((field) => field !== 'sourcedKey'))
  if (order[0] === 'sourcedKey') columns.add('sourcedId')
  for (const name of selected) for (const column of kind.fields[name]?.columns ?? []) columns.add(column)
  return { kind, conditions, order, columns: [...columns] }
}

/**
 * The fields a request answers: those named by `fields` (each a field of UserDType this service
 * serves, else invalid_selection_field; one outside the caller's scopes is refused, forbidden), or
 * every one the caller may read.
 */
export function selectedUserFields (db: SchoolDb, kinds: readonly Kind[], fields: readonly string[] | undefined): string[] {
  // A check only: an error (and its stack) is made for a refusal sent, not for each field left out.
  const answered = (name: string): boolean => kinds.every((kind) => {
    const field = kind.fields[name]
    return field === undefined || readable(db, kind, field)
  })
  if (fields === undefined) return USER_FIELDS.filter(answered)
  for (const name of fields) {
    if (!USER_FIELDS.includes(name)) throw new OneRosterError('invalid_selection_field', `fields: ${name} is not a field of users this service answers (${USER_FIELDS.join(', ')})`)
    if (!answered(name)) throw new OneRosterError('forbidden', `fields: ${name} is outside the scopes of this access token (it needs roster.readonly)`)
  }
  return USER_FIELDS.filter((name) => fields.includes(name))
}

function sorted (row: Row, order: readonly string[]): Sorted {
  const field = order.length > 1 ? order[0]! : undefined
  return { value: sortValue(field === undefined ? null : field === 'sourcedKey' ? row.sourcedId ?? row.id : row[field]), id: row.id as string, row }
}

/**
 * A page of users of these kinds (one, or students and teachers for /users) and how many there are
 * in all; with a delta's filter (deletions.ts), the users deleted since its bound among them.
 */
export async function pageOfUsers (db: SchoolDb, kinds: readonly Kind[], query: CollectionQuery, context: AnswerContext): Promise<{ users: Row[], total: number }> {
  const selected = selectedUserFields(db, kinds, query.fields)
  const plans = kinds.map((kind) => planOf(db, kind, kinds, query, selected, context))
  // Each table's page and its total in one statement (readRowsCounted).
  const read = async (plan: Plan, take: number, skip: number): Promise<{ rows: Row[], total: number }> => plan.conditions === null
    ? { rows: [], total: 0 }
    : await readRowsCounted<Row>(db, { model: plan.kind.model, fields: plan.columns, conditions: plan.conditions, order: plan.order, descending: query.descending, take, skip })
  const deleted = await deletedUsers(db, kinds, query.filter, context)
  if (plans.length === 1 && deleted.length === 0) {
    const plan = plans[0]!
    const { rows, total } = await read(plan, query.limit, query.offset)
    return { users: rows.map(answerOf(plan.kind, selected, context)), total }
  }
  // Several lists (merge.ts): the first offset + limit of each table, in the order asked, and the
  // deletions (all of them, ordered here as the database orders the tables).
  const pages = await Promise.all(plans.map(async (plan) => await read(plan, query.offset + query.limit, 0)))
  const total = pages.reduce((sum, page) => sum + page.total, 0) + deleted.length
  if (query.offset >= total) return { users: [], total }
  const answers: Array<(row: Row) => Row> = plans.map((plan) => answerOf(plan.kind, selected, context))
  const lists = pages.map(({ rows }, i) => rows.map((row) => sorted(row, plans[i]!.order)))
  if (deleted.length > 0) {
    lists.push(deleted.map((tombstone) => ({ value: sortValueOf(tombstone, query.sort), id: tombstone.id, row: { tombstone } }))
      .sort((a, b) => compareSorted(a, b, query.descending)))
    answers.push((row) => tombstoneAnswer(row.tombstone as Tombstone, selected, context))
  }
  return { users: mergedPage(lists, query.offset, query.limit, query.descending).map(({ list, row }) => answers[list]!(row)), total }
}

/** One user of these kinds by sourcedId (an imported one, or the id of a record without one), or null. */
export async function userBySourcedId (db: SchoolDb, kinds: readonly Kind[], sourcedId: string, fields: readonly string[] | undefined, context: AnswerContext): Promise<Row | null> {
  const selected = selectedUserFields(db, kinds, fields)
  for (const kind of kinds) {
    const found = await readBySourcedId(db, { kind, names: USER_FIELDS, noun: 'users' }, sourcedId, selected, context)
    if (found !== null) return found.record
  }
  return null
}
