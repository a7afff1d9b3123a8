// The school client's steps (src/db/school-client.ts) are one ordered list: the table of
// docs/changing/tenant-isolation.md lists them in that order, the steps of interactive transactions come first, and each client gets the
// steps its options and caller call for, in the list's order.
import t from 'tap'
import type { Tokens } from 'marked'
import { deniedColumns } from '../src/auth/scopes.js'
import type { ReadRouter } from '../src/db/replicas.js'
import { SCHOOL_CLIENT_STEPS, SCHOOL_TRANSACTION_STEPS, schoolClientSteps } from '../src/db/school-client.js'
import { teacherRooms } from '../src/db/teacher-rooms.js'
import { markdown, walk } from './fixtures/markdown.js'
import { testDatabase } from './helper.js'

t.test('the steps in order, outermost first', async (t) => {
  t.same(SCHOOL_CLIENT_STEPS, [
    'relationsByQuery',
    'operationsObserved',
    'schoolFilter',
    'callerReach',
    'roomsChanged',
    'changeAnnounced',
    'readRouting',
    'enterSchoolSession'
  ])
  t.same(SCHOOL_TRANSACTION_STEPS, SCHOOL_CLIENT_STEPS.slice(0, SCHOOL_CLIENT_STEPS.indexOf('roomsChanged') + 1),
    'an interactive transaction\'s client: the steps up to roomsChanged (it runs on the primary, begun in the school session)')
})

t.test('the documentation\'s table of the school client lists the steps in their order', async (t) => {
  const tokens = walk(markdown('docs/changing/tenant-isolation.md'))
  const table = tokens.find((token): token is Tokens.Table => token.type === 'table' && token.header[0]?.text === 'step')
  t.ok(table, 'the table is there')
  const names = table!.rows.map((row) => /^`(\w+)`/.exec(row[0]!.text)?.[1])
  t.same(names, SCHOOL_CLIENT_STEPS)
})

const rooms = teacherRooms(async () => [])
const reads: ReadRouter = { replicaFor: () => undefined, failed () {}, changed () {} }

t.test('each client gets the steps it needs, in the list\'s order; those of transactions first', async (t) => {
  const { prisma } = await testDatabase()
  const teacher = { teacherId: '00000000-0000-4000-8000-000000000001', deniedColumns: deniedColumns(['roster-core.readonly', 'roster.readonly']) }
  const cases: Array<[string, string[]]> = [
    ['an administrator, no replicas, plain PostgreSQL', schoolClientSteps(prisma)],
    ['a client with the core scope only', schoolClientSteps(prisma, {}, { deniedColumns: deniedColumns(['roster-core.readonly']) })],
    ['a teacher, the node keeping classrooms, with replicas, on Citus', schoolClientSteps(prisma, { rooms, reads, citus: true }, teacher)],
    ['wall 1 taken away (isolation tests)', schoolClientSteps(prisma, { filter: false, rooms }, teacher)]
  ]
  t.same(Object.fromEntries(cases), {
    'an administrator, no replicas, plain PostgreSQL': ['operationsObserved', 'schoolFilter', 'enterSchoolSession'],
    'a client with the core scope only': ['operationsObserved', 'schoolFilter', 'callerReach', 'enterSchoolSession'],
    'a teacher, the node keeping classrooms, with replicas, on Citus': [...SCHOOL_CLIENT_STEPS],
    // Taken away, the school filter only binds the school of the typed statements, their school
    // conditions taken out (tenant.ts, schoolFilterTakenAway).
    'wall 1 taken away (isolation tests)': ['operationsObserved', 'schoolFilter', 'roomsChanged', 'enterSchoolSession']
  })
  t.same(schoolClientSteps(prisma, {}, { deniedColumns: deniedColumns(['roster-core.readonly', 'roster.readonly', 'roster-demographics.readonly']) }),
    ['operationsObserved', 'schoolFilter', 'enterSchoolSession'], 'every scope: nothing denied, no reach step')
})
