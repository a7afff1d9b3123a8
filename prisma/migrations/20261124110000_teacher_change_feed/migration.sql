-- CreateTable
CREATE TABLE "teacher_changes" (
    "school_id" UUID NOT NULL,
    "teacher_id" UUID NOT NULL,
    "id" BIGSERIAL NOT NULL,
    "type" "ChangeType" NOT NULL,
    "record_type" "RecordType" NOT NULL,
    "record_id" UUID NOT NULL,
    "sourced_id" TEXT,
    "student_number" TEXT,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "teacher_changes_pkey" PRIMARY KEY ("school_id","id")
);

-- CreateIndex
CREATE INDEX "teacher_changes_school_id_teacher_id_id_idx" ON "teacher_changes"("school_id", "teacher_id", "id");

-- CreateIndex
CREATE INDEX "teacher_changes_school_id_at_idx" ON "teacher_changes"("school_id", "at");

-- AddForeignKey
ALTER TABLE "teacher_changes" ADD CONSTRAINT "teacher_changes_school_id_fkey" FOREIGN KEY ("school_id") REFERENCES "schools"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Added by hand (Prisma does not model policies, functions or triggers).

-- A teacher's change feed: for each write to students, teachers, classrooms and
-- teacher_classrooms, one row per teacher whose reach the write touches (docs/api/change-feed.md):
-- CREATED when a record enters the teacher's reach (created in or moved into one of their
-- classrooms, the teacher newly assigned to its classroom, a colleague newly sharing a classroom),
-- UPDATED when a record in reach changes (for a teacher record, its assignments too), DELETED when
-- it leaves (deleted, moved out, the assignment removed, no classroom shared any more). A teacher's
-- own record is always in their reach. A consumer that applies the feed therefore holds what the
-- teacher's lists show. An update that changes nothing but updated_at writes nothing, as in the
-- school's feed. The rows go in with no notice of their own: the write they come with announces
-- the school already (school_data_changed).
--
-- Reach is computed from the tables as the statement left them, and "before" from the same tables
-- with the statement's transition tables undone, so each statement writes exactly the difference
-- it made, cascades included. Deleting a teacher or a classroom cascades to teacher_classrooms
-- after the row is gone, when its sourced_id can no longer be read: so a BEFORE DELETE row trigger
-- tells the affected teachers (a deleted teacher's own feed gets their whole reach as DELETED),
-- and the cascaded statement skips audiences and records that no longer exist.
--
-- Row-level security: a teacher's transaction (app.teacher_id set) reads its own rows; no other
-- session reads any. The trigger functions write and prune with app.writing_teacher_feed set by
-- their SET clause, for their own duration only, and with app.teacher_id cleared, so that they see
-- the school's assignments whoever writes.

-- Ids come from a sequence, so they are not dense; they are drawn under the school's row lock,
-- taken first (FOR NO KEY UPDATE: the lock the school feed's UPDATE takes, which the foreign keys'
-- KEY SHARE does not wait for). A second writer of the school waits for the first to commit before
-- drawing, so within a school ids commit in increasing order and a reader following them never
-- passes a row that commits later with a lower id. Statements after the lock read a fresh snapshot
-- (READ COMMITTED), so two writers of one school (a student moved into a classroom while a teacher
-- is assigned to it) each see the other's committed write, and the later one writes the entry. (A
-- REPEATABLE READ writer cannot lock a school row changed since its snapshot: it fails and retries.)
--
-- Retention: at least 90 days. A statement-level write prunes its school's rows older than 91 days,
-- except each teacher's newest such row, which stays as the mark of how far the teacher's feed was
-- pruned: every pruned row of a teacher lies below the mark, so the API refuses a cursor below the
-- teacher's newest row older than 90 days (src/graphql/resolvers/changes.ts). The day between the
-- two is a margin for the API's clock against the database's. Returns the schools locked (a school
-- being deleted has none, and gets no rows).
CREATE FUNCTION "teacher_feed_open"(school_ids uuid[], prune boolean) RETURNS uuid[] LANGUAGE plpgsql AS $$
DECLARE
  locked uuid[];
BEGIN
  SELECT coalesce(array_agg(s."id"), '{}') INTO locked FROM (
    SELECT "id" FROM "schools" WHERE "id" = ANY (school_ids) ORDER BY "id" FOR NO KEY UPDATE
  ) s;
  IF prune AND cardinality(locked) > 0 THEN
    DELETE FROM "teacher_changes" old USING (
      SELECT "school_id", "teacher_id", max("id") AS "mark" FROM "teacher_changes"
      WHERE "school_id" = ANY (locked) AND "at" < now() - interval '91 days'
      GROUP BY "school_id", "teacher_id"
    ) m
    WHERE old."school_id" = m."school_id" AND old."teacher_id" = m."teacher_id"
      AND old."at" < now() - interval '91 days' AND old."id" < m."mark";
  END IF;
  RETURN locked;
END
$$;

-- Students: the teachers of the classroom a student is created in, moved out of or into, updated
-- or deleted in.
CREATE FUNCTION "teacher_feed_students"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
DECLARE
  locked uuid[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    locked := "teacher_feed_open"(ARRAY(SELECT DISTINCT "school_id" FROM "new_rows"), true);
    INSERT INTO "teacher_changes" ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id", "student_number")
    SELECT r."school_id", tc."teacher_id", 'CREATED', 'STUDENT', r."id", r."sourced_id", r."student_number"
    FROM "new_rows" r
    JOIN "teacher_classrooms" tc ON tc."school_id" = r."school_id" AND tc."classroom_id" = r."classroom_id"
    WHERE r."school_id" = ANY (locked)
    ORDER BY tc."teacher_id", r."id";
  ELSIF TG_OP = 'DELETE' THEN
    locked := "teacher_feed_open"(ARRAY(SELECT DISTINCT "school_id" FROM "old_rows"), true);
    INSERT INTO "teacher_changes" ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id", "student_number")
    SELECT o."school_id", tc."teacher_id", 'DELETED', 'STUDENT', o."id", o."sourced_id", o."student_number"
    FROM "old_rows" o
    JOIN "teacher_classrooms" tc ON tc."school_id" = o."school_id" AND tc."classroom_id" = o."classroom_id"
    WHERE o."school_id" = ANY (locked)
    ORDER BY tc."teacher_id", o."id";
  ELSE
    locked := "teacher_feed_open"(ARRAY(SELECT DISTINCT "school_id" FROM "new_rows"), true);
    INSERT INTO "teacher_changes" ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id", "student_number")
    SELECT m."school_id", tc."teacher_id",
           CASE WHEN bool_or(tc."classroom_id" = m."was_in") IS TRUE AND bool_or(tc."classroom_id" = m."is_in") IS TRUE THEN 'UPDATED'
                WHEN bool_or(tc."classroom_id" = m."is_in") IS TRUE THEN 'CREATED'
                ELSE 'DELETED' END::"ChangeType",
           'STUDENT', m."id", m."sourced_id", m."student_number"
    FROM (
      SELECT r."school_id", r."id", r."sourced_id", r."student_number", o."classroom_id" AS "was_in", r."classroom_id" AS "is_in"
      FROM "new_rows" r JOIN "old_rows" o ON o."school_id" = r."school_id" AND o."id" = r."id"
      WHERE r."school_id" = ANY (locked)
        AND (to_jsonb(r) - 'updated_at') IS DISTINCT FROM (to_jsonb(o) - 'updated_at')
    ) m
    JOIN "teacher_classrooms" tc ON tc."school_id" = m."school_id" AND tc."classroom_id" IN (m."was_in", m."is_in")
    GROUP BY m."school_id", m."id", m."sourced_id", m."student_number", tc."teacher_id"
    ORDER BY tc."teacher_id", m."id";
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER "students_teacher_feed_created" AFTER INSERT ON "students" REFERENCING NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "teacher_feed_students"();
CREATE TRIGGER "students_teacher_feed_updated" AFTER UPDATE ON "students" REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "teacher_feed_students"();
CREATE TRIGGER "students_teacher_feed_deleted" AFTER DELETE ON "students" REFERENCING OLD TABLE AS "old_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "teacher_feed_students"();

-- Classrooms: a new one has no teacher yet (an assignment brings it into a reach); an update goes
-- to its teachers.
CREATE FUNCTION "teacher_feed_classrooms_updated"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
DECLARE
  locked uuid[];
BEGIN
  locked := "teacher_feed_open"(ARRAY(SELECT DISTINCT "school_id" FROM "new_rows"), true);
  INSERT INTO "teacher_changes" ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id")
  SELECT r."school_id", tc."teacher_id", 'UPDATED', 'CLASSROOM', r."id", r."sourced_id"
  FROM "new_rows" r
  JOIN "old_rows" o ON o."school_id" = r."school_id" AND o."id" = r."id"
  JOIN "teacher_classrooms" tc ON tc."school_id" = r."school_id" AND tc."classroom_id" = r."id"
  WHERE r."school_id" = ANY (locked)
    AND (to_jsonb(r) - 'updated_at') IS DISTINCT FROM (to_jsonb(o) - 'updated_at')
  ORDER BY tc."teacher_id", r."id";
  RETURN NULL;
END
$$;

CREATE TRIGGER "classrooms_teacher_feed_updated" AFTER UPDATE ON "classrooms" REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "teacher_feed_classrooms_updated"();

-- A classroom deleted: its teachers, before the cascade removes their assignments. (Its students
-- hold it: the foreign key restricts.)
CREATE FUNCTION "teacher_feed_classroom_deleted"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
BEGIN
  IF OLD."school_id" = ANY ("teacher_feed_open"(ARRAY[OLD."school_id"], false)) THEN
    INSERT INTO "teacher_changes" ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id")
    SELECT OLD."school_id", tc."teacher_id", 'DELETED', 'CLASSROOM', OLD."id", OLD."sourced_id"
    FROM "teacher_classrooms" tc
    WHERE tc."school_id" = OLD."school_id" AND tc."classroom_id" = OLD."id"
      AND EXISTS (SELECT 1 FROM "teachers" a WHERE a."school_id" = tc."school_id" AND a."id" = tc."teacher_id")
    ORDER BY tc."teacher_id";
  END IF;
  RETURN OLD;
END
$$;

CREATE TRIGGER "classrooms_teacher_feed_deleting" BEFORE DELETE ON "classrooms"
  FOR EACH ROW EXECUTE FUNCTION "teacher_feed_classroom_deleted"();

-- Teachers: a new teacher is in their own reach; an update goes to the teacher and everyone who
-- shares a classroom with them.
CREATE FUNCTION "teacher_feed_teachers"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
DECLARE
  locked uuid[];
BEGIN
  locked := "teacher_feed_open"(ARRAY(SELECT DISTINCT "school_id" FROM "new_rows"), true);
  IF TG_OP = 'INSERT' THEN
    INSERT INTO "teacher_changes" ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id")
    SELECT r."school_id", r."id", 'CREATED', 'TEACHER', r."id", r."sourced_id"
    FROM "new_rows" r
    WHERE r."school_id" = ANY (locked)
    ORDER BY r."id";
  ELSE
    INSERT INTO "teacher_changes" ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id")
    SELECT r."school_id", a."teacher_id", 'UPDATED', 'TEACHER', r."id", r."sourced_id"
    FROM "new_rows" r
    JOIN "old_rows" o ON o."school_id" = r."school_id" AND o."id" = r."id"
    CROSS JOIN LATERAL (
      SELECT r."id" AS "teacher_id"
      UNION
      SELECT other."teacher_id"
      FROM "teacher_classrooms" own
      JOIN "teacher_classrooms" other ON other."school_id" = own."school_id" AND other."classroom_id" = own."classroom_id"
      WHERE own."school_id" = r."school_id" AND own."teacher_id" = r."id"
    ) a
    WHERE r."school_id" = ANY (locked)
      AND (to_jsonb(r) - 'updated_at') IS DISTINCT FROM (to_jsonb(o) - 'updated_at')
    ORDER BY a."teacher_id", r."id";
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER "teachers_teacher_feed_created" AFTER INSERT ON "teachers" REFERENCING NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "teacher_feed_teachers"();
CREATE TRIGGER "teachers_teacher_feed_updated" AFTER UPDATE ON "teachers" REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "teacher_feed_teachers"();

-- A teacher deleted, before the cascade removes their assignments: the teacher's own feed loses
-- the whole reach (a user who was this teacher then holds nothing, as their lists show), and each
-- colleague loses the teacher.
CREATE FUNCTION "teacher_feed_teacher_deleted"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
BEGIN
  IF OLD."school_id" = ANY ("teacher_feed_open"(ARRAY[OLD."school_id"], false)) THEN
    INSERT INTO "teacher_changes" ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id", "student_number")
    WITH "rooms" AS (
      SELECT tc."classroom_id" FROM "teacher_classrooms" tc
      WHERE tc."school_id" = OLD."school_id" AND tc."teacher_id" = OLD."id"
    ), "colleagues" AS (
      SELECT DISTINCT t."id", t."sourced_id"
      FROM "teacher_classrooms" tc
      JOIN "teachers" t ON t."school_id" = tc."school_id" AND t."id" = tc."teacher_id"
      WHERE tc."school_id" = OLD."school_id" AND tc."classroom_id" IN (SELECT "classroom_id" FROM "rooms") AND tc."teacher_id" <> OLD."id"
    ), "entries" AS (
      SELECT OLD."id" AS "audience", 'TEACHER'::"RecordType" AS "record_type", OLD."id" AS "record_id", OLD."sourced_id" AS "sourced_id", NULL::text AS "student_number"
      UNION ALL
      SELECT OLD."id", 'CLASSROOM', c."id", c."sourced_id", NULL
      FROM "classrooms" c WHERE c."school_id" = OLD."school_id" AND c."id" IN (SELECT "classroom_id" FROM "rooms")
      UNION ALL
      SELECT OLD."id", 'STUDENT', s."id", s."sourced_id", s."student_number"
      FROM "students" s WHERE s."school_id" = OLD."school_id" AND s."classroom_id" IN (SELECT "classroom_id" FROM "rooms")
      UNION ALL
      SELECT OLD."id", 'TEACHER', c."id", c."sourced_id", NULL FROM "colleagues" c
      UNION ALL
      SELECT c."id", 'TEACHER', OLD."id", OLD."sourced_id", NULL FROM "colleagues" c
    )
    SELECT OLD."school_id", e."audience", 'DELETED', e."record_type", e."record_id", e."sourced_id", e."student_number"
    FROM "entries" e
    ORDER BY e."audience", e."record_type", e."record_id";
  END IF;
  RETURN OLD;
END
$$;

CREATE TRIGGER "teachers_teacher_feed_deleting" BEFORE DELETE ON "teachers"
  FOR EACH ROW EXECUTE FUNCTION "teacher_feed_teacher_deleted"();

-- Assignments: the difference the statement made to the reach of every teacher it concerns. For
-- each assignment added or removed (or changed: its role), the teacher and the classroom, its
-- students and its teachers (each to the other), and the teacher's own record to everyone who has
-- it in reach before or after (an assignment is part of the teacher record: UPDATED while in reach).
-- "after" is teacher_classrooms now, "before" the same with the statement undone, both limited to
-- the teachers concerned (with all their assignments).
CREATE FUNCTION "teacher_feed_assignments"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
DECLARE
  nothing CONSTANT text := '(SELECT * FROM "teacher_classrooms" WHERE false) "none"';
  added text := CASE WHEN TG_OP = 'DELETE' THEN nothing ELSE '"new_rows"' END;
  removed text := CASE WHEN TG_OP = 'INSERT' THEN nothing ELSE '"old_rows"' END;
  locked uuid[];
BEGIN
  EXECUTE format('SELECT "teacher_feed_open"(ARRAY(SELECT "school_id" FROM %s UNION SELECT "school_id" FROM %s), true)', added, removed)
    INTO locked;
  EXECUTE format($sql$
    WITH "n" AS (
      SELECT * FROM %1$s WHERE "school_id" = ANY ($1) EXCEPT SELECT * FROM %2$s
    ), "o" AS (
      SELECT * FROM %2$s WHERE "school_id" = ANY ($1) EXCEPT SELECT * FROM %1$s
    ), "d" AS (
      SELECT "school_id", "teacher_id", "classroom_id" FROM "n"
      UNION SELECT "school_id", "teacher_id", "classroom_id" FROM "o"
    ), "rooms" AS (
      SELECT tc."school_id", tc."classroom_id" FROM "teacher_classrooms" tc
      WHERE (tc."school_id", tc."teacher_id") IN (SELECT "school_id", "teacher_id" FROM "d")
      UNION SELECT "school_id", "classroom_id" FROM "o"
    ), "concerned" AS (
      SELECT tc."school_id", tc."teacher_id" FROM "teacher_classrooms" tc JOIN "rooms" r USING ("school_id", "classroom_id")
      UNION SELECT "school_id", "teacher_id" FROM "o"
    ), "after" AS (
      SELECT tc."school_id", tc."teacher_id", tc."classroom_id" FROM "teacher_classrooms" tc
      WHERE (tc."school_id", tc."teacher_id") IN (SELECT "school_id", "teacher_id" FROM "concerned")
    ), "before" AS (
      (SELECT * FROM "after" EXCEPT SELECT "school_id", "teacher_id", "classroom_id" FROM "n")
      UNION SELECT "school_id", "teacher_id", "classroom_id" FROM "o"
    ), "assigned" AS (
      SELECT false AS "later", * FROM "before" UNION ALL SELECT true, * FROM "after"
    ), "reached" AS (
      SELECT "later", "school_id", "teacher_id" AS "audience", 'CLASSROOM'::"RecordType" AS "record_type", "classroom_id" AS "record_id"
      FROM "assigned"
      UNION ALL
      SELECT a."later", a."school_id", a."teacher_id", 'STUDENT', s."id"
      FROM "assigned" a JOIN "students" s ON s."school_id" = a."school_id" AND s."classroom_id" = a."classroom_id"
      UNION ALL
      SELECT a."later", a."school_id", a."teacher_id", 'TEACHER', b."teacher_id"
      FROM "assigned" a JOIN "assigned" b ON b."later" = a."later" AND b."school_id" = a."school_id" AND b."classroom_id" = a."classroom_id"
    ), "candidates" AS (
      SELECT "school_id", "teacher_id" AS "audience", 'CLASSROOM'::"RecordType" AS "record_type", "classroom_id" AS "record_id" FROM "d"
      UNION
      SELECT d."school_id", d."teacher_id", 'STUDENT', s."id"
      FROM "d" JOIN "students" s ON s."school_id" = d."school_id" AND s."classroom_id" = d."classroom_id"
      UNION
      SELECT d."school_id", d."teacher_id", 'TEACHER', a."teacher_id"
      FROM "d" JOIN "assigned" a ON a."school_id" = d."school_id" AND a."classroom_id" = d."classroom_id"
      UNION
      -- the teacher's own record, to everyone who shares a classroom with them before or after
      SELECT d."school_id", b."teacher_id", 'TEACHER', d."teacher_id"
      FROM "d"
      JOIN "assigned" a ON a."school_id" = d."school_id" AND a."teacher_id" = d."teacher_id"
      JOIN "assigned" b ON b."school_id" = a."school_id" AND b."classroom_id" = a."classroom_id"
      UNION
      SELECT "school_id", "teacher_id", 'TEACHER', "teacher_id" FROM "d"
    ), "entries" AS (
      SELECT c."school_id", c."audience", c."record_type", c."record_id",
             (c."record_type" = 'TEACHER' AND c."audience" = c."record_id") OR coalesce(bool_or(NOT r."later"), false) AS "was",
             (c."record_type" = 'TEACHER' AND c."audience" = c."record_id") OR coalesce(bool_or(r."later"), false) AS "is",
             c."record_type" = 'TEACHER' AND (c."school_id", c."record_id") IN (SELECT "school_id", "teacher_id" FROM "d") AS "changed"
      FROM "candidates" c
      LEFT JOIN "reached" r ON r."school_id" = c."school_id" AND r."audience" = c."audience"
        AND r."record_type" = c."record_type" AND r."record_id" = c."record_id"
      GROUP BY c."school_id", c."audience", c."record_type", c."record_id"
    )
    INSERT INTO "teacher_changes" ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id", "student_number")
    SELECT e."school_id", e."audience",
           CASE WHEN e."was" AND e."is" THEN 'UPDATED' WHEN e."is" THEN 'CREATED' ELSE 'DELETED' END::"ChangeType",
           e."record_type", e."record_id", coalesce(s."sourced_id", t."sourced_id", c."sourced_id"), s."student_number"
    FROM "entries" e
    LEFT JOIN "students" s ON e."record_type" = 'STUDENT' AND s."school_id" = e."school_id" AND s."id" = e."record_id"
    LEFT JOIN "teachers" t ON e."record_type" = 'TEACHER' AND t."school_id" = e."school_id" AND t."id" = e."record_id"
    LEFT JOIN "classrooms" c ON e."record_type" = 'CLASSROOM' AND c."school_id" = e."school_id" AND c."id" = e."record_id"
    WHERE (e."was" <> e."is" OR (e."was" AND e."changed"))
      -- A record or teacher deleted by this statement's cascade was told by its BEFORE DELETE trigger.
      AND coalesce(s."id", t."id", c."id") IS NOT NULL
      AND EXISTS (SELECT 1 FROM "teachers" a WHERE a."school_id" = e."school_id" AND a."id" = e."audience")
    ORDER BY e."audience", e."record_type", e."record_id"
    $sql$, added, removed) USING locked;
  RETURN NULL;
END
$$;

CREATE TRIGGER "teacher_classrooms_teacher_feed_created" AFTER INSERT ON "teacher_classrooms" REFERENCING NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "teacher_feed_assignments"();
CREATE TRIGGER "teacher_classrooms_teacher_feed_updated" AFTER UPDATE ON "teacher_classrooms" REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "teacher_feed_assignments"();
CREATE TRIGGER "teacher_classrooms_teacher_feed_deleted" AFTER DELETE ON "teacher_classrooms" REFERENCING OLD TABLE AS "old_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "teacher_feed_assignments"();

-- Wall 2: a teacher's transaction reads the teacher's own rows of its school; the trigger functions
-- above write and prune. No other session reads or writes any row.
ALTER TABLE "teacher_changes" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "teacher_changes" FORCE ROW LEVEL SECURITY;
CREATE POLICY "teacher_isolation" ON "teacher_changes" FOR SELECT
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND "teacher_id" = NULLIF(current_setting('app.teacher_id', true), '')::uuid);
CREATE POLICY "teacher_feed_writer" ON "teacher_changes"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND current_setting('app.writing_teacher_feed', true) = 'on')
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND current_setting('app.writing_teacher_feed', true) = 'on');
