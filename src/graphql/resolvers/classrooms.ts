import type { GraphQLResolveInfo } from 'graphql'
import type { MercuriusContext } from 'mercurius'
import type { Prisma } from '../../generated/prisma/client.js'
import type { QueryResolvers } from '../generated.js'
import { requireUuid } from '../ids.js'
import type { AssignmentRow, ClassroomRow, StudentRow, TeacherRow } from '../models.js'
import { badUserInput } from '../errors.js'
import { COLUMN_TYPES, type ListCondition } from '../../db/typed-reads.js'
import { listQuery, nameSearch, planPage, searchPattern, toPage, type ListArgs, type ListSpec } from '../paging.js'
import { loaderSelect, prismaSelect } from '../selection.js'
import { CLASSROOM_SELECT, TEACHER_SELECT } from '../selects.js'
import { readList, readRelation, selectedColumns } from '../typed-lists.js'

type ClassroomOrderField = 'NAME' | 'CREATED_AT' | 'UPDATED_AT' | 'ID'

export const CLASSROOM_LIST: ListSpec<ClassroomOrderField> = {
  list: 'classrooms',
  orders: {
    NAME: ['name', 'id'],
    CREATED_AT: ['createdAt', 'id'],
    UPDATED_AT: ['updatedAt', 'id'],
    ID: ['id']
  },
  defaultOrder: 'NAME',
  dates: new Set(['createdAt', 'updatedAt'])
}

type ClassroomListArgs = ListArgs<ClassroomOrderField, { gradeLevel?: string | null, subject?: string | null, search?: string | null }>

/** A subject filter, trimmed; throws BAD_USER_INPUT for an empty or long one (a NUL: arguments.ts). */
function subjectOf (given: string): string {
  const subject = given.trim()
  if (subject === '' || subject.length > 100) throw badUserInput('filter.subject must have 1 to 100 characters')
  return subject
}

function classroomWhere (filter: ClassroomListArgs['filter']): Prisma.ClassroomWhereInput {
  const where: Prisma.ClassroomWhereInput = {}
  if (filter == null) return where
  if (filter.gradeLevel != null) where.gradeLevel = filter.gradeLevel as Prisma.ClassroomWhereInput['gradeLevel']
  if (filter.subject != null) where.subject = { equals: subjectOf(filter.subject), mode: 'insensitive' }
  return { ...where, ...nameSearch(filter.search, ['name']) }
}

/** The conditions of a ClassroomFilter for the typed statement (as classroomWhere). */
function classroomConditions (filter: ClassroomListArgs['filter']): ListCondition[] {
  const conditions: ListCondition[] = []
  if (filter == null) return conditions
  if (filter.gradeLevel != null) conditions.push({ kind: 'equals', field: 'gradeLevel', value: filter.gradeLevel })
  if (filter.subject != null) conditions.push({ kind: 'equalsIgnoringCase', field: 'subject', value: subjectOf(filter.subject) })
  const pattern = searchPattern(filter.search)
  if (pattern !== undefined) conditions.push({ kind: 'contains', fields: ['name'], pattern })
  return conditions
}

export const classroomQueries: Pick<QueryResolvers, 'classrooms' | 'classroomsPage' | 'classroom'> = {
  async classrooms (_parent, args, ctx, info) {
    const { db } = ctx.school()
    if (db.$typedReads()) {
      const plan = planPage(CLASSROOM_LIST, args as ClassroomListArgs)
      const conditions = classroomConditions((args as ClassroomListArgs).filter)
      if (plan.take === 0) return []
      return await readList<ClassroomRow>(db, 'Classroom', plan, conditions, prismaSelect(info, 'Classroom', CLASSROOM_SELECT), plan.take)
    }
    const { plan, query } = listQuery(CLASSROOM_LIST, args as ClassroomListArgs, classroomWhere, 'list')
    if (plan.take === 0) return []
    const select: Prisma.ClassroomSelect = prismaSelect(info, 'Classroom', CLASSROOM_SELECT)
    return await db.classroom.findMany({
      ...query,
      select
    })
  },

  async classroomsPage (_parent, args, ctx, info) {
    const { db } = ctx.school()
    if (db.$typedReads()) {
      const plan = planPage(CLASSROOM_LIST, args as ClassroomListArgs)
      const conditions = classroomConditions((args as ClassroomListArgs).filter)
      const select = { ...prismaSelect(info, 'Classroom', CLASSROOM_SELECT, [['ClassroomPage', 'nodes']]), ...plan.select }
      return toPage(await readList<ClassroomRow>(db, 'Classroom', plan, conditions, select, plan.take + 1), plan)
    }
    const { plan, query } = listQuery(CLASSROOM_LIST, args as ClassroomListArgs, classroomWhere, 'page')
    const select: Prisma.ClassroomSelect = { ...prismaSelect(info, 'Classroom', CLASSROOM_SELECT, [['ClassroomPage', 'nodes']]), ...plan.select }
    const rows = await db.classroom.findMany({
      ...query,
      select
    })
    return toPage(rows, plan)
  },

  async classroom (_parent, { id }, ctx, info) {
    const classroomId = requireUuid(id)
    const { db } = ctx.school()
    const select: Prisma.ClassroomSelect = prismaSelect(info, 'Classroom', CLASSROOM_SELECT)
    return await db.classroom.findFirst({ where: { id: classroomId }, select })
  }
}

function groupBy<T> (rows: T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>()
  for (const row of rows) {
    const k = key(row)
    const list = groups.get(k)
    if (list === undefined) groups.set(k, [row])
    else list.push(row)
  }
  return groups
}

/** Rosters of all classrooms of one response in one query (Mercurius loader). */
async function classroomStudents (queries: Array<{ obj: ClassroomRow }>, ctx: MercuriusContext): Promise<StudentRow[][]> {
  const { db } = ctx.school()
  if (db.$typedReads()) return await readRelation<StudentRow>(db, 'Classroom.students', Object.keys(COLUMN_TYPES.Student), queries.map((q) => q.obj.id))
  const rows = await db.student.findMany({
    relationLoadStrategy: 'join',
    where: { classroomId: { in: queries.map((q) => q.obj.id) } },
    orderBy: [{ fullName: 'asc' }, { id: 'asc' }],
    include: { classroom: true }
  })
  const byClassroom = groupBy(rows, (row) => row.classroomId ?? '')
  return queries.map((q) => byClassroom.get(q.obj.id) ?? [])
}

/** Teacher assignments of all classrooms of one response in one query, by teacher name. */
async function classroomAssignments (queries: Array<{ obj: ClassroomRow }>, ctx: MercuriusContext): Promise<AssignmentRow[][]> {
  const { db } = ctx.school()
  const rows = await db.teacherClassroom.findMany({
    relationLoadStrategy: 'join',
    where: { classroomId: { in: queries.map((q) => q.obj.id) } },
    orderBy: [{ teacher: { fullName: 'asc' } }, { teacherId: 'asc' }],
    select: { role: true, teacher: true, classroom: true }
  })
  const byClassroom = groupBy(rows, (row) => row.classroom.id)
  return queries.map((q) => byClassroom.get(q.obj.id) ?? [])
}

/**
 * Teachers of all classrooms of one response in one query (Mercurius loader), with the columns the
 * query selects on them.
 */
async function classroomTeachers (queries: Array<{ obj: ClassroomRow, info?: GraphQLResolveInfo }>, ctx: MercuriusContext): Promise<TeacherRow[][]> {
  const { db } = ctx.school()
  const teacher = loaderSelect(queries, 'Classroom', 'teachers', TEACHER_SELECT)
  if (db.$typedReads()) {
    const fields = teacher === true ? Object.keys(COLUMN_TYPES.Teacher) : selectedColumns(teacher).fields
    return await readRelation<TeacherRow>(db, 'Classroom.teachers', fields, queries.map((q) => q.obj.id))
  }
  const rows = await db.teacherClassroom.findMany({
    relationLoadStrategy: 'join',
    where: { classroomId: { in: queries.map((q) => q.obj.id) } },
    orderBy: [{ teacher: { fullName: 'asc' } }, { teacherId: 'asc' }],
    select: { classroomId: true, teacher: teacher === true ? true : { select: teacher } }
  })
  const byClassroom = groupBy(rows, (row) => row.classroomId)
  return queries.map((q) => (byClassroom.get(q.obj.id) ?? []).map((row) => row.teacher))
}

export const classroomLoaders = {
  Classroom: {
    students: classroomStudents,
    // With its calls' resolve info (Mercurius passes it when the loader does not cache): the
    // loader reads only the columns the operation selects below the field.
    teachers: { loader: classroomTeachers, opts: { cache: false } },
    teacherAssignments: classroomAssignments
  }
}
