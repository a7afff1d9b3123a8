// The server entry: the only place that listens. Closes gracefully on SIGINT/SIGTERM.
import { buildApp } from './app.js'
import { loadConfig, type Config } from './config.js'

export async function startServer (config: Config): Promise<void> {
  const started = Date.now()
  const app = await buildApp(config)
  let closing = false
  const shutdown = (signal: string): void => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down: finishing in-flight requests')
    // A hard bound, in case a request or connection never ends.
    setTimeout(() => {
      app.log.error('shutdown took longer than 10 s; exiting')
      process.exit(1)
    }, 10_000).unref()
    app.close().then(() => process.exit(0), (err: unknown) => {
      app.log.error({ err }, 'error while shutting down')
      process.exit(1)
    })
  }
  process.on('SIGINT', shutdown)
  process.on('SIGTERM', shutdown)
  await app.listen({ host: config.host, port: config.port })
  app.log.info({ env: config.env, database: app.db.kind, startupMs: Date.now() - started }, 'School Data Service ready')
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
