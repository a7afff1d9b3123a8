// What resolvers of each GraphQL type receive as parent: the Prisma row, with the relations a
// query selected. Lists, joined relations and the batched relations (batches.ts) of
// classrooms and teachers read only the columns a query asks for, and `id` (see selects.ts); a
// change's record is read whole. So a row has `id` and any other column: a resolver reads only what its own field selected.
import type { Agent, Change, Classroom, School, Student, Teacher, TeacherChange, TeacherRole } from '../generated/prisma/client.js'

/** A row read with the select a query made: `id` always, the other columns when selected. */
export type Selected<T extends { id: string }> = Pick<T, 'id'> & Partial<Omit<T, 'id'>>

export type SchoolRow = School
export type ClassroomRow = Selected<Classroom>
export type StudentRow = Selected<Student> & { classroom?: ClassroomRow | null }
export type TeacherRow = Selected<Teacher>
/** A contact: an agent of the school's students (a guardian, parent or relative). */
export type ContactRow = Selected<Agent>
export interface AssignmentRow {
  role: TeacherRole
  teacher: TeacherRow
  classroom: ClassroomRow
}
/** An entry of the school's feed or of a teacher's (resolvers/changes.ts). */
export type ChangeRow = Change | TeacherChange
