// Contacts: a student's guardians, parents and relatives (the data model's agents, table `agents`,
// kept by the OneRoster import: src/import/agents.ts), the record kind declared once for the GraphQL
// API (its list's orders, cursors and filter, and its relations), read through the typed statements
// by every caller (lists.ts). Read only: no API, command or mutation writes a contact but the
// import. A teacher reads none (docs/decisions.md "A student's agents"): both walls hold no agent
// for her, and the GraphQL layer refuses her an operation that selects one (scope-check.ts).
import type { ListCondition } from '../db/typed-reads.js'
import type { SchoolDb } from '../db/school-client.js'
import { requireUuid } from '../graphql/ids.js'
import { searchPattern, type ListArgs } from '../graphql/paging.js'
import { PERSON_ORDERS, readList, readOne, readPage, readRelation, type ListKind, type PersonOrderField, type Selection } from './lists.js'

export type ContactOrderField = PersonOrderField

/** A contact's role as the API names it; the column holds OneRoster's (`guardian`, `parent`, `relative`). */
export type ContactRole = 'GUARDIAN' | 'PARENT' | 'RELATIVE'

export interface ContactFilter { studentId?: string | null, role?: ContactRole | null, status?: string | null, search?: string | null }

export type ContactListArgs = ListArgs<ContactOrderField, ContactFilter>

/** The name fields a search of contacts looks in (an agent has no full name). */
const CONTACT_NAME_FIELDS: readonly string[] = ['givenName', 'familyName', 'preferredName']

/** OneRoster's role (the column) as the API's. */
export const contactRole = (role: string): ContactRole => role.toUpperCase() as ContactRole

export const CONTACTS: ListKind<ContactOrderField, ContactFilter> = {
  model: 'Agent',
  spec: {
    list: 'contacts',
    orders: PERSON_ORDERS,
    defaultOrder: 'ID',
    dates: new Set(['createdAt', 'updatedAt'])
  },
  conditions (filter) {
    const conditions: ListCondition[] = []
    if (filter == null) return conditions
    if (filter.studentId != null) conditions.push({ kind: 'holds', field: 'studentIds', value: requireUuid(filter.studentId, 'filter.studentId') })
    if (filter.role != null) conditions.push({ kind: 'equals', field: 'role', value: filter.role.toLowerCase() })
    if (filter.status != null) conditions.push({ kind: 'equals', field: 'status', value: filter.status })
    const pattern = searchPattern(filter.search)
    if (pattern !== undefined) conditions.push({ kind: 'contains', fields: CONTACT_NAME_FIELDS, pattern })
    return conditions
  }
}

/** A list of contacts. */
export async function listContacts<T> (db: SchoolDb, args: ContactListArgs, select: Selection): Promise<T[]> {
  return await readList<T, ContactOrderField, ContactFilter>(db, CONTACTS, args, select)
}

/** A page of contacts. */
export async function pageOfContacts<T extends Record<string, unknown>> (db: SchoolDb, args: ContactListArgs, select: Selection) {
  return await readPage<T, ContactOrderField, ContactFilter>(db, CONTACTS, args, select)
}

/** One contact by id, or null (out of the school or the caller's reach). */
export async function contactById<T> (db: SchoolDb, id: string, select: Selection): Promise<T | null> {
  return await readOne<T>(db, 'Agent', requireUuid(id), select)
}

/** The contacts of students `ids` (by family then given name), in one statement. */
export async function contactsOfStudents<T> (db: SchoolDb, select: Selection, ids: readonly string[]): Promise<T[][]> {
  return await readRelation<T>(db, 'Student.contacts', select, ids)
}

/** The students of contacts `ids` (by full name), in one statement. */
export async function studentsOfContacts<T> (db: SchoolDb, select: Selection, ids: readonly string[]): Promise<T[][]> {
  return await readRelation<T>(db, 'Contact.students', select, ids)
}
