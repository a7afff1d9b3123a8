// The record mutations (docs/api/mutations.md). Each runs the administration code the command line
// runs (src/admin/records.ts) through the caller's school client, so the walls, the change feeds,
// the notifications and the audit are those of any write; here only what the API adds: the writes
// limit, the columns the caller's scopes let it write, the idempotency key, the coded errors, and
// the record read back with the fields the mutation selects.
import type { GraphQLResolveInfo } from 'graphql'
import type { MercuriusContext } from 'mercurius'
import {
  AdminError, addClassroom, addStudent, addTeacher, assignTeacherTo, changeRecord, deleteRecord, endAssignment,
  placeStudent, removeStudentFromClassroom, upsertStudents, type SchoolTarget
} from '../../admin/records.js'
import { accessOf, callerId } from '../../auth/identity.js'
import { unwritableColumns } from '../../auth/scopes.js'
import type { Prisma } from '../../generated/prisma/client.js'
import { adminRefusal, cannotWrite, tooManyRequests } from '../errors.js'
import type { MutationResolvers } from '../generated.js'
import { fingerprintOf, IDEMPOTENCY_HEADER, idempotencyKeyOf, once } from '../idempotency.js'
import type { AssignmentRow, ClassroomRow, StudentRow, TeacherRow } from '../models.js'
import { prismaSelect } from '../selection.js'
import { CLASSROOM_SELECT, STUDENT_SELECT, TEACHER_SELECT } from '../selects.js'

/** What a mutation writes, for the scope check of its columns: the model, the input and its path. */
type Written = ReadonlyArray<readonly [model: string, input: object | null | undefined, path: string]>

/**
 * Runs one mutation: counted on the writes limit, refused when it writes a column the caller's
 * scopes do not let it write, run once per idempotency key, the administration code's refusals
 * turned into coded errors.
 */
async function mutate<T> (
  ctx: MercuriusContext,
  info: GraphQLResolveInfo,
  args: Record<string, unknown>,
  written: Written,
  work: (target: SchoolTarget) => Promise<T>
): Promise<T> {
  const { schoolId, db } = ctx.school()
  const request = ctx.reply.request
  const limited = await ctx.app.limits.checkWrite(request)
  if (limited !== undefined) throw tooManyRequests(limited.message, limited.retryAfter)
  const access = accessOf(ctx.identity)!
  const denied = written.flatMap(([model, input, path]) => input == null
    ? []
    : unwritableColumns(access, model, Object.entries(input).filter(([, value]) => value !== undefined).map(([column]) => column))
      .map(({ column, needs }) => ({ field: `${path}.${column}`, needs })))
  if (denied.length > 0) throw cannotWrite(denied)
  const target: SchoolTarget = { schoolId, tenant: db }
  const run = async (): Promise<T> => {
    try {
      return await work(target)
    } catch (err) {
      throw err instanceof AdminError ? adminRefusal(err) : err
    }
  }
  const key = idempotencyKeyOf(args.idempotencyKey as string | null | undefined, request.headers[IDEMPOTENCY_HEADER])
  if (key === undefined) return await run()
  return await once(ctx.app.db.prisma, callerId(ctx.identity)!, key, fingerprintOf(info, args), run)
}

const gone = (kind: string, id: string): AdminError => new AdminError(`${kind} ${id} was deleted meanwhile`, 'NOT_FOUND')

/** The student `id`, with the fields the mutation selects on it. */
async function studentOut (target: SchoolTarget, info: GraphQLResolveInfo, id: string): Promise<StudentRow> {
  const select = prismaSelect(info, 'Student', STUDENT_SELECT) as Prisma.StudentSelect
  const row = await target.tenant.student.findFirst({ relationLoadStrategy: 'join', where: { id }, select })
  if (row === null) throw gone('Student', id)
  return row
}

async function teacherOut (target: SchoolTarget, info: GraphQLResolveInfo, id: string, path: ReadonlyArray<[string, string]> = []): Promise<TeacherRow> {
  const select = prismaSelect(info, 'Teacher', TEACHER_SELECT, path) as Prisma.TeacherSelect
  const row = await target.tenant.teacher.findFirst({ where: { id }, select })
  if (row === null) throw gone('Teacher', id)
  return row
}

async function classroomOut (target: SchoolTarget, info: GraphQLResolveInfo, id: string, path: ReadonlyArray<[string, string]> = []): Promise<ClassroomRow> {
  const select = prismaSelect(info, 'Classroom', CLASSROOM_SELECT, path) as Prisma.ClassroomSelect
  const row = await target.tenant.classroom.findFirst({ where: { id }, select })
  if (row === null) throw gone('Classroom', id)
  return row
}

async function assignmentOut (target: SchoolTarget, info: GraphQLResolveInfo, { teacherId, classroomId, role }: { teacherId: string, classroomId: string, role: AssignmentRow['role'] }): Promise<AssignmentRow> {
  return {
    role,
    teacher: await teacherOut(target, info, teacherId, [['ClassroomAssignment', 'teacher']]),
    classroom: await classroomOut(target, info, classroomId, [['ClassroomAssignment', 'classroom']])
  }
}

export const recordMutations: Pick<MutationResolvers,
  'createStudent' | 'changeStudent' | 'deleteStudent' | 'placeStudent' | 'removeStudentFromClassroom' |
  'createTeacher' | 'changeTeacher' | 'deleteTeacher' | 'assignTeacher' | 'endTeacherAssignment' |
  'createClassroom' | 'changeClassroom' | 'deleteClassroom' | 'upsertStudents'
> = {
  async createStudent (_parent, args, ctx, info) {
    const { classroom, ...fields } = args.input
    return await mutate(ctx, info, args, [['Student', args.input, 'input']], async (target) => {
      const { id } = await addStudent(target, fields, { classroom })
      return await studentOut(target, info, id)
    })
  },

  async changeStudent (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, [['Student', args.input, 'input']], async (target) => {
      const { id } = await changeRecord(target, 'Student', args.student, args.input, { expectedVersion: args.expectedVersion })
      return await studentOut(target, info, id)
    })
  },

  async deleteStudent (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, [], async (target) => await deleteRecord(target, 'Student', args.student, { expectedVersion: args.expectedVersion }))
  },

  async placeStudent (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, [], async (target) => {
      const { id } = await placeStudent(target, args.student, args.classroom)
      return await studentOut(target, info, id)
    })
  },

  async removeStudentFromClassroom (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, [], async (target) => {
      const { id } = await removeStudentFromClassroom(target, args.student, args.classroom)
      return await studentOut(target, info, id)
    })
  },

  async createTeacher (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, [['Teacher', args.input, 'input']], async (target) => {
      const { id } = await addTeacher(target, args.input)
      return await teacherOut(target, info, id)
    })
  },

  async changeTeacher (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, [['Teacher', args.input, 'input']], async (target) => {
      const { id } = await changeRecord(target, 'Teacher', args.teacher, args.input, { expectedVersion: args.expectedVersion })
      return await teacherOut(target, info, id)
    })
  },

  async deleteTeacher (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, [], async (target) => await deleteRecord(target, 'Teacher', args.teacher, { expectedVersion: args.expectedVersion }))
  },

  async assignTeacher (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, [], async (target) =>
      await assignmentOut(target, info, await assignTeacherTo(target, args.teacher, args.classroom, args.role)))
  },

  async endTeacherAssignment (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, [], async (target) =>
      await assignmentOut(target, info, await endAssignment(target, args.teacher, args.classroom)))
  },

  async createClassroom (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, [['Classroom', args.input, 'input']], async (target) => {
      const { id } = await addClassroom(target, args.input)
      return await classroomOut(target, info, id)
    })
  },

  async changeClassroom (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, [['Classroom', args.input, 'input']], async (target) => {
      const { id } = await changeRecord(target, 'Classroom', args.classroom, args.input, { expectedVersion: args.expectedVersion })
      return await classroomOut(target, info, id)
    })
  },

  async deleteClassroom (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, [], async (target) => await deleteRecord(target, 'Classroom', args.classroom, { expectedVersion: args.expectedVersion }))
  },

  async upsertStudents (_parent, args, ctx, info) {
    return await mutate(ctx, info, args, args.items.map((item, i) => ['Student', item, `items.${i}`] as const), async (target) => {
      const items = await upsertStudents(target, args.items)
      const count = (outcome: string): number => items.filter((item) => item.outcome === outcome).length
      return { items, created: count('CREATED'), changed: count('CHANGED'), unchanged: count('UNCHANGED') }
    })
  }
}
