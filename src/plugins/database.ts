import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { openDatabase, type Database } from '../db/client.js'
import { DATA_CHANGED_CHANNEL } from '../db/notifications.js'
import { parseUuid } from '../validators.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Database
  }
}

export interface DatabasePluginOptions {
  /** An already open database, owned by the caller (tests); otherwise opened from the config. */
  database?: Database | undefined
}

/**
 * Keeps teachers' classrooms for wall 1 (src/db/teacher-rooms.ts) while this app hears the schools'
 * changes: a school's notification drops its teachers' classrooms; a lost connection, all of them.
 */
async function keepTeacherRooms (app: FastifyInstance, db: Database): Promise<void> {
  const rooms = db.teacherRooms
  const listener = await db.subscribe(DATA_CHANGED_CHANNEL, 'teacherRooms', {
    notify (payload) {
      const schoolId = parseUuid(payload)
      if (schoolId !== undefined) rooms.invalidate(schoolId)
    },
    async listening () { rooms.invalidateAll() },
    lost () { rooms.invalidateAll() }
  })
  const stop = rooms.keepWhile(() => listener.live)
  app.addHook('onClose', async () => {
    stop()
    await listener.close()
  })
}

export default fp<DatabasePluginOptions>(async (app, { database }) => {
  if (database !== undefined) {
    app.decorate('db', database)
    await keepTeacherRooms(app, database)
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
      'role of docs/running/database-roles.md'
    if (app.config.env === 'production') {
      await db.close()
      throw new Error(message)
    }
    app.log.warn(message)
  } else if (!db.auditAppendOnly) {
    app.log.warn('The access audit is not append-only for the role DATABASE_URL connects as: it may read, change or ' +
      'delete the audit. Take that back once, as the owner: REVOKE SELECT, UPDATE, DELETE ON access_audit FROM <service role> ' +
      '(docs/running/database-roles.md)')
  }
  app.decorate('db', db)
  app.addHook('onClose', async () => { await db.close() })
  await keepTeacherRooms(app, db)
}, { name: 'database', dependencies: ['config'] })
