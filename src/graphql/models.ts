// What resolvers of each GraphQL type receive as parent: the Prisma row, with the relations a
// query selected. Root lists read only the columns a query asks for (see selection.ts); records
// reached through a relation (loaders, joins) carry all their columns.
import type { Change, Classroom, School, Student, Teacher, TeacherRole } from '../generated/prisma/client.js'

export type SchoolRow = School
export type ClassroomRow = Classroom
// `classroom` is the whole row when the query selects `classroom`, else (for `classroomName`) the name alone.
export type StudentRow = Student & { classroom?: ClassroomRow | null }
export type TeacherRow = Teacher
export interface AssignmentRow {
  role: TeacherRole
  teacher: TeacherRow
  classroom: ClassroomRow
}
export type ChangeRow = Change
