-- A student's agent deleted (a guardian, parent or relative: the import's tobedeleted row, or one a
-- bulk import no longer lists) is answered on /users' deltas with status `tobedeleted`, as a
-- deleted student or teacher is (issue 37, docs/api/oneroster.md "Delta sync"). The school's feed
-- (changes) keeps students and teachers only; an agent's deletion writes a tombstone here instead,
-- in the transaction of the write, whoever deletes (API, CLI, import, plain SQL), with what UserDType
-- requires of it: its role, names and the status it had (enabledUser). Nothing else is kept.
--
-- The school's row only (teacher_id NULL): a teacher reads no agent (migration agents), and the
-- policy of roster_tombstones admits a teacher's session to no school row but sessions' and courses'.
ALTER TABLE "roster_tombstones" DROP CONSTRAINT "roster_tombstones_kind_check";
ALTER TABLE "roster_tombstones" ADD CONSTRAINT "roster_tombstones_kind_check"
  CHECK ("kind" IN ('ENROLLMENT', 'CLASS', 'ACADEMIC_SESSION', 'COURSE', 'AGENT'));

-- Named as the other tombstones' functions (teacher_feed_*: on Citus the trigger runs on the
-- agents' shard and writes the co-located shard of roster_tombstones).
CREATE FUNCTION "teacher_feed_roster_agent"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = ''
AS $$
BEGIN
  IF NOT "teacher_feed_roster_school"(OLD."school_id") THEN
    RETURN NULL;
  END IF;
  PERFORM "teacher_feed_roster_write"(OLD."school_id", ARRAY[NULL::uuid], 'AGENT', COALESCE(OLD."sourced_id", OLD."id"::text),
    jsonb_build_object('role', OLD."role", 'givenName', OLD."given_name", 'familyName', OLD."family_name", 'status', OLD."status"::text));
  RETURN NULL;
END
$$;

CREATE TRIGGER "agents_roster_tombstones" AFTER DELETE ON "agents"
  FOR EACH ROW EXECUTE FUNCTION "teacher_feed_roster_agent"();
