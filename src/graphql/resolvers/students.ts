import type { Prisma } from '../../generated/prisma/client.js'
import type { QueryResolvers, StudentResolvers } from '../generated.js'
import { requireUuid } from '../ids.js'
import type { ListCondition } from '../../db/typed-reads.js'
import type { StudentRow } from '../models.js'
import { listQuery, nameSearch, planPage, searchPattern, toPage, type ListArgs, type ListSpec } from '../paging.js'
import { prismaSelect } from '../selection.js'
import { STUDENT_SELECT } from '../selects.js'
import { readList } from '../typed-lists.js'

type StudentOrderField = 'FAMILY_NAME' | 'GIVEN_NAME' | 'CREATED_AT' | 'UPDATED_AT' | 'ID'

export const STUDENT_LIST: ListSpec<StudentOrderField> = {
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
}

type StudentListArgs = ListArgs<StudentOrderField, { classroomId?: string | null, gradeLevel?: string | null, status?: string | null, search?: string | null }>

/** The Prisma filter of a StudentFilter. */
export function studentWhere (filter: StudentListArgs['filter']): Prisma.StudentWhereInput {
  const where: Prisma.StudentWhereInput = {}
  if (filter == null) return where
  if (filter.classroomId != null) where.classroomId = requireUuid(filter.classroomId, 'filter.classroomId')
  if (filter.gradeLevel != null) where.gradeLevel = filter.gradeLevel as Prisma.StudentWhereInput['gradeLevel']
  if (filter.status != null) where.status = filter.status as Prisma.StudentWhereInput['status']
  return { ...where, ...nameSearch(filter.search, ['fullName', 'givenName', 'familyName', 'preferredName']) }
}

/** The conditions of a StudentFilter for the typed statement (as studentWhere). */
function studentConditions (filter: StudentListArgs['filter']): ListCondition[] {
  const conditions: ListCondition[] = []
  if (filter == null) return conditions
  if (filter.classroomId != null) conditions.push({ kind: 'equals', field: 'classroomId', value: requireUuid(filter.classroomId, 'filter.classroomId') })
  if (filter.gradeLevel != null) conditions.push({ kind: 'equals', field: 'gradeLevel', value: filter.gradeLevel })
  if (filter.status != null) conditions.push({ kind: 'equals', field: 'status', value: filter.status })
  const pattern = searchPattern(filter.search)
  if (pattern !== undefined) conditions.push({ kind: 'contains', fields: ['fullName', 'givenName', 'familyName', 'preferredName'], pattern })
  return conditions
}

export const studentQueries: Pick<QueryResolvers, 'students' | 'studentsPage' | 'student'> = {
  async students (_parent, args, ctx, info) {
    const { db } = ctx.school()
    if (db.$typedReads()) {
      const plan = planPage(STUDENT_LIST, args as StudentListArgs)
      const conditions = studentConditions((args as StudentListArgs).filter)
      if (plan.take === 0) return []
      return await readList<StudentRow>(db, 'Student', plan, conditions, prismaSelect(info, 'Student', STUDENT_SELECT), plan.take)
    }
    const { plan, query } = listQuery(STUDENT_LIST, args as StudentListArgs, studentWhere, 'list')
    if (plan.take === 0) return []
    const select: Prisma.StudentSelect = prismaSelect(info, 'Student', STUDENT_SELECT)
    return await db.student.findMany({
      relationLoadStrategy: 'join',
      ...query,
      select
    })
  },

  async studentsPage (_parent, args, ctx, info) {
    const { db } = ctx.school()
    if (db.$typedReads()) {
      const plan = planPage(STUDENT_LIST, args as StudentListArgs)
      const conditions = studentConditions((args as StudentListArgs).filter)
      const select = { ...prismaSelect(info, 'Student', STUDENT_SELECT, [['StudentPage', 'nodes']]), ...plan.select }
      return toPage(await readList<StudentRow>(db, 'Student', plan, conditions, select, plan.take + 1), plan)
    }
    const { plan, query } = listQuery(STUDENT_LIST, args as StudentListArgs, studentWhere, 'page')
    const select: Prisma.StudentSelect = { ...prismaSelect(info, 'Student', STUDENT_SELECT, [['StudentPage', 'nodes']]), ...plan.select }
    const rows = await db.student.findMany({
      relationLoadStrategy: 'join',
      ...query,
      select
    })
    return toPage(rows, plan)
  },

  async student (_parent, { id }, ctx, info) {
    const studentId = requireUuid(id)
    const { db } = ctx.school()
    const select: Prisma.StudentSelect = prismaSelect(info, 'Student', STUDENT_SELECT)
    return await db.student.findFirst({
      relationLoadStrategy: 'join',
      where: { id: studentId },
      select
    })
  }
}

export const Student: StudentResolvers = {
  classroomName: (student) => student.classroom?.name ?? null,
  classroom: (student) => student.classroom ?? null
}
