// The record mutations (docs/api/mutations.md). Each runs the administration code the command line
// runs (src/records/) through the caller's school client, so the walls, the change feeds,
// the notifications and the audit are those of any write; here only what the API adds: the writes
// limit, the columns the caller's scopes let it write and the keys they let it name records by, the
// idempotency key, the coded errors, and the record read back in the write's own transaction with
// the fields the mutation selects.
import type { GraphQLResolveInfo } from 'graphql'
import type { MercuriusContext } from 'mercurius'
import { addClassroom } from '../../records/classrooms.js'
import { AdminError } from '../../records/errors.js'
import { addStudent, placeStudent, removeStudentFromClassroom, upsertStudents } from '../../records/students.js'
import { addTeacher, assignTeacherTo, endAssignment } from '../../records/teachers.js'
import { changeRecord, deleteRecord, type SchoolTarget, type TransactionRunner, type Tx } from '../../records/writes.js'
import { accessOf, callerId } from '../../auth/identity.js'
import { unreadableKeys, unwritableColumns } from '../../auth/scopes.js'
import type { Prisma } from '../../generated/prisma/client.js'
import { adminRefusal, cannotWrite, outOfScope, tooManyRequests } from '../errors.js'
import type { MutationResolvers } from '../generated.js'
import { fingerprintOf, IDEMPOTENCY_HEADER, idempotencyKeyOf, mutateOnce, type OpenTransaction } from '../idempotency.js'
import type { AssignmentRow, ClassroomRow, StudentRow, TeacherRow } from '../models.js'
import { prismaSelect } from '../selection.js'
import { CLASSROOM_SELECT, STUDENT_SELECT, TEACHER_SELECT } from '../selects.js'

/** What a mutation writes, for the scope check of its columns: the model, the input and its path. */
type Written = ReadonlyArray<readonly [model: string, input: object | null | undefined, path: string]>

/** The records a mutation names, for the scope check of the keys it names them by: the model, the reference and its input type. */
type Named = ReadonlyArray<readonly [model: string, ref: object | null | undefined, type: string]>

/** What a mutation's answer is read through: its write's transaction. */
type Reader = Pick<Tx, 'student' | 'teacher' | 'classroom'>

/** The columns given (not undefined, not null) of an input or a reference. */
const given = (input: object): string[] => Object.entries(input).filter(([, value]) => value != null).map(([column]) => column)

/**
 * Runs one mutation: counted on the writes limit, refused when it writes a column the caller's
 * scopes do not let it write or names a record by a key they do not let it read, run once per
 * idempotency key, the administration code's refusals turned into coded errors. `write` writes (one
 * transaction of the administration code); `answer` reads the answer in that transaction, after the
 * write: the record as this write left it, its row still locked against other writers (never as a
 * writer that committed after it left it). With an idempotency key, mutateOnce (idempotency.ts)
 * opens that transaction and keeps the key and the answer in it too, so that a write that
 * committed always has its answer kept.
 */
async function mutate<W, T> (
  ctx: MercuriusContext,
  info: GraphQLResolveInfo,
  args: Record<string, unknown>,
  { writes = [], names = [] }: { writes?: Written, names?: Named },
  write: (target: SchoolTarget) => Promise<W>,
  answer: (reader: Reader, written: W) => Promise<T>
): Promise<T> {
  const { schoolId, db } = ctx.school()
  const request = ctx.reply.request
  const limited = await ctx.app.limits.checkWrite(request)
  if (limited !== undefined) throw tooManyRequests(limited.message, limited.retryAfter)
  const access = accessOf(ctx.identity)!
  const denied = writes.flatMap(([model, input, path]) => input == null
    ? []
    : unwritableColumns(access, model, Object.entries(input).filter(([, value]) => value !== undefined).map(([column]) => column))
      .map(({ column, needs }) => ({ field: `${path}.${column}`, needs })))
  if (denied.length > 0) throw cannotWrite(denied)
  const unreadable = names.flatMap(([model, ref, type]) => ref == null
    ? []
    : unreadableKeys(access, model, given(ref)).map(({ column, needs }) => ({ field: `${type}.${column}`, needs })))
  if (unreadable.length > 0) throw outOfScope(unreadable)
  // The mutation in the one transaction `open` opens: the administration code's operation writes
  // (its transaction is that one), and the answer is read in it, after the write.
  const run = async (open: OpenTransaction<T>): Promise<T> => {
    let out: { value: T } | undefined
    const transaction: TransactionRunner = async <R>(work: (tx: Tx) => Promise<R>): Promise<R> => {
      if (out !== undefined) throw new Error('A mutation writes in one transaction')
      let done: { value: R } | undefined
      await open(async (tx) => {
        done = { value: await work(tx) }
        // The administration code's operation returns what its transaction returned: W.
        out = { value: await answer(tx, done.value as unknown as W) }
        return out.value
      })
      return done!.value
    }
    try {
      await write({ schoolId, tenant: db, transaction })
    } catch (err) {
      throw err instanceof AdminError ? adminRefusal(err) : err
    }
    if (out === undefined) throw new Error('The mutation wrote in no transaction')
    return out.value
  }
  const key = idempotencyKeyOf(args.idempotencyKey as string | null | undefined, request.headers[IDEMPOTENCY_HEADER])
  if (key === undefined) return await run(async (inTransaction) => await db.$transaction(inTransaction) as T)
  return await mutateOnce(ctx.app.db.prisma, db, { callerId: callerId(ctx.identity)!, key, fingerprint: fingerprintOf(info, args) }, run)
}

/** A record a mutation answers: its id, and the version its write left it at (none for a record it did not write). */
interface Answered { id: string, version?: number | undefined }

/**
 * The record the mutation answers, read with `find`: at the version its write left it. A record
 * the mutation found as asked, and so wrote nothing to, is not locked: when another writer has moved
 * it on since, the mutation is refused (nothing written) rather than answer the other's write.
 */
async function readBack<R> (kind: 'Student' | 'Teacher' | 'Classroom', { id, version }: Answered, find: (where: { id: string, version?: number }) => Promise<R | null>): Promise<R> {
  const row = await find(version === undefined ? { id } : { id, version })
  if (row !== null) return row
  if (version !== undefined && await find({ id }) !== null) {
    throw new AdminError(`${kind} ${id} was changed by another writer meanwhile: nothing was written, retry`, 'CONFLICT')
  }
  throw new AdminError(`${kind} ${id} was deleted meanwhile`, 'NOT_FOUND')
}

/** The student the mutation wrote, with the fields it selects on it. */
async function studentOut (reader: Reader, info: GraphQLResolveInfo, answered: Answered): Promise<StudentRow> {
  const select = prismaSelect(info, 'Student', STUDENT_SELECT) as Prisma.StudentSelect
  return await readBack('Student', answered, async (where) => await reader.student.findFirst({ relationLoadStrategy: 'join', where, select }))
}

async function teacherOut (reader: Reader, info: GraphQLResolveInfo, answered: Answered, path: ReadonlyArray<[string, string]> = []): Promise<TeacherRow> {
  const select = prismaSelect(info, 'Teacher', TEACHER_SELECT, path) as Prisma.TeacherSelect
  return await readBack('Teacher', answered, async (where) => await reader.teacher.findFirst({ where, select }))
}

async function classroomOut (reader: Reader, info: GraphQLResolveInfo, answered: Answered, path: ReadonlyArray<[string, string]> = []): Promise<ClassroomRow> {
  const select = prismaSelect(info, 'Classroom', CLASSROOM_SELECT, path) as Prisma.ClassroomSelect
  return await readBack('Classroom', answered, async (where) => await reader.classroom.findFirst({ where, select }))
}

/** An assignment: its role as written; its teacher and classroom, which the assignment does not write (no version of theirs moves). */
async function assignmentOut (reader: Reader, info: GraphQLResolveInfo, { teacherId, classroomId, role }: { teacherId: string, classroomId: string, role: AssignmentRow['role'] }): Promise<AssignmentRow> {
  return {
    role,
    teacher: await teacherOut(reader, info, { id: teacherId }, [['ClassroomAssignment', 'teacher']]),
    classroom: await classroomOut(reader, info, { id: classroomId }, [['ClassroomAssignment', 'classroom']])
  }
}

/** A deletion's answer: what the deletion returned. */
const asWritten = async <W>(_reader: Reader, written: W): Promise<W> => written

export const recordMutations: Pick<MutationResolvers,
  'createStudent' | 'changeStudent' | 'deleteStudent' | 'placeStudent' | 'removeStudentFromClassroom' |
  'createTeacher' | 'changeTeacher' | 'deleteTeacher' | 'assignTeacher' | 'endTeacherAssignment' |
  'createClassroom' | 'changeClassroom' | 'deleteClassroom' | 'upsertStudents'
> = {
  async createStudent (_parent, args, ctx, info) {
    const { classroom, ...fields } = args.input
    return await mutate(ctx, info, args, { writes: [['Student', fields, 'input']], names: [['Classroom', classroom, 'ClassroomRef']] },
      async (target) => await addStudent(target, fields, { classroom }),
      async (reader, written) => await studentOut(reader, info, written))
  },

  async changeStudent (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { writes: [['Student', args.input, 'input']], names: [['Student', args.student, 'StudentRef']] },
      async (target) => await changeRecord(target, 'Student', args.student, args.input, { expectedVersion: args.expectedVersion }),
      async (reader, written) => await studentOut(reader, info, written))
  },

  async deleteStudent (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { names: [['Student', args.student, 'StudentRef']] },
      async (target) => await deleteRecord(target, 'Student', args.student, { expectedVersion: args.expectedVersion }), asWritten)
  },

  async placeStudent (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { names: [['Student', args.student, 'StudentRef'], ['Classroom', args.classroom, 'ClassroomRef']] },
      async (target) => await placeStudent(target, args.student, args.classroom),
      async (reader, written) => await studentOut(reader, info, written))
  },

  async removeStudentFromClassroom (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { names: [['Student', args.student, 'StudentRef'], ['Classroom', args.classroom, 'ClassroomRef']] },
      async (target) => await removeStudentFromClassroom(target, args.student, args.classroom),
      async (reader, written) => await studentOut(reader, info, written))
  },

  async createTeacher (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { writes: [['Teacher', args.input, 'input']] },
      async (target) => await addTeacher(target, args.input),
      async (reader, written) => await teacherOut(reader, info, written))
  },

  async changeTeacher (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { writes: [['Teacher', args.input, 'input']], names: [['Teacher', args.teacher, 'TeacherRef']] },
      async (target) => await changeRecord(target, 'Teacher', args.teacher, args.input, { expectedVersion: args.expectedVersion }),
      async (reader, written) => await teacherOut(reader, info, written))
  },

  async deleteTeacher (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { names: [['Teacher', args.teacher, 'TeacherRef']] },
      async (target) => await deleteRecord(target, 'Teacher', args.teacher, { expectedVersion: args.expectedVersion }), asWritten)
  },

  async assignTeacher (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { names: [['Teacher', args.teacher, 'TeacherRef'], ['Classroom', args.classroom, 'ClassroomRef']] },
      async (target) => await assignTeacherTo(target, args.teacher, args.classroom, args.role),
      async (reader, assignment) => await assignmentOut(reader, info, assignment))
  },

  async endTeacherAssignment (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { names: [['Teacher', args.teacher, 'TeacherRef'], ['Classroom', args.classroom, 'ClassroomRef']] },
      async (target) => await endAssignment(target, args.teacher, args.classroom),
      async (reader, assignment) => await assignmentOut(reader, info, assignment))
  },

  async createClassroom (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { writes: [['Classroom', args.input, 'input']] },
      async (target) => await addClassroom(target, args.input),
      async (reader, written) => await classroomOut(reader, info, written))
  },

  async changeClassroom (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { writes: [['Classroom', args.input, 'input']], names: [['Classroom', args.classroom, 'ClassroomRef']] },
      async (target) => await changeRecord(target, 'Classroom', args.classroom, args.input, { expectedVersion: args.expectedVersion }),
      async (reader, written) => await classroomOut(reader, info, written))
  },

  async deleteClassroom (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { names: [['Classroom', args.classroom, 'ClassroomRef']] },
      async (target) => await deleteRecord(target, 'Classroom', args.classroom, { expectedVersion: args.expectedVersion }), asWritten)
  },

  async upsertStudents (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, { writes: args.items.map((item, i) => ['Student', item, `items.${i}`] as const) },
      async (target) => await upsertStudents(target, args.items),
      // Each item's id and version as its statement returned them (RETURNING), or as read when unchanged.
      async (_reader, items) => {
        const count = (outcome: string): number => items.filter((item) => item.outcome === outcome).length
        return { items, created: count('CREATED'), changed: count('CHANGED'), unchanged: count('UNCHANGED') }
      })
  }
}
