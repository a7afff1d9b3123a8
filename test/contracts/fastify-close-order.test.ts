// What the app's shutdown relies on in Fastify (and avvio, its plugin loader) beyond its documents,
// which say only that a child plugin's onClose hooks run before its parent's: the onClose hooks of
// plugins registered on one instance run in the reverse order of their registration, and a plugin
// (fastify-plugin) that depends on another cannot be registered before it. Together: a plugin that
// depends on 'database' closes before the database does (the access audit writes its queue out
// first, src/audit/plugin.ts). Fails the day an upgrade changes either.
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import t from 'tap'

t.test('onClose hooks run in the reverse order of registration', async (t) => {
  const app = Fastify()
  const closed: string[] = []
  await app.register(fp(async (instance) => { instance.addHook('onClose', async () => { closed.push('database') }) }, { name: 'database' }))
  await app.register(fp(async (instance) => { instance.addHook('onClose', async () => { closed.push('between') }) }, { name: 'between' }))
  await app.register(fp(async (instance) => { instance.addHook('onClose', async () => { closed.push('audit') }) }, { name: 'audit', dependencies: ['database'] }))
  await app.ready()
  await app.close()
  t.same(closed, ['audit', 'between', 'database'])
})

t.test('a plugin cannot be registered before one it depends on', async (t) => {
  const app = Fastify()
  app.register(fp(async () => {}, { name: 'audit', dependencies: ['database'] }))
  app.register(fp(async () => {}, { name: 'database' }))
  await t.rejects(async () => { await app.ready() }, /database/, 'start-up fails, naming the missing dependency')
})
