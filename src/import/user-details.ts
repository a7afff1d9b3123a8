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
