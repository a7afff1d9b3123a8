import type { MercuriusContext } from 'mercurius'
import type { QueryResolvers } from '../generated.js'
import { requireUuid } from '../ids.js'
import type { ClassroomRow, StudentRow, TeacherRow } from '../models.js'
import { pageSize } from '../paging.js'

const CLASSROOM_SELECT = { id: true, name: true } as const

export const classroomQueries: Pick<QueryResolvers, 'classrooms' | 'classroom'> = {
  async classrooms (_parent, { limit }, ctx) {
    const take = pageSize(limit)
    const { db } = ctx.school()
    if (take === 0) return []
    return await db.classroom.findMany({ take, orderBy: [{ name: 'asc' }, { id: 'asc' }], select: CLASSROOM_SELECT })
  },

  async classroom (_parent, { id }, ctx) {
    const classroomId = requireUuid(id)
    const { db } = ctx.school()
    return await db.classroom.findFirst({ where: { id: classroomId }, select: CLASSROOM_SELECT })
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
  const rows = await db.student.findMany({
    relationLoadStrategy: 'join',
    where: { classroomId: { in: queries.map((q) => q.obj.id) } },
    orderBy: [{ fullName: 'asc' }, { id: 'asc' }],
    select: { id: true, fullName: true, classroomId: true, classroom: { select: CLASSROOM_SELECT } }
  })
  const byClassroom = groupBy(rows, (row) => row.classroomId ?? '')
  return queries.map((q) => (byClassroom.get(q.obj.id) ?? []) as unknown as StudentRow[])
}

/** Teachers of all classrooms of one response in one query (Mercurius loader). */
async function classroomTeachers (queries: Array<{ obj: ClassroomRow }>, ctx: MercuriusContext): Promise<TeacherRow[][]> {
  const { db } = ctx.school()
  const rows = await db.teacherClassroom.findMany({
    relationLoadStrategy: 'join',
    where: { classroomId: { in: queries.map((q) => q.obj.id) } },
    orderBy: [{ teacher: { fullName: 'asc' } }, { teacherId: 'asc' }],
    select: { classroomId: true, teacher: { select: { id: true, fullName: true } } }
  })
  const byClassroom = groupBy(rows, (row) => row.classroomId)
  return queries.map((q) => (byClassroom.get(q.obj.id) ?? []).map((row) => row.teacher as unknown as TeacherRow))
}

export const classroomLoaders = {
  Classroom: { students: classroomStudents, teachers: classroomTeachers }
}
