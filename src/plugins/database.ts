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
  const { databaseUrl, databasePoolSize, databaseReplicaUrls, dataDir, databaseConnectTimeoutMs, databaseStatementTimeoutMs } = app.config
  // The embedded default applies its migrations on start; a server is migrated as its own step.
  const db = await openDatabase({
    url: databaseUrl,
    dataDir,
    poolSize: databasePoolSize,
    connectTimeoutMs: databaseConnectTimeoutMs,
    statementTimeoutMs: databaseStatementTimeoutMs,
    migrate: databaseUrl === undefined,
    replicaUrls: databaseReplicaUrls,
    warn: (message, err) => { app.log.warn({ err }, message) }
  })
  if (!db.rowSecurity) {
    const message = 'DATABASE_URL connects as a role that bypasses row-level security (a superuser, a BYPASSRLS ' +
      'role or the owner of the tables), so only one of the two tenant walls stands: connect as the service ' +
      'role described in the README ("Database roles")'
    if (app.config.env === 'production') {
      await db.close()
      throw new Error(message)
    }
    app.log.warn(message)
  }
  app.decorate('db', db)
  app.addHook('onClose', async () => { await db.close() })
}, { name: 'database', dependencies: ['config'] })
