// Classrooms: the record kind declared once (its list's orders, cursors and filter), read through
// the typed statements by every caller (lists.ts). The GraphQL resolvers (src/graphql/resolvers/
// classrooms.ts) are thin callers of it.
import type { Prisma } from '../generated/prisma/client.js'
import type { ListCondition } from '../db/typed-reads.js'
import type { SchoolDb } from '../db/school-client.js'
import { badUserInput } from '../graphql/errors.js'
import { requireUuid } from '../graphql/ids.js'
import { searchPattern, type ListArgs } from '../graphql/paging.js'
import { readAssignments, readList, readPage, readRelation, type ListKind, type Selection } from './lists.js'

export type ClassroomOrderField = 'NAME' | 'CREATED_AT' | 'UPDATED_AT' | 'ID'

export interface ClassroomFilter { gradeLevel?: string | null, subject?: string | null, search?: string | null }

export type ClassroomListArgs = ListArgs<ClassroomOrderField, ClassroomFilter>

/** A subject filter, trimmed; throws BAD_USER_INPUT for an empty or long one (a NUL: arguments.ts). */
function subjectOf (given: string): string {
  const subject = given.trim()
  if (subject === '' || subject.length > 100) throw badUserInput('filter.subject must have 1 to 100 characters')
  return subject
}

export const CLASSROOMS: ListKind<ClassroomOrderField, ClassroomFilter> = {
  model: 'Classroom',
  spec: {
    list: 'classrooms',
    orders: {
      NAME: ['name', 'id'],
      CREATED_AT: ['createdAt', 'id'],
      UPDATED_AT: ['updatedAt', 'id'],
      ID: ['id']
    },
    defaultOrder: 'NAME',
    dates: new Set(['createdAt', 'updatedAt'])
  },
  conditions (filter) {
    const conditions: ListCondition[] = []
    if (filter == null) return conditions
    if (filter.gradeLevel != null) conditions.push({ kind: 'equals', field: 'gradeLevel', value: filter.gradeLevel })
    if (filter.subject != null) conditions.push({ kind: 'equalsIgnoringCase', field: 'subject', value: subjectOf(filter.subject) })
    const pattern = searchPattern(filter.search)
    if (pattern !== undefined) conditions.push({ kind: 'contains', fields: ['name'], pattern })
    return conditions
  }
}

/** A list of classrooms. */
export async function listClassrooms<T> (db: SchoolDb, args: ClassroomListArgs, select: Selection): Promise<T[]> {
  return await readList<T, ClassroomOrderField, ClassroomFilter>(db, CLASSROOMS, args, select)
}

/** A page of classrooms. */
export async function pageOfClassrooms<T extends Record<string, unknown>> (db: SchoolDb, args: ClassroomListArgs, select: Selection) {
  return await readPage<T, ClassroomOrderField, ClassroomFilter>(db, CLASSROOMS, args, select)
}

/** One classroom by id, or null (out of the school or the caller's reach). */
export async function classroomById (db: SchoolDb, id: string, select: Prisma.ClassroomSelect) {
  return await db.classroom.findFirst({ where: { id: requireUuid(id) }, select })
}

/** The classrooms of teachers `ids`, by name, in one statement. */
export async function classroomsOfTeachers<T> (db: SchoolDb, select: Selection, ids: readonly string[]): Promise<T[][]> {
  return await readRelation<T>(db, 'Teacher.classrooms', select, ids)
}

/** The assignments of classrooms `ids` with their teachers, by teacher name, in one statement. */
export async function assignmentsOfClassrooms<T> (db: SchoolDb, teacher: Selection, classroom: Selection, ids: readonly string[]): Promise<T[][]> {
  return await readAssignments<T>(db, 'Classroom.teacherAssignments', teacher, classroom, ids)
}
