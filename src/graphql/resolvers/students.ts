// Students' queries: thin callers of the record kind (src/records/students.ts), with the columns
// the operation selects.
import type { QueryResolvers, StudentResolvers } from '../generated.js'
import type { StudentRow } from '../models.js'
import { listStudents, pageOfStudents, studentById } from '../../records/students.js'
import { prismaSelect } from '../selection.js'
import { STUDENT_SELECT } from '../selects.js'

export const studentQueries: Pick<QueryResolvers, 'students' | 'studentsPage' | 'student'> = {
  async students (_parent, args, ctx, info) {
    return await listStudents<StudentRow>(ctx.school().db, args, prismaSelect(info, 'Student', STUDENT_SELECT))
  },

  async studentsPage (_parent, args, ctx, info) {
    return await pageOfStudents<StudentRow>(ctx.school().db, args, prismaSelect(info, 'Student', STUDENT_SELECT, [['StudentPage', 'nodes']]))
  },

  async student (_parent, { id }, ctx, info) {
    return await studentById(ctx.school().db, id, prismaSelect(info, 'Student', STUDENT_SELECT))
  }
}

export const Student: StudentResolvers = {
  classroomName: (student) => student.classroom?.name ?? null,
  classroom: (student) => student.classroom ?? null
}
