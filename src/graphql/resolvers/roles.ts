// A record's roles in the school (UserRole): its kind, with the dates the OneRoster import kept
// for it, then its secondary roles, as the import kept them from roles.csv (migration user_roles;
// the REST binding answers the same columns as RoleDType, src/oneroster/kinds.ts).
import type { UserRole } from '../generated.js'

/** The columns `roles` reads (selects.ts ROLE_COLUMNS), as a row has them when selected. */
interface RoleColumns {
  roleBeginDate?: Date | null
  roleEndDate?: Date | null
  /** The import's list: each {sourcedId, role, beginDate?, endDate?}, days as YYYY-MM-DD. */
  secondaryRoles?: unknown
}

/** The roles of a record of kind `role` (OneRoster's spelling), primary first. */
export function userRoles (role: string, row: RoleColumns): UserRole[] {
  const secondary = (row.secondaryRoles ?? []) as Array<{ role: string, beginDate?: string, endDate?: string }>
  return [
    { roleType: 'PRIMARY', role, beginDate: row.roleBeginDate ?? null, endDate: row.roleEndDate ?? null },
    ...secondary.map((other): UserRole => ({ roleType: 'SECONDARY', role: other.role, beginDate: other.beginDate ?? null, endDate: other.endDate ?? null }))
  ]
}
