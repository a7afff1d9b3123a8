// A mutation answers the record as its own write left it, at the version it wrote, never as another
// writer left it after (issue 35, point 4). The interleaving is forced, not waited for: through the
// app's public seam (its `database`), the first mutation's read of its answer waits until a second
// writer of the same student has committed, or cannot (it waits for the first's row lock). Before,
// the answer was read after the commit, and showed the second writer's change at its version. A
// mutation that wrote nothing (the record was as asked) holds no lock: when another writer moves
// the record on before it answers, it is refused with CONFLICT rather than answer the other's write.
// PostgreSQL only: the embedded PGlite runs one transaction at a time, so no writer comes between.
import pg from 'pg'
import t from 'tap'
import { addClassroom } from '../src/records/classrooms.js'
import { createStudent } from '../src/records/students.js'
import { schoolTarget } from '../src/records/writes.js'
import { buildApp } from '../src/app.js'
import { gql, login, seedSchool, serverUrl, testConfig, testDatabase, unique, type GraphQLResponse } from './helper.js'

if (serverUrl === undefined) {
  t.pass('skipped: the embedded PGlite runs one transaction at a time, so no writer can come between a write and its answer')
} else {
  const db = await testDatabase()
  /** Runs before the next read of a mutation's answer (a student read with its relations joined), once. */
  let beforeAnswer: (() => Promise<void>) | undefined
  const hooked = <C extends object>(client: C): C => new Proxy(client, {
    get (target, prop) {
      const value: unknown = Reflect.get(target, prop)
      if (prop === 'student') {
        return new Proxy(value as object, {
          get (delegate, op) {
            const inner: unknown = Reflect.get(delegate, op)
            if (typeof inner !== 'function') return inner
            const call = (inner as (...a: unknown[]) => Promise<unknown>).bind(delegate)
            if (op !== 'findFirst') return call
            return async (args: { relationLoadStrategy?: string }) => {
              const hook = beforeAnswer
              if (hook !== undefined && args.relationLoadStrategy !== undefined) {
                beforeAnswer = undefined
                await hook()
              }
              return await call(args)
            }
          }
        })
      }
      if (prop === '$transaction') {
        return (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target,
          args.map((arg) => typeof arg === 'function' ? async (tx: object) => await (arg as (tx: object) => Promise<unknown>)(hooked(tx)) : arg))
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
    }
  })
  const database = Object.assign(Object.create(db) as typeof db, { forSchool: (...args: Parameters<typeof db.forSchool>) => hooked(db.forSchool(...args)) })
  const app = await buildApp(testConfig(), { database, logger: false })
  t.teardown(() => app.close())
  // The owner's connection (past row-level security), to see whether a statement waits for a lock.
  const probe = new pg.Client({ connectionString: db.ownerUrl })
  await probe.connect()
  t.teardown(() => probe.end())
  const citus = (await probe.query<{ citus: boolean }>("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus")).rows[0]!.citus

  /**
   * A second writer: `committedOrWaiting` sends it and resolves once it has answered, or once its
   * UPDATE of a student waits for a lock (the first writer's, held until the first commits).
   */
  const secondWriter = (send: () => Promise<GraphQLResponse>) => {
    const writer = {
      answer: undefined as Promise<GraphQLResponse> | undefined,
      async committedOrWaiting (): Promise<'committed' | 'waiting'> {
        const second = { done: false }
        const answer = writer.answer = send().finally(() => { second.done = true })
        const waiting = (async (): Promise<'waiting'> => {
          while (!second.done) {
            // On Citus the lock is waited for on the worker that holds the shard, by the statement
            // on the shard (citus_stat_activity shows it); the coordinator's backend only waits for
            // the worker's answer, as it does for any statement sent there.
            const { rows } = await probe.query(citus
              ? `SELECT 1 FROM citus_stat_activity WHERE datname = current_database() AND state = 'active' AND query LIKE 'UPDATE public.students%'
                 AND wait_event_type = 'Lock'`
              : `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query LIKE 'UPDATE "public"."students"%'
                 AND wait_event_type = 'Lock'`)
            if (rows.length > 0) return 'waiting'
            await new Promise((resolve) => setTimeout(resolve, 10))
          }
          return await new Promise<never>(() => {})
        })()
        return await Promise.race([answer.then(() => 'committed' as const), waiting])
      }
    }
    return writer
  }

  const { schoolId, username } = await seedSchool(unique('Answers School'))
  const token = (await login(app, username)).accessToken
  const target = await schoolTarget(db, schoolId)

  t.test('two changes of one student at once without a version: each writer is answered its own change at the version it wrote', async (t) => {
    const id = await createStudent(db, { schoolId, fullName: 'Both Writers' })
    const CHANGE = 'mutation ($id: ID!, $name: String!) { changeStudent(student: { id: $id }, input: { preferredName: $name }) { preferredName version } }'
    const y = secondWriter(async () => await gql(app, CHANGE, { token, variables: { id, name: 'Y' } }))
    let between: string | undefined
    beforeAnswer = async () => { between = await y.committedOrWaiting() }
    const x = await gql(app, CHANGE, { token, variables: { id, name: 'X' } })
    t.equal(between, 'waiting', 'the second writer waited for the first\'s row until it had answered')
    t.same(x.body, { data: { changeStudent: { preferredName: 'X', version: 2 } } }, 'the first writer is answered its own change, at version 2')
    t.same((await y.answer!).body, { data: { changeStudent: { preferredName: 'Y', version: 3 } } }, 'the second its own, at version 3')
    const now = await db.forSchool(schoolId).student.findFirst({ where: { id }, select: { preferredName: true, version: true } })
    t.same(now, { preferredName: 'Y', version: 3 }, 'the second wrote last')
  })

  t.test('a mutation that found the record as asked, whose record another writer moves on before it answers, is refused with CONFLICT, not answered the other\'s write', async (t) => {
    const roomA = unique('Room A')
    const roomB = unique('Room B')
    await addClassroom(target, { name: roomB })
    const id = await createStudent(db, { schoolId, fullName: 'Placed Twice', classroom: roomA })
    const PLACE = 'mutation ($id: ID!, $room: String!) { placeStudent(student: { id: $id }, classroom: { name: $room }) { classroomName version } }'
    const y = secondWriter(async () => await gql(app, PLACE, { token, variables: { id, room: roomB } }))
    let between: string | undefined
    beforeAnswer = async () => { between = await y.committedOrWaiting() }
    const x = await gql(app, PLACE, { token, variables: { id, room: roomA } })
    t.equal(between, 'committed', 'the second writer committed between the first\'s decision and its answer (the first held no lock: it wrote nothing)')
    t.equal(x.body.errors?.[0]?.extensions?.code, 'CONFLICT', 'the first is refused')
    t.match(x.body.errors?.[0]?.message, /changed by another writer meanwhile: nothing was written, retry/, 'nothing written, the message says')
    t.same((await y.answer!).body, { data: { placeStudent: { classroomName: roomB, version: 2 } } }, 'the second is answered its own move')
  })
}
