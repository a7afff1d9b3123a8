// Teachers: the record kind declared once (its list's orders, cursors and filter), read through
// the typed statements by every caller (lists.ts). The GraphQL resolvers (src/graphql/resolvers/
// teachers.ts) are thin callers of it.
import type { Prisma } from '../generated/prisma/client.js'
import type { ListCondition } from '../db/typed-reads.js'
import type { SchoolDb } from '../db/school-client.js'
import { requireUuid } from '../graphql/ids.js'
import { searchPattern, type ListArgs } from '../graphql/paging.js'
import { readAssignments, readList, readPage, readRelation, type ListKind, type Selection } from './lists.js'

export type TeacherOrderField = 'FAMILY_NAME' | 'GIVEN_NAME' | 'CREATED_AT' | 'UPDATED_AT' | 'ID'

export interface TeacherFilter { classroomId?: string | null, status?: string | null, search?: string | null }

export type TeacherListArgs = ListArgs<TeacherOrderField, TeacherFilter>

const NAMES = ['fullName', 'givenName', 'familyName', 'preferredName']

export const TEACHERS: ListKind<TeacherOrderField, TeacherFilter> = {
  model: 'Teacher',
  spec: {
    list: 'teachers',
    orders: {
      FAMILY_NAME: ['familyName', 'givenName', 'id'],
      GIVEN_NAME: ['givenName', 'familyName', 'id'],
      CREATED_AT: ['createdAt', 'id'],
      UPDATED_AT: ['updatedAt', 'id'],
      ID: ['id']
    },
    defaultOrder: 'ID',
    dates: new Set(['createdAt', 'updatedAt'])
  },
  conditions (filter) {
    const conditions: ListCondition[] = []
    if (filter == null) return conditions
    if (filter.classroomId != null) conditions.push({ kind: 'teaches', classroomId: requireUuid(filter.classroomId, 'filter.classroomId') })
    if (filter.status != null) conditions.push({ kind: 'equals', field: 'status', value: filter.status })
    const pattern = searchPattern(filter.search)
    if (pattern !== undefined) conditions.push({ kind: 'contains', fields: NAMES, pattern })
    return conditions
  }
}

/** A list of teachers. */
export async function listTeachers<T> (db: SchoolDb, args: TeacherListArgs, select: Selection): Promise<T[]> {
  return await readList<T, TeacherOrderField, TeacherFilter>(db, TEACHERS, args, select)
}

/** A page of teachers. */
export async function pageOfTeachers<T extends Record<string, unknown>> (db: SchoolDb, args: TeacherListArgs, select: Selection) {
  return await readPage<T, TeacherOrderField, TeacherFilter>(db, TEACHERS, args, select)
}

/** One teacher by id, or null (out of the school or the caller's reach). */
export async function teacherById (db: SchoolDb, id: string, select: Prisma.TeacherSelect) {
  return await db.teacher.findFirst({ where: { id: requireUuid(id) }, select })
}

/** The teachers of classrooms `ids`, by full name, in one statement. */
export async function teachersOfClassrooms<T> (db: SchoolDb, select: Selection, ids: readonly string[]): Promise<T[][]> {
  return await readRelation<T>(db, 'Classroom.teachers', select, ids)
}

/** The assignments of teachers `ids` with their classrooms, by classroom name, in one statement. */
export async function assignmentsOfTeachers<T> (db: SchoolDb, teacher: Selection, classroom: Selection, ids: readonly string[]): Promise<T[][]> {
  return await readAssignments<T>(db, 'Teacher.classroomAssignments', teacher, classroom, ids)
}
