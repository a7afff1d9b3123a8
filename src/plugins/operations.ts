// Liveness and readiness for load balancers and orchestrators.
import fp from 'fastify-plugin'

/** Liveness: answered while the process serves, even when overloaded (pressure.ts). */
export const HEALTH_PATH = '/health'

export default fp(async (app) => {
  app.get(HEALTH_PATH, { logLevel: 'warn' }, async () => ({ status: 'ok' }))

  app.get('/ready', { logLevel: 'warn' }, async (request, reply) => {
    // Shutting down: the load balancer takes this node out before it stops listening.
    if (app.shutdown.state !== 'serving') return await reply.code(503).send({ status: 'unavailable', reason: 'shutting down' })
    try {
      await app.db.ping()
    } catch (err) {
      request.log.warn({ err }, 'readiness check: the database does not answer')
      return await reply.code(503).send({ status: 'unavailable', reason: 'database' })
    }
    // A school's statement that cannot see its school where the rows are (on Citus, the school not
    // passed on to the workers) would answer every read with nothing.
    try {
      await app.db.checkSchoolSetting()
    } catch (err) {
      request.log.error({ err }, 'readiness check: a school\'s statement does not see its school where the rows are')
      return await reply.code(503).send({ status: 'unavailable', reason: 'school setting' })
    }
    // Without the notifications, a user moved to another school could keep the old one here.
    if (!app.auth.accessChangesLive) {
      return await reply.code(503).send({ status: 'unavailable', reason: 'user access notifications' })
    }
    return { status: 'ready' }
  })
}, { name: 'operations', dependencies: ['database', 'auth', 'shutdown'] })
