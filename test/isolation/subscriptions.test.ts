// Pushed changes never cross schools, with each wall alone: two mirrored schools (same names, same
// sourcedIds) write creations, updates and deletions while an administrator, a teacher and a
// client of each follow `subscription { changes }`; every id pushed to a subscriber must be its own
// school's (a teacher's: in her reach). The control with neither wall shows the probe can fail.
import type { AddressInfo } from 'node:net'
import { createClient } from 'graphql-ws'
import t from 'tap'
import WebSocket from 'ws'
import { createStudent } from '../../src/records/students.js'
import { createTestDatabase, gql, type TestDatabaseOptions } from '../helper.js'
import { idsIn, mirror, type MirrorSchool } from './mirror.js'

const CHANGES = `subscription ($since: String) {
  changes(since: $since) { id sourcedId student { id classroom { id teachers { id } } } teacher { id classrooms { id } } classroom { id students { id } } }
}`

interface Follower {
  readonly school: MirrorSchool
  /** Ids this follower may see, besides the records created during the test (`created`). */
  readonly allowed: Set<string>
  readonly pushed: unknown[]
  readonly wakeups: Array<() => void>
  /** Why its subscription ended, if it did (an error, or complete): it will get nothing more. */
  ended: string | undefined
}

const CONFIGURATIONS: Array<{ name: string, options: TestDatabaseOptions, leaks: boolean }> = [
  { name: 'both walls', options: {}, leaks: false },
  { name: 'wall 1 alone (role bypasses row-level security)', options: { role: 'owner' }, leaks: false },
  { name: 'wall 2 alone (tenant extension filters off)', options: { tenantFilter: false }, leaks: false },
  { name: 'no wall (control: the probe detects a leak)', options: { role: 'owner', tenantFilter: false }, leaks: true }
]

for (const config of CONFIGURATIONS) {
  t.test(config.name, async (t) => {
    const db = await createTestDatabase(config.options)
    const m = await mirror(t, db)
    await m.app.listen({ port: 0, host: '127.0.0.1' })
    const url = `ws://127.0.0.1:${(m.app.server.address() as AddressInfo).port}/subscriptions`
    const created = new Map<string, Set<string>>([[m.a.schoolId, new Set()], [m.b.schoolId, new Set()]])

    const followers: Follower[] = []
    const follow = async (school: MirrorSchool, token: string, allowed: Set<string>): Promise<Follower> => {
      const since = (await gql(m.app, '{ latestChangeCursor }', { token })).body.data!.latestChangeCursor as string
      const client = createClient({ url, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { token } })
      t.teardown(async () => { await client.dispose() })
      const follower: Follower = { school, allowed, pushed: [], wakeups: [], ended: undefined }
      const wake = (): void => { for (const resolve of follower.wakeups.splice(0)) resolve() }
      client.subscribe({ query: CHANGES, variables: { since } }, {
        next: (result) => {
          follower.pushed.push(result.data?.changes ?? result.errors)
          wake()
        },
        error: (err) => {
          follower.ended = `error: ${JSON.stringify(err)}`
          wake()
        },
        complete: () => {
          follower.ended ??= `complete: ${JSON.stringify(follower.pushed.at(-1))}`
          wake()
        }
      })
      followers.push(follower)
      return follower
    }
    for (const school of [m.a, m.b]) {
      await follow(school, school.token, school.ids)
      await follow(school, school.teacherToken, school.teacherReach)
      await follow(school, school.coreClientToken, school.ids)
    }

    // The same writes in both schools, interleaved: colliding sourcedIds, in and out of the teacher's rooms.
    for (let i = 0; i < 3; i++) {
      for (const school of [m.b, m.a]) {
        const scoped = db.forSchool(school.schoolId)
        const kept = await createStudent(db, { schoolId: school.schoolId, fullName: `Pushed ${i}`, sourcedId: `collide-${i}`, classroom: 'Room 1' })
        created.get(school.schoolId)!.add(kept)
        await scoped.student.updateMany({ where: { id: kept }, data: { preferredName: `Changed ${i}` } })
        const gone = await createStudent(db, { schoolId: school.schoolId, fullName: `Gone ${i}`, sourcedId: `gone-${i}`, classroom: 'Room 3' })
        created.get(school.schoolId)!.add(gone)
        await scoped.student.deleteMany({ where: { id: gone } })
      }
    }
    // A last write in each school, which every follower of it must get (positive control).
    const sentinels = new Map<string, string>()
    for (const school of [m.b, m.a]) {
      const id = await createStudent(db, { schoolId: school.schoolId, fullName: 'Sentinel', sourcedId: 'sentinel', classroom: 'Room 1' })
      created.get(school.schoolId)!.add(id)
      sentinels.set(school.schoolId, id)
    }
    // Each follower until it has its school's sentinel, or its subscription ended. Without walls a
    // follower reads every school's feed, whose numbers then look pruned to it (BAD_USER_INPUT):
    // an end there is the leak's doing; with a wall, none may end.
    for (const follower of followers) {
      const sentinel = sentinels.get(follower.school.schoolId)!
      while (!idsIn(follower.pushed).includes(sentinel) && follower.ended === undefined) {
        await new Promise<void>((resolve) => { follower.wakeups.push(resolve) })
      }
    }
    const ended = followers.filter((follower) => !idsIn(follower.pushed).includes(sentinels.get(follower.school.schoolId)!)).map((follower) => follower.ended)
    if (!config.leaks) t.same(ended, [], 'every follower got its school\'s last change')

    const leaked = followers.flatMap((follower) => {
      const own = created.get(follower.school.schoolId)!
      return idsIn(follower.pushed).filter((id) => !follower.allowed.has(id) && !own.has(id))
    })
    if (config.leaks) t.ok(leaked.length > 0, `without either wall, the other school's records are pushed (${leaked.length} ids)`)
    else t.same(leaked, [], 'no follower is pushed a record of the other school, nor a teacher one outside her reach')
    t.ok(followers.every((follower) => follower.pushed.length > 0), 'every follower is pushed changes')
  })
}
