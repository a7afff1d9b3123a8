import type { GraphQLResolveInfo } from 'graphql'
import type { MercuriusContext } from 'mercurius'
import type { Prisma } from '../../generated/prisma/client.js'
import type { QueryResolvers } from '../generated.js'
import type { AssignmentRow, ClassroomRow, TeacherRow } from '../models.js'
import { requireUuid } from '../ids.js'
import { COLUMN_TYPES, type ListCondition } from '../../db/typed-reads.js'
import { listQuery, nameSearch, planPage, searchPattern, toPage, type ListArgs, type ListSpec } from '../paging.js'
import { loaderSelect, prismaSelect } from '../selection.js'
import { CLASSROOM_SELECT, TEACHER_SELECT } from '../selects.js'
import { readList, readRelation, selectedColumns } from '../typed-lists.js'

const CLASSROOM_COLUMNS = COLUMN_TYPES.Classroom

type TeacherOrderField = 'FAMILY_NAME' | 'GIVEN_NAME' | 'CREATED_AT' | 'UPDATED_AT' | 'ID'

export const TEACHER_LIST: ListSpec<TeacherOrderField> = {
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
}

type TeacherListArgs = ListArgs<TeacherOrderField, { classroomId?: string | null, status?: string | null, search?: string | null }>

function teacherWhere (filter: TeacherListArgs['filter']): Prisma.TeacherWhereInput {
  const where: Prisma.TeacherWhereInput = {}
  if (filter == null) return where
  if (filter.classroomId != null) {
    where.classrooms = { some: { classroomId: requireUuid(filter.classroomId, 'filter.classroomId') } }
  }
  if (filter.status != null) where.status = filter.status as Prisma.TeacherWhereInput['status']
  return { ...where, ...nameSearch(filter.search, ['fullName', 'givenName', 'familyName', 'preferredName']) }
}

/** The conditions of a TeacherFilter for the typed statement (as teacherWhere). */
function teacherConditions (filter: TeacherListArgs['filter']): ListCondition[] {
  const conditions: ListCondition[] = []
  if (filter == null) return conditions
  if (filter.classroomId != null) conditions.push({ kind: 'teaches', classroomId: requireUuid(filter.classroomId, 'filter.classroomId') })
  if (filter.status != null) conditions.push({ kind: 'equals', field: 'status', value: filter.status })
  const pattern = searchPattern(filter.search)
  if (pattern !== undefined) conditions.push({ kind: 'contains', fields: ['fullName', 'givenName', 'familyName', 'preferredName'], pattern })
  return conditions
}

export const teacherQueries: Pick<QueryResolvers, 'teachers' | 'teachersPage' | 'teacher'> = {
  async teachers (_parent, args, ctx, info) {
    const { db } = ctx.school()
    if (db.$typedReads()) {
      const plan = planPage(TEACHER_LIST, args as TeacherListArgs)
      const conditions = teacherConditions((args as TeacherListArgs).filter)
      if (plan.take === 0) return []
      return await readList<TeacherRow>(db, 'Teacher', plan, conditions, prismaSelect(info, 'Teacher', TEACHER_SELECT), plan.take)
    }
    const { plan, query } = listQuery(TEACHER_LIST, args as TeacherListArgs, teacherWhere, 'list')
    if (plan.take === 0) return []
    const select: Prisma.TeacherSelect = prismaSelect(info, 'Teacher', TEACHER_SELECT)
    return await db.teacher.findMany({
      ...query,
      select
    })
  },

  async teachersPage (_parent, args, ctx, info) {
    const { db } = ctx.school()
    if (db.$typedReads()) {
      const plan = planPage(TEACHER_LIST, args as TeacherListArgs)
      const conditions = teacherConditions((args as TeacherListArgs).filter)
      const select = { ...prismaSelect(info, 'Teacher', TEACHER_SELECT, [['TeacherPage', 'nodes']]), ...plan.select }
      return toPage(await readList<TeacherRow>(db, 'Teacher', plan, conditions, select, plan.take + 1), plan)
    }
    const { plan, query } = listQuery(TEACHER_LIST, args as TeacherListArgs, teacherWhere, 'page')
    const select: Prisma.TeacherSelect = { ...prismaSelect(info, 'Teacher', TEACHER_SELECT, [['TeacherPage', 'nodes']]), ...plan.select }
    const rows = await db.teacher.findMany({
      ...query,
      select
    })
    return toPage(rows, plan)
  },

  async teacher (_parent, { id }, ctx, info) {
    const teacherId = requireUuid(id)
    const { db } = ctx.school()
    const select: Prisma.TeacherSelect = prismaSelect(info, 'Teacher', TEACHER_SELECT)
    return await db.teacher.findFirst({
      where: { id: teacherId },
      select
    })
  }
}

/** Assignments of all teachers of one response in one query, by classroom name. */
async function assignmentsOf (queries: Array<{ obj: TeacherRow }>, ctx: MercuriusContext): Promise<AssignmentRow[][]> {
  const { db } = ctx.school()
  const rows = await db.teacherClassroom.findMany({
    relationLoadStrategy: 'join',
    where: { teacherId: { in: queries.map((q) => q.obj.id) } },
    select: { role: true, teacher: true, classroom: true },
    orderBy: [{ classroom: { name: 'asc' } }, { classroomId: 'asc' }]
  })
  const byTeacher = new Map<string, AssignmentRow[]>()
  for (const row of rows) {
    const list = byTeacher.get(row.teacher.id)
    if (list === undefined) byTeacher.set(row.teacher.id, [row])
    else list.push(row)
  }
  return queries.map((q) => byTeacher.get(q.obj.id) ?? [])
}

/**
 * Classrooms of all teachers of one response in one query (Mercurius loader), with the columns the
 * query selects on them.
 */
async function teacherClassrooms (queries: Array<{ obj: TeacherRow, info?: GraphQLResolveInfo }>, ctx: MercuriusContext): Promise<ClassroomRow[][]> {
  const { db } = ctx.school()
  const classroom = loaderSelect(queries, 'Teacher', 'classrooms', CLASSROOM_SELECT)
  if (db.$typedReads()) {
    const fields = classroom === true ? Object.keys(CLASSROOM_COLUMNS) : selectedColumns(classroom).fields
    return await readRelation<ClassroomRow>(db, 'Teacher.classrooms', fields, queries.map((q) => q.obj.id))
  }
  const rows = await db.teacherClassroom.findMany({
    relationLoadStrategy: 'join',
    where: { teacherId: { in: queries.map((q) => q.obj.id) } },
    orderBy: [{ classroom: { name: 'asc' } }, { classroomId: 'asc' }],
    select: { teacherId: true, classroom: classroom === true ? true : { select: classroom } }
  })
  const byTeacher = new Map<string, ClassroomRow[]>()
  for (const row of rows) {
    const list = byTeacher.get(row.teacherId)
    if (list === undefined) byTeacher.set(row.teacherId, [row.classroom])
    else list.push(row.classroom)
  }
  return queries.map((q) => byTeacher.get(q.obj.id) ?? [])
}

export const teacherLoaders = {
  Teacher: {
    // With its calls' resolve info (Mercurius passes it when the loader does not cache): the
    // loader reads only the columns the operation selects below the field.
    classrooms: { loader: teacherClassrooms, opts: { cache: false } },
    classroomAssignments: assignmentsOf
  }
}
