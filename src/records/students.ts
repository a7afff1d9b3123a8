// Students: the record kind declared once (its list's orders, cursors and filter), read through
// the typed statements by every caller (lists.ts). The GraphQL resolvers (src/graphql/resolvers/
// students.ts) are thin callers of it.
import type { Prisma } from '../generated/prisma/client.js'
import type { ListCondition } from '../db/typed-reads.js'
import type { SchoolDb } from '../db/school-client.js'
import { requireUuid } from '../graphql/ids.js'
import { searchPattern, type ListArgs } from '../graphql/paging.js'
import { readList, readPage, readRelation, type ListKind, type Selection } from './lists.js'

export type StudentOrderField = 'FAMILY_NAME' | 'GIVEN_NAME' | 'CREATED_AT' | 'UPDATED_AT' | 'ID'

export interface StudentFilter { classroomId?: string | null, gradeLevel?: string | null, status?: string | null, search?: string | null }

export type StudentListArgs = ListArgs<StudentOrderField, StudentFilter>

/** The name fields a student search looks in. */
const NAMES = ['fullName', 'givenName', 'familyName', 'preferredName']

export const STUDENTS: ListKind<StudentOrderField, StudentFilter> = {
  model: 'Student',
  spec: {
    list: 'students',
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
    if (filter.classroomId != null) conditions.push({ kind: 'equals', field: 'classroomId', value: requireUuid(filter.classroomId, 'filter.classroomId') })
    if (filter.gradeLevel != null) conditions.push({ kind: 'equals', field: 'gradeLevel', value: filter.gradeLevel })
    if (filter.status != null) conditions.push({ kind: 'equals', field: 'status', value: filter.status })
    const pattern = searchPattern(filter.search)
    if (pattern !== undefined) conditions.push({ kind: 'contains', fields: NAMES, pattern })
    return conditions
  }
}

/** A list of students. */
export async function listStudents<T> (db: SchoolDb, args: StudentListArgs, select: Selection): Promise<T[]> {
  return await readList<T, StudentOrderField, StudentFilter>(db, STUDENTS, args, select)
}

/** A page of students. */
export async function pageOfStudents<T extends Record<string, unknown>> (db: SchoolDb, args: StudentListArgs, select: Selection) {
  return await readPage<T, StudentOrderField, StudentFilter>(db, STUDENTS, args, select)
}

/** One student by id, or null (out of the school or the caller's reach). */
export async function studentById (db: SchoolDb, id: string, select: Prisma.StudentSelect) {
  return await db.student.findFirst({ relationLoadStrategy: 'join', where: { id: requireUuid(id) }, select })
}

/** The students of classrooms `ids`, by full name, in one statement. */
export async function studentsOfClassrooms<T> (db: SchoolDb, select: Selection, ids: readonly string[]): Promise<T[][]> {
  return await readRelation<T>(db, 'Classroom.students', select, ids)
}
