import type { MercuriusContext } from 'mercurius'
import type { QueryResolvers } from '../generated.js'
import type { ClassroomRow, TeacherRow } from '../models.js'
import { requireUuid } from '../ids.js'
import { pageSize } from '../paging.js'
import { prismaSelect, type SelectionMap } from '../selection.js'

const TEACHER_SELECT: SelectionMap = {
  id: { id: true },
  fullName: { fullName: true }
}

export const teacherQueries: Pick<QueryResolvers, 'teachers' | 'teacher'> = {
  async teachers (_parent, { limit }, ctx, info) {
    const take = pageSize(limit)
    const { db } = ctx.school()
    if (take === 0) return []
    return await db.teacher.findMany({
      take,
      orderBy: { id: 'asc' },
      select: prismaSelect(info, 'Teacher', TEACHER_SELECT)
      // The rows hold exactly the columns the query selected, which is all its resolvers read.
    }) as unknown as TeacherRow[]
  },

  async teacher (_parent, { id }, ctx, info) {
    const teacherId = requireUuid(id)
    const { db } = ctx.school()
    return await db.teacher.findFirst({
      where: { id: teacherId },
      select: prismaSelect(info, 'Teacher', TEACHER_SELECT)
    }) as unknown as TeacherRow | null
  }
}

/** Classrooms of all teachers of one response in one query (Mercurius loader). */
async function teacherClassrooms (
  queries: Array<{ obj: TeacherRow }>,
  ctx: MercuriusContext
): Promise<ClassroomRow[][]> {
  const { db } = ctx.school()
  const rows = await db.teacherClassroom.findMany({
    relationLoadStrategy: 'join',
    where: { teacherId: { in: queries.map((q) => q.obj.id) } },
    select: { teacherId: true, classroom: { select: { id: true, name: true } } },
    orderBy: { classroom: { name: 'asc' } }
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
  Teacher: { classrooms: teacherClassrooms }
}
