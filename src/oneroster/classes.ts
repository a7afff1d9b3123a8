// The binding's classes (ClassDType): the school's classrooms that are OneRoster classes (a course
// and terms, the import's), and the nested collections of a class's students and teachers and of
// the classes of a school, term, course, student, teacher or user (docs/api/oneroster.md). Read as
// the other collections are (records.ts: typed statements on the caller's school client, both walls,
// a teacher's reach: a teacher reads its own classes, their students and their teachers).
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ListCondition } from '../db/typed-reads.js'
import { readRows } from '../records/lists.js'
import {
  ACADEMIC_SESSION_FIELDS, ACADEMIC_SESSIONS, CLASS_FIELDS, CLASSES, COURSE_FIELDS, COURSES, IS_CLASS, STUDENT_USERS, TEACHER_USERS, USER_FIELDS
} from './kinds.js'
import type { CollectionQuery } from './query.js'
import type { OneRosterError } from './status-info.js'
import { recordBySourcedId, type RecordCollection } from './records.js'
import { collectionDeletions, type Deletions, type RecordTombstone } from './record-deletions.js'
import type { Caller, Handler, Params } from './route.js'

type Answer = Promise<Record<string, unknown>>

/** What the class routes use of plugin.ts: the checks and the one-table reads of every collection. */
export interface ClassRouteHelpers {
  readonly requireSchool: (request: FastifyRequest, caller: Caller) => void
  readonly unknownObject: (what: string, sourcedId: string) => OneRosterError
  readonly records: (
    request: FastifyRequest, reply: FastifyReply, caller: Caller, collection: RecordCollection, envelope: string, route?: readonly ListCondition[], query?: CollectionQuery, deletions?: Deletions
  ) => Answer
  readonly record: (request: FastifyRequest, caller: Caller, collection: RecordCollection, envelope: string, what: string, route?: readonly ListCondition[]) => Answer
}

const CLASS_RECORDS: RecordCollection = { kind: CLASSES, names: CLASS_FIELDS, noun: 'classes' }
/** A class's students and teachers, as users (a teacher has no identifier or grades). */
const STUDENT_RECORDS: RecordCollection = { kind: STUDENT_USERS, names: USER_FIELDS, noun: 'students' }
const TEACHER_RECORDS: RecordCollection = { kind: TEACHER_USERS, names: USER_FIELDS.filter((name) => name in TEACHER_USERS.fields), noun: 'teachers' }
const SESSION_RECORDS: RecordCollection = { kind: ACADEMIC_SESSIONS, names: ACADEMIC_SESSION_FIELDS, noun: 'academic sessions' }
const COURSE_RECORDS: RecordCollection = { kind: COURSES, names: COURSE_FIELDS, noun: 'courses' }

const IS_TERM: ListCondition = { kind: 'equals', field: 'type', value: 'term' }
const CLASS: readonly ListCondition[] = [IS_CLASS]
const NONE: ListCondition = { kind: 'predicate', predicate: { kind: 'constant', value: false } }

const sourcedIs = (sourcedId: string): ListCondition => ({ kind: 'predicate', predicate: { kind: 'compare', field: 'sourcedKey', op: '=', value: sourcedId } })

export function registerClassRoutes (get: (url: string, operationId: string, handler: Handler) => void, helpers: ClassRouteHelpers): void {
  const { requireSchool, unknownObject, records, record } = helpers
  /**
   * A page of classes; with a delta's filter, the classes deleted since (record-deletions.ts) of the
   * route (`inRoute`: a term's, a course's); a user's classes answer none (a tombstone keeps no user).
   */
  const classes = async (request: FastifyRequest, reply: FastifyReply, caller: Caller, route: readonly ListCondition[] = [], inRoute?: (tombstone: RecordTombstone) => boolean): Answer =>
    await records(request, reply, caller, CLASS_RECORDS, 'classes', [...CLASS, ...route], undefined,
      inRoute === undefined && route.length > 0 ? undefined : collectionDeletions('CLASS', CLASSES, [...CLASS, ...route], inRoute))

  /** The class of the path's classSourcedId (the caller reaches it), else 404 unknownobject. */
  const classOf = async (request: FastifyRequest, caller: Caller): Promise<string> => {
    const { classSourcedId } = request.params as Params
    const found = await recordBySourcedId(caller.db, CLASS_RECORDS, classSourcedId!, ['sourcedId'], caller.context, CLASS)
    if (found === null) throw unknownObject('class', classSourcedId!)
    return found.id
  }
  const studentsOf = async (request: FastifyRequest, reply: FastifyReply, caller: Caller): Answer => {
    const id = await classOf(request, caller)
    return await records(request, reply, caller, STUDENT_RECORDS, 'users', [{ kind: 'equals', field: 'classroomId', value: id }])
  }
  const teachersOf = async (request: FastifyRequest, reply: FastifyReply, caller: Caller): Answer => {
    const id = await classOf(request, caller)
    return await records(request, reply, caller, TEACHER_RECORDS, 'users', [{ kind: 'teaches', classroomId: id }])
  }
  /**
   * The classes of a user of the path: a student's classroom (one), a teacher's assignments, none of
   * an agent (a guardian, parent or relative is enrolled in no class; one the caller may not read,
   * as a teacher reads no agent, is no user of hers: 404 as on /users/{sourcedId}).
   */
  const classesOfUser = async (request: FastifyRequest, reply: FastifyReply, caller: Caller, roles: ReadonlyArray<'student' | 'teacher' | 'agent'>, what: string): Answer => {
    const { userSourcedId } = request.params as Params
    for (const role of roles) {
      if (role === 'student') {
        const [student] = await readRows<{ id: string, classroomId: string | null }>(caller.db, {
          model: 'Student', fields: ['classroomId'], conditions: [sourcedIs(userSourcedId!)], order: ['id'], descending: false, take: 1, skip: 0
        })
        if (student !== undefined) return await classes(request, reply, caller, [student.classroomId === null ? NONE : { kind: 'ids', ids: [student.classroomId] }])
      } else if (role === 'agent') {
        const [agent] = await readRows<{ id: string }>(caller.db, {
          model: 'Agent', fields: [], conditions: [sourcedIs(userSourcedId!)], order: ['id'], descending: false, take: 1, skip: 0
        })
        if (agent !== undefined) return await classes(request, reply, caller, [NONE])
      } else {
        const [teacher] = await readRows<{ id: string }>(caller.db, {
          model: 'Teacher', fields: [], conditions: [sourcedIs(userSourcedId!)], order: ['id'], descending: false, take: 1, skip: 0
        })
        if (teacher !== undefined) return await classes(request, reply, caller, [{ kind: 'taughtBy', teacherId: teacher.id }])
      }
    }
    throw unknownObject(what, userSourcedId!)
  }

  get('/classes', 'getAllClasses', async (request, reply, caller) => await classes(request, reply, caller))
  get('/classes/:sourcedId', 'getClass', async (request, _reply, caller) => await record(request, caller, CLASS_RECORDS, 'class', 'class', CLASS))
  get('/schools/:schoolSourcedId/classes', 'getClassesForSchool', async (request, reply, caller) => {
    requireSchool(request, caller)
    return await classes(request, reply, caller)
  })
  get('/terms/:termSourcedId/classes', 'getClassesForTerm', async (request, reply, caller) => {
    const { termSourcedId } = request.params as Params
    const term = await recordBySourcedId(caller.db, SESSION_RECORDS, termSourcedId!, ['sourcedId'], caller.context, [IS_TERM])
    if (term === null) throw unknownObject('term', termSourcedId!)
    return await classes(request, reply, caller, [{ kind: 'predicate', predicate: { kind: 'compare', field: 'termKeys', op: '=', value: termSourcedId! } }],
      (tombstone) => (tombstone.fields.terms as string[]).includes(termSourcedId!))
  })
  get('/courses/:courseSourcedId/classes', 'getClassesForCourse', async (request, reply, caller) => {
    const { courseSourcedId } = request.params as Params
    const course = await recordBySourcedId(caller.db, COURSE_RECORDS, courseSourcedId!, ['sourcedId'], caller.context)
    if (course === null) throw unknownObject('course', courseSourcedId!)
    return await classes(request, reply, caller, [{ kind: 'equals', field: 'courseId', value: course.id }], (tombstone) => tombstone.fields.course === courseSourcedId)
  })
  get('/students/:userSourcedId/classes', 'getClassesForStudent', async (request, reply, caller) => await classesOfUser(request, reply, caller, ['student'], 'student'))
  get('/teachers/:userSourcedId/classes', 'getClassesForTeacher', async (request, reply, caller) => await classesOfUser(request, reply, caller, ['teacher'], 'teacher'))
  get('/users/:userSourcedId/classes', 'getClassesForUser', async (request, reply, caller) => await classesOfUser(request, reply, caller, ['student', 'teacher', 'agent'], 'user'))
  get('/classes/:classSourcedId/students', 'getStudentsForClass', studentsOf)
  get('/classes/:classSourcedId/teachers', 'getTeachersForClass', teachersOf)
  get('/schools/:schoolSourcedId/classes/:classSourcedId/students', 'getStudentsForClassInSchool', async (request, reply, caller) => {
    requireSchool(request, caller)
    return await studentsOf(request, reply, caller)
  })
  get('/schools/:schoolSourcedId/classes/:classSourcedId/teachers', 'getTeachersForClassInSchool', async (request, reply, caller) => {
    requireSchool(request, caller)
    return await teachersOf(request, reply, caller)
  })
}
