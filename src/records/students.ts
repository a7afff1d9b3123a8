// Students: the record kind declared once (its list's orders, cursors and filter), read through
// the typed statements by every caller (lists.ts), and its writes: a student created, placed in a
// classroom or taken out of it, and the bulk upsert by sourcedId (the shared rules and refusals:
// writes.ts). The GraphQL resolvers (src/graphql/resolvers/students.ts and the mutations), the
// command line and the tests are thin callers of it.
import type { Prisma } from '../generated/prisma/client.js'
import type { ListCondition } from '../db/typed-reads.js'
import type { SchoolDb } from '../db/school-client.js'
import { requireUuid } from '../graphql/ids.js'
import { searchPattern, type ListArgs } from '../graphql/paging.js'
import { NAME_FIELDS, PERSON_ORDERS, readList, readPage, readRelation, type ListKind, type PersonOrderField, type Selection } from './lists.js'
import type { Database } from '../db/client.js'
import { comparable, insertStudents, studentsBySourcedId, updateStudents, type StudentWritten } from '../db/typed-writes.js'
import { v7 as uuidv7 } from 'uuid'
import { AdminError, requireId, requireText } from './errors.js'
import { classroomNamed, requireClassroomOf } from './classrooms.js'
import {
  checkEnrollment, checkNewPerson, Fields, inTransaction, keyOf, notFound, requireSchool, schoolTarget, STUDENT_RULES, writing, written,
  type Path, type RecordRef, type SchoolTarget, type StudentFields, type Tenant, type Tx, type Versioned
} from './writes.js'

export type StudentOrderField = PersonOrderField

export interface StudentFilter { classroomId?: string | null, gradeLevel?: string | null, status?: string | null, search?: string | null }

export type StudentListArgs = ListArgs<StudentOrderField, StudentFilter>

export const STUDENTS: ListKind<StudentOrderField, StudentFilter> = {
  model: 'Student',
  spec: {
    list: 'students',
    orders: PERSON_ORDERS,
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
    if (pattern !== undefined) conditions.push({ kind: 'contains', fields: NAME_FIELDS, pattern })
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

// ---- Writes: the command line and the API's mutations (docs/api/mutations.md) -------------------

/** Creates a student; `classroom`: an existing classroom by key, or (the CLI) one by name, created on first use. */
export async function addStudent (
  target: SchoolTarget,
  input: StudentFields,
  { classroom, classroomNamed: named, path = ['input'] }: { classroom?: RecordRef | null | undefined, classroomNamed?: string | undefined, path?: Path } = {}
): Promise<Versioned> {
  const fields = new Fields()
  const data = written(STUDENT_RULES, input, fields, path)
  checkNewPerson(data, fields, path)
  const roomKey = classroom === undefined || classroom === null ? undefined : fields.check([...path, 'classroom'], () => keyOf('Classroom', classroom, [...path, 'classroom']))
  const roomName = named === undefined ? undefined : fields.check([...path, 'classroom'], () => requireText('Classroom name', named))
  fields.done()
  const { schoolId } = target
  return await writing(target, 'Student', [{ data, path }], async (tx) => {
    let classroomId: string | undefined
    if (roomKey !== undefined) {
      const room = await tx.classroom.findFirst({ where: roomKey, select: { id: true } })
      if (room === null) throw notFound('Classroom', roomKey, schoolId)
      classroomId = room.id
    }
    if (roomName !== undefined) classroomId = (await classroomNamed(tx, schoolId, roomName)).id
    const [row] = await tx.student.createManyAndReturn({
      data: [{ ...data, schoolId, ...(classroomId === undefined ? {} : { classroomId }) }],
      select: { id: true, version: true }
    })
    return row!
  })
}

/** Puts the student `student` names in the classroom `classroom` names, in place of the one they were in. */
export async function placeStudent (target: SchoolTarget, student: RecordRef, classroom: RecordRef): Promise<Versioned & { moved: boolean }> {
  const fields = new Fields()
  const studentKey = fields.check(['student'], () => keyOf('Student', student, ['student']))
  const roomKey = fields.check(['classroom'], () => keyOf('Classroom', classroom, ['classroom']))
  fields.done()
  const { schoolId } = target
  return await inTransaction(target, async (tx) => {
    const row = await tx.student.findFirst({ where: studentKey!, select: { id: true, version: true, classroomId: true } })
    if (row === null) throw notFound('Student', studentKey!, schoolId)
    const room = await tx.classroom.findFirst({ where: roomKey!, select: { id: true } })
    if (room === null) throw notFound('Classroom', roomKey!, schoolId)
    if (row.classroomId === room.id) return { id: row.id, version: row.version, moved: false }
    const [moved] = await tx.student.updateManyAndReturn({ where: { id: row.id }, data: { classroomId: room.id }, select: { id: true, version: true } })
    return { ...moved!, moved: true }
  })
}

/** Takes a student out of their classroom; with `classroom`, only out of that one (else NOT_FOUND). */
export async function removeStudentFromClassroom (target: SchoolTarget, student: RecordRef, classroom?: RecordRef | null): Promise<Versioned> {
  const fields = new Fields()
  const studentKey = fields.check(['student'], () => keyOf('Student', student, ['student']))
  const roomKey = classroom == null ? undefined : fields.check(['classroom'], () => keyOf('Classroom', classroom, ['classroom']))
  fields.done()
  const { schoolId } = target
  return await inTransaction(target, async (tx) => {
    const row = await tx.student.findFirst({ where: studentKey!, select: { id: true, classroomId: true } })
    if (row === null) throw notFound('Student', studentKey!, schoolId)
    const room = roomKey === undefined ? undefined : await tx.classroom.findFirst({ where: roomKey, select: { id: true } })
    if (room === null) throw notFound('Classroom', roomKey!, schoolId)
    if (row.classroomId === null || (room !== undefined && room.id !== row.classroomId)) {
      throw new AdminError(`Student ${row.id} is not in ${room === undefined ? 'a classroom' : `classroom ${room.id}`}: nothing was changed`, 'NOT_FOUND')
    }
    const [out] = await tx.student.updateManyAndReturn({ where: { id: row.id, classroomId: row.classroomId }, data: { classroomId: null }, select: { id: true, version: true } })
    if (out === undefined) throw new AdminError(`Student ${row.id} changed classroom meanwhile: nothing was changed, retry`, 'CONFLICT')
    return out
  })
}

/** The bound of a bulk upsert: a page's. */
export const UPSERT_MAX = 1000

export type UpsertOutcome = 'CREATED' | 'CHANGED' | 'UNCHANGED'

export interface UpsertedStudent { sourcedId: string, id: string, version: number, outcome: UpsertOutcome }

function same (a: unknown, b: unknown): boolean {
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime()
  return a === b
}

/**
 * Creates or changes students by sourcedId, all or nothing (one transaction), set-based: one read
 * of the school's students with these sourcedIds, one INSERT of the new ones, and one UPDATE per
 * set of changes (students whose fields differ the same way are written together; a student
 * already as given is not written: UNCHANGED).
 */
export async function upsertStudents (target: SchoolTarget, items: ReadonlyArray<StudentFields & { sourcedId: string }>, { path = ['items'] }: { path?: Path } = {}): Promise<UpsertedStudent[]> {
  const fields = new Fields()
  if (items.length === 0 || items.length > UPSERT_MAX) fields.fail(path, `Give 1 to ${UPSERT_MAX} items (got ${items.length})`)
  const rows = items.map((item, i) => ({ data: written(STUDENT_RULES, item, fields, [...path, i]), path: [...path, i] }))
  const seen = new Map<string, number>()
  rows.forEach(({ data }, i) => {
    checkEnrollment(data, fields, [...path, i])
    const sourcedId = data.sourcedId
    if (sourcedId === null) fields.fail([...path, i, 'sourcedId'], 'Sourced id must not be null')
    if (typeof sourcedId !== 'string') return
    const first = seen.get(sourcedId)
    if (first !== undefined) fields.fail([...path, i, 'sourcedId'], `Sourced id "${sourcedId}" is given twice (items ${first} and ${i})`)
    else seen.set(sourcedId, i)
  })
  fields.done()
  if (target.tenant.$typedWrites()) return await writing(target, 'Student', rows, async (tx) => await upsertByStatements(tx, rows, [...seen.keys()], path))
  // The decision reads the fields the batch gives, the only ones it compares: all of them a caller
  // may read, since it writes only what it may read (unwritableColumns, src/auth/scopes.ts), while
  // the student's other fields may be outside its scopes (wall 1 refuses reading those).
  const compared = Object.fromEntries(rows.flatMap(({ data }) => Object.keys(data)).map((key) => [key, true]))
  const { schoolId } = target
  return await writing(target, 'Student', rows, async (tx) => {
    const existing = await tx.student.findMany({ where: { sourcedId: { in: [...seen.keys()] } }, select: { ...compared, sourcedId: true, id: true, version: true } })
    const bySourced = new Map(existing.map((row) => [row.sourcedId!, row as unknown as Record<string, unknown> & Versioned]))
    const out: UpsertedStudent[] = []
    const fresh: Array<{ index: number, data: Record<string, unknown> }> = []
    const changing = new Map<string, { changes: Record<string, unknown>, items: number[] }>()
    const invalid = new Fields()
    for (const [index, { data }] of rows.entries()) {
      const sourcedId = data.sourcedId as string
      const row = bySourced.get(sourcedId)
      if (row === undefined) {
        checkNewPerson(data, invalid, [...path, index])
        fresh.push({ index, data })
        out.push({ sourcedId, id: '', version: 1, outcome: 'CREATED' })
        continue
      }
      const changes = Object.fromEntries(Object.entries(data).filter(([key, value]) => !same(row[key], value)))
      if (Object.keys(changes).length === 0) {
        out.push({ sourcedId, id: row.id, version: row.version, outcome: 'UNCHANGED' })
        continue
      }
      // Students with the same changes are written by one UPDATE.
      const key = JSON.stringify(Object.entries(changes).sort(([a], [b]) => a < b ? -1 : 1))
      const group = changing.get(key)
      if (group === undefined) changing.set(key, { changes, items: [index] })
      else group.items.push(index)
      out.push({ sourcedId, id: row.id, version: row.version, outcome: 'CHANGED' })
    }
    invalid.done()
    for (const { changes, items } of changing.values()) {
      const written = await tx.student.updateManyAndReturn({ where: { id: { in: items.map((i) => out[i]!.id) } }, data: changes, select: { id: true, version: true } })
      const versions = new Map(written.map((row) => [row.id, row.version]))
      for (const i of items) out[i]!.version = versions.get(out[i]!.id) ?? out[i]!.version + 1
    }
    if (fresh.length > 0) {
      const created = await tx.student.createManyAndReturn({
        data: fresh.map(({ data }) => ({ ...data, schoolId })),
        select: { id: true, sourcedId: true, version: true }
      })
      const ids = new Map(created.map((row) => [row.sourcedId!, row]))
      for (const { index, data } of fresh) {
        const row = ids.get(data.sourcedId as string)!
        out[index] = { sourcedId: data.sourcedId as string, id: row.id, version: row.version, outcome: 'CREATED' }
      }
    }
    return out
  })
}

/** Rows grouped by the set of fields each gives (in the rules' order): one statement per group. */
function byFields<T> (rows: readonly T[], fieldsOf: (row: T) => Record<string, unknown>): Map<string, { fields: string[], rows: T[] }> {
  const groups = new Map<string, { fields: string[], rows: T[] }>()
  for (const row of rows) {
    const fields = Object.keys(fieldsOf(row))
    const key = fields.join(',')
    const group = groups.get(key)
    if (group === undefined) groups.set(key, { fields, rows: [row] })
    else group.rows.push(row)
  }
  return groups
}

/**
 * upsertStudents on a client that writes through typed statements (typed-writes.ts), as the
 * OneRoster import writes: one read of the batch's students by sourcedId, one INSERT of the new ones
 * per set of fields given, and one UPDATE of the changed ones per set of fields changed, each of
 * arrays unnested by PostgreSQL. The same outcomes, checks and refusals as
 * the model operations.
 */
async function upsertByStatements (tx: Tx, rows: ReadonlyArray<{ data: Record<string, unknown>, path: Path }>, sourcedIds: string[], path: Path): Promise<UpsertedStudent[]> {
  const lookup = studentsBySourcedId(sourcedIds)
  const existing = await tx.$queryRawUnsafe<Array<Record<string, unknown> & Versioned>>(lookup.statement.sql, ...lookup.values)
  const bySourced = new Map(existing.map((row) => [row.sourcedId as string, row]))
  const out: UpsertedStudent[] = []
  const fresh: Array<{ index: number, id: string, data: Record<string, unknown> }> = []
  const changing: Array<{ index: number, id: string, changes: Record<string, unknown> }> = []
  const invalid = new Fields()
  for (const [index, { data }] of rows.entries()) {
    const sourcedId = data.sourcedId as string
    const row = bySourced.get(sourcedId)
    if (row === undefined) {
      checkNewPerson(data, invalid, [...path, index])
      // The id as a model create makes it (Prisma's uuid(7)): the students' key orders by creation.
      const id = uuidv7()
      fresh.push({ index, id, data })
      out.push({ sourcedId, id, version: 1, outcome: 'CREATED' })
      continue
    }
    const changes = Object.fromEntries(Object.entries(data).filter(([key, value]) => row[key] !== comparable(key as StudentWritten, value)))
    out.push({ sourcedId, id: row.id, version: row.version, outcome: Object.keys(changes).length === 0 ? 'UNCHANGED' : 'CHANGED' })
    if (Object.keys(changes).length > 0) changing.push({ index, id: row.id, changes })
  }
  invalid.done()
  for (const group of byFields(changing, (row) => row.changes).values()) {
    // One statement for the whole group: the teacher feed's trigger costs PostgreSQL in proportion
    // to its rows (migration teacher_feed_join_plans), and fewer statements cost less (BENCHMARKS.md).
    const update = updateStudents(group.fields, group.rows)
    const written = await tx.$queryRawUnsafe<Versioned[]>(update.statement.sql, ...update.values)
    const versions = new Map(written.map((row) => [row.id, row.version]))
    for (const { index } of group.rows) out[index]!.version = versions.get(out[index]!.id) ?? out[index]!.version + 1
  }
  for (const group of byFields(fresh, (row) => row.data).values()) {
    const insert = insertStudents(group.fields, group.rows)
    const created = await tx.$queryRawUnsafe<Versioned[]>(insert.statement.sql, ...insert.values)
    const versions = new Map(created.map((row) => [row.id, row.version]))
    for (const { index, id } of group.rows) out[index]!.version = versions.get(id) ?? 1
  }
  return out
}

/** Creates a student (the CLI's and the tests' form: the school by id, the classroom by name, created on first use). */
export interface StudentInput extends StudentFields {
  schoolId: string
  classroom?: string | undefined
}

export async function createStudent (db: Database, input: StudentInput): Promise<string> {
  const { schoolId, classroom, ...fields } = input
  const target = await schoolTarget(db, schoolId)
  return (await addStudent(target, fields, { classroomNamed: classroom, path: [] })).id
}

async function requireStudentOf (tenant: Tenant, schoolId: string, studentId: string): Promise<{ id: string, classroomId: string | null, classroom: { name: string } | null }> {
  const id = requireId('Student', studentId)
  const student = await tenant.student.findFirst({ where: { id }, select: { id: true, classroomId: true, classroom: { select: { name: true } } } })
  if (student === null) throw new AdminError(`Student ${id} is not a student of school ${schoolId}`, 'NOT_FOUND')
  return student
}

/** Writes a student's classroom if they are still in the one read (another writer may have moved them since). */
async function moveStudent (tenant: Tenant, student: { id: string, classroomId: string | null }, to: string | null): Promise<void> {
  const { count } = await tenant.student.updateMany({ where: { id: student.id, classroomId: student.classroomId }, data: { classroomId: to } })
  if (count === 0) throw new AdminError(`Student ${student.id} changed classroom meanwhile: nothing was changed, run the command again`)
}

/**
 * Puts a student in a classroom of their school (created on first use of its name), in place of the
 * one they were in: a student is in one classroom at most.
 */
export async function assignStudent (
  db: Database,
  { schoolId, studentId, classroom }: { schoolId: string, studentId: string, classroom: string }
): Promise<{ classroomId: string, moved: boolean }> {
  const school = await requireSchool(db, schoolId)
  const tenant = db.forSchool(school)
  const student = await requireStudentOf(tenant, school, studentId)
  const room = await classroomNamed(tenant, school, classroom)
  if (student.classroomId === room.id) return { classroomId: room.id, moved: false }
  await moveStudent(tenant, student, room.id)
  return { classroomId: room.id, moved: true }
}

/**
 * Takes a student out of their classroom; with `classroom` (an id or name), only out of that one.
 * A student in no classroom, or in another, is refused, nothing written. The student stays, in no
 * classroom; their enrollment dates (at the school) stay as they are.
 */
export async function unassignStudent (
  db: Database,
  { schoolId, studentId, classroom }: { schoolId: string, studentId: string, classroom?: string | undefined }
): Promise<{ classroomId: string, classroomName: string }> {
  const school = await requireSchool(db, schoolId)
  const tenant = db.forSchool(school)
  const student = await requireStudentOf(tenant, school, studentId)
  const room = classroom === undefined ? undefined : await requireClassroomOf(tenant, school, classroom)
  if (student.classroomId === null) {
    throw new AdminError(`Student ${student.id} is in no classroom${room === undefined ? '' : ` (not in "${room.name}")`}: nothing was changed`, 'NOT_FOUND')
  }
  if (room !== undefined && room.id !== student.classroomId) {
    throw new AdminError(`Student ${student.id} is not in classroom "${room.name}" (${room.id}): nothing was changed`, 'NOT_FOUND')
  }
  await moveStudent(tenant, student, null)
  return { classroomId: student.classroomId, classroomName: student.classroom?.name ?? '' }
}
