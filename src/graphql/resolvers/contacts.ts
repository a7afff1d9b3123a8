// Contacts' queries and relations (a student's guardians, parents and relatives): thin callers of
// the record kind (src/records/contacts.ts), with the columns the operation selects. A teacher's
// operation that selects one never gets here: the scope check refuses it (scope-check.ts).
import type { ContactResolvers, QueryResolvers } from '../generated.js'
import type { ContactRow, StudentRow } from '../models.js'
import { contactById, contactRole, listContacts, pageOfContacts, studentsOfContacts } from '../../records/contacts.js'
import { batched } from '../batches.js'
import { userRoles } from './roles.js'
import { prismaSelect, relationSelect } from '../selection.js'
import { CONTACT_SELECT, STUDENT_SELECT } from '../selects.js'

export const contactQueries: Pick<QueryResolvers, 'contacts' | 'contactsPage' | 'contact'> = {
  async contacts (_parent, args, ctx, info) {
    return await listContacts<ContactRow>(ctx.school().db, args, prismaSelect(info, 'Contact', CONTACT_SELECT))
  },

  async contactsPage (_parent, args, ctx, info) {
    return await pageOfContacts<ContactRow>(ctx.school().db, args, prismaSelect(info, 'Contact', CONTACT_SELECT, [['ContactPage', 'nodes']]))
  },

  async contact (_parent, { id }, ctx, info) {
    return await contactById<ContactRow>(ctx.school().db, id, prismaSelect(info, 'Contact', CONTACT_SELECT))
  }
}

/** The students of all contacts of a batch in one statement, with the columns the query selects on them. */
const contactStudents = batched<ContactRow, StudentRow[]>('Contact.students', async (contacts, ctx, info) =>
  await studentsOfContacts<StudentRow>(ctx.school().db, relationSelect(info, 'Contact', 'students', STUDENT_SELECT), contacts.map((contact) => contact.id)))

export const Contact: ContactResolvers = {
  role: (contact) => contactRole(contact.role!),
  students: contactStudents,
  roles: (contact) => userRoles(contact.role!, contact)
}
