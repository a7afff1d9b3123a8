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
