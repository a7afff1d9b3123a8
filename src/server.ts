// The server entry: the only place that listens. On SIGTERM it drains for SHUTDOWN_DRAIN_MS
// (readiness fails, every answer closes its keep-alive connection), then refuses every request
// with a coded 503 and `Connection: close` and stops listening a moment later, lets the requests
// in flight finish, closes the database, and exits 0 (src/plugins/shutdown.ts); if that takes
// longer than SHUTDOWN_TIMEOUT_MS it exits 1. SIGINT (Ctrl-C at a terminal) skips the drain.
import { buildApp } from './app.js'
import { loadConfig, type Config } from './config.js'

export async function startServer (config: Config): Promise<void> {
  const started = Date.now()
  const app = await buildApp(config)
  const shutdown = (signal: string): void => {
    if (app.shutdown.state !== 'serving') return
    app.log.info({ signal, timeoutMs: config.shutdownTimeoutMs }, 'shutting down: finishing in-flight requests')
    // A hard bound, in case a request or a connection never ends.
    setTimeout(() => {
      app.log.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown did not finish in time; exiting')
      process.exit(1)
    }, config.shutdownTimeoutMs).unref()
    app.shutdown.run(signal === 'SIGTERM' ? config.shutdownDrainMs : 0).then(() => {
      app.log.info('shut down')
      process.exit(0)
    }, (err: unknown) => {
      app.log.error({ err }, 'error while shutting down')
      process.exit(1)
    })
  }
  process.on('SIGINT', shutdown)
  process.on('SIGTERM', shutdown)
  await app.listen({ host: config.host, port: config.port })
  app.log.info({ env: config.env, database: app.db.kind, ...(app.db.citus && { citus: true }), startupMs: Date.now() - started }, 'School Data Service ready')
  // Sandbox on a fresh embedded database: a demo school and user to log in with (docs/running/demo-data.md).
  // Loaded only then: the seed brings the OneRoster import's CSV and zip readers with it.
  if (config.env === 'sandbox' && app.db.kind === 'embedded') {
    const { seedEmptySandbox } = await import('./seed/sandbox.js')
    await seedEmptySandbox(app.db, config.env, app.log)
  }
}

// Run when executed directly (node dist/server.js), not when imported by the CLI.
if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    await startServer(loadConfig())
  } catch (err) {
    console.error((err as Error).message)
    process.exit(1)
  }
}
