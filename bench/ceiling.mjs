// The ceiling of `npm run bench`: the least a server must do to answer the benchmark's read
// requests correctly. Fastify parses the same request body, @fastify/jwt verifies the same HS256
// access token with the same secret, and a pg.Pool of the service's size runs one plain SQL
// statement per request; the answer has the same JSON as the GraphQL one. The GraphQL text is
// only used to pick the statement (the deep page's cursor is decoded and encoded as the service
// does): no parsing, validation, resolvers or ORM.
//
// Started by bench/run.mjs with CEILING_DATABASE_URL, JWT_SECRET, PORT, HOST, POOL_SIZE and
// POOL_IDLE_MS. It connects as the superuser: the statements filter by school themselves.
import { benchPool, serveReads } from './read-server.mjs'
import { DEEP_PAGE_LIMIT, DEEP_PAGE_QUERY, deepPageAnswer, FLAT_QUERY, NESTED_STUDENTS_QUERY, NESTED_TEACHERS_QUERY } from './workloads.mjs'

const FLAT_SQL = `SELECT s.id, s.full_name, c.name AS classroom_name
  FROM students s LEFT JOIN classrooms c ON c.school_id = s.school_id AND c.id = s.classroom_id
  WHERE s.school_id = $1 ORDER BY s.id LIMIT 20`

// The page, then each of its classrooms once with its teachers as JSON.
const NESTED_STUDENTS_SQL = `WITH page AS (
    SELECT id, full_name, classroom_id FROM students WHERE school_id = $1 ORDER BY id LIMIT 100
  ), rooms AS (
    SELECT c.id, c.name,
      COALESCE((SELECT json_agg(json_build_object('id', t.id, 'fullName', t.full_name) ORDER BY t.full_name, t.id)
                FROM teacher_classrooms tc JOIN teachers t ON t.school_id = tc.school_id AND t.id = tc.teacher_id
                WHERE tc.school_id = $1 AND tc.classroom_id = c.id), '[]'::json) AS teachers
    FROM classrooms c WHERE c.school_id = $1 AND c.id IN (SELECT classroom_id FROM page)
  )
  SELECT p.id, p.full_name, r.id AS classroom_id, r.name AS classroom_name, r.teachers
  FROM page p LEFT JOIN rooms r ON r.id = p.classroom_id ORDER BY p.id`

// The keyset page after the cursor's student, one row more to tell whether another page follows.
const DEEP_PAGE_SQL = `SELECT s.id, s.full_name, c.name AS classroom_name
  FROM students s LEFT JOIN classrooms c ON c.school_id = s.school_id AND c.id = s.classroom_id
  WHERE s.school_id = $1 AND s.id > $2 ORDER BY s.id LIMIT ${DEEP_PAGE_LIMIT + 1}`

const NESTED_TEACHERS_SQL = `SELECT t.id, t.full_name,
    COALESCE((SELECT json_agg(json_build_object('id', c.id, 'name', c.name) ORDER BY c.name)
              FROM teacher_classrooms tc JOIN classrooms c ON c.school_id = tc.school_id AND c.id = tc.classroom_id
              WHERE tc.school_id = t.school_id AND tc.teacher_id = t.id), '[]'::json) AS classrooms
  FROM teachers t WHERE t.school_id = $1 ORDER BY t.id LIMIT 100`

const pool = benchPool()

// GraphQL text -> the statement and the shape of its answer.
const HANDLERS = new Map([
  [FLAT_QUERY, async (schoolId) => {
    const { rows } = await pool.query(FLAT_SQL, [schoolId])
    return { data: { students: rows.map((r) => ({ id: r.id, fullName: r.full_name, classroomName: r.classroom_name })) } }
  }],
  [NESTED_STUDENTS_QUERY, async (schoolId) => {
    const { rows } = await pool.query(NESTED_STUDENTS_SQL, [schoolId])
    return {
      data: {
        students: rows.map((r) => ({
          id: r.id,
          fullName: r.full_name,
          classroom: r.classroom_id === null ? null : { id: r.classroom_id, name: r.classroom_name, teachers: r.teachers }
        }))
      }
    }
  }],
  [NESTED_TEACHERS_QUERY, async (schoolId) => {
    const { rows } = await pool.query(NESTED_TEACHERS_SQL, [schoolId])
    return { data: { teachers: rows.map((r) => ({ id: r.id, fullName: r.full_name, classrooms: r.classrooms })) } }
  }],
  [DEEP_PAGE_QUERY, (schoolId, variables) => deepPageAnswer(variables, async (after) =>
    (await pool.query(DEEP_PAGE_SQL, [schoolId, after])).rows.map((r) => ({ id: r.id, fullName: r.full_name, classroomName: r.classroom_name })))]
])

await serveReads(HANDLERS, {
  ready: async () => { await pool.query('SELECT 1') },
  close: async () => { await pool.end() }
})
