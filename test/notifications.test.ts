// The notification channels (src/db/notifications.ts): one listening connection per channel, shared
// by its subscribers, each heard in the order SUBSCRIBERS gives (a school's change reaches the read
// routing of the replicas first); a lost connection is told to every subscriber and opened again.
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { ACCESS_CHANGED_CHANNEL, DATA_CHANGED_CHANNEL, SUBSCRIBERS, type Subscriber } from '../src/db/notifications.js'
import { serverUrl, testDatabase } from './helper.js'

/** Waits until `done()` holds, for at most `ms`. */
async function until (done: () => boolean | Promise<boolean>, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await done()) return true
    await sleep(50)
  }
  return false
}

function recorder (name: string, heard: string[]): Subscriber & { listened: number, losses: number } {
  const handlers = {
    listened: 0,
    losses: 0,
    notify (payload: string) { heard.push(`${name}:${payload}`) },
    async listening () { handlers.listened += 1 },
    lost () { handlers.losses += 1 }
  }
  return handlers
}

t.test('a school\'s change reaches the read routing of the replicas first, then the teachers\' classrooms, then the response cache, then the subscriptions', async (t) => {
  t.same(SUBSCRIBERS[DATA_CHANGED_CHANNEL], ['readRouting', 'teacherRooms', 'responseCache', 'subscriptions'])
  const db = await testDatabase()
  const heard: string[] = []
  // Subscribed in the reverse order.
  const subscriptions = [
    await db.subscribe(DATA_CHANGED_CHANNEL, 'responseCache', recorder('responseCache', heard)),
    await db.subscribe(DATA_CHANGED_CHANNEL, 'teacherRooms', recorder('teacherRooms', heard)),
    await db.subscribe(DATA_CHANGED_CHANNEL, 'readRouting', recorder('readRouting', heard))
  ]
  t.teardown(async () => { for (const s of subscriptions) await s.close() })
  t.ok(subscriptions.every((s) => s.live), 'each listens')
  await db.prisma.$executeRawUnsafe(`SELECT pg_notify('${DATA_CHANGED_CHANNEL}', 'first')`)
  t.ok(await until(() => heard.length === 3), 'every subscriber heard it')
  t.same(heard, ['readRouting:first', 'teacherRooms:first', 'responseCache:first'], 'in the order of SUBSCRIBERS')
})

t.test('one connection per channel, whatever the number of subscribers; closed with the last', { skip: serverUrl === undefined ? 'the embedded database listens in process: no connection' : false }, async (t) => {
  const db = await testDatabase()
  const listening = async (): Promise<number> => {
    const [row] = await db.prisma.$queryRawUnsafe<Array<{ n: number }>>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND datname = current_database()")
    return row!.n
  }
  const heard: string[] = []
  const data = [
    await db.subscribe(DATA_CHANGED_CHANNEL, 'readRouting', recorder('a', heard)),
    await db.subscribe(DATA_CHANGED_CHANNEL, 'responseCache', recorder('b', heard)),
    await db.subscribe(DATA_CHANGED_CHANNEL, 'responseCache', recorder('c', heard))
  ]
  const access = await db.subscribe(ACCESS_CHANGED_CHANNEL, 'accessChanges', recorder('d', heard))
  t.equal(await listening(), 2, 'two channels, two connections')
  for (const s of data) await s.close()
  t.ok(await until(async () => await listening() === 1), 'the data channel\'s connection closed with its last subscriber')
  await access.close()
  t.ok(await until(async () => await listening() === 0), 'and the other\'s')
})

t.test('a lost connection is told to each subscriber, opened again, and each listens again', { skip: serverUrl === undefined ? 'the embedded database listens in process: nothing to lose' : false }, async (t) => {
  const db = await testDatabase()
  const heard: string[] = []
  const first = recorder('first', heard)
  const second = recorder('second', heard)
  const a = await db.subscribe(DATA_CHANGED_CHANNEL, 'teacherRooms', first)
  const b = await db.subscribe(DATA_CHANGED_CHANNEL, 'responseCache', second)
  t.teardown(async () => { await a.close(); await b.close() })
  t.same([first.listened, second.listened], [1, 1], 'each listened once')
  const owner = (await testDatabase()).ownerUrl!
  const { default: pg } = await import('pg')
  const admin = new pg.Client({ connectionString: owner })
  await admin.connect()
  t.teardown(() => admin.end())
  await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND datname = current_database()")
  t.ok(await until(() => first.losses > 0 && second.losses > 0), 'both were told of the loss')
  t.ok(await until(() => a.live && b.live && first.listened === 2 && second.listened === 2), 'both listen again')
  await db.prisma.$executeRawUnsafe(`SELECT pg_notify('${DATA_CHANGED_CHANNEL}', 'after')`)
  t.ok(await until(() => heard.length === 2), 'and hear the next change')
})
