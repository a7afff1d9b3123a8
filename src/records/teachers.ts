// Teachers: the record kind declared once (its list's orders, cursors and filter), read through
// the typed statements by every caller (lists.ts), and its writes: a teacher created, and a
// teacher's assignments to classrooms (made, moved, ended; the shared rules and refusals:
// writes.ts). The GraphQL resolvers (src/graphql/resolvers/teachers.ts and the mutations), the
// command line and the tests are thin callers of it.
import type { Prisma } from '../generated/prisma/client.js'
import type { ListCondition } from '../db/typed-reads.js'
import type { SchoolDb } from '../db/school-client.js'
import { requireUuid } from '../graphql/ids.js'
import { searchPattern, type ListArgs } from '../graphql/paging.js'
import { NAME_FIELDS, PERSON_ORDERS, readAssignments, readList, readPage, readRelation, type ListKind, type PersonOrderField, type Selection } from './lists.js'
import type { Database } from '../db/client.js'
import { TeacherRole } from '../generated/prisma/enums.js'
import { AdminError, requireId } from './errors.js'
import { classroomNamed, requireClassroomOf, requireClassroomRef } from './classrooms.js'
import {
  checkNewPerson, Fields, inTransaction, keyOf, requireEnum, requireRecord, requireSchool, schoolTarget, TEACHER_RULES, writing, written,
  type Path, type RecordRef, type SchoolTarget, type TeacherFields, type Tx, type Versioned
} from './writes.js'

export type TeacherOrderField = PersonOrderField

export interface TeacherFilter { classroomId?: string | null, status?: string | null, search?: string | null }

export type TeacherListArgs = ListArgs<TeacherOrderField, TeacherFilter>

export const TEACHERS: ListKind<TeacherOrderField, TeacherFilter> = {
  model: 'Teacher',
  spec: {
    list: 'teachers',
    orders: PERSON_ORDERS,
    defaultOrder: 'ID',
    dates: new Set(['createdAt', 'updatedAt'])
  },
  conditions (filter) {
    const conditions: ListCondition[] = []
    if (filter == null) return conditions
    if (filter.classroomId != null) conditions.push({ kind: 'teaches', classroomId: requireUuid(filter.classroomId, 'filter.classroomId') })
    if (filter.status != null) conditions.push({ kind: 'equals', field: 'status', value: filter.status })
    const pattern = searchPattern(filter.search)
    if (pattern !== undefined) conditions.push({ kind: 'contains', fields: NAME_FIELDS, pattern })
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

// ---- Writes: the command line and the API's mutations (docs/api/mutations.md) -------------------

/**
 * The teacher record a TEACHER user is: a teacher of `schoolId`. Checked here, because the database
 * cannot (users are global, teachers a tenant table: no foreign key).
 */
export async function requireTeacherOf (db: Database, schoolId: string, teacherId: string): Promise<string> {
  const id = requireId('Teacher', teacherId)
  const teacher = await db.forSchool(schoolId).teacher.findFirst({ where: { id }, select: { id: true } })
  if (teacher === null) throw new AdminError(`Teacher ${id} is not a teacher of school ${schoolId}`)
  return teacher.id
}

/** Creates a teacher. */
export async function addTeacher (target: SchoolTarget, input: TeacherFields, { path = ['input'] }: { path?: Path } = {}): Promise<Versioned> {
  const fields = new Fields()
  const data = written(TEACHER_RULES, input, fields, path)
  checkNewPerson(data, fields, path)
  fields.done()
  return await writing(target, 'Teacher', [{ data, path }], async (tx) => {
    const [row] = await tx.teacher.createManyAndReturn({ data: [{ ...data, schoolId: target.schoolId }], select: { id: true, version: true } })
    return row!
  })
}

/**
 * Assigns a teacher to a classroom in `role`: inserts the assignment, or else updates its role. Not
 * an upsert, whose DO UPDATE SET with a parameter (the role) Citus refuses on a distributed table.
 */
async function setAssignment (tx: Tx, key: { schoolId: string, teacherId: string, classroomId: string }, role: TeacherRole): Promise<void> {
  const created = await tx.teacherClassroom.createMany({ data: [{ ...key, role }], skipDuplicates: true })
  if (created.count === 0) await tx.teacherClassroom.updateMany({ where: key, data: { role } })
}

/** The role of the teacher's assignment to the classroom; NOT_FOUND when there is none. */
async function requireAssignment (tx: Tx, teacherId: string, classroomId: string): Promise<TeacherRole> {
  const found = await tx.teacherClassroom.findFirst({ where: { teacherId, classroomId }, select: { role: true } })
  if (found === null) throw new AdminError(`Teacher ${teacherId} is not assigned to classroom ${classroomId}: nothing was changed`, 'NOT_FOUND')
  return found.role
}

/** Assigns the teacher `teacher` names to the classroom `classroom` names in `role`; an assignment that exists takes the role. */
export async function assignTeacherTo (target: SchoolTarget, teacher: RecordRef, classroom: RecordRef, role?: string | null): Promise<{ teacherId: string, classroomId: string, role: TeacherRole }> {
  const fields = new Fields()
  fields.check(['teacher'], () => keyOf('Teacher', teacher, ['teacher']))
  fields.check(['classroom'], () => keyOf('Classroom', classroom, ['classroom']))
  const assignment = role == null ? TeacherRole.PRIMARY : fields.check(['role'], () => requireEnum('Classroom role', role, TeacherRole))
  fields.done()
  const { schoolId } = target
  return await inTransaction(target, async (tx) => {
    const found = await requireRecord(tx, schoolId, 'Teacher', teacher, ['teacher'])
    const room = await requireClassroomRef(tx, schoolId, classroom, ['classroom'])
    await setAssignment(tx, { schoolId, teacherId: found.id, classroomId: room.id }, assignment!)
    return { teacherId: found.id, classroomId: room.id, role: assignment! }
  })
}

/** Ends the assignment of the teacher `teacher` names to the classroom `classroom` names (NOT_FOUND when there is none). */
export async function endAssignment (target: SchoolTarget, teacher: RecordRef, classroom: RecordRef): Promise<{ teacherId: string, classroomId: string, role: TeacherRole }> {
  const fields = new Fields()
  fields.check(['teacher'], () => keyOf('Teacher', teacher, ['teacher']))
  fields.check(['classroom'], () => keyOf('Classroom', classroom, ['classroom']))
  fields.done()
  const { schoolId } = target
  return await inTransaction(target, async (tx) => {
    const found = await requireRecord(tx, schoolId, 'Teacher', teacher, ['teacher'])
    const room = await requireClassroomRef(tx, schoolId, classroom, ['classroom'])
    const role = await requireAssignment(tx, found.id, room.id)
    await tx.teacherClassroom.deleteMany({ where: { teacherId: found.id, classroomId: room.id } })
    return { teacherId: found.id, classroomId: room.id, role }
  })
}

export interface TeacherInput extends TeacherFields {
  schoolId: string
}

export async function createTeacher (db: Database, input: TeacherInput): Promise<string> {
  const { schoolId, ...fields } = input
  return (await addTeacher(await schoolTarget(db, schoolId), fields, { path: [] })).id
}

/**
 * Assigns a teacher to a classroom of their school (created on first use of its name, as for a
 * student), in a role (PRIMARY by default, or ASSISTANT); an assignment that exists takes the role.
 * What a teacher login reads follows its teacher's assignments (docs/api/access.md#roles).
 */
export async function assignTeacher (
  db: Database,
  { schoolId, teacherId, classroom, role }: { schoolId: string, teacherId: string, classroom: string, role?: string | undefined }
): Promise<{ classroomId: string, role: TeacherRole }> {
  const school = await requireSchool(db, schoolId)
  const teacher = await requireTeacherOf(db, school, teacherId)
  const assignment = role === undefined ? TeacherRole.PRIMARY : requireEnum('Classroom role', role, TeacherRole)
  const tenant = db.forSchool(school)
  const room = await classroomNamed(tenant, school, classroom)
  await setAssignment(tenant, { schoolId: school, teacherId: teacher, classroomId: room.id }, assignment)
  return { classroomId: room.id, role: assignment }
}

/**
 * Ends a teacher's assignment to a classroom (given by id or name): the teacher's login no longer
 * reads it, on every API node (the write's notification drops the node's kept classrooms and
 * cached answers). An assignment that does not exist is refused, nothing written.
 */
export async function unassignTeacher (
  db: Database,
  { schoolId, teacherId, classroom }: { schoolId: string, teacherId: string, classroom: string }
): Promise<{ classroomId: string, classroomName: string }> {
  const school = await requireSchool(db, schoolId)
  const teacher = await requireTeacherOf(db, school, teacherId)
  const tenant = db.forSchool(school)
  const room = await requireClassroomOf(tenant, school, classroom)
  const { count } = await tenant.teacherClassroom.deleteMany({ where: { teacherId: teacher, classroomId: room.id } })
  if (count === 0) throw new AdminError(`Teacher ${teacher} is not assigned to classroom "${room.name}" (${room.id}): nothing was changed`, 'NOT_FOUND')
  return { classroomId: room.id, classroomName: room.name }
}

/**
 * Moves a teacher's assignment from one classroom to another, in the same role, in one transaction
 * (the CLI's `teacher move`): NOT_FOUND when there is no assignment to move.
 */
export async function moveTeacher (target: SchoolTarget, teacher: RecordRef, from: RecordRef, to: RecordRef): Promise<{ teacherId: string, from: string, to: string, role: TeacherRole }> {
  const fields = new Fields()
  fields.check(['teacher'], () => keyOf('Teacher', teacher, ['teacher']))
  fields.check(['from'], () => keyOf('Classroom', from, ['from']))
  fields.check(['to'], () => keyOf('Classroom', to, ['to']))
  fields.done()
  const { schoolId } = target
  return await inTransaction(target, async (tx) => {
    const found = await requireRecord(tx, schoolId, 'Teacher', teacher, ['teacher'])
    const source = await requireClassroomRef(tx, schoolId, from, ['from'])
    const destination = await requireClassroomRef(tx, schoolId, to, ['to'])
    const role = await requireAssignment(tx, found.id, source.id)
    if (source.id !== destination.id) {
      await tx.teacherClassroom.deleteMany({ where: { teacherId: found.id, classroomId: source.id } })
      await setAssignment(tx, { schoolId, teacherId: found.id, classroomId: destination.id }, role)
    }
    return { teacherId: found.id, from: source.id, to: destination.id, role }
  })
}
