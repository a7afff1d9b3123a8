// `npm start` in the sandbox on an empty embedded database: seed the demo school, so that a new user
// can log in at once (the credentials are printed). Never in production, never on a server
// database (someone else's data may be about to arrive there), never in tests (buildApp does not
// call this; only the server entry does).
import type { Environment } from '../config.js'
import type { Database } from '../db/client.js'
import { formatLogin, seedDemo } from './demo.js'

export async function seedEmptySandbox (
  db: Database,
  env: Environment,
  log: { info: (obj: object, msg: string) => void, warn: (obj: object, msg: string) => void },
  print: (text: string) => void = (text) => { process.stdout.write(text) }
): Promise<boolean> {
  if (env !== 'sandbox' || db.kind !== 'embedded') return false
  try {
    if (await db.prisma.school.count() > 0) return false
    const login = await seedDemo(db, { env })
    log.info({ schoolId: login.schoolId, username: login.username }, 'empty sandbox database: demo data created')
    print('\n' + formatLogin(login) + '\n')
    return true
  } catch (err) {
    log.warn({ err }, 'could not create the demo data (run `school-data seed demo` to try again)')
    return false
  }
}
