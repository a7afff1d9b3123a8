import type { Prisma } from '../../generated/prisma/client.js'
import type { QueryResolvers, StudentResolvers } from '../generated.js'
import { requireUuid } from '../ids.js'
import { listQuery, nameSearch, toPage, type ListArgs, type ListSpec } from '../paging.js'
import { prismaSelect } from '../selection.js'
import { STUDENT_SELECT } from '../selects.js'

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

export const studentQueries: Pick<QueryResolvers, 'students' | 'studentsPage' | 'student'> = {
  async students (_parent, args, ctx, info) {
    const { plan, query } = listQuery(STUDENT_LIST, args as StudentListArgs, studentWhere, 'list')
    const { db } = ctx.school()
    if (plan.take === 0) return []
    const select: Prisma.StudentSelect = prismaSelect(info, 'Student', STUDENT_SELECT)
    return await db.student.findMany({
      relationLoadStrategy: 'join',
      ...query,
      select
    })
  },

  async studentsPage (_parent, args, ctx, info) {
    const { plan, query } = listQuery(STUDENT_LIST, args as StudentListArgs, studentWhere, 'page')
    const { db } = ctx.school()
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
