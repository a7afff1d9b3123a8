// What makes the schema distributable by school (docs/running/scaling-out.md): every primary, unique and
// foreign key of the tenant tables includes school_id, and every statement the service sends for
// tenant data filters on school_id, as PostgreSQL's own statement log shows.
import {
  getNamedType,
  isAbstractType,
  isEnumType,
  isLeafType,
  isNonNullType,
  isObjectType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema
} from 'graphql'
import t from 'tap'
import { openDatabase } from '../src/db/client.js'
import { applyMigrations } from '../src/db/migrations/index.js'
import { clusterUnavailable, query, startClusters } from './cluster.js'
import { serverUrl, testDatabase } from './helper.js'
import { mirror, type MirrorSchool } from './isolation/mirror.js'

/**
 * users carries school_id as an attribute (a user may have none, or move): it is looked up by
 * username, and on a distributed cluster it is a reference table (README); user_access_changes
 * records users' moves (the school they left), read by every node whatever the school; clients,
 * like users, are looked up by id at the token endpoint, whatever the school.
 */
const NOT_TENANT = new Set(['users', 'user_access_changes', 'clients'])

interface KeyRow { table: string, name: string, kind: string, columns: string[], ref_table: string | null, ref_columns: string[] | null }

t.test('every key of a tenant table includes school_id', async (t) => {
  const db = await testDatabase()
  const tables = (await db.prisma.$queryRawUnsafe<Array<{ table: string }>>(`
    SELECT c.table_name AS table FROM information_schema.columns c
    JOIN information_schema.tables t USING (table_schema, table_name)
    WHERE c.table_schema = 'public' AND c.column_name = 'school_id' AND t.table_type = 'BASE TABLE'
    ORDER BY 1`)).map((r) => r.table).filter((name) => !NOT_TENANT.has(name))
  for (const core of ['students', 'teachers', 'classrooms', 'teacher_classrooms']) t.ok(tables.includes(core), `${core} is a tenant table`)

  const keys = await db.prisma.$queryRawUnsafe<KeyRow[]>(`
    SELECT rel.relname AS table, con.conname AS name, con.contype::text AS kind,
      ARRAY(SELECT a.attname::text FROM unnest(con.conkey) k JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k) AS columns,
      ref.relname AS ref_table,
      CASE WHEN con.confrelid = 0 THEN NULL ELSE
        ARRAY(SELECT a.attname::text FROM unnest(con.confkey) k JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k) END AS ref_columns
    FROM pg_constraint con
    JOIN pg_class rel ON rel.oid = con.conrelid
    JOIN pg_namespace n ON n.oid = rel.relnamespace AND n.nspname = 'public'
    LEFT JOIN pg_class ref ON ref.oid = con.confrelid
    WHERE con.contype IN ('p', 'u', 'f')`)
  const uniqueIndexes = await db.prisma.$queryRawUnsafe<Array<{ table: string, name: string, columns: string[] }>>(`
    SELECT t.relname AS table, i.relname AS name,
      ARRAY(SELECT a.attname::text FROM unnest(x.indkey) k JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k) AS columns
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = 'public'
    WHERE x.indisunique`)

  for (const table of tables) {
    const own = keys.filter((k) => k.table === table)
    t.ok(own.some((k) => k.kind === 'p'), `${table} has a primary key`)
    for (const key of own.filter((k) => k.kind === 'p' || k.kind === 'u')) {
      t.ok(key.columns.includes('school_id'), `${table}.${key.name} (${key.columns.join(', ')}) includes school_id`)
    }
    for (const index of uniqueIndexes.filter((i) => i.table === table)) {
      t.ok(index.columns.includes('school_id'), `unique index ${index.name} (${index.columns.join(', ')}) includes school_id`)
    }
    for (const fk of own.filter((k) => k.kind === 'f')) {
      if (fk.ref_table !== null && tables.includes(fk.ref_table)) {
        // Between tenant tables: both sides carry the school, in the same place.
        const i = fk.columns.indexOf('school_id')
        t.ok(i >= 0 && fk.ref_columns?.[i] === 'school_id', `${table}.${fk.name} links school_id to school_id`)
      } else {
        // Out of the tenant tables, only to the school itself (a reference table on a cluster).
        t.same([fk.ref_table, fk.columns, fk.ref_columns], ['schools', ['school_id'], ['id']], `${table}.${fk.name} refers to its school only`)
      }
    }
  }
})

// Log entries: "2026-11-23 13:40:01.123 UTC [1234] LOG:  execute sds_5: SELECT ..." (PostgreSQL's
// default log_line_prefix '%m [%p] '), continued over the next lines for multi-line statements.
const ENTRY = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+ \[\d+\] /m

function statements (log: string): string[] {
  return log.split(ENTRY)
    .map((entry) => /^LOG:\s+(?:statement|execute [^:]*):\s+([\s\S]*)$/.exec(entry.trim())?.[1])
    .filter((sql): sql is string => sql !== undefined)
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** The tenant tables a statement reads or writes that it does not confine to one school. */
export function unconfined (sql: string, tenantTables: readonly string[]): string[] {
  const missing: string[] = []
  for (const table of tenantTables) {
    const reference = new RegExp(`(FROM|JOIN|INTO|UPDATE)\\s+(?:"public"\\.)?"${table}"(?:\\s+AS\\s+"([^"]+)")?`, 'gi')
    for (const match of sql.matchAll(reference)) {
      const verb = match[1]!.toUpperCase()
      if (verb === 'INTO') {
        // INSERT INTO "public"."students" ("school_id", ...): the row carries its school.
        const columns = sql.slice(match.index + match[0].length).match(/^\s*\(([^)]*)\)/)?.[1] ?? ''
        if (!/"school_id"/.test(columns)) missing.push(`${table} (insert without school_id)`)
        continue
      }
      const name = match[2] !== undefined ? `"${escape(match[2])}"` : `(?:"public"\\.)?"${table}"`
      const column = `${name}\\."school_id"`
      // alias.school_id = $1, = other.school_id, IN (...), or first in a row value: (alias.school_id, alias.id) = (...)
      const filtered = new RegExp(`${column}\\s*(=|IN\\b)|=\\s*${column}|\\(\\s*${column}\\s*,[^()]*\\)\\s*=|=\\s*\\(\\s*${column}\\s*,`, 'i')
      if (!filtered.test(sql)) missing.push(table)
    }
  }
  return missing
}

t.test('a statement that does not filter on school_id is caught', async (t) => {
  const tables = ['students', 'teacher_classrooms']
  t.same(unconfined('SELECT "t1"."id" FROM "public"."students" AS "t1" WHERE "t1"."school_id" = $1 LIMIT $2', tables), [])
  t.same(unconfined('SELECT "public"."students"."id" FROM "public"."students" WHERE ("public"."students"."school_id" = $1 AND "public"."students"."id" IN ($2))', tables), [])
  t.same(unconfined('SELECT "t1"."id" FROM "public"."students" AS "t1" WHERE "t1"."id" = $1', tables), ['students'])
  t.same(unconfined('SELECT "t1"."school_id" FROM "public"."students" AS "t1"', tables), ['students'], 'selecting the column is no filter')
  t.same(unconfined('SELECT 1 FROM "public"."teacher_classrooms" AS "t3" WHERE ("t2"."school_id" = "t3"."school_id" AND "t2"."id" = "t3"."classroom_id")', tables), [])
  t.same(unconfined('SELECT 1 FROM "public"."teacher_classrooms" AS "t0" LEFT JOIN "public"."students" AS "o" ON ("o"."school_id","o"."id") = ("t0"."school_id","t0"."x") WHERE "t0"."school_id" = $1', tables), [])
  t.same(unconfined('SELECT 1 FROM "public"."teacher_classrooms" AS "t0" LEFT JOIN "public"."students" AS "o" ON ("o"."id","o"."school_id") = ("t0"."x","t0"."school_id") WHERE "t0"."school_id" = $1', tables), ['students'], 'only the lead of a row value is recognised')
  t.same(unconfined('INSERT INTO "public"."students" ("school_id","id") VALUES ($1,$2)', tables), [])
  t.same(unconfined('INSERT INTO "public"."students" ("id") VALUES ($1)', tables), ['students (insert without school_id)'])
  t.same(statements('2026-11-23 13:40:01.123 UTC [12] LOG:  execute sds_1: SELECT 1\n2026-11-23 13:40:01.124 UTC [12] DETAIL:  parameters: $1 = \'x\'\n2026-11-23 13:40:01.125 UTC [13] LOG:  statement: SELECT\n  2'), ['SELECT 1', 'SELECT\n  2'])
})

/** One document per root field: every field two levels down, arguments from the school's ids. */
function documents (schema: GraphQLSchema, school: MirrorSchool): string[] {
  const idFor = (field: string, arg: string): string | undefined => {
    const name = `${field} ${arg}`.toLowerCase()
    if (name.includes('student')) return school.studentIds[0]
    if (name.includes('teacher')) return school.teacherIds[0]
    if (name.includes('classroom')) return school.classroomIds[0]
    return undefined
  }
  function args (field: GraphQLField<unknown, unknown>, fill: boolean): string | null {
    const parts: string[] = []
    for (const arg of field.args) {
      const type = getNamedType(arg.type)
      const required = isNonNullType(arg.type) && arg.defaultValue === undefined
      let value: string | undefined
      if (type.name === 'ID') value = idFor(field.name, arg.name)
      else if (!required && !fill) value = undefined
      else if (type.name === 'Int') value = '3'
      else if (isEnumType(type)) value = type.getValues()[0]?.name
      else if (type.name === 'String' && !/after|before|since|cursor/i.test(arg.name)) value = '"A"'
      if (value === undefined && required) return null
      if (value !== undefined) parts.push(`${arg.name}: ${type.name === 'ID' ? `"${value}"` : value}`)
    }
    return parts.length === 0 ? '' : `(${parts.join(', ')})`
  }
  function selection (type: GraphQLNamedType, depth: number): string {
    if (isAbstractType(type)) {
      return '__typename ' + schema.getPossibleTypes(type).map((t) => `... on ${t.name} { ${selection(t, depth)} }`).join(' ')
    }
    if (!isObjectType(type)) return ''
    const parts: string[] = []
    for (const field of Object.values(type.getFields())) {
      const named = getNamedType(field.type)
      if (isLeafType(named)) {
        if (field.args.every((a) => !isNonNullType(a.type))) parts.push(field.name)
      } else if (depth > 0) {
        const a = args(field, false)
        const inner = selection(named, depth - 1)
        if (a !== null && inner !== '') parts.push(`${field.name}${a} { ${inner} }`)
      }
    }
    return parts.length === 0 ? '__typename' : parts.join(' ')
  }
  const docs: string[] = []
  for (const field of Object.values(schema.getQueryType()!.getFields())) {
    for (const fill of [false, true]) {
      const a = args(field, fill)
      if (a === null) continue
      const named = getNamedType(field.type)
      docs.push(`{ ${field.name}${a}${isLeafType(named) ? '' : ` { ${selection(named, 2)} }`} }`)
    }
  }
  return docs
}

const unavailable = serverUrl === undefined
  ? 'the statement log is read from a PostgreSQL server of this test\'s own (set TEST_DATABASE_URL)'
  : clusterUnavailable()

t.test('every statement the service sends for tenant data filters on school_id', { skip: process.env.CI === 'true' ? false : unavailable }, async (t) => {
  const clusters = await startClusters({ logStatements: true })
  const { primary } = clusters
  t.teardown(() => clusters.destroy())
  await query(primary.url(), 'CREATE DATABASE sds')
  await applyMigrations({ url: primary.url('sds') })
  await query(primary.url(), 'CREATE ROLE sds_log_service LOGIN NOSUPERUSER NOBYPASSRLS')
  await query(primary.url('sds'), `
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO sds_log_service;
    GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO sds_log_service;`)
  const db = await openDatabase({ url: primary.url('sds', 'sds_log_service') })
  t.teardown(() => db.close())
  const tenantTables = (await query<{ table: string }>(primary.url('sds'), `
    SELECT table_name AS table FROM information_schema.columns
    WHERE table_schema = 'public' AND column_name = 'school_id'`)).map((r) => r.table).filter((name) => !NOT_TENANT.has(name))

  const from = primary.log().length
  // Two schools' records, written the way the CLI writes them, and read through the API.
  const m = await mirror(t, db)
  const docs = documents(m.app.graphql.schema, m.a)
  t.ok(docs.length >= 8, `${docs.length} documents cover the root fields`)
  let answered = 0
  for (const doc of docs) {
    const res = await m.app.inject({ method: 'POST', url: '/', headers: { authorization: `Bearer ${m.a.token}` }, payload: { query: doc } })
    if (res.statusCode === 200 && res.json().data != null) answered += 1
  }
  t.ok(answered >= docs.length / 2, `${answered} of ${docs.length} documents answered`)

  const sent = statements(primary.log().slice(from))
  const tenant = sent.filter((sql) => tenantTables.some((table) => sql.includes(`"${table}"`)))
  t.ok(tenant.length >= docs.length, `${tenant.length} statements for tenant data (of ${sent.length})`)
  const offenders = tenant.map((sql) => ({ sql, missing: unconfined(sql, tenantTables) })).filter((s) => s.missing.length > 0)
  t.same(offenders, [], 'every statement for tenant data filters on school_id')
})
