// What users.csv gives of a user beyond the names, status and email: the fields students,
// teachers and agents keep alike (src/import/oneroster.ts, src/import/agents.ts).

/**
 * What users.csv gives of a user beyond the names, status and email (UserDType): kept as given,
 * null (no identifiers) when the file has none; userIds each as `type:identifier`.
 */
export interface UserDetails {
  middleName: string | null
  preferredMiddleName: string | null
  preferredLastName: string | null
  pronouns: string | null
  username: string | null
  userIds: string[]
  sms: string | null
  phone: string | null
}

/** A secondary role of the user's in the school, as roles.csv gives it: its row's sourcedId (a delta names it by), its role, its dates (YYYY-MM-DD). */
export interface SecondaryRole {
  sourcedId: string
  role: string
  beginDate?: string
  endDate?: string
}

/**
 * A user's roles in the school beside its kind, as 1.2's roles.csv gives them (RoleDType): the
 * primary role's begin and end dates (YYYY-MM-DD), and the secondary roles in the file's order.
 */
export interface RoleDetails {
  roleBeginDate: string | null
  roleEndDate: string | null
  secondaryRoles: SecondaryRole[]
}

export const NO_ROLE_DETAILS: RoleDetails = { roleBeginDate: null, roleEndDate: null, secondaryRoles: [] }

/** The role details among a user's values (a record read from the school, whose other columns are not). */
export const roleDetailsIn = (values: RoleDetails): RoleDetails =>
  ({ roleBeginDate: values.roleBeginDate, roleEndDate: values.roleEndDate, secondaryRoles: values.secondaryRoles })

/** A secondary role with its keys in one order and no absent date: as the import writes it, and as it compares it with the database's (jsonb orders keys its own way). */
export const secondaryRole = (sourcedId: string, role: string, beginDate: string | null, endDate: string | null): SecondaryRole =>
  ({ sourcedId, role, ...(beginDate === null ? {} : { beginDate }), ...(endDate === null ? {} : { endDate }) })

export const sameRoleDetails = (a: RoleDetails, b: RoleDetails): boolean =>
  a.roleBeginDate === b.roleBeginDate && a.roleEndDate === b.roleEndDate && a.secondaryRoles.length === b.secondaryRoles.length &&
  a.secondaryRoles.every((role, i) => {
    const other = b.secondaryRoles[i]!
    return role.sourcedId === other.sourcedId && role.role === other.role && role.beginDate === other.beginDate && role.endDate === other.endDate
  })

/** 1EdTech's RoleEnum (OneRoster 1.2), as the CSV and REST bindings spell it; an extension is ext:name. */
export const ONEROSTER_ROLES = ['aide', 'counselor', 'districtAdministrator', 'guardian', 'parent', 'principal', 'proctor', 'relative',
  'siteAdministrator', 'student', 'systemAdministrator', 'teacher'] as const
