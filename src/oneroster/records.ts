// The binding's collections of one table (academic sessions, terms, grading periods, courses): the
// filter, sort and fields of a request turned into the kind's columns (kinds.ts), a page by offset
// with its total, and one record by sourcedId, read through the record kinds' one read path
// (src/records/lists.ts: typed statements on the caller's school client, both walls). A route's own
// conditions (a session's type, a term's grading periods) are added to the request's filter.
import type { SchoolDb } from '../db/school-client.js'
import { columnsOfValue, type ListCondition, type Predicate } from '../db/typed-reads.js'
import { readRows, readRowsCounted } from '../records/lists.js'
import { mapComparisons, simplify } from './filter.js'
import { mergedPage, sortValue, type Sorted } from './merge.js'
import { deletedRecords, recordTombstoneAnswer, sortedTombstones, type Deletions, type RecordTombstone } from './record-deletions.js'
import type { AnswerContext, BindingField, Kind } from './kinds.js'
import type { CollectionQuery } from './query.js'
import { OneRosterError } from './status-info.js'

type Row = Record<string, unknown>

/** A kind of record as one collection serves it: its fields in the binding's order, and its name in refusals. */
export interface RecordCollection {
  readonly kind: Kind
  /** The fields of its schema this service answers, in the binding's order: what `fields` may name. */
  readonly names: readonly string[]
  /** Its records, in a refusal's words: "academic sessions", "courses". */
  readonly noun: string
}

/** Whether the caller may read every column of `field` (each of these kinds' columns needs the core scope today). */
export function readable (db: SchoolDb, kind: Kind, field: BindingField): boolean {
  const columns = db.$readableColumns(kind.model)
  return field.columns.flatMap(columnsOfValue).every((column) => columns.includes(column))
}

const outOfScope = (what: string, name: string): OneRosterError =>
  new OneRosterError('forbidden', `${what}: ${name} is outside the scopes of this access token (it needs roster.readonly)`)

/** The fields a request answers: those `fields` names (each one of `names`, else invalid_selection_field), or every one the caller may read. */
export function selectedFields (db: SchoolDb, { kind, names, noun }: RecordCollection, fields: readonly string[] | undefined): string[] {
  if (fields === undefined) return names.filter((name) => readable(db, kind, kind.fields[name]!))
  for (const name of fields) {
    if (!names.includes(name)) throw new OneRosterError('invalid_selection_field', `fields: ${name} is not a field of ${noun} this service answers (${names.join(', ')})`)
    if (!readable(db, kind, kind.fields[name]!)) throw outOfScope('fields', name)
  }
  return names.filter((name) => fields.includes(name))
}

export interface Plan {
  /** The conditions; null when the filter holds for no record. */
  readonly conditions: ListCondition[] | null
  readonly order: string[]
  readonly columns: string[]
}

/** How to read a request: its conditions (the route's and the filter's), order and columns. */
export function planOf (db: SchoolDb, collection: RecordCollection, query: Pick<CollectionQuery, 'filter' | 'sort'>, selected: readonly string[], context: AnswerContext, route: readonly ListCondition[]): Plan {
  const { kind, noun } = collection
  const known = Object.keys(kind.fields)
  let conditions: ListCondition[] | null = [...route]
  if (query.filter !== undefined) {
    const predicate = simplify(mapComparisons(query.filter, ({ field: name, op, value }): Predicate => {
      const field = kind.fields[name]
      if (field === undefined) throw new OneRosterError('invalid_filter_field', `filter: ${name} is not a field of ${noun} this service filters by (${known.join(', ')})`)
      if (!readable(db, kind, field)) throw outOfScope('filter', name)
      return field.compare(op, value, context)
    }))
    conditions = predicate === false ? null : predicate === true ? conditions : [...conditions, { kind: 'predicate', predicate }]
  }
  let order = ['id']
  if (query.sort !== undefined) {
    const field = kind.fields[query.sort]
    if (field === undefined) throw new OneRosterError('invalid_filter_field', `sort: ${query.sort} is not a field of ${noun} this service sorts by (${known.join(', ')})`)
    if (!readable(db, kind, field)) throw outOfScope('sort', query.sort)
    if (field.sort !== 'id') order = [field.sort, 'id']
  }
  const columns = new Set<string>()
  // A field the kind does not hold (a teacher's grades, among the users' fields) reads nothing.
  for (const name of selected) for (const column of kind.fields[name]?.columns ?? []) columns.add(column)
  return { conditions, order, columns: [...columns] }
}

/**
 * How rows of `kind` are answered as the binding's records: the selected fields the kind holds that
 * have a value, in the binding's order. Made once for a page (each field's answer looked up once,
 * not for each record).
 */
export function answerOf (kind: Kind, selected: readonly string[], context: AnswerContext): (row: Row) => Row {
  const answers: Array<readonly [string, NonNullable<BindingField['answer']>]> = []
  for (const name of selected) {
    const answer = kind.fields[name]?.answer
    if (answer !== undefined) answers.push([name, answer])
  }
  return (row) => {
    const out: Row = {}
    for (const [name, answer] of answers) {
      const value = answer(row, context)
      if (value !== undefined && value !== null) out[name] = value
    }
    return out
  }
}

/**
 * A page of a collection's records (those that meet the route's conditions and the filter) and how
 * many there are in all; with `deletions` and a delta's filter, what ended since its bound among
 * them (record-deletions.ts), merged in the order asked.
 */
export async function pageOfRecords (
  db: SchoolDb, collection: RecordCollection, query: CollectionQuery, context: AnswerContext, route: readonly ListCondition[] = [], deletions?: Deletions
): Promise<{ records: Row[], total: number }> {
  const selected = selectedFields(db, collection, query.fields)
  const plan = planOf(db, collection, query, selected, context, route)
  const deleted = deletions === undefined ? [] : await deletedRecords(db, deletions, query.filter, context)
  const model = collection.kind.model
  const read = async (take: number, skip: number): Promise<{ rows: Row[], total: number }> => plan.conditions === null
    ? { rows: [], total: 0 }
    : await readRowsCounted<Row>(db, { model, fields: columnsOf(plan), conditions: plan.conditions, order: plan.order, descending: query.descending, take, skip })
  if (deleted.length === 0) {
    const { rows, total } = await read(query.limit, query.offset)
    return { records: rows.map(answerOf(collection.kind, selected, context)), total }
  }
  // Two lists (merge.ts): the first offset + limit records in the order asked, and the deletions.
  const { rows, total: live } = await read(query.offset + query.limit, 0)
  const total = live + deleted.length
  if (query.offset >= total) return { records: [], total }
  const lists: Sorted[][] = [
    rows.map((row) => ({ value: sortValue(plan.order.length > 1 ? row[plan.order[0]!] : null), id: row.id as string, row })),
    sortedTombstones(deleted, collection.kind, query.sort, query.descending, context)
  ]
  const answer = answerOf(collection.kind, selected, context)
  const records = mergedPage(lists, query.offset, query.limit, query.descending).map(({ list, row }) => list === 1
    ? recordTombstoneAnswer(row.tombstone as RecordTombstone, selected, context)
    : answer(row))
  return { records, total }
}

/** The columns a plan reads, with its sort value (a key read as itself) for a merge. */
const columnsOf = (plan: Plan): string[] => plan.order.length > 1 && !plan.columns.includes(plan.order[0]!) ? [...plan.columns, plan.order[0]!] : plan.columns

/**
 * The record of a collection with this sourcedId (an imported one, or the id of a record without
 * one: the key its sourcedId field sorts by) that meets the route's conditions, answered with the
 * `selected` fields, or null.
 */
export async function readBySourcedId (
  db: SchoolDb, collection: RecordCollection, sourcedId: string, selected: readonly string[], context: AnswerContext, route: readonly ListCondition[] = []
): Promise<{ id: string, record: Row } | null> {
  const plan = planOf(db, collection, { filter: undefined, sort: undefined }, selected, context, route)
  const key = collection.kind.fields.sourcedId?.sort ?? 'sourcedKey'
  const [row] = await readRows<Row>(db, {
    model: collection.kind.model,
    fields: plan.columns,
    conditions: [...plan.conditions!, { kind: 'predicate', predicate: { kind: 'compare', field: key, op: '=', value: sourcedId } }],
    order: ['id'],
    descending: false,
    take: 1,
    skip: 0
  })
  return row === undefined ? null : { id: row.id as string, record: answerOf(collection.kind, selected, context)(row) }
}

/** The record of a collection with this sourcedId that meets the route's conditions, with the fields asked (`fields`), or null. */
export async function recordBySourcedId (
  db: SchoolDb, collection: RecordCollection, sourcedId: string, fields: readonly string[] | undefined, context: AnswerContext, route: readonly ListCondition[] = []
): Promise<{ id: string, record: Row } | null> {
  return await readBySourcedId(db, collection, sourcedId, selectedFields(db, collection, fields), context, route)
}

/**
 * The record with this sourcedId of the first of several collections that holds one (a student's,
 * else a teacher's), that meets the route's conditions; their fields are the first one's. Null when
 * none holds it.
 */
export async function firstBySourcedId (
  db: SchoolDb, collections: readonly RecordCollection[], sourcedId: string, fields: readonly string[] | undefined, context: AnswerContext, route: readonly ListCondition[] = []
): Promise<Row | null> {
  const selected = selectedFields(db, collections[0]!, fields)
  for (const collection of collections) {
    const found = await readBySourcedId(db, collection, sourcedId, selected, context, route)
    if (found !== null) return found.record
  }
  return null
}
