-- A deleted student's or teacher's tombstone keeps what OneRoster's REST binding must send of a
-- user it answers with status `tobedeleted` (UserDType requires sourcedId, status,
-- dateLastModified, enabledUser, givenName, familyName and roles; docs/api/oneroster.md, "Delta
-- sync"): the names and the status the record had (enabledUser is whether it was ACTIVE). Only
-- deletions keep them, and only for as long as the feed keeps its tombstones (90 days); a creation
-- or an update names the record by its id, as before.
ALTER TABLE "changes" ADD COLUMN "given_name" TEXT,
ADD COLUMN "family_name" TEXT,
ADD COLUMN "record_status" TEXT;

-- record_changes (migration change_feed_skips_unchanged) with the three columns: written from the
-- deleted rows (old_rows) of students and teachers, NULL otherwise.
CREATE OR REPLACE FUNCTION "record_changes"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format($sql$
    WITH "rows" AS (
      SELECT DISTINCT r."school_id", r.%1$I AS "id", %2$s AS "sourced_id", %3$s AS "student_number", %9$s
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
    INSERT INTO "changes" ("school_id", "seq", "type", "record_type", "record_id", "sourced_id", "student_number", "given_name", "family_name", "record_status")
    SELECT r."school_id", b."base" + row_number() OVER (PARTITION BY r."school_id" ORDER BY r."id"),
           %6$L::"ChangeType", %7$L::"RecordType", r."id", r."sourced_id", r."student_number", r."given_name", r."family_name", r."record_status"
    FROM "rows" r JOIN "bumped" b ON b."school_id" = r."school_id"
    $sql$,
    TG_ARGV[1], TG_ARGV[2], TG_ARGV[3],
    CASE TG_OP WHEN 'DELETE' THEN 'old_rows' ELSE 'new_rows' END,
    concat_ws(' AND ', COALESCE(NULLIF(TG_ARGV[4], ''), 'true'), NULLIF(TG_ARGV[5], '')),
    CASE WHEN NULLIF(TG_ARGV[4], '') IS NOT NULL THEN 'UPDATED' WHEN TG_OP = 'INSERT' THEN 'CREATED' WHEN TG_OP = 'UPDATE' THEN 'UPDATED' ELSE 'DELETED' END,
    TG_ARGV[0],
    CASE WHEN NULLIF(TG_ARGV[5], '') IS NOT NULL THEN 'JOIN "old_rows" o ON o."school_id" = r."school_id" AND o."id" = r."id"' ELSE '' END,
    CASE WHEN TG_OP = 'DELETE' AND TG_ARGV[0] IN ('STUDENT', 'TEACHER') AND NULLIF(TG_ARGV[4], '') IS NULL
      THEN 'r."given_name", r."family_name", r."status"::text AS "record_status"'
      ELSE 'NULL::text AS "given_name", NULL::text AS "family_name", NULL::text AS "record_status"' END);
  RETURN NULL;
END
$$;
