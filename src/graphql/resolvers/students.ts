import type { QueryResolvers, StudentResolvers } from '../generated.js'
import type { StudentRow } from '../models.js'
import { requireUuid } from '../ids.js'
import { pageSize } from '../paging.js'
import { prismaSelect, type SelectionMap } from '../selection.js'

const CLASSROOM = { classroom: { select: { id: true, name: true } } }

const STUDENT_SELECT: SelectionMap = {
  id: { id: true },
  fullName: { fullName: true },
  classroomName: CLASSROOM,
  classroom: CLASSROOM
}

export const studentQueries: Pick<QueryResolvers, 'students' | 'student'> = {
  async students (_parent, { limit }, ctx, info) {
    const take = pageSize(limit)
    const { db } = ctx.school()
    if (take === 0) return []
    return await db.student.findMany({
      relationLoadStrategy: 'join',
      take,
      orderBy: { id: 'asc' },
      select: prismaSelect(info, 'Student', STUDENT_SELECT)
      // The rows hold exactly the columns the query selected, which is all its resolvers read.
    }) as unknown as StudentRow[]
  },

  async student (_parent, { id }, ctx, info) {
    const studentId = requireUuid(id)
    const { db } = ctx.school()
    return await db.student.findFirst({
      relationLoadStrategy: 'join',
      where: { id: studentId },
      select: prismaSelect(info, 'Student', STUDENT_SELECT)
    }) as unknown as StudentRow | null
  }
}

export const Student: StudentResolvers = {
  classroomName: (student) => student.classroom?.name ?? null,
  classroom: (student) => student.classroom ?? null
}
