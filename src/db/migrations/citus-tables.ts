// Tenant tables that a later migration adds to a database already distributed on Citus
// (docs/running/citus.md): `migrate` distributes them after the migrations, by school_id and
// co-located with the others, in the form `school-data citus distribute` gives the tables it
// distributes (src/admin/citus.ts says why): their keys without ON UPDATE CASCADE, only the
// triggers that touch nothing but their own row kept, and an immutable cast to text for each new
// enum. Without it such a table stays on the coordinator, where Citus makes it a local table
// (its key to the reference table `schools`), its rows never reach the workers and a statement
// joining it to the records is refused.
import type pg from 'pg'
import { TENANT_TABLES } from '../data-model.js'

/**
 * Triggers kept on the distributed tables: they touch nothing but their own row (a student's and a
 * teacher's names; every record's version, moved by the database on each update that changes the
 * row; an assignment's updated_at, likewise). Every other trigger of a distributed table is dropped or replaced by the distribution.
 */
export const KEPT_TRIGGERS = ['students_names', 'teachers_names', 'students_version', 'teachers_version', 'classrooms_version', 'academic_sessions_version', 'courses_version', 'agents_version', 'teacher_classrooms_updated_at']

/** Each enum of the schema gets an immutable cast to text: Prisma reads enum columns back as ::text, in RETURNING too, where Citus takes only immutable functions. */
export const ENUM_CASTS = `DO $do$ DECLARE r record; BEGIN
  FOR r IN SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
           WHERE t.typtype = 'e' AND n.nspname = current_schema()
             AND NOT EXISTS (SELECT 1 FROM pg_cast c WHERE c.castsource = t.oid AND c.casttarget = 'text'::regtype) LOOP
    EXECUTE format('CREATE FUNCTION %I(%I) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $f$ SELECT textin(enum_out($1)) $f$',
      r.typname || '_as_text', r.typname);
    EXECUTE format('CREATE CAST (%I AS text) WITH FUNCTION %I(%I)', r.typname, r.typname || '_as_text', r.typname);
  END LOOP;
END $do$`

/**
 * Distributes the tenant tables the database has and Citus does not distribute by hash yet (a
 * plain table, or the Citus local table its key to `schools` made of it; its keys dropped first,
 * Citus turns it back into a plain table), in the
 * client's open transaction on the coordinator of a distributed database; returns their names
 * (none: nothing is done).
 */
export async function distributeAddedTables (client: pg.ClientBase): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(`SELECT t AS name FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n)
    WHERE to_regclass(t) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = to_regclass(t) AND p.partmethod = 'h')
    ORDER BY n`, [TENANT_TABLES])
  const added = rows.map((r) => r.name)
  if (added.length === 0) return added
  await client.query('SET LOCAL citus.enable_unsafe_triggers = on')
  await client.query("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
  const { rows: keys } = await client.query<{ conname: string, tbl: string, def: string }>(`SELECT c.conname, c.conrelid::regclass::text AS tbl,
      replace(pg_get_constraintdef(c.oid), ' ON UPDATE CASCADE', '') AS def
    FROM pg_constraint c WHERE c.contype = 'f' AND c.conrelid::regclass::text = ANY($1::text[])`, [added])
  for (const key of keys) await client.query(`ALTER TABLE ${key.tbl} DROP CONSTRAINT "${key.conname}"`)
  const { rows: triggers } = await client.query<{ tgname: string, tbl: string }>(`SELECT tg.tgname, tg.tgrelid::regclass::text AS tbl
    FROM pg_trigger tg WHERE NOT tg.tgisinternal AND tg.tgrelid::regclass::text = ANY($1::text[]) AND NOT (tg.tgname = ANY($2::text[]))`, [added, KEPT_TRIGGERS])
  for (const trigger of triggers) await client.query(`DROP TRIGGER "${trigger.tgname}" ON ${trigger.tbl}`)
  await client.query(ENUM_CASTS)
  for (const table of added) {
    await client.query('SELECT create_distributed_table($1, \'school_id\', colocate_with => $2)', [table, TENANT_TABLES[0]])
  }
  for (const key of keys) await client.query(`ALTER TABLE ${key.tbl} ADD CONSTRAINT "${key.conname}" ${key.def}`)
  return added
}

// The school's feed by row on Citus. Each write of a student, teacher or classroom (a teacher's
// assignment: an update of the teacher, unless the teacher is gone) adds one change; an update
// that changes nothing but updated_at adds none, as the statement-level triggers do. Numbers stay
// dense and commit in order: the school's writers queue on the school's row, locked (FOR NO KEY
// UPDATE) in the copy of the reference table `schools` on the worker that holds all of the
// school's shards, and the next number is read after it, from
// the newest change kept or, for a school whose feed was empty when it was distributed, from its
// former counter (schools.change_seq, which no longer moves). The first change of a school in a
// transaction takes the lock, reads the number, and prunes the school's changes older than 90 days
// (the change it adds is then the newest, so the number never goes back); it keeps the number in
// a setting of the transaction, so the next rows, under the same lock, count on from it without a
// read (a subtransaction rolled back takes its lock, its setting and its rows away together).
// The lock is the one a teacher's feed takes (teacher_feed_open, migration teacher_feed_relations),
// so a transaction writing both feeds holds one lock of its school, never two taken in either order:
// with an advisory lock of its own here, a statement taking the teacher feed's lock first (an
// update that changes nothing but updated_at, or a teacher's deletion) and one taking this first
// deadlocked each other on the school's worker (mutations-scopes on a cluster: 50 of 864 failed).
// `migrate` on a distributed database puts this function back after the migrations
// (refreshRowFeed), so a cluster distributed by an earlier release runs this one too.
export const ROW_FEED_FUNCTION = `
CREATE OR REPLACE FUNCTION "record_change_row"() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  row_json jsonb := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END);
  school uuid := (row_json->>'school_id')::uuid;
  record_id uuid;
  sourced text := row_json->>'sourced_id';
  kind "ChangeType" := CASE TG_OP WHEN 'INSERT' THEN 'CREATED' WHEN 'UPDATE' THEN 'UPDATED' ELSE 'DELETED' END;
  next_seq bigint;
  counter text := 'school_data.change_seq_' || replace(school::text, '-', '');
BEGIN
  IF TG_OP = 'UPDATE' AND (to_jsonb(NEW) - 'updated_at') = (to_jsonb(OLD) - 'updated_at') THEN
    RETURN NULL;
  END IF;
  -- A school being deleted takes its records with it, and its feed: nothing to record.
  IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM "schools" s WHERE s."id" = school) THEN
    RETURN NULL;
  END IF;
  IF TG_ARGV[0] = 'ASSIGNMENT' THEN
    record_id := (row_json->>'teacher_id')::uuid;
    kind := 'UPDATED';
    SELECT t."sourced_id" INTO sourced FROM "teachers" t WHERE t."school_id" = school AND t."id" = record_id;
    IF NOT FOUND THEN
      RETURN NULL;
    END IF;
  ELSE
    record_id := (row_json->>'id')::uuid;
  END IF;
  next_seq := NULLIF(current_setting(counter, true), '')::bigint + 1;
  IF next_seq IS NULL THEN
    PERFORM "teacher_feed_open"(ARRAY[school], false);
    SELECT greatest(
             (SELECT max(c."seq") FROM "changes" c WHERE c."school_id" = school),
             (SELECT s."change_seq" FROM "schools" s WHERE s."id" = school), 0) + 1
      INTO next_seq;
    DELETE FROM "changes" c WHERE c."school_id" = school AND c."at" < now() - interval '90 days' AND c."seq" < next_seq;
  END IF;
  PERFORM set_config(counter, next_seq::text, true);
  -- A deleted student's or teacher's names and status, as record_changes keeps them (migration change_feed_deleted_users).
  INSERT INTO "changes" ("school_id", "seq", "type", "record_type", "record_id", "sourced_id", "student_number", "given_name", "family_name", "record_status")
  VALUES (school, next_seq, kind, (CASE WHEN TG_ARGV[0] = 'ASSIGNMENT' THEN 'TEACHER' ELSE TG_ARGV[0] END)::"RecordType",
          record_id, sourced, CASE WHEN TG_ARGV[0] = 'STUDENT' THEN row_json->>'student_number' END,
          CASE WHEN kind = 'DELETED' AND TG_ARGV[0] IN ('STUDENT', 'TEACHER') THEN row_json->>'given_name' END,
          CASE WHEN kind = 'DELETED' AND TG_ARGV[0] IN ('STUDENT', 'TEACHER') THEN row_json->>'family_name' END,
          CASE WHEN kind = 'DELETED' AND TG_ARGV[0] IN ('STUDENT', 'TEACHER') THEN row_json->>'status' END);
  RETURN NULL;
END
$fn$`

/**
 * On a distributed database (one `school-data citus distribute` made: the row feed's function is
 * there), the row feed's function as this release writes it, on the coordinator and, by Citus's
 * propagation of a distributed function, on the workers where the triggers run it.
 */
export async function refreshRowFeed (client: pg.ClientBase): Promise<boolean> {
  const { rows } = await client.query<{ present: boolean }>("SELECT to_regprocedure('record_change_row()') IS NOT NULL AS present")
  if (rows[0]?.present !== true) return false
  await client.query(ROW_FEED_FUNCTION)
  return true
}
