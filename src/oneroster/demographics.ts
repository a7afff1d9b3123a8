// The binding's demographics (DemographicsDType): a student's and a teacher's, kept on the user
// (typed-reads.ts DEMOGRAPHIC_COLUMNS, the same columns on both tables), each one when it holds a
// value (HAS_DEMOGRAPHICS). Two tables, read as /users reads students and teachers: each one's
// first offset + limit records in the order asked with its total in the same statement
// (readRowsCounted), through the typed statements on the caller's school client (both walls), merged
// here (merge.ts). Every field needs roster-demographics.readonly, which a teacher's role does not
// hold: plugin.ts refuses her before anything is read.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { SchoolDb } from '../db/school-client.js'
import { readRowsCounted } from '../records/lists.js'
import { mergedPage, sortValue, type Sorted } from './merge.js'
import { DEMOGRAPHICS_FIELDS, HAS_DEMOGRAPHICS, STUDENT_DEMOGRAPHICS, TEACHER_DEMOGRAPHICS, type AnswerContext } from './kinds.js'
import { collectionQuery, fieldsOf, type CollectionQuery } from './query.js'
import { answerOf, firstBySourcedId, planOf, selectedFields, type Plan, type RecordCollection } from './records.js'
import type { OneRosterError } from './status-info.js'
import type { Handler, Params } from './route.js'

type Row = Record<string, unknown>

/** What the demographics routes use of plugin.ts: the refusal and a collection's paging headers. */
export interface DemographicsRouteHelpers {
  readonly unknownObject: (what: string, sourcedId: string) => OneRosterError
  readonly page: (request: FastifyRequest, reply: FastifyReply, envelope: string, records: unknown[], total: number, query: CollectionQuery) => Record<string, unknown>
}

/** Students' demographics, then teachers': one field set. */
const DEMOGRAPHICS: readonly RecordCollection[] = [
  { kind: STUDENT_DEMOGRAPHICS, names: DEMOGRAPHICS_FIELDS, noun: 'demographics' },
  { kind: TEACHER_DEMOGRAPHICS, names: DEMOGRAPHICS_FIELDS, noun: 'demographics' }
]

function sorted (row: Row, plan: Plan): Sorted {
  return { value: sortValue(plan.order.length > 1 ? row[plan.order[0]!] : null), id: row.id as string, row }
}

/** The columns a plan reads, with its sort value (a key read as itself) for the merge. */
const columnsOf = (plan: Plan): string[] => plan.order.length > 1 && !plan.columns.includes(plan.order[0]!) ? [...plan.columns, plan.order[0]!] : plan.columns

/** A page of the students' and teachers' demographics that meet the filter, in the order asked, and how many there are in all. */
export async function pageOfDemographics (db: SchoolDb, query: CollectionQuery, context: AnswerContext): Promise<{ records: Row[], total: number }> {
  const selected = selectedFields(db, DEMOGRAPHICS[0]!, query.fields)
  const plans = DEMOGRAPHICS.map((collection) => planOf(db, collection, query, selected, context, [HAS_DEMOGRAPHICS]))
  const pages = await Promise.all(plans.map(async (plan, i) => plan.conditions === null
    ? { rows: [], total: 0 }
    : await readRowsCounted<Row>(db, {
      model: DEMOGRAPHICS[i]!.kind.model, fields: columnsOf(plan), conditions: plan.conditions, order: plan.order, descending: query.descending, take: query.offset + query.limit, skip: 0
    })))
  const total = pages[0]!.total + pages[1]!.total
  if (query.offset >= total) return { records: [], total }
  const lists = pages.map(({ rows }, i) => rows.map((row) => sorted(row, plans[i]!)))
  const answers = DEMOGRAPHICS.map((collection) => answerOf(collection.kind, selected, context))
  const records = mergedPage(lists, query.offset, query.limit, query.descending).map(({ list, row }) => answers[list]!(row))
  return { records, total }
}

/** The demographics of the student, else the teacher, with this sourcedId (an imported one, or the id of a user without one), or null. */
export async function demographicsBySourcedId (db: SchoolDb, sourcedId: string, fields: readonly string[] | undefined, context: AnswerContext): Promise<Row | null> {
  return await firstBySourcedId(db, DEMOGRAPHICS, sourcedId, fields, context, [HAS_DEMOGRAPHICS])
}

export function registerDemographicsRoutes (get: (url: string, operationId: string, handler: Handler) => void, { unknownObject, page }: DemographicsRouteHelpers): void {
  get('/demographics', 'getAllDemographics', async (request, reply, { db, context }) => {
    const query = collectionQuery(request.query as Record<string, unknown>)
    const { records, total } = await pageOfDemographics(db, query, context)
    return page(request, reply, 'demographics', records, total, query)
  })
  get('/demographics/:sourcedId', 'getDemographics', async (request, _reply, { db, context }) => {
    const { sourcedId } = request.params as Params
    const found = await demographicsBySourcedId(db, sourcedId!, fieldsOf(request.query as Record<string, unknown>), context)
    if (found === null) throw unknownObject('demographics', sourcedId!)
    return { demographics: found }
  })
}
