// Students' queries and their contacts: thin callers of the record kinds (src/records/students.ts,
// contacts.ts), with the columns the operation selects.
import type { QueryResolvers, StudentResolvers } from '../generated.js'
import type { ContactRow, StudentRow } from '../models.js'
import { contactsOfStudents } from '../../records/contacts.js'
import { listStudents, pageOfStudents, studentById } from '../../records/students.js'
import { batched } from '../batches.js'
import { userRoles } from './roles.js'
import { prismaSelect, relationSelect } from '../selection.js'
import { CONTACT_SELECT, STUDENT_SELECT } from '../selects.js'

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

/** The contacts of all students of a batch in one statement (the agents' GIN index), with the columns the query selects on them. */
const studentContacts = batched<StudentRow, ContactRow[]>('Student.contacts', async (students, ctx, info) =>
  await contactsOfStudents<ContactRow>(ctx.school().db, relationSelect(info, 'Student', 'contacts', CONTACT_SELECT), students.map((student) => student.id)))

export const Student: StudentResolvers = {
  classroomName: (student) => student.classroom?.name ?? null,
  classroom: (student) => student.classroom ?? null,
  contacts: studentContacts,
  roles: (student) => userRoles('student', student)
}
