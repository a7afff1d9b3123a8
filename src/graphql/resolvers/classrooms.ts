// Classrooms' queries and relations: thin callers of the record kinds (src/records/), with the
// columns the operation selects.
import type { QueryResolvers } from '../generated.js'
import type { AssignmentRow, ClassroomRow, StudentRow, TeacherRow } from '../models.js'
import { assignmentsOfClassrooms, classroomById, listClassrooms, pageOfClassrooms } from '../../records/classrooms.js'
import { studentsOfClassrooms } from '../../records/students.js'
import { teachersOfClassrooms } from '../../records/teachers.js'
import { batched } from '../batches.js'
import { prismaSelect, relationSelect } from '../selection.js'
import { CLASSROOM_SELECT, STUDENT_SELECT, TEACHER_SELECT } from '../selects.js'

export const classroomQueries: Pick<QueryResolvers, 'classrooms' | 'classroomsPage' | 'classroom'> = {
  async classrooms (_parent, args, ctx, info) {
    return await listClassrooms<ClassroomRow>(ctx.school().db, args, prismaSelect(info, 'Classroom', CLASSROOM_SELECT))
  },

  async classroomsPage (_parent, args, ctx, info) {
    return await pageOfClassrooms<ClassroomRow>(ctx.school().db, args, prismaSelect(info, 'Classroom', CLASSROOM_SELECT, [['ClassroomPage', 'nodes']]))
  },

  async classroom (_parent, { id }, ctx, info) {
    return await classroomById(ctx.school().db, id, prismaSelect(info, 'Classroom', CLASSROOM_SELECT))
  }
}

/** Rosters of all classrooms of a batch in one statement, with the columns the query selects on them. */
const classroomStudents = batched<ClassroomRow, StudentRow[]>('Classroom.students', async (rooms, ctx, info) =>
  await studentsOfClassrooms<StudentRow>(ctx.school().db, relationSelect(info, 'Classroom', 'students', STUDENT_SELECT), rooms.map((room) => room.id)))

/** Teacher assignments of all classrooms of a batch in one statement, by teacher name. */
const classroomAssignments = batched<ClassroomRow, AssignmentRow[]>('Classroom.teacherAssignments', async (rooms, ctx, info) =>
  await assignmentsOfClassrooms<AssignmentRow>(ctx.school().db,
    relationSelect(info, 'ClassroomAssignment', 'teacher', TEACHER_SELECT), relationSelect(info, 'ClassroomAssignment', 'classroom', CLASSROOM_SELECT),
    rooms.map((room) => room.id)))

/** Teachers of all classrooms of a batch in one statement, with the columns the query selects on them. */
const classroomTeachers = batched<ClassroomRow, TeacherRow[]>('Classroom.teachers', async (rooms, ctx, info) =>
  await teachersOfClassrooms<TeacherRow>(ctx.school().db, relationSelect(info, 'Classroom', 'teachers', TEACHER_SELECT), rooms.map((room) => room.id)))

/** A classroom's relations, each read in batches: only the columns the operation selects below the field. */
export const Classroom = {
  students: classroomStudents,
  teachers: classroomTeachers,
  teacherAssignments: classroomAssignments
}
