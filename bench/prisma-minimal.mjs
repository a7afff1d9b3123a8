// The Prisma floor of `npm run bench`: the least a server built on Prisma must do to answer the
// benchmark's read requests. The ceiling's server (bench/ceiling.mjs: Fastify, @fastify/jwt, the
// same answers) with the service's own generated Prisma client, the same driver adapter (PrismaPg
// over a pg.Pool of the service's size, named prepared statements) and the same Prisma calls the
// resolvers make (`relationLoadStrategy: 'join'`, only the selected columns), one Prisma operation
// per request. No GraphQL, no walls, no audit, no rate limits: what is left of the service's cost
// above this server is the service's own; what separates this server from the ceiling is Prisma's.
//
// Started by bench/run.mjs with CEILING_DATABASE_URL, JWT_SECRET, PORT, HOST, POOL_SIZE, POOL_IDLE_MS
// and PRISMA_FLOOR, after `npm run build` (it imports the client from dist/). It connects as the
// superuser.
import { PrismaPg } from '@prisma/adapter-pg'
import { PrismaClient } from '../dist/generated/prisma/client.js'
import { benchPool, serveReads } from './read-server.mjs'
import { DEEP_PAGE_LIMIT, DEEP_PAGE_QUERY, deepPageAnswer, FLAT_QUERY, NESTED_STUDENTS_QUERY, NESTED_TEACHERS_QUERY } from './workloads.mjs'

// As the service names its statements (src/db/client.ts): each SQL text prepared once per connection.
const names = new Map()
const statementNameGenerator = ({ sql }) => {
  let name = names.get(sql)
  if (name === undefined) names.set(sql, name = `bench_${names.size + 1}`)
  return name
}
const pool = benchPool()
const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { statementNameGenerator }) })

// The first `take` rows of a school's list by id, as the resolvers read a list.
const firstRows = (schoolId, take) => ({ relationLoadStrategy: 'join', where: { schoolId }, orderBy: { id: 'asc' }, take })
const LIST_ROW = { id: true, fullName: true, classroom: { select: { name: true } } }
const listRow = (s) => ({ id: s.id, fullName: s.fullName, classroomName: s.classroom?.name ?? null })

// PRISMA_FLOOR=raw: the ceiling's SQL through Prisma's raw queries ($queryRawUnsafe, the path of
// its typed SQL, $queryRawTyped): Prisma's runtime without its query compiler and result mapping.
const RAW = process.env.PRISMA_FLOOR === 'raw'
const FLAT_SQL = `SELECT s.id, s.full_name, c.name AS classroom_name
  FROM students s LEFT JOIN classrooms c ON c.school_id = s.school_id AND c.id = s.classroom_id
  WHERE s.school_id = $1::uuid ORDER BY s.id LIMIT 20`
const DEEP_PAGE_SQL = `SELECT s.id, s.full_name, c.name AS classroom_name
  FROM students s LEFT JOIN classrooms c ON c.school_id = s.school_id AND c.id = s.classroom_id
  WHERE s.school_id = $1::uuid AND s.id > $2::uuid ORDER BY s.id LIMIT ${DEEP_PAGE_LIMIT + 1}`
const rawRow = (r) => ({ id: r.id, fullName: r.full_name, classroomName: r.classroom_name })

const RAW_HANDLERS = new Map([
  [FLAT_QUERY, async (schoolId) => ({ data: { students: (await prisma.$queryRawUnsafe(FLAT_SQL, schoolId)).map(rawRow) } })],
  [DEEP_PAGE_QUERY, (schoolId, variables) => deepPageAnswer(variables, async (after) =>
    (await prisma.$queryRawUnsafe(DEEP_PAGE_SQL, schoolId, after)).map(rawRow))]
])

const MODEL_HANDLERS = new Map([
  [FLAT_QUERY, async (schoolId) => {
    const rows = await prisma.student.findMany({ ...firstRows(schoolId, 20), select: LIST_ROW })
    return { data: { students: rows.map(listRow) } }
  }],
  [NESTED_STUDENTS_QUERY, async (schoolId) => {
    const rows = await prisma.student.findMany({
      ...firstRows(schoolId, 100),
      select: {
        id: true,
        fullName: true,
        classroom: {
          select: {
            id: true,
            name: true,
            teachers: {
              orderBy: [{ teacher: { fullName: 'asc' } }, { teacherId: 'asc' }],
              select: { teacher: { select: { id: true, fullName: true } } }
            }
          }
        }
      }
    })
    return {
      data: {
        students: rows.map((s) => ({
          id: s.id,
          fullName: s.fullName,
          classroom: s.classroom === null ? null : { id: s.classroom.id, name: s.classroom.name, teachers: s.classroom.teachers.map((a) => a.teacher) }
        }))
      }
    }
  }],
  [NESTED_TEACHERS_QUERY, async (schoolId) => {
    const rows = await prisma.teacher.findMany({
      ...firstRows(schoolId, 100),
      select: {
        id: true,
        fullName: true,
        classrooms: { orderBy: { classroom: { name: 'asc' } }, select: { classroom: { select: { id: true, name: true } } } }
      }
    })
    return { data: { teachers: rows.map((t) => ({ id: t.id, fullName: t.fullName, classrooms: t.classrooms.map((a) => a.classroom) })) } }
  }],
  [DEEP_PAGE_QUERY, (schoolId, variables) => deepPageAnswer(variables, async (after) =>
    (await prisma.student.findMany({
      relationLoadStrategy: 'join', where: { schoolId, id: { gt: after } }, orderBy: { id: 'asc' }, take: DEEP_PAGE_LIMIT + 1, select: LIST_ROW
    })).map(listRow))]
])

await serveReads(RAW ? RAW_HANDLERS : MODEL_HANDLERS, {
  ready: async () => { await prisma.$queryRaw`SELECT 1` },
  close: async () => {
    await prisma.$disconnect()
    await pool.end()
  }
})
