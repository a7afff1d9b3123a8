// The record writes the kinds share (students.ts, teachers.ts and classrooms.ts hold each kind's
// own): where a write goes (SchoolTarget: the school, through a client of that school), its one
// transaction, the field rules of each kind, a record named by one of its keys (RecordRef, keyOf,
// requireRecord), a unique violation turned into the CONFLICT naming the key (writing), and the
// changes and deletions of any kind (changeRecord, deleteRecord). The command line, the API's
// mutations (docs/api/mutations.md) and the tests call them; tenant records are written through the
// client scoped to their school, like every other tenant write.
import type { Database } from '../db/client.js'
import { Prisma } from '../generated/prisma/client.js'
import { GradeLevel, StudentStatus, TeacherStatus } from '../generated/prisma/enums.js'
import { parseUuid } from '../validators.js'
import { AdminError, requireId, requireText, type InvalidField } from './errors.js'

/** The id of an existing school, in its one form. */
export async function requireSchool (db: Database, schoolId: string): Promise<string> {
  const id = requireId('School', schoolId)
  const school = await db.prisma.school.findUnique({ where: { id }, select: { id: true } })
  if (school === null) throw new AdminError(`School ${id} does not exist`)
  return school.id
}

/**
 * The OneRoster/CEDS code of each grade level (PK, KG, 01..13, Other): what the OneRoster routes
 * answer as a user's grades (src/oneroster/kinds.ts), and what a write accepts beside the enum names.
 */
export const CEDS_GRADE: Readonly<Record<GradeLevel, string>> = {
  PRE_KINDERGARTEN: 'PK',
  KINDERGARTEN: 'KG',
  ...Object.fromEntries(Array.from({ length: 13 }, (_, i) => [`GRADE_${i + 1}`, String(i + 1).padStart(2, '0')])) as Record<`GRADE_${number}`, string>,
  UNGRADED: 'Other'
} as Record<GradeLevel, string>

/** The grade level of a code, by its upper case. */
const GRADE_CODES: Record<string, GradeLevel> = Object.fromEntries(Object.entries(CEDS_GRADE).map(([level, code]) => [code.toUpperCase(), level as GradeLevel]))

export function requireEnum<T extends string> (label: string, value: string, values: Record<string, T>): T {
  const name = value.trim().toUpperCase()
  if (name in values) return name as T
  throw new AdminError(`${label} must be one of ${Object.keys(values).join(', ')} (got "${value}")`)
}

export function requireGradeLevel (value: string): GradeLevel {
  const code = GRADE_CODES[value.trim().toUpperCase()]
  if (code !== undefined) return code
  try {
    return requireEnum('Grade level', value, GradeLevel)
  } catch {
    throw new AdminError(`Grade level must be one of ${Object.keys(GradeLevel).join(', ')} or a OneRoster code (PK, KG, 01 to 13, Other) (got "${value}")`)
  }
}

function requireDay (label: string, value: string): Date {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value.trim())
  const date = match === null ? null : new Date(`${value.trim()}T00:00:00.000Z`)
  if (date === null || Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value.trim()) {
    throw new AdminError(`${label} must be a day as YYYY-MM-DD (got "${value}")`)
  }
  return date
}

function requireEmail (value: string): string {
  const email = requireText('Email', value, 254)
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new AdminError(`Email "${email}" is not an email address`)
  return email
}

// ---- Records written: the command line and the API's mutations (docs/api/mutations.md) ----------

/** A school's client, as the records' operations take it. */
export type Tenant = ReturnType<Database['forSchool']>

/**
 * Where a record operation writes: the school, through a client of that school. In the API it is
 * the caller's (both walls and the caller's reach); for an operator, the school's (schoolTarget).
 */
export interface SchoolTarget {
  readonly schoolId: string
  readonly tenant: Tenant
  /**
   * How the operation's one transaction runs `work`; by default the school client's own. The API's
   * mutations pass one that reads their answer in it, and with an idempotency key keeps the key
   * and the answer in it too (src/graphql/resolvers/mutations.ts, src/graphql/idempotency.ts's
   * mutateOnce).
   */
  readonly transaction?: TransactionRunner
}

/** Runs a record operation's work in one transaction of the school's client (SchoolTarget.transaction). */
export type TransactionRunner = <T>(work: (tx: Tx) => Promise<T>) => Promise<T>

/** The target of an operator's command: an existing school, through its client. */
export async function schoolTarget (db: Database, schoolId: string): Promise<SchoolTarget> {
  const school = await requireSchool(db, schoolId)
  return { schoolId: school, tenant: db.forSchool(school) }
}

/** The models a transaction of the school's client writes, and its typed statements (the bulk upsert's). */
export type Tx = Pick<Tenant, 'student' | 'teacher' | 'classroom' | 'teacherClassroom' | '$queryRawUnsafe'>

/** Runs `work` in one transaction of the school's client (or the target's runner): all of it is written, or nothing. */
export async function inTransaction<T> (target: SchoolTarget, work: (tx: Tx) => Promise<T>): Promise<T> {
  if (target.transaction !== undefined) return await target.transaction(work)
  return await target.tenant.$transaction(work) as T
}

export type Path = Array<string | number>

/** The invalid fields of one write, collected so that all of them are reported together. */
export class Fields {
  readonly invalid: InvalidField[] = []

  /** `check()`'s value, or undefined with the field recorded when it refuses the input. */
  check<T> (path: Path, check: () => T): T | undefined {
    try {
      return check()
    } catch (err) {
      if (!(err instanceof AdminError) || err.code !== 'BAD_USER_INPUT') throw err
      this.invalid.push(...(err.details.invalid ?? [{ path, message: err.message }]))
      return undefined
    }
  }

  fail (path: Path, message: string): void {
    this.invalid.push({ path, message })
  }

  /** Throws BAD_USER_INPUT with every invalid field, if there is one. */
  done (): void {
    const [first] = this.invalid
    if (first === undefined) return
    const message = this.invalid.length === 1
      ? first.message
      : `${this.invalid.length} invalid fields: ${this.invalid.map((f) => `${f.path.join('.')}: ${f.message}`).join('; ')}`
    throw new AdminError(message, 'BAD_USER_INPUT', { invalid: this.invalid })
  }
}

/** A day as YYYY-MM-DD (the CLI), or the Date the GraphQL Date scalar makes of one. */
export type Day = string | Date

interface Rule {
  label: string
  /** May be cleared (`null`). */
  nullable: boolean
  parse: (label: string, value: never) => unknown
}

const text = (max = 200) => (label: string, value: string): string => requireText(label, value, max)
const day = (label: string, value: Day): Date => value instanceof Date ? value : requireDay(label, value)

/** A record's written fields, by name, each with its label, whether it may be cleared and its check. */
export const STUDENT_RULES = {
  sourcedId: { label: 'Sourced id', nullable: true, parse: text(255) },
  fullName: { label: 'Full name', nullable: false, parse: text() },
  givenName: { label: 'Given name', nullable: false, parse: text() },
  familyName: { label: 'Family name', nullable: false, parse: text() },
  preferredName: { label: 'Preferred name', nullable: true, parse: text() },
  studentNumber: { label: 'Student number', nullable: true, parse: text(64) },
  email: { label: 'Email', nullable: true, parse: (_label: string, value: string) => requireEmail(value) },
  dateOfBirth: { label: 'Date of birth', nullable: true, parse: day },
  gradeLevel: { label: 'Grade level', nullable: true, parse: (_label: string, value: string) => requireGradeLevel(value) },
  status: { label: 'Status', nullable: false, parse: (label: string, value: string) => requireEnum(label, value, StudentStatus) },
  enrollmentStartDate: { label: 'Enrollment start date', nullable: true, parse: day },
  enrollmentEndDate: { label: 'Enrollment end date', nullable: true, parse: day }
} as const satisfies Record<string, Rule>

export const TEACHER_RULES = {
  sourcedId: STUDENT_RULES.sourcedId,
  fullName: STUDENT_RULES.fullName,
  givenName: STUDENT_RULES.givenName,
  familyName: STUDENT_RULES.familyName,
  preferredName: STUDENT_RULES.preferredName,
  email: STUDENT_RULES.email,
  title: { label: 'Title', nullable: true, parse: text() },
  status: { label: 'Status', nullable: false, parse: (label: string, value: string) => requireEnum(label, value, TeacherStatus) }
} as const satisfies Record<string, Rule>

export const CLASSROOM_RULES = {
  name: { label: 'Classroom name', nullable: false, parse: text() },
  sourcedId: STUDENT_RULES.sourcedId,
  gradeLevel: STUDENT_RULES.gradeLevel,
  subject: { label: 'Subject', nullable: true, parse: text() }
} as const satisfies Record<string, Rule>

/** The fields of a record as a write gives them: left out (undefined), cleared (null) or set. */
type Given<R extends Record<string, Rule>> = { [K in keyof R]?: Parameters<R[K]['parse']>[1] | null | undefined }

export type StudentFields = Given<typeof STUDENT_RULES>
export type TeacherFields = Given<typeof TEACHER_RULES>
export type ClassroomFields = Given<typeof CLASSROOM_RULES>

/** The columns a write sets: the fields given, checked; the invalid ones recorded under `base`. */
export function written (rules: Record<string, Rule>, input: object, fields: Fields, base: Path): Record<string, unknown> {
  const data: Record<string, unknown> = {}
  for (const [key, rule] of Object.entries(rules)) {
    const value = (input as Record<string, unknown>)[key]
    if (value === undefined) continue
    if (value === null) {
      if (rule.nullable) data[key] = null
      else fields.fail([...base, key], `${rule.label} must not be null`)
      continue
    }
    const parsed = fields.check([...base, key], () => rule.parse(rule.label, value as never))
    if (parsed !== undefined) data[key] = parsed
  }
  return data
}

/** A new person's checks beyond their fields: a name to go by, enrollment dates in order. */
export function checkNewPerson (data: Record<string, unknown>, fields: Fields, base: Path): void {
  if (data.fullName === undefined && data.givenName === undefined && data.familyName === undefined &&
    !fields.invalid.some((f) => ['fullName', 'givenName', 'familyName'].includes(String(f.path.at(-1))))) {
    fields.fail(base, 'A full name, or a given or family name, is required')
  }
  checkEnrollment(data, fields, base)
}

export function checkEnrollment (data: Record<string, unknown>, fields: Fields, base: Path): void {
  const { enrollmentStartDate: start, enrollmentEndDate: end } = data
  if (start instanceof Date && end instanceof Date && end < start) {
    fields.fail([...base, 'enrollmentEndDate'], 'Enrollment end date must not be before the start date')
  }
}

/** A record named by one of its keys (GraphQL's StudentRef, TeacherRef, ClassroomRef; the CLI's options). */
export interface RecordRef {
  id?: string | null | undefined
  sourcedId?: string | null | undefined
  studentNumber?: string | null | undefined
  name?: string | null | undefined
}

export type Kind = 'Student' | 'Teacher' | 'Classroom'

const REF_KEYS: Readonly<Record<Kind, ReadonlyArray<keyof RecordRef>>> = {
  Student: ['id', 'sourcedId', 'studentNumber'],
  Teacher: ['id', 'sourcedId'],
  Classroom: ['id', 'sourcedId', 'name']
}

/** The filter of the one key `ref` gives; BAD_USER_INPUT at `path` unless it gives exactly one, well formed. */
export function keyOf (kind: 'Student', ref: RecordRef, path: Path): { id: string } | { sourcedId: string } | { studentNumber: string }
export function keyOf (kind: 'Teacher', ref: RecordRef, path: Path): { id: string } | { sourcedId: string }
export function keyOf (kind: 'Classroom', ref: RecordRef, path: Path): { id: string } | { sourcedId: string } | { name: string }
export function keyOf (kind: Kind, ref: RecordRef, path: Path): Record<string, string>
export function keyOf (kind: Kind, ref: RecordRef, path: Path): Record<string, string> {
  const keys = REF_KEYS[kind]
  const given = keys.filter((key) => ref[key] !== undefined && ref[key] !== null)
  const [key] = given
  if (given.length !== 1 || key === undefined) {
    throw new AdminError(`${kind}: give exactly one of ${keys.join(', ')}`, 'BAD_USER_INPUT', { invalid: [{ path, message: `Give exactly one of ${keys.join(', ')}` }] })
  }
  const value = ref[key]!
  if (key === 'id') {
    const id = parseUuid(value)
    if (id === undefined) {
      const message = `${kind} id "${value.slice(0, 64)}" is not a UUID`
      throw new AdminError(message, 'BAD_USER_INPUT', { invalid: [{ path: [...path, 'id'], message }] })
    }
    return { id }
  }
  const label = key === 'name' ? 'Classroom name' : key === 'sourcedId' ? 'Sourced id' : 'Student number'
  try {
    return { [key]: requireText(label, value, key === 'sourcedId' ? 255 : key === 'studentNumber' ? 64 : 200) }
  } catch (err) {
    throw new AdminError((err as Error).message, 'BAD_USER_INPUT', { invalid: [{ path: [...path, key], message: (err as Error).message }] })
  }
}

/** `ref` in words, as a refusal names it. */
function describe (key: Record<string, string>): string {
  const [[name, value] = ['', '']] = Object.entries(key)
  return name === 'id' ? value : `with ${name} "${value}"`
}

/**
 * Refusal of a record that is not there. Another school's record is refused the same way: the
 * school's client cannot see it, and the message names only what was asked.
 */
export function notFound (kind: Kind, key: Record<string, string>, schoolId: string): AdminError {
  return new AdminError(`${kind} ${describe(key)} is not a ${kind.toLowerCase()} of school ${schoolId}`, 'NOT_FOUND')
}

export interface Versioned { id: string, version: number }

function versionConflict (kind: Kind, row: Versioned, expected: number): AdminError {
  return new AdminError(`${kind} ${row.id} is at version ${row.version}, not ${expected}: it changed meanwhile, nothing was written (read it again and retry)`,
    'VERSION_CONFLICT', { currentVersion: row.version })
}

/** The model delegate of a kind, as the operations below use it (the three share these calls). */
interface Delegate {
  findFirst: (args: { where: Record<string, unknown>, select: Record<string, boolean> }) => Promise<Record<string, unknown> | null>
  findMany: (args: { where: Record<string, unknown>, select: Record<string, boolean> }) => Promise<Array<Record<string, unknown>>>
  createManyAndReturn: (args: { data: Array<Record<string, unknown>>, select: Record<string, boolean> }) => Promise<Array<Record<string, unknown>>>
  updateManyAndReturn: (args: { where: Record<string, unknown>, data: Record<string, unknown>, select: Record<string, boolean> }) => Promise<Array<Record<string, unknown>>>
  deleteMany: (args: { where: Record<string, unknown> }) => Promise<{ count: number }>
}

function delegate (tx: Tx, kind: Kind): Delegate {
  switch (kind) {
    case 'Student': return tx.student as unknown as Delegate
    case 'Teacher': return tx.teacher as unknown as Delegate
    case 'Classroom': return tx.classroom as unknown as Delegate
  }
}

const VERSIONED = { id: true, version: true, sourcedId: true } as const

/** The record `ref` names, with its id, version and sourcedId; NOT_FOUND when the school has none. */
export async function requireRecord (tx: Tx, schoolId: string, kind: Kind, ref: RecordRef, path: Path): Promise<Versioned & { sourcedId: string | null }> {
  const key = keyOf(kind, ref, path)
  const row = await delegate(tx, kind).findFirst({ where: key, select: VERSIONED })
  if (row === null) throw notFound(kind, key, schoolId)
  return row as unknown as Versioned & { sourcedId: string | null }
}

/** The natural keys of each kind, which a write may find taken. */
const NATURAL_KEYS: Readonly<Record<Kind, readonly string[]>> = {
  Student: ['sourcedId', 'studentNumber'],
  Teacher: ['sourcedId'],
  Classroom: ['name', 'sourcedId']
}

/**
 * Whether `err` is a unique violation: a model operation's P2002, or a typed statement's (a raw
 * query's P2010, with PostgreSQL's code 23505 inside).
 */
function uniqueViolation (err: unknown): boolean {
  if (!(err instanceof Prisma.PrismaClientKnownRequestError)) return false
  if (err.code === 'P2002') return true
  if (err.code !== 'P2010') return false
  // Through a driver adapter (pg, PGlite), the raw query's error carries the adapter's: its kind,
  // and PostgreSQL's SQLSTATE as its original code.
  const cause = (err.meta as { driverAdapterError?: { cause?: { kind?: unknown, originalCode?: unknown } } } | undefined)?.driverAdapterError?.cause
  return cause?.kind === 'UniqueConstraintViolation' || cause?.originalCode === '23505'
}

/**
 * A unique violation of a write, as the CONFLICT it is: which natural key is taken (read after the
 * transaction rolled back); anything else is passed on.
 */
async function conflictOf (err: unknown, target: SchoolTarget, kind: Kind, rows: ReadonlyArray<{ data: Record<string, unknown>, path: Path, id?: string }>): Promise<unknown> {
  if (!uniqueViolation(err)) return err
  const invalid: InvalidField[] = []
  for (const { data, path, id } of rows) {
    for (const key of NATURAL_KEYS[kind]) {
      const value = data[key]
      if (typeof value !== 'string') continue
      const other = await delegate(target.tenant, kind).findFirst({ where: { [key]: value, ...(id === undefined ? {} : { NOT: { id } }) }, select: { id: true } })
      if (other !== null) invalid.push({ path: [...path, key], message: `${STUDENT_RULES[key as 'sourcedId']?.label ?? CLASSROOM_RULES.name.label} "${value}" is taken in this school (${kind.toLowerCase()} ${String(other.id)})` })
    }
  }
  const [first] = invalid
  // Taken meanwhile and freed again: still a conflict of this write.
  return new AdminError(first?.message ?? `A natural key of this ${kind.toLowerCase()} is taken in this school`, 'CONFLICT', invalid.length === 0 ? {} : { invalid })
}

/** Runs a write of `kind` in one transaction, a unique violation turned into a CONFLICT naming the key. */
export async function writing<T> (target: SchoolTarget, kind: Kind, rows: ReadonlyArray<{ data: Record<string, unknown>, path: Path, id?: string }>, work: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return await inTransaction(target, work)
  } catch (err) {
    throw await conflictOf(err, target, kind, rows)
  }
}

export interface WriteOptions {
  /** The version the write is based on: refused with VERSION_CONFLICT when the record has another. */
  expectedVersion?: number | null | undefined
}

const RULES_OF: Readonly<Record<Kind, Record<string, Rule>>> = { Student: STUDENT_RULES, Teacher: TEACHER_RULES, Classroom: CLASSROOM_RULES }

/**
 * Changes the fields given of the record `ref` names (partial: a field left out stays; null clears
 * it), in one transaction; with `expectedVersion`, only if the record is still at that version.
 */
export async function changeRecord (
  target: SchoolTarget,
  kind: Kind,
  ref: RecordRef,
  changes: StudentFields | TeacherFields | ClassroomFields,
  { expectedVersion, paths = { ref: [kind.toLowerCase()], input: ['input'] } }: WriteOptions & { paths?: { ref: Path, input: Path } } = {}
): Promise<Versioned> {
  const fields = new Fields()
  const key = fields.check(paths.ref, () => keyOf(kind, ref, paths.ref))
  const data = written(RULES_OF[kind], changes, fields, paths.input)
  checkEnrollment(data, fields, paths.input)
  fields.done()
  const { schoolId } = target
  return await writing(target, kind, [{ data, path: paths.input }], async (tx) => {
    const model = delegate(tx, kind)
    const row = await model.findFirst({ where: key!, select: VERSIONED }) as Versioned | null
    if (row === null) throw notFound(kind, key!, schoolId)
    if (expectedVersion != null && row.version !== expectedVersion) throw versionConflict(kind, row, expectedVersion)
    if (Object.keys(data).length === 0) return { id: row.id, version: row.version }
    // With the version read in the filter: a writer that committed since (its lock awaited) leaves
    // nothing to update, and the change is refused rather than written over theirs.
    const where = expectedVersion == null ? { id: row.id } : { id: row.id, version: expectedVersion }
    const [changed] = await model.updateManyAndReturn({ where, data, select: { id: true, version: true } }) as unknown as Versioned[]
    if (changed !== undefined) return changed
    const now = await model.findFirst({ where: { id: row.id }, select: VERSIONED }) as Versioned | null
    if (now === null) throw notFound(kind, key!, schoolId)
    throw versionConflict(kind, now, expectedVersion!)
  })
}

/** A record deleted: its keys, as its tombstone keeps them. */
export interface Deleted {
  recordType: 'STUDENT' | 'TEACHER' | 'CLASSROOM'
  id: string
  sourcedId: string | null
}

/**
 * Deletes the record `ref` names (a teacher's or classroom's assignments go with it; a classroom
 * with students is refused), with `expectedVersion` only if it is still at that version.
 */
export async function deleteRecord (target: SchoolTarget, kind: Kind, ref: RecordRef, { expectedVersion, path = [kind.toLowerCase()] }: WriteOptions & { path?: Path } = {}): Promise<Deleted> {
  const key = keyOf(kind, ref, path)
  const { schoolId } = target
  return await inTransaction(target, async (tx) => {
    const model = delegate(tx, kind)
    const row = await model.findFirst({ where: key, select: VERSIONED }) as (Versioned & { sourcedId: string | null }) | null
    if (row === null) throw notFound(kind, key, schoolId)
    if (expectedVersion != null && row.version !== expectedVersion) throw versionConflict(kind, row, expectedVersion)
    if (kind === 'Classroom') {
      const students = await tx.student.count({ where: { classroomId: row.id } })
      if (students > 0) throw new AdminError(`Classroom ${row.id} has ${students} student(s): move them to another classroom (or out of it) first; nothing was deleted`, 'CONFLICT')
    }
    const { count } = await model.deleteMany({ where: expectedVersion == null ? { id: row.id } : { id: row.id, version: expectedVersion } })
    if (count === 0) {
      const now = await model.findFirst({ where: { id: row.id }, select: VERSIONED }) as Versioned | null
      if (now === null) throw notFound(kind, key, schoolId)
      throw versionConflict(kind, now, expectedVersion!)
    }
    return { recordType: kind.toUpperCase() as Deleted['recordType'], id: row.id, sourcedId: row.sourcedId }
  })
}

/**
 * A record as an operator names it on the command line: a UUID is an id; `number:VALUE` a
 * student's number; other text a classroom's name, or a student's or teacher's sourcedId.
 */
export function cliRef (kind: Kind, text: string): RecordRef {
  const value = text.trim()
  if (parseUuid(value) !== undefined) return { id: value }
  if (kind === 'Student' && value.startsWith('number:')) return { studentNumber: value.slice('number:'.length) }
  return kind === 'Classroom' ? { name: value } : { sourcedId: value }
}
