// What resolvers of each GraphQL type receive as parent: the Prisma row, with the relations a
// query selected. Lists, joined relations and the Classroom.teachers and Teacher.classrooms loaders
// read only the columns a query asks for, and `id` (see selects.ts); the other loaders read whole
// rows. The types name every column: a resolver reads only what its own field selected.
import type { Change, Classroom, School, Student, Teacher, TeacherRole } from '../generated/prisma/client.js'

export type SchoolRow = School
export type ClassroomRow = Classroom
export type StudentRow = Student & { classroom?: ClassroomRow | null }
export type TeacherRow = Teacher
export interface AssignmentRow {
  role: TeacherRole
  teacher: TeacherRow
  classroom: ClassroomRow
}
export type ChangeRow = Change
