// Distribution by school on a Citus cluster (`school-data citus distribute`; docs/running/citus.md).
// Run once, as the owner, on the coordinator, after `school-data migrate`:
// schools becomes a reference table (a copy on every node), the records' tables are distributed by
// school_id and co-located (a school's rows live together on one worker), and what Citus refuses in
// the migrated schema is replaced by what it runs:
//
// - Foreign keys between the records' tables lose ON UPDATE CASCADE (refused when the distribution
//   column is in the key); ids never change, so nothing is lost.
// - users and clients stay on the coordinator (their triggers write refresh tokens and access
//   changes there). A key from them to a reference table would make them Citus local tables, whose
//   triggers cannot write the coordinator's tables: their key to schools becomes a check trigger,
//   which refuses an unknown school with the key's error and name.
// - The statement-level change-feed triggers read transition tables, which a query on a shard
//   cannot see: the school's feed is written by row-level triggers instead (record_change_row,
//   below), numbered from the feed itself under a per-school lock on the school's worker.
// - The notice triggers would notify on the workers, where no service listens: the service
//   announces committed writes from the coordinator instead (src/db/school-client.ts, its changeAnnounced step).
// - The teachers' row-level security reads a teacher's assignments through teacher_classroom_ids()
//   and teacher_colleague_ids(). Read from the distributed table, that is a distributed query from
//   a shard, which Citus refuses; and Citus refuses the policies' scalar subquery. So the functions
//   read the co-located shard of teacher_classrooms on the worker itself (the school's shards are
//   all on one node; on a node without it they return no classroom: nothing is let through), and
//   the policies call them without the subquery, once per row read.
// - A teacher's change feed is written by statement-level triggers that read the statement's
//   transition tables, which Citus cannot plan a query on a distributed table with. Their
//   functions name every table through teacher_feed_relation() (migration teacher_feed_relations),
//   which here names the school's co-located shards on the worker the trigger fires on, so that
//   they run as plain PostgreSQL there. The triggers are off while Citus copies the rows already
//   there into the shards (the feed has them already), and put back after. The shards of teacher_changes have no id default (Citus
//   keeps a sequence's default on the coordinator's table only): a row trigger numbers each
//   school's entries on from its newest, under the school's lock the feed functions take first, so
//   a school's ids keep increasing in commit order wherever its shards live or move.
// - Prisma reads enum columns back as ::text, in RETURNING too, where Citus takes only immutable
//   functions: each enum gets an immutable cast to text.
//
// Everything happens in one transaction: a failure leaves the database as it was.
import pg from 'pg'
import { TENANT_TABLES as DISTRIBUTED_TABLES } from '../db/data-model.js'
import { ENUM_CASTS, KEPT_TRIGGERS, ROW_FEED_FUNCTION } from '../db/migrations/citus-tables.js'
import { pendingMigrations } from '../db/migrations/index.js'
import { CITUS_CHECK } from '../db/session-pool.js'

/** Tables on the coordinator whose key to schools becomes a check trigger. */
const COORDINATOR_TABLES = ['users', 'clients'] as const

/** The school's feed, by row, on the tables whose writes it records: record type and kind. */
const ROW_FEED = [
  ['students', 'STUDENT'],
  ['teachers', 'TEACHER'],
  ['classrooms', 'CLASSROOM'],
  ['teacher_classrooms', 'ASSIGNMENT']
] as const

/**
 * Triggers taken off while the tables are distributed and put back after, by their functions (a
 * LIKE pattern): a teacher's feed, whose functions then name the shards (below). On while Citus
 * copies the rows already there into the shards, they would write the feed again for each.
 */
const RESTORED_TRIGGER_FUNCTIONS = 'teacher\\_feed\\_%'

export class CitusError extends Error {
  override name = 'CitusError'
}

export type DistributeResult =
  | { distributed: true, tables: string[], workers: number }
  | { distributed: false, reason: 'already distributed' }

const list = (names: readonly string[]): string => names.map((n) => `'${n}'`).join(', ')

// A coordinator table's key to schools, as a trigger: the same refusal (SQLSTATE 23503, the key's
// name) for a school that does not exist.
const SCHOOL_CHECK_FUNCTION = `
CREATE FUNCTION "school_must_exist"() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW."school_id" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "schools" s WHERE s."id" = NEW."school_id") THEN
    RAISE EXCEPTION 'insert or update on table "%" violates foreign key constraint "%"', TG_TABLE_NAME, TG_ARGV[0]
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = TG_ARGV[0], TABLE = TG_TABLE_NAME,
            DETAIL = format('Key (school_id)=(%s) is not present in table "schools".', NEW."school_id");
  END IF;
  RETURN NEW;
END
$fn$`

// A teacher's classrooms, and the teacher with everyone sharing one of them, from the co-located
// shard of teacher_classrooms on this node (above). Each runs with app.teacher_id cleared, as the
// migration's, so its read of the shard is confined to the school alone. `query` reads the shard
// (%s) for the school ($1) and the teacher ($2); `none` is the answer where the shard is not.
const shardReader = (name: string, none: string, query: string): string => `
CREATE OR REPLACE FUNCTION "${name}"(teacher uuid) RETURNS uuid[] LANGUAGE plpgsql STABLE
  SET "app.teacher_id" = ''
AS $fn$
DECLARE
  school uuid := NULLIF(current_setting('app.school_id', true), '')::uuid;
  shard text;
  ids uuid[];
BEGIN
  IF teacher IS NULL OR school IS NULL THEN
    RETURN '{}';
  END IF;
  shard := shard_name('teacher_classrooms'::regclass, get_shard_id_for_distribution_column('teacher_classrooms', school));
  IF to_regclass(shard) IS NULL THEN
    RETURN ${none};
  END IF;
  EXECUTE format('${query}', shard) INTO ids USING school, teacher;
  RETURN ids;
END
$fn$`

const TEACHER_FUNCTIONS = [
  shardReader('teacher_classroom_ids', "'{}'",
    'SELECT coalesce(array_agg(tc."classroom_id"), \'\'{}\'\') FROM %s tc WHERE tc."school_id" = $1 AND tc."teacher_id" = $2'),
  shardReader('teacher_colleague_ids', 'ARRAY[teacher]',
    'SELECT array_agg(DISTINCT t) FROM (SELECT $2 AS t UNION ALL SELECT tc."teacher_id" FROM %s tc ' +
    'WHERE tc."school_id" = $1 AND tc."classroom_id" = ANY ("teacher_classroom_ids"($2))) reach')
]

// The table a teacher-feed function reads or writes for a school: the school's shard on this node
// (of schools, the reference table's copy here). A statement's rows are one shard's, and the
// shards of one school are co-located, so every name it gives is of a table on this worker.
const TEACHER_FEED_RELATION = `
CREATE OR REPLACE FUNCTION "teacher_feed_relation"(relation text, school uuid) RETURNS text LANGUAGE sql STABLE
AS $fn$ SELECT shard_name(relation::regclass, get_shard_id_for_distribution_column(relation::regclass, school)) $fn$`

// The id of a teacher-feed entry, on the shard of teacher_changes: one more than the school's
// newest, read once a transaction (then counted on in a setting of the transaction, as the
// school's feed does). The feed functions lock the school before they write, so the read sees
// every entry committed before, and the school's next writer waits for this one to commit.
const TEACHER_CHANGE_ID = `
CREATE FUNCTION "teacher_change_id"() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  counter text := 'school_data.teacher_change_id_' || replace(NEW."school_id"::text, '-', '');
  next_id bigint := NULLIF(current_setting(counter, true), '')::bigint + 1;
BEGIN
  IF next_id IS NULL THEN
    EXECUTE format('SELECT coalesce(max("id"), 0) + 1 FROM %I.%I WHERE "school_id" = $1', TG_TABLE_SCHEMA, TG_TABLE_NAME)
      INTO next_id USING NEW."school_id";
  END IF;
  PERFORM set_config(counter, next_id::text, true);
  NEW."id" := next_id;
  RETURN NEW;
END
$fn$`

// The teachers' policies of the migration teacher_role, with the functions called without the
// scalar subquery (Citus refuses one in a policy). Created before distribution: Citus cannot create
// a policy with a CASE on a table already distributed ("unrecognized node type").
const TEACHER_POLICIES = ([
  ['classrooms', 'id', 'teacher_classroom_ids'],
  ['students', 'classroom_id', 'teacher_classroom_ids'],
  ['teacher_classrooms', 'classroom_id', 'teacher_classroom_ids'],
  ['teachers', 'id', 'teacher_colleague_ids']
] as const).flatMap(([table, column, reach]) => {
  const test = `"school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
    AND CASE WHEN NULLIF(current_setting('app.teacher_id', true), '') IS NULL THEN true
         ELSE "${column}" = ANY ("${reach}"(NULLIF(current_setting('app.teacher_id', true), '')::uuid)) END`
  return [`DROP POLICY "school_isolation" ON "${table}"`, `CREATE POLICY "school_isolation" ON "${table}" USING (${test}) WITH CHECK (${test})`]
})

// One statement per query: Citus passes a DDL statement on to the workers in the text it was sent
// in, which must hold that statement alone.
/** The distribution of `tables` (the tenant tables the database has), statement by statement. */
const distribution = (tables: readonly string[]): string[] => [
  'SET LOCAL citus.enable_unsafe_triggers = on',
  "SET LOCAL citus.multi_shard_modify_mode = 'sequential'",
  `
-- Keys between the records' tables (and to schools), kept to be added back without ON UPDATE CASCADE.
CREATE TEMP TABLE "kept_keys" ON COMMIT DROP AS
  SELECT c.conname, c.conrelid::regclass::text AS tbl, replace(pg_get_constraintdef(c.oid), ' ON UPDATE CASCADE', '') AS def
  FROM pg_constraint c
  WHERE c.contype = 'f' AND c.confrelid::regclass::text IN ('schools', ${list(tables)})
    AND c.conrelid::regclass::text IN (${list(tables)})`,
  `CREATE TEMP TABLE "restored_triggers" ON COMMIT DROP AS
  SELECT pg_get_triggerdef(tg.oid) AS def FROM pg_trigger tg
  WHERE NOT tg.tgisinternal AND tg.tgfoid::regproc::text LIKE '${RESTORED_TRIGGER_FUNCTIONS}'`,
  `CREATE TEMP TABLE "checked_keys" ON COMMIT DROP AS
  SELECT c.conname, c.conrelid::regclass::text AS tbl
  FROM pg_constraint c
  WHERE c.contype = 'f' AND c.confrelid = 'schools'::regclass AND c.conrelid::regclass::text IN (${list(COORDINATOR_TABLES)})`,
  `DO $do$ DECLARE r record; BEGIN
  FOR r IN SELECT c.conname, c.conrelid::regclass AS tbl FROM pg_constraint c
           WHERE c.contype = 'f' AND c.confrelid::regclass::text IN ('schools', ${list(tables)}) LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.tbl, r.conname);
  END LOOP;
  FOR r IN SELECT tg.tgname, tg.tgrelid::regclass AS tbl FROM pg_trigger tg
           WHERE NOT tg.tgisinternal AND tg.tgname NOT IN (${list(KEPT_TRIGGERS)})
             AND tg.tgrelid::regclass::text IN ('schools', ${list(tables)}) LOOP
    EXECUTE format('DROP TRIGGER %I ON %s', r.tgname, r.tbl);
  END LOOP;
END $do$`,
  ENUM_CASTS,
  ...TEACHER_POLICIES,
  SCHOOL_CHECK_FUNCTION,
  `DO $do$ DECLARE r record; BEGIN
  FOR r IN SELECT * FROM "checked_keys" LOOP
    EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE OF "school_id" ON %s FOR EACH ROW EXECUTE FUNCTION "school_must_exist"(%L)',
      r.tbl || '_school_exists', r.tbl, r.conname);
  END LOOP;
END $do$`,
  "SELECT create_reference_table('schools')",
  `SELECT create_distributed_table('${tables[0]}', 'school_id')`,
  ...tables.slice(1).map((x) => `SELECT create_distributed_table('${x}', 'school_id', colocate_with => '${tables[0]}')`),
  `DO $do$ DECLARE r record; BEGIN
  FOR r IN SELECT * FROM "kept_keys" LOOP
    EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', r.tbl, r.conname, r.def);
  END LOOP;
END $do$`,
  ...TEACHER_FUNCTIONS,
  TEACHER_FEED_RELATION,
  TEACHER_CHANGE_ID,
  'CREATE TRIGGER "teacher_changes_id" BEFORE INSERT ON "teacher_changes" FOR EACH ROW EXECUTE FUNCTION "teacher_change_id"()',
  `DO $do$ DECLARE r record; BEGIN
  FOR r IN SELECT * FROM "restored_triggers" LOOP
    EXECUTE r.def;
  END LOOP;
END $do$`,
  ROW_FEED_FUNCTION,
  ...ROW_FEED.map(([table, type]) => `CREATE TRIGGER "${table}_feed" AFTER INSERT OR UPDATE OR DELETE ON "${table}"
  FOR EACH ROW EXECUTE FUNCTION "record_change_row"('${type}')`)
]

/** Whether the database is a Citus coordinator, and whether its records are distributed yet. */
async function citusState (client: pg.ClientBase): Promise<{ citus: boolean, distributed: boolean, workers: number }> {
  const citus = (await client.query<{ citus: boolean }>(CITUS_CHECK)).rows[0]?.citus === true
  if (!citus) return { citus, distributed: false, workers: 0 }
  const [state] = (await client.query<{ distributed: boolean, workers: number }>(`SELECT
      EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass('students')) AS distributed,
      (SELECT count(*)::int FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary' AND isactive) AS workers`)).rows
  return { citus, distributed: state?.distributed === true, workers: state?.workers ?? 0 }
}

/**
 * Distributes a migrated database on a Citus coordinator by school (above). Refuses a database
 * without Citus, one with pending migrations, and a cluster without workers; a database already
 * distributed is left as it is.
 */
export async function distributeOnCitus (url: string): Promise<DistributeResult> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const state = await citusState(client)
    if (!state.citus) {
      throw new CitusError('This database is not on a Citus coordinator (the citus extension is not installed in it): run `CREATE EXTENSION citus` on every node and add the workers first (docs/running/citus.md)')
    }
    if (state.distributed) return { distributed: false, reason: 'already distributed' }
    if (state.workers === 0) {
      throw new CitusError('The coordinator has no workers: add them with `SELECT citus_add_node(host, port)` first (docs/running/citus.md)')
    }
    const pending = await pendingMigrations({ url })
    if (pending.length > 0) {
      throw new CitusError(`The database has pending migrations (${pending.join(', ')}): run \`school-data migrate\` first`)
    }
    // The tenant tables the database has: all of them once migrated (pending migrations are
    // refused above), fewer for a schema of an earlier release (test/citus.test.ts).
    const tables = (await client.query<{ name: string }>(`SELECT t AS name FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n)
      WHERE to_regclass(t) IS NOT NULL ORDER BY n`, [DISTRIBUTED_TABLES])).rows.map((r) => r.name)
    await client.query('BEGIN')
    try {
      for (const statement of distribution(tables)) await client.query(statement)
      await client.query('COMMIT')
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw new CitusError(`Distribution failed, nothing was changed: ${(err as Error).message}`)
    }
    return { distributed: true, tables: ['schools (reference)', ...tables], workers: state.workers }
  } finally {
    await client.end()
  }
}
