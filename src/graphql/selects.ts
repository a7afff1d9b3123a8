// What each GraphQL field of the record types reads from the database (see selection.ts): root
// lists, batched relations and joined relations read only the columns below the fields a query
// selects. Fields read in batches of their own (Classroom.students, Teacher.classrooms,
// Student.contacts, ...: batches.ts) read nothing here: the batch needs the row's `id`, which every
// select includes.
import { columns, type SelectionMap } from './selection.js'

/** A student's, teacher's or contact's roles (UserRole): the columns of migration user_roles. */
const ROLE_COLUMNS = { roleBeginDate: true, roleEndDate: true, secondaryRoles: true } as const

export const CLASSROOM_SELECT: SelectionMap = columns('sourcedId', 'name', 'gradeLevel', 'subject', 'version', 'createdAt', 'updatedAt')

export const TEACHER_SELECT: SelectionMap = {
  ...columns('sourcedId', 'fullName', 'givenName', 'familyName', 'preferredName', 'email', 'title', 'status', 'version', 'createdAt', 'updatedAt'),
  roles: ROLE_COLUMNS
}

export const CONTACT_SELECT: SelectionMap = {
  ...columns('sourcedId', 'role', 'givenName', 'familyName', 'preferredName', 'email', 'phone', 'sms', 'status', 'version', 'createdAt', 'updatedAt'),
  // A contact's primary role is its own column.
  roles: { role: true, ...ROLE_COLUMNS }
}

export const STUDENT_SELECT: SelectionMap = {
  ...columns('sourcedId', 'fullName', 'givenName', 'familyName', 'preferredName', 'studentNumber', 'email',
    'dateOfBirth', 'gradeLevel', 'status', 'enrollmentStartDate', 'enrollmentEndDate', 'version', 'createdAt', 'updatedAt'),
  // The spec's own field needs the classroom's name only.
  classroomName: { classroom: { select: { name: true } } },
  roles: ROLE_COLUMNS,
  classroom: (below) => ({ classroom: { select: below('Classroom', CLASSROOM_SELECT) } })
}
