// The lists and their relations read as typed statements (src/db/typed-reads.ts) by a school
// client that reads so (`db.$typedReads()`: a caller who reaches the whole school): the columns a
// query selects, the list's filter, order and cursor as the model path reads them (paging.ts), the
// school bound by wall 1's step. The answers are the model path's, row for row.
import type { SchoolDb } from '../db/school-client.js'
import { byParent, listRead, relationRead, rowsOf, type ListCondition, type Read, type RelationName, type TypedModel } from '../db/typed-reads.js'
import type { PagePlan } from './paging.js'

/** The columns of a Prisma select of `model` (prismaSelect): its scalar fields, and a student's classroom's. */
export function selectedColumns (select: Readonly<Record<string, unknown>>): { fields: string[], classroom: string[] | undefined } {
  const fields: string[] = []
  let classroom: string[] | undefined
  for (const [key, value] of Object.entries(select)) {
    if (value === true) {
      if (key === 'classroom') classroom = ['id', 'sourcedId', 'name', 'gradeLevel', 'subject', 'createdAt', 'updatedAt']
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

/** One page of a list, `take` rows of `plan` (one more for a page), with the columns of `select`. */
export async function readList<T> (
  db: SchoolDb,
  model: TypedModel,
  plan: PagePlan,
  conditions: readonly ListCondition[],
  select: Readonly<Record<string, unknown>>,
  take: number
): Promise<T[]> {
  const { fields, classroom } = selectedColumns(select)
  return await run<T>(db, listRead({
    model,
    fields,
    classroom,
    conditions,
    order: plan.keyset.fields,
    descending: plan.keyset.descending,
    after: plan.keyset.after,
    take
  }))
}

/** A relation of the parents `ids` in one statement, grouped by parent in their order. */
export async function readRelation<T> (db: SchoolDb, relation: RelationName, fields: readonly string[], ids: readonly string[]): Promise<T[][]> {
  // A page's rows share parents (a classroom's students): each parent once in the statement.
  const { statement, values } = relationRead(relation, fields, [...new Set(ids)])
  const rows = await db.$queryRawUnsafe<Array<Record<string, unknown>>>(statement.sql, ...values)
  return byParent<T>(statement, rows, ids)
}
