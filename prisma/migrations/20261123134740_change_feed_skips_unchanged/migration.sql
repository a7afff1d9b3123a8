-- An update that changes nothing but updated_at (an import run again, a repeated save) is not a
-- change: the UPDATE triggers of students, teachers and classrooms now compare each row with its
-- old version (old_rows) and record only rows that differ. An optional sixth argument is that
-- condition, over the new row r and its old version o.
CREATE OR REPLACE FUNCTION "record_changes"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format($sql$
    WITH "rows" AS (
      SELECT DISTINCT r."school_id", r.%1$I AS "id", %2$s AS "sourced_id", %3$s AS "student_number"
      FROM %4$I r %8$s
      WHERE %5$s
    ), "counts" AS (
      SELECT "school_id", count(*) AS n FROM "rows" GROUP BY "school_id"
    ), "bumped" AS (
      UPDATE "schools" s SET "change_seq" = s."change_seq" + c.n
      FROM "counts" c WHERE s."id" = c."school_id"
      RETURNING s."id" AS "school_id", s."change_seq" - c.n AS "base"
    ), "pruned" AS (
      DELETE FROM "changes" old USING "counts" c
      WHERE old."school_id" = c."school_id" AND old."at" < now() - interval '90 days'
    )
    INSERT INTO "changes" ("school_id", "seq", "type", "record_type", "record_id", "sourced_id", "student_number")
    SELECT r."school_id", b."base" + row_number() OVER (PARTITION BY r."school_id" ORDER BY r."id"),
           %6$L::"ChangeType", %7$L::"RecordType", r."id", r."sourced_id", r."student_number"
    FROM "rows" r JOIN "bumped" b ON b."school_id" = r."school_id"
    $sql$,
    TG_ARGV[1], TG_ARGV[2], TG_ARGV[3],
    CASE TG_OP WHEN 'DELETE' THEN 'old_rows' ELSE 'new_rows' END,
    concat_ws(' AND ', COALESCE(NULLIF(TG_ARGV[4], ''), 'true'), NULLIF(TG_ARGV[5], '')),
    CASE WHEN NULLIF(TG_ARGV[4], '') IS NOT NULL THEN 'UPDATED' WHEN TG_OP = 'INSERT' THEN 'CREATED' WHEN TG_OP = 'UPDATE' THEN 'UPDATED' ELSE 'DELETED' END,
    TG_ARGV[0],
    CASE WHEN NULLIF(TG_ARGV[5], '') IS NOT NULL THEN 'JOIN "old_rows" o ON o."school_id" = r."school_id" AND o."id" = r."id"' ELSE '' END);
  RETURN NULL;
END
$$;

DROP TRIGGER "students_updated" ON "students";
DROP TRIGGER "teachers_updated" ON "teachers";
DROP TRIGGER "classrooms_updated" ON "classrooms";
CREATE TRIGGER "students_updated" AFTER UPDATE ON "students" REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('STUDENT', 'id', 'r.sourced_id', 'r.student_number', '',
    '(to_jsonb(r) - ''updated_at'') IS DISTINCT FROM (to_jsonb(o) - ''updated_at'')');
CREATE TRIGGER "teachers_updated" AFTER UPDATE ON "teachers" REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('TEACHER', 'id', 'r.sourced_id', 'NULL::text', '',
    '(to_jsonb(r) - ''updated_at'') IS DISTINCT FROM (to_jsonb(o) - ''updated_at'')');
CREATE TRIGGER "classrooms_updated" AFTER UPDATE ON "classrooms" REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('CLASSROOM', 'id', 'r.sourced_id', 'NULL::text', '',
    '(to_jsonb(r) - ''updated_at'') IS DISTINCT FROM (to_jsonb(o) - ''updated_at'')');
