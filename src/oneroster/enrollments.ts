// The binding's enrollments (EnrollmentDType): the model's links, read as records (docs/api/oneroster.md,
// docs/decisions.md): a student's classroom (students.classroom_id) is the student's enrollment,
// a teacher's assignment (teacher_classrooms) the teacher's, each when its classroom is a class
// (classes.ts). Two tables, read as /users reads students and teachers: each one's first
// offset + limit records in the order asked, through the typed statements on the caller's school
// client (both walls, a teacher's reach: her classrooms' enrollments only), merged here.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { SchoolDb } from '../db/school-client.js'
import type { ListCondition } from '../db/typed-reads.js'
import { readRowsCounted } from '../records/lists.js'
import { mergedPage, sortValue, type Sorted } from './merge.js'
import { deletedRecords, liveKeys, recordTombstoneAnswer, sortedTombstones, type Deletions, type RecordTombstone } from './record-deletions.js'
import { CLASS_FIELDS, CLASSES, ENROLLMENT_FIELDS, ENROLLMENT_IN_CLASS, IS_CLASS, STUDENT_ENROLLMENTS, TEACHER_ENROLLMENTS, type AnswerContext } from './kinds.js'
import { collectionQuery, fieldsOf, type CollectionQuery } from './query.js'
import { answerOf, firstBySourcedId, planOf, recordBySourcedId, selectedFields, type Plan, type RecordCollection } from './records.js'
import type { OneRosterError } from './status-info.js'
import type { Caller, Handler, Params } from './route.js'

type Row = Record<string, unknown>

/** What the enrollment routes use of plugin.ts: the school check, the refusal and a collection's paging headers. */
export interface EnrollmentRouteHelpers {
  readonly requireSchool: (request: FastifyRequest, caller: Caller) => void
  readonly unknownObject: (what: string, sourcedId: string) => OneRosterError
  readonly page: (request: FastifyRequest, reply: FastifyReply, envelope: string, records: unknown[], total: number, query: CollectionQuery) => Record<string, unknown>
}

/** Students' enrollments, then teachers': one field set (a student's `primary` has no value). */
const ENROLLMENTS: readonly RecordCollection[] = [
  { kind: STUDENT_ENROLLMENTS, names: ENROLLMENT_FIELDS, noun: 'enrollments' },
  { kind: TEACHER_ENROLLMENTS, names: ENROLLMENT_FIELDS, noun: 'enrollments' }
]
const CLASS_RECORDS: RecordCollection = { kind: CLASSES, names: CLASS_FIELDS, noun: 'classes' }

function sorted (row: Row, plan: Plan): Sorted {
  return { value: sortValue(plan.order.length > 1 ? row[plan.order[0]!] : null), id: row.id as string, row }
}

/** The columns a plan reads, with its sort value (a key read as itself) for the merge. */
const columnsOf = (plan: Plan): string[] => plan.order.length > 1 && !plan.columns.includes(plan.order[0]!) ? [...plan.columns, plan.order[0]!] : plan.columns

/**
 * The enrollments that ended (record-deletions.ts) in the route's collection: a tombstone of the
 * route's class (classKey: its sourcedId) when the route names one, whose sourcedId no enrollment
 * of the route answers now.
 */
function enrollmentDeletions (route: readonly ListCondition[], classKey: string | undefined): Deletions {
  return {
    kind: 'ENROLLMENT',
    inRoute: classKey === undefined ? undefined : (tombstone) => tombstone.fields.class === classKey,
    live: async (db, keys) => {
      const conditions = [ENROLLMENT_IN_CLASS, ...route]
      const [students, teachers] = await Promise.all([
        liveKeys(db, STUDENT_ENROLLMENTS.model, 'enrollmentKey', conditions, keys),
        liveKeys(db, TEACHER_ENROLLMENTS.model, 'sourcedKey', conditions, keys)
      ])
      return new Set([...students, ...teachers])
    }
  }
}

/**
 * A page of the enrollments that meet the route's conditions and the filter, and how many there are
 * in all; with a delta's filter, the enrollments that ended since its bound among them (of the
 * class `classKey` when the route is a class's).
 */
export async function pageOfEnrollments (db: SchoolDb, query: CollectionQuery, context: AnswerContext, route: readonly ListCondition[] = [], classKey?: string): Promise<{ records: Row[], total: number }> {
  const selected = selectedFields(db, ENROLLMENTS[0]!, query.fields)
  const plans = ENROLLMENTS.map((collection) => planOf(db, collection, query, selected, context, [ENROLLMENT_IN_CLASS, ...route]))
  const deleted = await deletedRecords(db, enrollmentDeletions(route, classKey), query.filter, context)
  // Each table's first offset + limit rows and its total in one statement (readRowsCounted).
  const pages = await Promise.all(plans.map(async (plan, i) => plan.conditions === null
    ? { rows: [], total: 0 }
    : await readRowsCounted<Row>(db, {
      model: ENROLLMENTS[i]!.kind.model, fields: columnsOf(plan), conditions: plan.conditions, order: plan.order, descending: query.descending, take: query.offset + query.limit, skip: 0
    })))
  const total = pages[0]!.total + pages[1]!.total + deleted.length
  if (query.offset >= total) return { records: [], total }
  const lists = pages.map(({ rows }, i) => rows.map((row) => sorted(row, plans[i]!)))
  // The deletions last (list 2), sorted as the students' enrollments are (the kinds sort a field alike).
  lists.push(sortedTombstones(deleted, STUDENT_ENROLLMENTS, query.sort, query.descending, context))
  const answers = ENROLLMENTS.map((collection) => answerOf(collection.kind, selected, context))
  const records = mergedPage(lists, query.offset, query.limit, query.descending).map(({ list, row }) => list === 2
    ? recordTombstoneAnswer(row.tombstone as RecordTombstone, selected, context)
    : answers[list]!(row))
  return { records, total }
}

/** The enrollment with this sourcedId (the import's, or the student's or assignment's id), or null. */
export async function enrollmentBySourcedId (db: SchoolDb, sourcedId: string, fields: readonly string[] | undefined, context: AnswerContext): Promise<Row | null> {
  return await firstBySourcedId(db, ENROLLMENTS, sourcedId, fields, context, [ENROLLMENT_IN_CLASS])
}

export function registerEnrollmentRoutes (get: (url: string, operationId: string, handler: Handler) => void, helpers: EnrollmentRouteHelpers): void {
  const { requireSchool, unknownObject, page } = helpers
  const enrollments = async (
    request: FastifyRequest, reply: FastifyReply, { db, context }: Caller, route: readonly ListCondition[] = [], query = collectionQuery(request.query as Record<string, unknown>), classKey?: string
  ): Promise<Record<string, unknown>> => {
    const { records, total } = await pageOfEnrollments(db, query, context, route, classKey)
    return page(request, reply, 'enrollments', records, total, query)
  }
  get('/enrollments', 'getAllEnrollments', async (request, reply, caller) => await enrollments(request, reply, caller))
  get('/enrollments/:sourcedId', 'getEnrollment', async (request, _reply, { db, context }) => {
    const { sourcedId } = request.params as Params
    const found = await enrollmentBySourcedId(db, sourcedId!, fieldsOf(request.query as Record<string, unknown>), context)
    if (found === null) throw unknownObject('enrollment', sourcedId!)
    return { enrollment: found }
  })
  get('/schools/:schoolSourcedId/enrollments', 'getEnrollmentsForSchool', async (request, reply, caller) => {
    requireSchool(request, caller)
    return await enrollments(request, reply, caller)
  })
  get('/schools/:schoolSourcedId/classes/:classSourcedId/enrollments', 'getEnrollmentsForClassInSchool', async (request, reply, caller) => {
    requireSchool(request, caller)
    // The query checked first, then the class (the caller reaches it, else 404), as a class's students are read.
    const query = collectionQuery(request.query as Record<string, unknown>)
    const { classSourcedId } = request.params as Params
    const found = await recordBySourcedId(caller.db, CLASS_RECORDS, classSourcedId!, ['sourcedId'], caller.context, [IS_CLASS])
    if (found === null) throw unknownObject('class', classSourcedId!)
    return await enrollments(request, reply, caller, [{ kind: 'equals', field: 'classroomId', value: found.id }], query, classSourcedId)
  })
}
