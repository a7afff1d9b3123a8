-- A teacher's feed (teacher_changes) keeps, for a student or teacher that left the teacher's reach
-- (deleted, moved out, a classroom unassigned), what OneRoster's delta answers of it as a user with
-- status `tobedeleted`: its names and status, as the school's feed does for a deletion (migration
-- change_feed_deleted_users). Filled as each entry is written, whichever feed function writes it:
-- from the record when it still exists (it left the reach, or a BEFORE DELETE trigger runs), else
-- from the school feed's tombstone of its deletion, written by the same statement before (the
-- triggers "students_deleted" and "teachers_deleted" fire before "*_teacher_feed_*", by name).
-- Every table is named through teacher_feed_relation(), as the feed functions name theirs, and the
-- function's name starts with teacher_feed_, so that `school-data citus distribute` puts its
-- trigger back as it does theirs (src/admin/citus.ts).
ALTER TABLE "teacher_changes" ADD COLUMN "given_name" TEXT,
ADD COLUMN "family_name" TEXT,
ADD COLUMN "record_status" TEXT;

CREATE FUNCTION "teacher_feed_names"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."type" <> 'DELETED' OR NEW."record_type" NOT IN ('STUDENT', 'TEACHER') THEN
    RETURN NEW;
  END IF;
  EXECUTE format('SELECT r."given_name", r."family_name", r."status"::text FROM %s r WHERE r."school_id" = $1 AND r."id" = $2',
      "teacher_feed_relation"(CASE NEW."record_type" WHEN 'STUDENT' THEN 'students' ELSE 'teachers' END, NEW."school_id"))
    INTO NEW."given_name", NEW."family_name", NEW."record_status" USING NEW."school_id", NEW."record_id";
  IF NEW."given_name" IS NULL THEN
    EXECUTE format('SELECT c."given_name", c."family_name", c."record_status" FROM %s c
        WHERE c."school_id" = $1 AND c."record_id" = $2 AND c."type" = ''DELETED'' ORDER BY c."seq" DESC LIMIT 1',
        "teacher_feed_relation"('changes', NEW."school_id"))
      INTO NEW."given_name", NEW."family_name", NEW."record_status" USING NEW."school_id", NEW."record_id";
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER "teacher_changes_names" BEFORE INSERT ON "teacher_changes"
  FOR EACH ROW EXECUTE FUNCTION "teacher_feed_names"();
