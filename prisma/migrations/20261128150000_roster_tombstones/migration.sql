-- Tombstones of what OneRoster's REST binding answers beside users (issue 37, docs/api/oneroster.md
-- "Delta sync"): an enrollment that ended (a student moved, its classroom cleared, the student
-- deleted; a teacher unassigned, deleted, or her classroom deleted), a class deleted (or no longer a
-- class), an academic session or a course deleted. The school's feed (changes) keeps a record's id
-- and sourcedId, and a link is no record of it; so each such end writes a row here, in the
-- transaction of the write, whoever writes (API, CLI, import, plain SQL), with the sourcedId it
-- was answered by and the fields the binding's type requires of it (EnrollmentDType: user, class,
-- role; ClassDType: title, course, terms; AcademicSessionDType: title, type, dates, schoolYear;
-- CourseDType: title, courseCode when it had one). Nothing else is kept.
--
-- teacher_id NULL is the school's row; a row with a teacher_id is that teacher's own, as her feed
-- (teacher_changes) is hers: what left her reach (an enrollment of her classroom that ended, or her
-- classroom's class and enrollments when she was unassigned or the classroom deleted). Sessions and
-- courses are the whole school's, teachers' too (their rows have no teacher).
--
-- Kept 90 days, as the feeds: each write prunes the school's rows older than that.
CREATE TABLE "roster_tombstones" (
    "school_id" UUID NOT NULL,
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "teacher_id" UUID,
    "kind" TEXT NOT NULL,
    "sourced_id" TEXT NOT NULL,
    "fields" JSONB NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "roster_tombstones_pkey" PRIMARY KEY ("school_id","id")
);

ALTER TABLE "roster_tombstones" ADD CONSTRAINT "roster_tombstones_kind_check"
  CHECK ("kind" IN ('ENROLLMENT', 'CLASS', 'ACADEMIC_SESSION', 'COURSE'));

-- CreateIndex
CREATE INDEX "roster_tombstones_school_id_kind_at_idx" ON "roster_tombstones"("school_id", "kind", "at");

-- Wall 2: a school's rows only; a teacher's session its own rows and the school's sessions and
-- courses, every other session the school's rows (no teacher's). Written by the functions below
-- only, with app.writing_teacher_feed set by their SET clause as the teacher feed's functions do
-- (the same setting: the owner's SET privilege on it is granted already, docs/running/database-roles.md).
ALTER TABLE "roster_tombstones" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "roster_tombstones" FORCE ROW LEVEL SECURITY;
CREATE POLICY "school_isolation" ON "roster_tombstones" FOR SELECT
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND CASE WHEN NULLIF(current_setting('app.teacher_id', true), '') IS NULL THEN "teacher_id" IS NULL
             ELSE "teacher_id" = NULLIF(current_setting('app.teacher_id', true), '')::uuid
               OR ("teacher_id" IS NULL AND "kind" IN ('ACADEMIC_SESSION', 'COURSE')) END);
CREATE POLICY "roster_tombstones_writer" ON "roster_tombstones"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND current_setting('app.writing_teacher_feed', true) = 'on')
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND current_setting('app.writing_teacher_feed', true) = 'on');

-- Every table is named through teacher_feed_relation() and every function's name starts with
-- teacher_feed_, as the teacher feed's: on Citus the triggers run on a shard, where the function
-- names the school's co-located shards, and `school-data citus distribute` puts the triggers back
-- (src/admin/citus.ts). Rows are passed as jsonb (a shard's row has the shard's type).

-- Writes a tombstone for the school (a NULL in `teachers`) and for each teacher given, after
-- pruning the school's rows older than 90 days.
CREATE FUNCTION "teacher_feed_roster_write"(school uuid, teachers uuid[], kind text, sourced text, fields jsonb) RETURNS void LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
BEGIN
  EXECUTE format('DELETE FROM %s t WHERE t."school_id" = $1 AND t."at" < now() - interval ''90 days''',
      "teacher_feed_relation"('roster_tombstones', school)) USING school;
  EXECUTE format('INSERT INTO %s ("school_id", "id", "teacher_id", "kind", "sourced_id", "fields")
      SELECT DISTINCT ON (t) $1, gen_random_uuid(), t, $3, $4, $5 FROM unnest($2) t',
      "teacher_feed_relation"('roster_tombstones', school)) USING school, teachers, kind, sourced, fields;
END
$$;

-- A classroom (a row as jsonb) as the binding answers a class: its sourcedKey, title, course and
-- terms (by their sourcedKeys, in the classroom's order); NULL when it is no class (a course and a
-- term that exists, as typed-reads.ts classKey).
CREATE FUNCTION "teacher_feed_roster_class"(school uuid, room jsonb) RETURNS jsonb LANGUAGE plpgsql
  SET "app.teacher_id" = ''
AS $$
DECLARE
  terms uuid[];
  answer jsonb;
BEGIN
  IF room IS NULL OR room->>'course_id' IS NULL OR jsonb_typeof(room->'term_ids') IS DISTINCT FROM 'array' THEN
    RETURN NULL;
  END IF;
  terms := ARRAY(SELECT jsonb_array_elements_text(room->'term_ids'))::uuid[];
  EXECUTE format('SELECT jsonb_build_object(''sourcedId'', COALESCE($3->>''sourced_id'', $3->>''id''), ''title'', $3->>''name'',
        ''course'', (SELECT COALESCE(c."sourced_id", c."id"::text) FROM %s c WHERE c."school_id" = $1 AND c."id" = ($3->>''course_id'')::uuid),
        ''terms'', (SELECT jsonb_agg(COALESCE(a."sourced_id", a."id"::text) ORDER BY array_position($2, a."id")) FROM %s a WHERE a."school_id" = $1 AND a."id" = ANY($2)))',
      "teacher_feed_relation"('courses', school), "teacher_feed_relation"('academic_sessions', school))
    INTO answer USING school, terms, room;
  IF answer->'terms' IS NULL OR jsonb_typeof(answer->'terms') <> 'array' OR answer->>'course' IS NULL THEN
    RETURN NULL;
  END IF;
  RETURN answer;
END
$$;

-- The classroom's row as jsonb (NULL when it is gone), and the teachers assigned to it.
CREATE FUNCTION "teacher_feed_roster_room"(school uuid, room uuid) RETURNS jsonb LANGUAGE plpgsql
  SET "app.teacher_id" = ''
AS $$
DECLARE
  answer jsonb;
BEGIN
  EXECUTE format('SELECT to_jsonb(r) FROM %s r WHERE r."school_id" = $1 AND r."id" = $2', "teacher_feed_relation"('classrooms', school))
    INTO answer USING school, room;
  RETURN answer;
END
$$;

CREATE FUNCTION "teacher_feed_roster_teachers"(school uuid, room uuid) RETURNS uuid[] LANGUAGE plpgsql
  SET "app.teacher_id" = ''
AS $$
DECLARE
  answer uuid[];
BEGIN
  EXECUTE format('SELECT ARRAY(SELECT tc."teacher_id" FROM %s tc WHERE tc."school_id" = $1 AND tc."classroom_id" = $2)',
      "teacher_feed_relation"('teacher_classrooms', school))
    INTO answer USING school, room;
  RETURN answer;
END
$$;

-- Every enrollment of a classroom now, as a tombstone would keep it (class: the classroom's class key).
CREATE FUNCTION "teacher_feed_roster_enrollments"(school uuid, room uuid, class_key text)
  RETURNS TABLE ("sourced" text, "fields" jsonb) LANGUAGE plpgsql
  SET "app.teacher_id" = ''
AS $$
BEGIN
  RETURN QUERY EXECUTE format('SELECT COALESCE(s."enrollment_sourced_id", s."id"::text),
        jsonb_build_object(''user'', COALESCE(s."sourced_id", s."id"::text), ''class'', $3, ''role'', ''student'')
      FROM %s s WHERE s."school_id" = $1 AND s."classroom_id" = $2
    UNION ALL
    SELECT COALESCE(tc."sourced_id", tc."id"::text),
        jsonb_build_object(''user'', COALESCE(t."sourced_id", t."id"::text), ''class'', $3, ''role'', ''teacher'')
      FROM %s tc JOIN %s t ON t."school_id" = tc."school_id" AND t."id" = tc."teacher_id"
      WHERE tc."school_id" = $1 AND tc."classroom_id" = $2',
    "teacher_feed_relation"('students', school), "teacher_feed_relation"('teacher_classrooms', school), "teacher_feed_relation"('teachers', school))
    USING school, room, class_key;
END
$$;

-- Whether the school still exists: a school deleted takes its rows and their tombstones with it.
CREATE FUNCTION "teacher_feed_roster_school"(school uuid) RETURNS boolean LANGUAGE sql STABLE
AS $$ SELECT EXISTS (SELECT 1 FROM "schools" s WHERE s."id" = school) $$;

-- A student's enrollment ended: deleted, moved to another classroom, its classroom cleared, or its
-- sourcedId changed. A classroom with students cannot be deleted (the key restricts it).
CREATE FUNCTION "teacher_feed_roster_student"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = ''
AS $$
DECLARE
  class jsonb;
BEGIN
  IF OLD."classroom_id" IS NULL OR (TG_OP = 'UPDATE' AND NEW."classroom_id" IS NOT DISTINCT FROM OLD."classroom_id"
      AND COALESCE(NEW."enrollment_sourced_id", NEW."id"::text) = COALESCE(OLD."enrollment_sourced_id", OLD."id"::text)) THEN
    RETURN NULL;
  END IF;
  IF NOT "teacher_feed_roster_school"(OLD."school_id") THEN
    RETURN NULL;
  END IF;
  class := "teacher_feed_roster_class"(OLD."school_id", "teacher_feed_roster_room"(OLD."school_id", OLD."classroom_id"));
  IF class IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM "teacher_feed_roster_write"(OLD."school_id", ARRAY[NULL::uuid] || "teacher_feed_roster_teachers"(OLD."school_id", OLD."classroom_id"),
    'ENROLLMENT', COALESCE(OLD."enrollment_sourced_id", OLD."id"::text),
    jsonb_build_object('user', COALESCE(OLD."sourced_id", OLD."id"::text), 'class', class->>'sourcedId', 'role', 'student'));
  RETURN NULL;
END
$$;

-- A teacher's enrollment ended (unassigned, or its sourcedId, teacher or classroom changed): the
-- school's tombstone and the other teachers' of the classroom; and for the teacher, the classroom
-- left her reach: its class and every enrollment of it. A teacher or a classroom deleted wrote
-- them before (below): the cascade finds it gone and writes nothing.
CREATE FUNCTION "teacher_feed_roster_assignment"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = ''
AS $$
DECLARE
  class jsonb;
  teacher_key text;
  entry record;
BEGIN
  IF TG_OP = 'UPDATE' AND NEW."classroom_id" = OLD."classroom_id" AND NEW."teacher_id" = OLD."teacher_id"
      AND COALESCE(NEW."sourced_id", NEW."id"::text) = COALESCE(OLD."sourced_id", OLD."id"::text) THEN
    RETURN NULL;
  END IF;
  IF NOT "teacher_feed_roster_school"(OLD."school_id") THEN
    RETURN NULL;
  END IF;
  class := "teacher_feed_roster_class"(OLD."school_id", "teacher_feed_roster_room"(OLD."school_id", OLD."classroom_id"));
  IF class IS NULL THEN
    RETURN NULL;
  END IF;
  EXECUTE format('SELECT COALESCE(t."sourced_id", t."id"::text) FROM %s t WHERE t."school_id" = $1 AND t."id" = $2',
      "teacher_feed_relation"('teachers', OLD."school_id"))
    INTO teacher_key USING OLD."school_id", OLD."teacher_id";
  IF teacher_key IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM "teacher_feed_roster_write"(OLD."school_id", ARRAY[NULL::uuid, OLD."teacher_id"] || "teacher_feed_roster_teachers"(OLD."school_id", OLD."classroom_id"),
    'ENROLLMENT', COALESCE(OLD."sourced_id", OLD."id"::text), jsonb_build_object('user', teacher_key, 'class', class->>'sourcedId', 'role', 'teacher'));
  IF TG_OP = 'DELETE' OR NEW."classroom_id" <> OLD."classroom_id" OR NEW."teacher_id" <> OLD."teacher_id" THEN
    PERFORM "teacher_feed_roster_write"(OLD."school_id", ARRAY[OLD."teacher_id"], 'CLASS', class->>'sourcedId', class - 'sourcedId');
    FOR entry IN SELECT * FROM "teacher_feed_roster_enrollments"(OLD."school_id", OLD."classroom_id", class->>'sourcedId') LOOP
      PERFORM "teacher_feed_roster_write"(OLD."school_id", ARRAY[OLD."teacher_id"], 'ENROLLMENT', entry."sourced", entry."fields");
    END LOOP;
  END IF;
  RETURN NULL;
END
$$;

-- A classroom deleted, or no longer a class (its course or terms cleared), or its sourcedId changed:
-- its class, and (unless only its sourcedId changed) its enrollments, for the school and each
-- teacher assigned to it. Before the delete: the assignments the cascade removes still name them.
CREATE FUNCTION "teacher_feed_roster_classroom"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = ''
AS $$
DECLARE
  class jsonb;
  now_class jsonb;
  teachers uuid[];
  entry record;
BEGIN
  IF NOT "teacher_feed_roster_school"(OLD."school_id") THEN
    RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NULL END;
  END IF;
  class := "teacher_feed_roster_class"(OLD."school_id", to_jsonb(OLD));
  IF class IS NULL THEN
    RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NULL END;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    now_class := "teacher_feed_roster_class"(NEW."school_id", to_jsonb(NEW));
    IF now_class IS NOT NULL AND now_class->>'sourcedId' = class->>'sourcedId' THEN
      RETURN NULL;
    END IF;
  END IF;
  teachers := ARRAY[NULL::uuid] || "teacher_feed_roster_teachers"(OLD."school_id", OLD."id");
  PERFORM "teacher_feed_roster_write"(OLD."school_id", teachers, 'CLASS', class->>'sourcedId', class - 'sourcedId');
  IF TG_OP = 'DELETE' OR now_class IS NULL THEN
    FOR entry IN SELECT * FROM "teacher_feed_roster_enrollments"(OLD."school_id", OLD."id", class->>'sourcedId') LOOP
      PERFORM "teacher_feed_roster_write"(OLD."school_id", teachers, 'ENROLLMENT', entry."sourced", entry."fields");
    END LOOP;
  END IF;
  RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NULL END;
END
$$;

-- A teacher deleted: her enrollments, for the school and her classrooms' other teachers, before the
-- cascade removes her assignments.
CREATE FUNCTION "teacher_feed_roster_teacher"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = ''
AS $$
DECLARE
  assignment record;
  class jsonb;
BEGIN
  IF NOT "teacher_feed_roster_school"(OLD."school_id") THEN
    RETURN OLD;
  END IF;
  FOR assignment IN EXECUTE format('SELECT tc."classroom_id", COALESCE(tc."sourced_id", tc."id"::text) AS "sourced" FROM %s tc
      WHERE tc."school_id" = $1 AND tc."teacher_id" = $2', "teacher_feed_relation"('teacher_classrooms', OLD."school_id"))
    USING OLD."school_id", OLD."id" LOOP
    class := "teacher_feed_roster_class"(OLD."school_id", "teacher_feed_roster_room"(OLD."school_id", assignment."classroom_id"));
    CONTINUE WHEN class IS NULL;
    PERFORM "teacher_feed_roster_write"(OLD."school_id",
      ARRAY[NULL::uuid] || array_remove("teacher_feed_roster_teachers"(OLD."school_id", assignment."classroom_id"), OLD."id"),
      'ENROLLMENT', assignment."sourced", jsonb_build_object('user', COALESCE(OLD."sourced_id", OLD."id"::text), 'class', class->>'sourcedId', 'role', 'teacher'));
  END LOOP;
  RETURN OLD;
END
$$;

-- An academic session or a course deleted (the import's tobedeleted rows): the school's tombstone.
CREATE FUNCTION "teacher_feed_roster_calendar"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = ''
AS $$
BEGIN
  IF NOT "teacher_feed_roster_school"(OLD."school_id") THEN
    RETURN NULL;
  END IF;
  IF TG_ARGV[0] = 'ACADEMIC_SESSION' THEN
    PERFORM "teacher_feed_roster_write"(OLD."school_id", ARRAY[NULL::uuid], 'ACADEMIC_SESSION', COALESCE(OLD."sourced_id", OLD."id"::text),
      jsonb_build_object('title', OLD."title", 'type', OLD."type"::text, 'startDate', to_char(OLD."start_date", 'YYYY-MM-DD'),
        'endDate', to_char(OLD."end_date", 'YYYY-MM-DD'), 'schoolYear', OLD."school_year"::text));
  ELSE
    PERFORM "teacher_feed_roster_write"(OLD."school_id", ARRAY[NULL::uuid], 'COURSE', COALESCE(OLD."sourced_id", OLD."id"::text),
      jsonb_strip_nulls(jsonb_build_object('title', OLD."title", 'courseCode', OLD."course_code")));
  END IF;
  RETURN NULL;
END
$$;

-- The WHEN clauses spare the function's call on the writes that end nothing (an import's updates).
CREATE TRIGGER "students_roster_tombstones_updated" AFTER UPDATE ON "students"
  FOR EACH ROW WHEN (OLD."classroom_id" IS NOT NULL AND (NEW."classroom_id" IS DISTINCT FROM OLD."classroom_id"
    OR NEW."enrollment_sourced_id" IS DISTINCT FROM OLD."enrollment_sourced_id"))
  EXECUTE FUNCTION "teacher_feed_roster_student"();
CREATE TRIGGER "students_roster_tombstones_deleted" AFTER DELETE ON "students"
  FOR EACH ROW WHEN (OLD."classroom_id" IS NOT NULL) EXECUTE FUNCTION "teacher_feed_roster_student"();
CREATE TRIGGER "teacher_classrooms_roster_tombstones_updated" AFTER UPDATE ON "teacher_classrooms"
  FOR EACH ROW WHEN (NEW."classroom_id" <> OLD."classroom_id" OR NEW."teacher_id" <> OLD."teacher_id" OR NEW."sourced_id" IS DISTINCT FROM OLD."sourced_id")
  EXECUTE FUNCTION "teacher_feed_roster_assignment"();
CREATE TRIGGER "teacher_classrooms_roster_tombstones_deleted" AFTER DELETE ON "teacher_classrooms"
  FOR EACH ROW EXECUTE FUNCTION "teacher_feed_roster_assignment"();
CREATE TRIGGER "classrooms_roster_tombstones_deleted" BEFORE DELETE ON "classrooms"
  FOR EACH ROW WHEN (OLD."course_id" IS NOT NULL) EXECUTE FUNCTION "teacher_feed_roster_classroom"();
CREATE TRIGGER "classrooms_roster_tombstones_updated" AFTER UPDATE ON "classrooms"
  FOR EACH ROW WHEN (OLD."course_id" IS NOT NULL AND (NEW."course_id" IS DISTINCT FROM OLD."course_id"
    OR NEW."term_ids" IS DISTINCT FROM OLD."term_ids" OR NEW."sourced_id" IS DISTINCT FROM OLD."sourced_id"))
  EXECUTE FUNCTION "teacher_feed_roster_classroom"();
CREATE TRIGGER "teachers_roster_tombstones" BEFORE DELETE ON "teachers"
  FOR EACH ROW EXECUTE FUNCTION "teacher_feed_roster_teacher"();
CREATE TRIGGER "academic_sessions_roster_tombstones" AFTER DELETE ON "academic_sessions"
  FOR EACH ROW EXECUTE FUNCTION "teacher_feed_roster_calendar"('ACADEMIC_SESSION');
CREATE TRIGGER "courses_roster_tombstones" AFTER DELETE ON "courses"
  FOR EACH ROW EXECUTE FUNCTION "teacher_feed_roster_calendar"('COURSE');

-- The key last (migration academic_sessions_and_courses says why, for Citus); no ON UPDATE CASCADE.
ALTER TABLE "roster_tombstones" ADD CONSTRAINT "roster_tombstones_school_id_fkey" FOREIGN KEY ("school_id") REFERENCES "schools"("id") ON DELETE CASCADE;
