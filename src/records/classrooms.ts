// Classrooms: the record kind declared once (its list's orders, cursors and filter), read through
// the typed statements by every caller (lists.ts), and its writes: a classroom created, and a
// classroom found by key or by name (created on first use of a name) for the students' and
// teachers' writes (the shared rules and refusals: writes.ts). The GraphQL resolvers
// (src/graphql/resolvers/classrooms.ts and the mutations), the command line and the tests are thin
// callers of it.
import type { Prisma } from '../generated/prisma/client.js'
import type { ListCondition } from '../db/typed-reads.js'
import type { SchoolDb } from '../db/school-client.js'
import { badUserInput } from '../graphql/errors.js'
import { requireUuid } from '../graphql/ids.js'
import { searchPattern, type ListArgs } from '../graphql/paging.js'
import { readAssignments, readList, readPage, readRelation, type ListKind, type Selection } from './lists.js'
import { parseUuid } from '../validators.js'
import { AdminError, requireText } from './errors.js'
import {
  CLASSROOM_RULES, Fields, requireRecord, writing, written,
  type ClassroomFields, type Path, type RecordRef, type SchoolTarget, type Tenant, type Tx, type Versioned
} from './writes.js'

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

// ---- Writes: the command line and the API's mutations (docs/api/mutations.md) -------------------

/** The classroom `ref` names, in the school; NOT_FOUND otherwise. */
export async function requireClassroomRef (tx: Tx, schoolId: string, ref: RecordRef, path: Path): Promise<{ id: string }> {
  return await requireRecord(tx, schoolId, 'Classroom', ref, path)
}

/** Creates a classroom; its name is unique in the school. */
export async function addClassroom (target: SchoolTarget, input: ClassroomFields, { path = ['input'] }: { path?: Path } = {}): Promise<Versioned> {
  const fields = new Fields()
  const data = written(CLASSROOM_RULES, input, fields, path)
  if (data.name === undefined && !fields.invalid.some((f) => f.path.at(-1) === 'name')) fields.fail([...path, 'name'], 'A classroom needs a name')
  fields.done()
  return await writing(target, 'Classroom', [{ data, path }], async (tx) => {
    const [row] = await tx.classroom.createManyAndReturn({ data: [{ ...data, schoolId: target.schoolId } as Prisma.ClassroomCreateManyInput], select: { id: true, version: true } })
    return row!
  })
}

/** The classroom of the school with this name, created on first use of it. */
export async function classroomNamed (tenant: Tx, schoolId: string, name: string): Promise<{ id: string, name: string }> {
  const className = requireText('Classroom name', name)
  return await tenant.classroom.upsert({
    where: { schoolId_name: { schoolId, name: className } },
    create: { schoolId, name: className },
    update: {},
    select: { id: true, name: true }
  })
}

/**
 * A classroom of the school, by id or else by name. Another school's is as absent as one that does
 * not exist: the school's client cannot see it.
 */
export async function requireClassroomOf (tenant: Tenant, schoolId: string, classroom: string): Promise<{ id: string, name: string }> {
  const text = requireText('Classroom', classroom)
  const select = { id: true, name: true } as const
  const id = parseUuid(text)
  const room = (id !== undefined ? await tenant.classroom.findFirst({ where: { id }, select }) : null) ??
    await tenant.classroom.findFirst({ where: { name: text }, select })
  if (room === null) throw new AdminError(`Classroom "${text}" is not a classroom of school ${schoolId}`, 'NOT_FOUND')
  return room
}
