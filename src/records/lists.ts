// The lists and relations of every record kind, read as typed statements (src/db/typed-reads.ts)
// for every caller: the columns a query selects (never one outside the caller's scopes: the
// GraphQL layer refuses such a query, wall 1 such a statement), the kind's filter, order and cursor
// (paging.ts), the school and, for a teacher, the teacher's reach bound by wall 1's step. A record
// kind (students.ts, teachers.ts, classrooms.ts, contacts.ts) declares its list once; these read it.
import type { SchoolDb } from '../db/school-client.js'
import {
  assignmentsRead, byParent, countRead, listRead, relationRead, rowsOf,
  type AssignmentsName, type ListCondition, type Read, type RelationName, type TypedModel
} from '../db/typed-reads.js'
import { planPage, toPage, type ListArgs, type ListSpec, type PageInfo } from '../graphql/paging.js'

/** A record kind's list: its model, orders and cursors, and its filter's conditions. */
export interface ListKind<O extends string, F> {
  readonly model: TypedModel
  readonly spec: ListSpec<O>
  /** The conditions of the list's filter; throws BAD_USER_INPUT for a bad one. */
  readonly conditions: (filter: F | null | undefined) => ListCondition[]
}

/** The orders of a list of people (students, teachers): by name either way, by the record's times, by id. */
export type PersonOrderField = 'FAMILY_NAME' | 'GIVEN_NAME' | 'CREATED_AT' | 'UPDATED_AT' | 'ID'

/** Each order of a list of people as its fields, the last one `id` (the cursor's tiebreak). */
export const PERSON_ORDERS: Readonly<Record<PersonOrderField, readonly string[]>> = {
  FAMILY_NAME: ['familyName', 'givenName', 'id'],
  GIVEN_NAME: ['givenName', 'familyName', 'id'],
  CREATED_AT: ['createdAt', 'id'],
  UPDATED_AT: ['updatedAt', 'id'],
  ID: ['id']
}

/** The name fields a search of people looks in. */
export const NAME_FIELDS: readonly string[] = ['fullName', 'givenName', 'familyName', 'preferredName']

/** What a query selects of a record: `true` for every column its caller may read, or a Prisma-style select. */
export type Selection = Readonly<Record<string, unknown>> | true

/**
 * The columns of a selection of `model` (prismaSelect, loaderSelect): its scalar fields, and a
 * student's classroom's when selected. `true` reads every column the caller may read.
 */
export function selectedColumns (db: SchoolDb, model: TypedModel, select: Selection): { fields: readonly string[], classroom: readonly string[] | undefined } {
  if (select === true) return { fields: db.$readableColumns(model), classroom: model === 'Student' ? db.$readableColumns('Classroom') : undefined }
  const fields: string[] = []
  let classroom: readonly string[] | undefined
  for (const [key, value] of Object.entries(select)) {
    if (value === true) {
      if (key === 'classroom') classroom = db.$readableColumns('Classroom')
      else fields.push(key)
    } else if (key === 'classroom' && typeof value === 'object' && value !== null) {
      classroom = Object.keys((value as { select: Record<string, unknown> }).select)
    }
  }
  return { fields, classroom }
}

async function run<T> (db: SchoolDb, { statement, values }: Read): Promise<T[]> {
  const rows = await db.$queryRawUnsafe<Array<Record<string, unknown>>>(statement.sql, ...values)
  return rowsOf<T>(statement, rows)
}

async function read<T, O extends string, F> (db: SchoolDb, kind: ListKind<O, F>, args: ListArgs<O, F>, select: Selection, page: boolean): Promise<{ rows: T[], plan: ReturnType<typeof planPage> }> {
  const plan = planPage(kind.spec, args)
  const conditions = kind.conditions(args.filter)
  if (plan.take === 0 && !page) return { rows: [], plan }
  const { fields, classroom } = selectedColumns(db, kind.model, select)
  const rows = await run<T>(db, listRead({
    model: kind.model,
    // A page's cursor needs the order's columns.
    fields: page ? [...new Set([...fields, ...plan.keyset.fields])] : fields,
    classroom,
    conditions,
    order: plan.keyset.fields,
    descending: plan.keyset.descending,
    after: plan.keyset.after,
    take: page ? plan.take + 1 : plan.take,
    reach: db.$statementReach()
  }))
  return { rows, plan }
}

/** A list (`students`, ...): `limit` records of the kind after the cursor, in the order asked. */
export async function readList<T, O extends string, F> (db: SchoolDb, kind: ListKind<O, F>, args: ListArgs<O, F>, select: Selection): Promise<T[]> {
  return (await read<T, O, F>(db, kind, args, select, false)).rows
}

/** A page (`studentsPage`, ...): the list's records and whether more follow, with the cursor of the last. */
export async function readPage<T extends Record<string, unknown>, O extends string, F> (
  db: SchoolDb, kind: ListKind<O, F>, args: ListArgs<O, F>, select: Selection
): Promise<{ nodes: T[], pageInfo: PageInfo }> {
  const { rows, plan } = await read<T, O, F>(db, kind, args, select, true)
  return toPage(rows, plan)
}

/**
 * The records of `model` with these ids that the caller reaches, in id order: the selected columns,
 * or whole rows (every column it may read) by default.
 */
export async function readByIds<T> (db: SchoolDb, model: TypedModel, ids: readonly string[], select: Selection = true): Promise<T[]> {
  if (ids.length === 0) return []
  const { fields, classroom } = selectedColumns(db, model, select)
  return await run<T>(db, listRead({
    model, fields, classroom, conditions: [{ kind: 'ids', ids }], order: ['id'], descending: false, take: ids.length, reach: db.$statementReach()
  }))
}

/** The record of `model` with this id that the caller reaches, with the selected columns; null when none. */
export async function readOne<T> (db: SchoolDb, model: TypedModel, id: string, select: Selection): Promise<T | null> {
  const [row] = await readByIds<T>(db, model, [id], select)
  return row ?? null
}

/**
 * Rows of a record kind for a caller that pages by offset (OneRoster's collections,
 * src/oneroster/): `fields` (columns the caller may read; `id` always), the records that meet the
 * conditions, in the order of `order` (fields or keys; the last `id`), `skip` of them skipped.
 */
export interface RowsRead {
  readonly model: TypedModel
  readonly fields: readonly string[]
  readonly conditions: readonly ListCondition[]
  readonly order: readonly string[]
  readonly descending: boolean
  readonly take: number
  readonly skip: number
}

/** The rows of a RowsRead, as a typed statement for the client's kind of caller. */
export async function readRows<T> (db: SchoolDb, read: RowsRead): Promise<T[]> {
  if (read.take === 0) return []
  return await run<T>(db, listRead({ ...read, classroom: undefined, reach: db.$statementReach() }))
}

/**
 * A page of a RowsRead and the number of records that meet its conditions in all (OneRoster's
 * X-Total-Count), in one statement: each row carries the total (`$total`, left on the row). Only a
 * page past the end, which has no row to carry it, costs a count of its own.
 */
export async function readRowsCounted<T> (db: SchoolDb, read: RowsRead): Promise<{ rows: Array<T & { $total: number }>, total: number }> {
  if (read.take === 0) return { rows: [], total: await countRows(db, read.model, read.conditions) }
  const rows = await run<T & { $total: number }>(db, listRead({ ...read, classroom: undefined, reach: db.$statementReach(), total: true }))
  if (rows.length > 0) return { rows, total: rows[0]!.$total }
  return { rows, total: read.skip === 0 ? 0 : await countRows(db, read.model, read.conditions) }
}

/** The number of records of `model` that meet the conditions and the caller reaches (OneRoster's X-Total-Count). */
export async function countRows (db: SchoolDb, model: TypedModel, conditions: readonly ListCondition[]): Promise<number> {
  const [row] = await run<{ count: number }>(db, countRead({ model, conditions, reach: db.$statementReach() }))
  return row?.count ?? 0
}

/** The model a relation leads to. */
const RELATED: Readonly<Record<RelationName, TypedModel>> = {
  'Classroom.students': 'Student',
  'Classroom.teachers': 'Teacher',
  'Teacher.classrooms': 'Classroom',
  'Student.contacts': 'Agent',
  'Contact.students': 'Student'
}

/** A relation of the parents `ids` in one statement, grouped by parent in their order. */
export async function readRelation<T> (db: SchoolDb, relation: RelationName, select: Selection, ids: readonly string[]): Promise<T[][]> {
  const { fields, classroom } = selectedColumns(db, RELATED[relation], select)
  // A page's rows share parents (a classroom's students): each parent once in the statement.
  const { statement, values } = relationRead(relation, fields, [...new Set(ids)], db.$statementReach(), classroom)
  const rows = await db.$queryRawUnsafe<Array<Record<string, unknown>>>(statement.sql, ...values)
  return byParent<T>(statement, rows, ids)
}

/** The assignments of the parents `ids` with their teachers and classrooms, grouped by parent. */
export async function readAssignments<T> (db: SchoolDb, relation: AssignmentsName, teacher: Selection, classroom: Selection, ids: readonly string[]): Promise<T[][]> {
  const { statement, values } = assignmentsRead(relation, selectedColumns(db, 'Teacher', teacher).fields, selectedColumns(db, 'Classroom', classroom).fields,
    [...new Set(ids)], db.$statementReach())
  const rows = await db.$queryRawUnsafe<Array<Record<string, unknown>>>(statement.sql, ...values)
  return byParent<T>(statement, rows, ids)
}
