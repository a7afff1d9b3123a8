// The callers of a school that the OneRoster binding's test files ask as: its administrator, a
// teacher's login (of the teacher record given), and clients holding each read scope.
import type { FastifyInstance } from 'fastify'
import { createUser } from '../../src/admin/users.js'
import type { Database } from '../../src/db/client.js'
import { clientToken, seedClient } from '../fixtures/oauth.js'
import { login, PASSWORD, unique } from '../helper.js'

/** Access tokens of a school's callers. */
export interface SchoolCallers {
  admin: string
  /** The login of the teacher record given. */
  teacher: string
  /** Clients holding roster-core.readonly, roster.readonly, roster-demographics.readonly. */
  core: string
  full: string
  demographics: string
}

/** Makes the school's administrator and the teacher's login (usernames from `prefix`) and its clients; answers their tokens. */
export async function schoolCallers (app: FastifyInstance, db: Database, schoolId: string, teacherId: string, prefix: string): Promise<SchoolCallers> {
  const adminName = unique(`${prefix}-admin`)
  await createUser(db, { username: adminName, password: PASSWORD, schoolId })
  const teacherName = unique(`${prefix}-teacher`)
  await createUser(db, { username: teacherName, password: PASSWORD, schoolId, role: 'teacher', teacherId })
  return {
    admin: (await login(app, adminName)).accessToken,
    teacher: (await login(app, teacherName)).accessToken,
    core: await clientToken(app, await seedClient(schoolId, ['roster-core.readonly'])),
    full: await clientToken(app, await seedClient(schoolId, ['roster.readonly'])),
    demographics: await clientToken(app, await seedClient(schoolId, ['roster-demographics.readonly']))
  }
}
