// The benchmark database: created fresh, migrated with the project's own CLI, loaded with
// set-based SQL as the superuser (and the OneRoster records beyond the users with the project's
// import, bench/oneroster-data.mjs), and opened to the non-superuser role the service runs as.
import { spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import pg from 'pg'
import { DEMOGRAPHIC_COLUMNS, columnOf } from '../dist/db/typed-reads.js'
import {
  CLIENT_SCOPES, DEEP_PAGE_LIMIT, REST_MAX_LIMIT, REST_PAGE_LIMIT, deepPagePosition, expectedBirthDates, expectedClassrooms, expectedClientStudents, expectedDeepPage,
  expectedFlat, expectedRestStudents, expectedStudentsNested, expectedTeachersNested, studentCursor
} from './workloads.mjs'

export const SERVICE_ROLE = 'sds_bench_service'

/** The URL of `database` on the server of `adminUrl`, optionally as another user. */
export function databaseUrl (adminUrl, database, user, password) {
  const url = new URL(adminUrl)
  url.pathname = '/' + database
  if (user !== undefined) {
    url.username = user
    url.password = password ?? ''
  }
  return url.toString()
}

const ident = (name) => '"' + name.replace(/"/g, '""') + '"'
const literal = (text) => "'" + text.replace(/'/g, "''") + "'"

export async function withClient (url, work) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

/** `adminUrl` on another node (`host:port`). */
function onNode (adminUrl, node) {
  const url = new URL(adminUrl)
  const [host, port] = node.split(':')
  url.hostname = host
  url.port = port ?? '5432'
  return url.toString()
}

/**
 * A fresh database. With Citus workers (BENCH_CITUS_WORKERS, `host:port` each, the server of
 * `adminUrl` their coordinator), as docs/running/citus.md sets one up: the database on
 * every node with the citus extension, and the workers added to the coordinator.
 */
export async function recreateDatabase (adminUrl, name, workers = []) {
  for (const node of [undefined, ...workers]) {
    const nodeUrl = node === undefined ? adminUrl : onNode(adminUrl, node)
    await withClient(nodeUrl, async (client) => {
      await client.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`)
      await client.query(`CREATE DATABASE ${ident(name)}`)
    })
    if (workers.length > 0) await withClient(databaseUrl(nodeUrl, name), (client) => client.query('CREATE EXTENSION citus'))
  }
  if (workers.length === 0) return
  const [coordinator, ...nodes] = [adminUrl, ...workers.map((node) => onNode(adminUrl, node))].map((nodeUrl) => {
    const { hostname, port } = new URL(nodeUrl)
    return [hostname, Number(port || 5432)]
  })
  await withClient(databaseUrl(adminUrl, name), async (client) => {
    await client.query('SELECT citus_set_coordinator_host($1, $2)', coordinator)
    for (const node of nodes) await client.query('SELECT citus_add_node($1, $2)', node)
  })
}

/** `school-data migrate` of the project, as any operator runs it. */
export function migrate (projectDir, url) {
  return cli(projectDir, url, ['migrate'])
}

/** `school-data citus distribute`, as an operator runs it after migrating (here: after loading). */
export function distribute (projectDir, url) {
  return cli(projectDir, url, ['citus', 'distribute'])
}

/** `school-data import oneroster DIR --school ID`, as an operator runs it (bench/oneroster-data.mjs). */
export function importBundle (projectDir, url, dir, schoolId) {
  return cli(projectDir, url, ['import', 'oneroster', dir, '--school', schoolId])
}

function cli (projectDir, url, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/school-data.js', ...args], {
      cwd: projectDir,
      env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let output = ''
    child.stdout.on('data', (d) => { output += d })
    child.stderr.on('data', (d) => { output += d })
    child.on('error', reject)
    child.on('exit', (code) => {
      if (code === 0) resolve(output)
      else reject(new Error(`school-data ${args.join(' ')} exited with ${code}:\n${output}`))
    })
  })
}

/** The classrooms of each school's teacher login: two, spread over the school (Room 01 and the middle one). */
export const TEACHER_LOGIN_ROOMS = 2

/**
 * Loads `sizes.schools` schools, each with its classrooms, students, teachers, teacher-classroom
 * assignments and one user (`bench-sNN`, all with the same password hash). Names encode the
 * school (`S07 Student 0123`), so an answer can be checked for rows of another school. Each school
 * also has a teacher login (`bench-sNN-teacher`, role TEACHER, same password) of a teacher record
 * of its own (the school's last teacher) in TEACHER_LOGIN_ROOMS classrooms, and a client holding
 * CLIENT_SCOPES with a random secret (returned, stored as its SHA-256 as the service stores it).
 */
export async function loadDataset (url, sizes, passwordHash) {
  const { schools, students, teachers, classrooms, assignments } = sizes
  const schoolWidth = Math.max(2, String(schools).length)
  const studentWidth = Math.max(4, String(students).length)
  const teacherWidth = Math.max(3, String(teachers + 1).length)
  const roomWidth = Math.max(2, String(classrooms).length)
  const pad = (expr, width) => `lpad((${expr})::text, ${width}, '0')`
  return await withClient(url, async (client) => {
    await client.query('BEGIN')
    await client.query(`CREATE TEMP TABLE bench_schools ON COMMIT DROP AS
      SELECT n, gen_random_uuid() AS id, 'S' || ${pad('n', schoolWidth)} AS tag
      FROM generate_series(1, $1::int) n`, [schools])
    await client.query(`INSERT INTO schools (id, name, updated_at)
      SELECT id, 'Bench School ' || tag, now() FROM bench_schools`)
    await client.query(`INSERT INTO classrooms (school_id, id, name, updated_at)
      SELECT b.id, gen_random_uuid(), b.tag || ' Room ' || ${pad('r', roomWidth)}, now()
      FROM bench_schools b, generate_series(1, $1::int) r`, [classrooms])
    // Student i sits in room (i mod rooms) + 1; every 50th has no classroom (classroomName null).
    // Given and family name as OneRoster answers them (the REST workloads): `S07 Student`, `0123`.
    // Students and teachers have a OneRoster sourcedId (`s07-student-0123`), by which the import
    // gives them demographics (bench/oneroster-data.mjs).
    await client.query(`INSERT INTO students (school_id, id, sourced_id, full_name, given_name, family_name, classroom_id, updated_at)
      SELECT b.id, gen_random_uuid(), lower(b.tag) || '-student-' || ${pad('i', studentWidth)}, b.tag || ' Student ' || ${pad('i', studentWidth)}, b.tag || ' Student', ${pad('i', studentWidth)},
             CASE WHEN i % 50 = 0 THEN NULL ELSE c.id END, now()
      FROM bench_schools b
      CROSS JOIN generate_series(1, $1::int) i
      JOIN classrooms c ON c.school_id = b.id AND c.name = b.tag || ' Room ' || ${pad(`i % ${classrooms} + 1`, roomWidth)}`,
    [students])
    await client.query(`INSERT INTO teachers (school_id, id, sourced_id, full_name, updated_at)
      SELECT b.id, gen_random_uuid(), lower(b.tag) || '-teacher-' || ${pad('t', teacherWidth)}, b.tag || ' Teacher ' || ${pad('t', teacherWidth)}, now()
      FROM bench_schools b, generate_series(1, $1::int) t`, [teachers])
    // Teacher t teaches `assignments` rooms spread over the school: (t + k * 7) mod rooms + 1.
    await client.query(`INSERT INTO teacher_classrooms (school_id, teacher_id, classroom_id)
      SELECT DISTINCT t.school_id, t.id, c.id
      FROM teachers t
      JOIN bench_schools b ON b.id = t.school_id
      CROSS JOIN generate_series(0, $1::int - 1) k
      JOIN classrooms c ON c.school_id = t.school_id
        AND c.name = b.tag || ' Room ' || ${pad(`(substring(t.full_name from '[0-9]+$')::int + k * 7) % ${classrooms} + 1`, roomWidth)}`,
    [assignments])
    const users = await client.query(`INSERT INTO users (id, username, password_hash, school_id, updated_at)
      SELECT gen_random_uuid(), 'bench-' || lower(b.tag), $1, b.id, now() FROM bench_schools b
      RETURNING id, username, school_id`, [passwordHash])
    // The teacher login: a teacher record of its own, after the others (and their assignments), in
    // Room 01 and the middle room; a TEACHER user of it.
    const loginTeacher = `b.tag || ' Teacher ' || ${pad(teachers + 1, teacherWidth)}`
    await client.query(`INSERT INTO teachers (school_id, id, full_name, updated_at)
      SELECT b.id, gen_random_uuid(), ${loginTeacher}, now() FROM bench_schools b`)
    await client.query(`INSERT INTO teacher_classrooms (school_id, teacher_id, classroom_id)
      SELECT DISTINCT t.school_id, t.id, c.id
      FROM bench_schools b
      JOIN teachers t ON t.school_id = b.id AND t.full_name = ${loginTeacher}
      CROSS JOIN generate_series(0, $1::int - 1) k
      JOIN classrooms c ON c.school_id = b.id AND c.name = b.tag || ' Room ' || ${pad(`k * greatest(1, ${classrooms} / $1::int) % ${classrooms} + 1`, roomWidth)}`,
    [TEACHER_LOGIN_ROOMS])
    const teacherUsers = await client.query(`INSERT INTO users (id, username, password_hash, school_id, role, teacher_id, updated_at)
      SELECT gen_random_uuid(), 'bench-' || lower(b.tag) || '-teacher', $1, b.id, 'TEACHER', t.id, now()
      FROM bench_schools b JOIN teachers t ON t.school_id = b.id AND t.full_name = ${loginTeacher}
      RETURNING id, username, school_id, teacher_id`, [passwordHash])
    const teacherRooms = await client.query(`SELECT tc.school_id, array_agg(c.name ORDER BY c.name) AS rooms
      FROM users u JOIN teacher_classrooms tc ON tc.school_id = u.school_id AND tc.teacher_id = u.teacher_id
      JOIN classrooms c ON c.school_id = tc.school_id AND c.id = tc.classroom_id
      WHERE u.role = 'TEACHER' GROUP BY tc.school_id`)
    // A client per school, with a secret of its own (43 base64url characters, as the service makes them).
    const clients = await client.query(`INSERT INTO clients (id, school_id, name, scopes, updated_at)
      SELECT gen_random_uuid(), b.id, 'Bench client ' || b.tag, $1::text[], now() FROM bench_schools b
      RETURNING id, school_id`, [CLIENT_SCOPES])
    const secrets = clients.rows.map(() => randomBytes(32).toString('base64url'))
    await client.query(`INSERT INTO client_secrets (id, client_id, secret_hash)
      SELECT gen_random_uuid(), c, h FROM unnest($1::uuid[], $2::bytea[]) AS x(c, h)`,
    [clients.rows.map((c) => c.id), secrets.map((secret) => createHash('sha256').update(secret).digest())])
    const rows = (await client.query('SELECT n, id, tag FROM bench_schools ORDER BY n')).rows
    await client.query('COMMIT')
    await client.query('VACUUM ANALYZE')
    const counts = (await client.query(`SELECT
      (SELECT count(*) FROM schools)::int AS schools, (SELECT count(*) FROM students)::int AS students,
      (SELECT count(*) FROM teachers)::int AS teachers, (SELECT count(*) FROM classrooms)::int AS classrooms,
      (SELECT count(*) FROM teacher_classrooms)::int AS teacher_classrooms, (SELECT count(*) FROM users)::int AS users,
      (SELECT count(*) FROM clients)::int AS clients`)).rows[0]
    const userBySchool = new Map(users.rows.map((u) => [u.school_id, u]))
    const teacherBySchool = new Map(teacherUsers.rows.map((u) => [u.school_id, u]))
    const roomsBySchool = new Map(teacherRooms.rows.map((r) => [r.school_id, r.rooms]))
    const clientBySchool = new Map(clients.rows.map((c, i) => [c.school_id, { clientId: c.id, secret: secrets[i] }]))
    return {
      counts,
      schools: rows.map((r) => ({
        n: r.n,
        id: r.id,
        tag: r.tag,
        username: userBySchool.get(r.id).username,
        userId: userBySchool.get(r.id).id,
        teacher: {
          username: teacherBySchool.get(r.id).username,
          userId: teacherBySchool.get(r.id).id,
          teacherId: teacherBySchool.get(r.id).teacher_id,
          rooms: roomsBySchool.get(r.id)
        },
        client: clientBySchool.get(r.id)
      }))
    }
  })
}

/** Creates (or resets) the non-superuser role the service connects as, and grants it the tables. */
export async function prepareServiceRole (adminUrl, benchUrl, password, workers = []) {
  // On Citus the coordinator connects to the workers as the same role: it must exist there too.
  // The coordinator first: Citus 13 propagates a role made there to its workers, and refuses
  // CREATE ROLE on a worker ("operation is not allowed on this node").
  for (const nodeUrl of [adminUrl, ...workers.map((node) => onNode(adminUrl, node))]) {
    await withClient(nodeUrl, async (client) => {
      const exists = (await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [SERVICE_ROLE])).rowCount > 0
      if (!exists) await client.query(`CREATE ROLE ${ident(SERVICE_ROLE)} LOGIN NOSUPERUSER NOBYPASSRLS`)
    })
  }
  await withClient(adminUrl, async (client) => {
    // A fresh password each run, kept in memory only (the server may not trust local connections).
    await client.query(`ALTER ROLE ${ident(SERVICE_ROLE)} LOGIN NOSUPERUSER NOBYPASSRLS PASSWORD ${literal(password)}`)
  })
  await withClient(benchUrl, async (client) => {
    await client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${ident(SERVICE_ROLE)}`)
    await client.query(`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${ident(SERVICE_ROLE)}`)
  })
}

/** Which tables have row-level security on, and how many policies. */
export async function rowLevelSecurity (benchUrl) {
  return await withClient(benchUrl, async (client) => {
    const { rows } = await client.query(`SELECT c.relname AS table, c.relrowsecurity AS enabled,
        c.relforcerowsecurity AS forced,
        (SELECT count(*) FROM pg_policies p WHERE p.schemaname = 'public' AND p.tablename = c.relname)::int AS policies
      FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
      WHERE ns.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname <> '_prisma_migrations'
      ORDER BY c.relname`)
    return rows
  })
}

/**
 * The expected answer of every read workload for every school, read as the superuser with
 * plain SQL in the order the API promises (by id; a teacher's classrooms by name), and the
 * `after` cursor of each school's deep page (`deepAfter`).
 */
export async function expectedPages (benchUrl, schools, studentsPerSchool, withRoster = true) {
  return await withClient(benchUrl, async (client) => {
    const pages = new Map()
    for (const school of schools) {
      const students = (await client.query(`SELECT s.id, s.full_name, c.id AS classroom_id, c.name AS classroom_name,
          COALESCE((SELECT json_agg(json_build_object('id', t.id, 'full_name', t.full_name) ORDER BY t.full_name, t.id)
                    FROM teacher_classrooms tc JOIN teachers t ON t.school_id = tc.school_id AND t.id = tc.teacher_id
                    WHERE tc.school_id = c.school_id AND tc.classroom_id = c.id), '[]'::json) AS classroom_teachers
        FROM students s LEFT JOIN classrooms c ON c.school_id = s.school_id AND c.id = s.classroom_id
        WHERE s.school_id = $1 ORDER BY s.id LIMIT 100`, [school.id])).rows
      const teachers = (await client.query(`SELECT t.id, t.full_name,
          COALESCE((SELECT json_agg(json_build_object('id', c.id, 'name', c.name) ORDER BY c.name)
                    FROM teacher_classrooms tc JOIN classrooms c ON c.school_id = tc.school_id AND c.id = tc.classroom_id
                    WHERE tc.school_id = t.school_id AND tc.teacher_id = t.id), '[]'::json) AS classrooms
        FROM teachers t WHERE t.school_id = $1 ORDER BY t.id LIMIT 100`, [school.id])).rows
      // The deep page: the students after the deepPagePosition-th (by id), one more to tell whether
      // another page follows; `after` is the cursor of that student, as the API writes it.
      const position = deepPagePosition(studentsPerSchool)
      const deep = (await client.query(`SELECT s.id, s.full_name, c.name AS classroom_name,
          (SELECT id FROM students WHERE school_id = $1 ORDER BY id OFFSET $2 - 1 LIMIT 1) AS after_id
        FROM students s LEFT JOIN classrooms c ON c.school_id = s.school_id AND c.id = s.classroom_id
        WHERE s.school_id = $1 ORDER BY s.id OFFSET $2 LIMIT $3`, [school.id, position, DEEP_PAGE_LIMIT + 1])).rows
      if (deep.length === 0) throw new Error(`school ${school.tag} has no students after the ${position}th: the deep page would be empty`)
      // The teacher login's flat page: the students of their classrooms only.
      const taught = (await client.query(`SELECT s.id, s.full_name, c.id AS classroom_id, c.name AS classroom_name,
          COALESCE((SELECT json_agg(json_build_object('id', t.id, 'full_name', t.full_name) ORDER BY t.full_name, t.id)
                    FROM teacher_classrooms tt JOIN teachers t ON t.school_id = tt.school_id AND t.id = tt.teacher_id
                    WHERE tt.school_id = c.school_id AND tt.classroom_id = c.id), '[]'::json) AS classroom_teachers
        FROM students s JOIN classrooms c ON c.school_id = s.school_id AND c.id = s.classroom_id
        JOIN teacher_classrooms tc ON tc.school_id = s.school_id AND tc.classroom_id = s.classroom_id AND tc.teacher_id = $2
        WHERE s.school_id = $1 ORDER BY s.id LIMIT 100`, [school.id, school.teacher.teacherId])).rows
      // The client's pages of the REST workloads and their GraphQL peers: up to the maximum page.
      const roster = (await client.query(`SELECT id, sourced_id, given_name, family_name, preferred_name, grade_level::text, status::text,
          to_char(updated_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
        FROM students WHERE school_id = $1 ORDER BY id LIMIT $2`, [school.id, REST_MAX_LIMIT])).rows
      // The other collections of a sync (bench/oneroster-data.mjs) as the binding orders them (by
      // id; students' and teachers' rows merged by id): the sourcedIds of the first REST_PAGE_LIMIT.
      const keys = async (sql) => (await client.query(`${sql} ORDER BY id LIMIT ${REST_PAGE_LIMIT}`, [school.id])).rows.map((r) => r.key)
      const isClass = (c) => `${c}.course_id IS NOT NULL AND EXISTS (SELECT 1 FROM academic_sessions a WHERE a.school_id = ${c}.school_id AND a.id = ANY(${c}.term_ids))`
      const hasDemographics = (u) => `(${DEMOGRAPHIC_COLUMNS.map((field) => `${u}.${columnOf(field)} IS NOT NULL`).join(' OR ')})`
      const restKeys = {
        classes: await keys(`SELECT id, COALESCE(sourced_id, id::text) AS key FROM classrooms c WHERE school_id = $1 AND ${isClass('c')}`),
        enrollments: await keys(`SELECT * FROM (
          SELECT s.id, COALESCE(s.enrollment_sourced_id, s.id::text) AS key FROM students s JOIN classrooms c ON c.school_id = s.school_id AND c.id = s.classroom_id
            WHERE s.school_id = $1 AND ${isClass('c')}
          UNION ALL
          SELECT e.id, COALESCE(e.sourced_id, e.id::text) AS key FROM teacher_classrooms e JOIN classrooms c ON c.school_id = e.school_id AND c.id = e.classroom_id
            WHERE e.school_id = $1 AND ${isClass('c')}) x`),
        academicSessions: await keys('SELECT id, COALESCE(sourced_id, id::text) AS key FROM academic_sessions WHERE school_id = $1'),
        courses: await keys('SELECT id, COALESCE(sourced_id, id::text) AS key FROM courses WHERE school_id = $1'),
        demographics: await keys(`SELECT * FROM (
          SELECT s.id, COALESCE(s.sourced_id, s.id::text) AS key FROM students s WHERE s.school_id = $1 AND ${hasDemographics('s')}
          UNION ALL
          SELECT t.id, COALESCE(t.sourced_id, t.id::text) AS key FROM teachers t WHERE t.school_id = $1 AND ${hasDemographics('t')}) x`)
      }
      for (const [collection, list] of Object.entries(restKeys)) {
        if (withRoster && list.length === 0) throw new Error(`school ${school.tag} has no ${collection}: the REST rows would read empty pages`)
      }
      // Their GraphQL peers: the first page of classrooms by id, and of students with their date of birth.
      const classrooms = (await client.query(`SELECT id, sourced_id, name, to_char(updated_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
        FROM classrooms WHERE school_id = $1 ORDER BY id LIMIT ${REST_PAGE_LIMIT}`, [school.id])).rows
      const births = (await client.query(`SELECT id, sourced_id, date_of_birth::text AS date_of_birth
        FROM students WHERE school_id = $1 ORDER BY id LIMIT ${REST_PAGE_LIMIT}`, [school.id])).rows
      const page = {
        classrooms100: expectedClassrooms(classrooms),
        birthDates100: expectedBirthDates(births),
        clientStudents100: expectedClientStudents(roster, 100),
        clientStudentsMax: expectedClientStudents(roster, REST_MAX_LIMIT),
        flat: expectedFlat(students),
        teacherFlat: expectedFlat(taught),
        // A teacher's classrooms' teachers are all in the teacher's reach (colleagues).
        teacherNested: expectedStudentsNested(taught),
        nestedStudents: expectedStudentsNested(students),
        nestedTeachers: expectedTeachersNested(teachers),
        deepPage: expectedDeepPage(deep)
      }
      const expected = Object.fromEntries(Object.entries(page).map(([k, v]) => [k, { value: v, text: JSON.stringify(v) }]))
      // The REST pages depend on the origin the request came to (the org references): built per server.
      const rest = new Map()
      const restPage = (limit, origin) => {
        const key = `${limit} ${origin}`
        if (!rest.has(key)) {
          const value = expectedRestStudents(roster, limit, school.id, origin)
          rest.set(key, { value, text: JSON.stringify(value) })
        }
        return rest.get(key)
      }
      pages.set(school.id, { ...expected, restPage, restKeys, deepAfter: studentCursor(deep[0].after_id) })
    }
    return pages
  })
}

export async function serverInfo (adminUrl) {
  return await withClient(adminUrl, async (client) => {
    const { rows } = await client.query("SELECT current_setting('server_version') AS version, current_setting('max_connections') AS max_connections, current_setting('shared_buffers') AS shared_buffers")
    return rows[0]
  })
}

/** The connections `user` holds to `database` right now (this one left out). */
export async function connectionCount (client, database, user) {
  const { rows } = await client.query(`SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = $1 AND usename = $2 AND pid <> pg_backend_pid()`, [database, user])
  return rows[0].n
}
