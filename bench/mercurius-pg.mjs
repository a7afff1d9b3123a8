// The GraphQL peer of `npm run bench`: the service's stack without Prisma and without its walls.
// The ceiling's server (bench/read-server.mjs: Fastify, @fastify/jwt, the same token check) with
// Mercurius serving the service's own SDL (schema/*.graphql) as the service configures it
// (graphql-jit after a query's second request, loaders for relations), and resolvers for the
// fields the read workloads select only, each a hand-written `pg` query on a pg.Pool of the
// service's size. No query limits, scope check, school client, row-level security, audit, rate
// limits, request log or metrics: what separates it from the ceiling is GraphQL's; what separates
// the service from it is everything the service adds.
//
// Started by bench/run.mjs with CEILING_DATABASE_URL, JWT_SECRET, PORT, HOST, POOL_SIZE and
// POOL_IDLE_MS, after `npm run build` (it reads the SDL through dist/). It connects as the
// superuser: the statements filter by school themselves.
import mercurius from 'mercurius'
import { loadSchema } from '../dist/graphql/schema.js'
import { benchPool, readServer } from './read-server.mjs'
import { studentCursor, studentCursorId } from './workloads.mjs'

const pool = benchPool()
const { app, schoolOf, listen } = await readServer({
  ready: async () => { await pool.query('SELECT 1') },
  close: async () => { await pool.end() }
})

/** The school of the request's token; as the service's resolvers, refused without one. */
function schoolOfContext (ctx) {
  if (ctx.schoolId === null) throw new mercurius.ErrorWithProps('Authentication required', { code: 'UNAUTHENTICATED' })
  return ctx.schoolId
}

// As the service's limits: 100 unless given, at most 1000.
const pageSize = (limit) => Math.min(limit ?? 100, 1000)

// Students with their classroom's id and name (flat's classroomName, nested's classroom).
const STUDENTS_SQL = `SELECT s.id, s.full_name AS "fullName", s.classroom_id AS "classroomId", c.name AS "classroomName"
  FROM students s LEFT JOIN classrooms c ON c.school_id = s.school_id AND c.id = s.classroom_id
  WHERE s.school_id = $1 ORDER BY s.id LIMIT $2`
const STUDENTS_AFTER_SQL = `SELECT s.id, s.full_name AS "fullName", s.classroom_id AS "classroomId", c.name AS "classroomName"
  FROM students s LEFT JOIN classrooms c ON c.school_id = s.school_id AND c.id = s.classroom_id
  WHERE s.school_id = $1 AND s.id > $2 ORDER BY s.id LIMIT $3`
const TEACHERS_SQL = 'SELECT id, full_name AS "fullName" FROM teachers WHERE school_id = $1 ORDER BY id LIMIT $2'
// A loader batch: the teachers of several classrooms, by full name then id.
const CLASSROOM_TEACHERS_SQL = `SELECT tc.classroom_id AS "classroomId", t.id, t.full_name AS "fullName"
  FROM teacher_classrooms tc JOIN teachers t ON t.school_id = tc.school_id AND t.id = tc.teacher_id
  WHERE tc.school_id = $1 AND tc.classroom_id = ANY($2::uuid[]) ORDER BY t.full_name, t.id`
// A loader batch: the classrooms of several teachers, by name then id.
const TEACHER_CLASSROOMS_SQL = `SELECT tc.teacher_id AS "teacherId", c.id, c.name
  FROM teacher_classrooms tc JOIN classrooms c ON c.school_id = tc.school_id AND c.id = tc.classroom_id
  WHERE tc.school_id = $1 AND tc.teacher_id = ANY($2::uuid[]) ORDER BY c.name, c.id`

/** Rows grouped by `key`, in the order of `ids`. */
function groupedBy (rows, key, ids) {
  const groups = new Map()
  for (const row of rows) {
    const list = groups.get(row[key])
    if (list === undefined) groups.set(row[key], [row])
    else list.push(row)
  }
  return ids.map((id) => groups.get(id) ?? [])
}

const resolvers = {
  Query: {
    async students (_root, { limit }, ctx) {
      return (await pool.query(STUDENTS_SQL, [schoolOfContext(ctx), pageSize(limit)])).rows
    },
    async studentsPage (_root, { limit, after }, ctx) {
      const schoolId = schoolOfContext(ctx)
      const take = pageSize(limit)
      const afterId = after == null ? null : studentCursorId(after)
      if (after != null && afterId === null) throw new mercurius.ErrorWithProps('after is not a cursor of this API', { code: 'BAD_USER_INPUT' })
      const rows = afterId === null
        ? (await pool.query(STUDENTS_SQL, [schoolId, take + 1])).rows
        : (await pool.query(STUDENTS_AFTER_SQL, [schoolId, afterId, take + 1])).rows
      const nodes = rows.slice(0, take)
      return { nodes, pageInfo: { endCursor: nodes.length === 0 ? null : studentCursor(nodes.at(-1).id), hasNextPage: rows.length > take } }
    },
    async teachers (_root, { limit }, ctx) {
      return (await pool.query(TEACHERS_SQL, [schoolOfContext(ctx), pageSize(limit)])).rows
    }
  },
  Student: {
    classroom: (student) => student.classroomId === null ? null : { id: student.classroomId, name: student.classroomName }
  }
}

// Relations of a page in one query per batch, as the service's loaders read them.
const loaders = {
  Classroom: {
    async teachers (queries, ctx) {
      const ids = queries.map((q) => q.obj.id)
      const { rows } = await pool.query(CLASSROOM_TEACHERS_SQL, [schoolOfContext(ctx), ids])
      return groupedBy(rows, 'classroomId', ids).map((list) => list.map(({ id, fullName }) => ({ id, fullName })))
    }
  },
  Teacher: {
    async classrooms (queries, ctx) {
      const ids = queries.map((q) => q.obj.id)
      const { rows } = await pool.query(TEACHER_CLASSROOMS_SQL, [schoolOfContext(ctx), ids])
      return groupedBy(rows, 'teacherId', ids).map((list) => list.map(({ id, name }) => ({ id, name })))
    }
  }
}

await app.register(mercurius, {
  schema: loadSchema(),
  resolvers,
  loaders,
  path: '/',
  // The token is verified once per request, as the ceiling does.
  context: (request) => ({ schoolId: schoolOf(request) }),
  // As the service (src/plugins/graphql.ts): a query compiled once it has been seen twice.
  jit: 1,
  allowBatchedQueries: false,
  graphiql: false
})
await listen()
