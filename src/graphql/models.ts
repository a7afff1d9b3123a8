// What resolvers of each GraphQL type receive as parent: the Prisma row, with the relations a
// query selected. Only the columns a query asks for are read (see selection.ts).
import type { Classroom, School, Student, Teacher } from '../generated/prisma/client.js'

export type SchoolRow = School
export type ClassroomRow = Pick<Classroom, 'id' | 'name'>
export type StudentRow = Student & { classroom?: ClassroomRow | null }
export type TeacherRow = Teacher
