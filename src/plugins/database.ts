import fp from 'fastify-plugin'
import { openDatabase, type Database } from '../db/client.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Database
  }
}

export interface DatabasePluginOptions {
  /** An already open database, owned by the caller (tests); otherwise opened from the config. */
  database?: Database | undefined
}

export default fp<DatabasePluginOptions>(async (app, { database }) => {
  if (database !== undefined) {
    app.decorate('db', database)
    return
  }
  const { databaseUrl, dataDir } = app.config
  // The embedded default applies its migrations on start; a server is migrated as its own step.
  const db = await openDatabase({ url: databaseUrl, dataDir, migrate: databaseUrl === undefined })
  app.decorate('db', db)
  app.addHook('onClose', async () => { await db.close() })
}, { name: 'database', dependencies: ['config'] })
