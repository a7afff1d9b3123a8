// Classrooms' queries and relations: thin callers of the record kinds (src/records/), with the
// columns the operation selects.
import type { GraphQLResolveInfo } from 'graphql'
import type { MercuriusContext } from 'mercurius'
import type { QueryResolvers } from '../generated.js'
import type { AssignmentRow, ClassroomRow, StudentRow, TeacherRow } from '../models.js'
import { assignmentsOfClassrooms, classroomById, listClassrooms, pageOfClassrooms } from '../../records/classrooms.js'
import { studentsOfClassrooms } from '../../records/students.js'
import { teachersOfClassrooms } from '../../records/teachers.js'
import { loaderSelect, prismaSelect } from '../selection.js'
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

type Calls = Array<{ obj: ClassroomRow, info?: GraphQLResolveInfo }>

/** Rosters of all classrooms of one response in one statement, with the columns the query selects on them. */
async function classroomStudents (queries: Calls, ctx: MercuriusContext): Promise<StudentRow[][]> {
  const student = loaderSelect(queries, 'Classroom', 'students', STUDENT_SELECT)
  return await studentsOfClassrooms<StudentRow>(ctx.school().db, student, queries.map((q) => q.obj.id))
}

/** Teacher assignments of all classrooms of one response in one statement, by teacher name. */
async function classroomAssignments (queries: Calls, ctx: MercuriusContext): Promise<AssignmentRow[][]> {
  const teacher = loaderSelect(queries, 'ClassroomAssignment', 'teacher', TEACHER_SELECT)
  const classroom = loaderSelect(queries, 'ClassroomAssignment', 'classroom', CLASSROOM_SELECT)
  return await assignmentsOfClassrooms<AssignmentRow>(ctx.school().db, teacher, classroom, queries.map((q) => q.obj.id))
}

/** Teachers of all classrooms of one response in one statement, with the columns the query selects on them. */
async function classroomTeachers (queries: Calls, ctx: MercuriusContext): Promise<TeacherRow[][]> {
  const teacher = loaderSelect(queries, 'Classroom', 'teachers', TEACHER_SELECT)
  return await teachersOfClassrooms<TeacherRow>(ctx.school().db, teacher, queries.map((q) => q.obj.id))
}

export const classroomLoaders = {
  Classroom: {
    // With their calls' resolve info (Mercurius passes it when the loader does not cache): the
    // loaders read only the columns the operation selects below the field.
    students: { loader: classroomStudents, opts: { cache: false } },
    teachers: { loader: classroomTeachers, opts: { cache: false } },
    teacherAssignments: { loader: classroomAssignments, opts: { cache: false } }
  }
}
