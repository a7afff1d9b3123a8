// Teachers' queries and relations: thin callers of the record kinds (src/records/), with the
// columns the operation selects.
import type { GraphQLResolveInfo } from 'graphql'
import type { MercuriusContext } from 'mercurius'
import type { QueryResolvers } from '../generated.js'
import type { AssignmentRow, ClassroomRow, TeacherRow } from '../models.js'
import { classroomsOfTeachers } from '../../records/classrooms.js'
import { assignmentsOfTeachers, listTeachers, pageOfTeachers, teacherById } from '../../records/teachers.js'
import { loaderSelect, prismaSelect } from '../selection.js'
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

type Calls = Array<{ obj: TeacherRow, info?: GraphQLResolveInfo }>

/** Assignments of all teachers of one response in one statement, by classroom name. */
async function assignmentsOf (queries: Calls, ctx: MercuriusContext): Promise<AssignmentRow[][]> {
  // What the operation selects of an assignment's teacher and classroom (the whole rows the caller
  // may read when it cannot tell).
  const teacher = loaderSelect(queries, 'ClassroomAssignment', 'teacher', TEACHER_SELECT)
  const classroom = loaderSelect(queries, 'ClassroomAssignment', 'classroom', CLASSROOM_SELECT)
  return await assignmentsOfTeachers<AssignmentRow>(ctx.school().db, teacher, classroom, queries.map((q) => q.obj.id))
}

/** Classrooms of all teachers of one response in one statement, with the columns the query selects on them. */
async function teacherClassrooms (queries: Calls, ctx: MercuriusContext): Promise<ClassroomRow[][]> {
  const classroom = loaderSelect(queries, 'Teacher', 'classrooms', CLASSROOM_SELECT)
  return await classroomsOfTeachers<ClassroomRow>(ctx.school().db, classroom, queries.map((q) => q.obj.id))
}

export const teacherLoaders = {
  Teacher: {
    // With their calls' resolve info (Mercurius passes it when the loader does not cache): the
    // loaders read only the columns the operation selects below the field.
    classrooms: { loader: teacherClassrooms, opts: { cache: false } },
    classroomAssignments: { loader: assignmentsOf, opts: { cache: false } }
  }
}
