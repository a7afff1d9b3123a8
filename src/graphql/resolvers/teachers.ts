// Teachers' queries and relations: thin callers of the record kinds (src/records/), with the
// columns the operation selects.
import type { QueryResolvers } from '../generated.js'
import type { AssignmentRow, ClassroomRow, TeacherRow } from '../models.js'
import { classroomsOfTeachers } from '../../records/classrooms.js'
import { assignmentsOfTeachers, listTeachers, pageOfTeachers, teacherById } from '../../records/teachers.js'
import { batched } from '../batches.js'
import { userRoles } from './roles.js'
import { prismaSelect, relationSelect } from '../selection.js'
import { CLASSROOM_SELECT, TEACHER_SELECT } from '../selects.js'

export const teacherQueries: Pick<QueryResolvers, 'teachers' | 'teachersPage' | 'teacher'> = {
  async teachers (_parent, args, ctx, info) {
    return await listTeachers<TeacherRow>(ctx.school().db, args, prismaSelect(info, 'Teacher', TEACHER_SELECT))
  },

  async teachersPage (_parent, args, ctx, info) {
    return await pageOfTeachers<TeacherRow>(ctx.school().db, args, prismaSelect(info, 'Teacher', TEACHER_SELECT, [['TeacherPage', 'nodes']]))
  },

  async teacher (_parent, { id }, ctx, info) {
    return await teacherById(ctx.school().db, id, prismaSelect(info, 'Teacher', TEACHER_SELECT))
  }
}

/** Assignments of all teachers of a batch in one statement, by classroom name, with what the operation selects of an assignment's teacher and classroom. */
const assignmentsOf = batched<TeacherRow, AssignmentRow[]>('Teacher.classroomAssignments', async (teachers, ctx, info) =>
  await assignmentsOfTeachers<AssignmentRow>(ctx.school().db,
    relationSelect(info, 'ClassroomAssignment', 'teacher', TEACHER_SELECT), relationSelect(info, 'ClassroomAssignment', 'classroom', CLASSROOM_SELECT),
    teachers.map((teacher) => teacher.id)))

/** Classrooms of all teachers of a batch in one statement, with the columns the query selects on them. */
const teacherClassrooms = batched<TeacherRow, ClassroomRow[]>('Teacher.classrooms', async (teachers, ctx, info) =>
  await classroomsOfTeachers<ClassroomRow>(ctx.school().db, relationSelect(info, 'Teacher', 'classrooms', CLASSROOM_SELECT), teachers.map((teacher) => teacher.id)))

/** A teacher's relations, each read in batches: only the columns the operation selects below the field. */
export const Teacher = {
  classrooms: teacherClassrooms,
  classroomAssignments: assignmentsOf,
  roles: (teacher: TeacherRow) => userRoles('teacher', teacher)
}
