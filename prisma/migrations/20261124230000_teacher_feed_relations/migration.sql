-- Added by hand (Prisma does not model functions).
--
-- A teacher's change feed (migration teacher_change_feed) with the same logic, written so that it
-- also runs on a Citus cluster: each function names the tables it reads and writes through
-- teacher_feed_relation(), and runs its statements as dynamic SQL. On PostgreSQL the names are the
-- tables themselves. `school-data citus distribute` replaces teacher_feed_relation() by one that
-- names the school's co-located shards on the worker the trigger fires on (src/db/citus.ts): there
-- a statement that names a distributed table is planned by Citus, which cannot see the statement's
-- transition tables ("could not find named tuplestore"), while one that names the shards is plain
-- PostgreSQL on the worker. A statement's rows are one table's (on Citus, one shard's), so the
-- schools it touches share one set of names: the functions look them up once, for the first.
--
-- What each function writes, and why, is described in the migration teacher_change_feed; only
-- the form changes here.

-- The relation to read or write for a school: on PostgreSQL, the table.
CREATE FUNCTION "teacher_feed_relation"(relation text, school uuid) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT format('%I', relation) $$;

CREATE OR REPLACE FUNCTION "teacher_feed_open"(school_ids uuid[], prune boolean) RETURNS uuid[] LANGUAGE plpgsql AS $$
DECLARE
  locked uuid[];
BEGIN
  IF cardinality(school_ids) IS DISTINCT FROM 0 AND school_ids[1] IS NOT NULL THEN
    EXECUTE format('SELECT coalesce(array_agg(s."id"), ''{}'') FROM (
        SELECT "id" FROM %s WHERE "id" = ANY ($1) ORDER BY "id" FOR NO KEY UPDATE
      ) s', "teacher_feed_relation"('schools', school_ids[1]))
      INTO locked USING school_ids;
  END IF;
  IF prune AND cardinality(locked) > 0 THEN
    EXECUTE format($sql$
      DELETE FROM %1$s old USING (
        SELECT "school_id", "teacher_id", max("id") AS "mark" FROM %1$s
        WHERE "school_id" = ANY ($1) AND "at" < now() - interval '91 days'
        GROUP BY "school_id", "teacher_id"
      ) m
      WHERE old."school_id" = m."school_id" AND old."teacher_id" = m."teacher_id"
        AND old."at" < now() - interval '91 days' AND old."id" < m."mark"
      $sql$, "teacher_feed_relation"('teacher_changes', locked[1]))
      USING locked;
  END IF;
  RETURN coalesce(locked, '{}');
END
$$;

CREATE OR REPLACE FUNCTION "teacher_feed_students"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
DECLARE
  locked uuid[];
  assigned text;
  feed text;
BEGIN
  IF TG_OP = 'DELETE' THEN
    locked := "teacher_feed_open"(ARRAY(SELECT DISTINCT "school_id" FROM "old_rows"), true);
  ELSE
    locked := "teacher_feed_open"(ARRAY(SELECT DISTINCT "school_id" FROM "new_rows"), true);
  END IF;
  IF cardinality(locked) = 0 THEN
    RETURN NULL;
  END IF;
  assigned := "teacher_feed_relation"('teacher_classrooms', locked[1]);
  feed := "teacher_feed_relation"('teacher_changes', locked[1]);
  IF TG_OP = 'INSERT' THEN
    EXECUTE format($sql$
      INSERT INTO %2$s ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id", "student_number")
      SELECT r."school_id", tc."teacher_id", 'CREATED', 'STUDENT', r."id", r."sourced_id", r."student_number"
      FROM "new_rows" r
      JOIN %1$s tc ON tc."school_id" = r."school_id" AND tc."classroom_id" = r."classroom_id"
      WHERE r."school_id" = ANY ($1)
      ORDER BY tc."teacher_id", r."id"
      $sql$, assigned, feed) USING locked;
  ELSIF TG_OP = 'DELETE' THEN
    EXECUTE format($sql$
      INSERT INTO %2$s ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id", "student_number")
      SELECT o."school_id", tc."teacher_id", 'DELETED', 'STUDENT', o."id", o."sourced_id", o."student_number"
      FROM "old_rows" o
      JOIN %1$s tc ON tc."school_id" = o."school_id" AND tc."classroom_id" = o."classroom_id"
      WHERE o."school_id" = ANY ($1)
      ORDER BY tc."teacher_id", o."id"
      $sql$, assigned, feed) USING locked;
  ELSE
    EXECUTE format($sql$
      INSERT INTO %2$s ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id", "student_number")
      SELECT m."school_id", tc."teacher_id",
             CASE WHEN bool_or(tc."classroom_id" = m."was_in") IS TRUE AND bool_or(tc."classroom_id" = m."is_in") IS TRUE THEN 'UPDATED'
                  WHEN bool_or(tc."classroom_id" = m."is_in") IS TRUE THEN 'CREATED'
                  ELSE 'DELETED' END::"ChangeType",
             'STUDENT', m."id", m."sourced_id", m."student_number"
      FROM (
        SELECT r."school_id", r."id", r."sourced_id", r."student_number", o."classroom_id" AS "was_in", r."classroom_id" AS "is_in"
        FROM "new_rows" r JOIN "old_rows" o ON o."school_id" = r."school_id" AND o."id" = r."id"
        WHERE r."school_id" = ANY ($1)
          AND (to_jsonb(r) - 'updated_at') IS DISTINCT FROM (to_jsonb(o) - 'updated_at')
      ) m
      JOIN %1$s tc ON tc."school_id" = m."school_id" AND tc."classroom_id" IN (m."was_in", m."is_in")
      GROUP BY m."school_id", m."id", m."sourced_id", m."student_number", tc."teacher_id"
      ORDER BY tc."teacher_id", m."id"
      $sql$, assigned, feed) USING locked;
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION "teacher_feed_classrooms_updated"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
DECLARE
  locked uuid[];
BEGIN
  locked := "teacher_feed_open"(ARRAY(SELECT DISTINCT "school_id" FROM "new_rows"), true);
  IF cardinality(locked) = 0 THEN
    RETURN NULL;
  END IF;
  EXECUTE format($sql$
    INSERT INTO %2$s ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id")
    SELECT r."school_id", tc."teacher_id", 'UPDATED', 'CLASSROOM', r."id", r."sourced_id"
    FROM "new_rows" r
    JOIN "old_rows" o ON o."school_id" = r."school_id" AND o."id" = r."id"
    JOIN %1$s tc ON tc."school_id" = r."school_id" AND tc."classroom_id" = r."id"
    WHERE r."school_id" = ANY ($1)
      AND (to_jsonb(r) - 'updated_at') IS DISTINCT FROM (to_jsonb(o) - 'updated_at')
    ORDER BY tc."teacher_id", r."id"
    $sql$, "teacher_feed_relation"('teacher_classrooms', locked[1]), "teacher_feed_relation"('teacher_changes', locked[1]))
    USING locked;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION "teacher_feed_classroom_deleted"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
BEGIN
  IF OLD."school_id" = ANY ("teacher_feed_open"(ARRAY[OLD."school_id"], false)) THEN
    EXECUTE format($sql$
      INSERT INTO %3$s ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id")
      SELECT $1, tc."teacher_id", 'DELETED', 'CLASSROOM', $2, $3
      FROM %1$s tc
      WHERE tc."school_id" = $1 AND tc."classroom_id" = $2
        AND EXISTS (SELECT 1 FROM %2$s a WHERE a."school_id" = tc."school_id" AND a."id" = tc."teacher_id")
      ORDER BY tc."teacher_id"
      $sql$, "teacher_feed_relation"('teacher_classrooms', OLD."school_id"), "teacher_feed_relation"('teachers', OLD."school_id"),
      "teacher_feed_relation"('teacher_changes', OLD."school_id"))
      USING OLD."school_id", OLD."id", OLD."sourced_id";
  END IF;
  RETURN OLD;
END
$$;

CREATE OR REPLACE FUNCTION "teacher_feed_teachers"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
DECLARE
  locked uuid[];
BEGIN
  locked := "teacher_feed_open"(ARRAY(SELECT DISTINCT "school_id" FROM "new_rows"), true);
  IF cardinality(locked) = 0 THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    EXECUTE format($sql$
      INSERT INTO %1$s ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id")
      SELECT r."school_id", r."id", 'CREATED', 'TEACHER', r."id", r."sourced_id"
      FROM "new_rows" r
      WHERE r."school_id" = ANY ($1)
      ORDER BY r."id"
      $sql$, "teacher_feed_relation"('teacher_changes', locked[1]))
      USING locked;
  ELSE
    EXECUTE format($sql$
      INSERT INTO %2$s ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id")
      SELECT r."school_id", a."teacher_id", 'UPDATED', 'TEACHER', r."id", r."sourced_id"
      FROM "new_rows" r
      JOIN "old_rows" o ON o."school_id" = r."school_id" AND o."id" = r."id"
      CROSS JOIN LATERAL (
        SELECT r."id" AS "teacher_id"
        UNION
        SELECT other."teacher_id"
        FROM %1$s own
        JOIN %1$s other ON other."school_id" = own."school_id" AND other."classroom_id" = own."classroom_id"
        WHERE own."school_id" = r."school_id" AND own."teacher_id" = r."id"
      ) a
      WHERE r."school_id" = ANY ($1)
        AND (to_jsonb(r) - 'updated_at') IS DISTINCT FROM (to_jsonb(o) - 'updated_at')
      ORDER BY a."teacher_id", r."id"
      $sql$, "teacher_feed_relation"('teacher_classrooms', locked[1]), "teacher_feed_relation"('teacher_changes', locked[1]))
      USING locked;
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION "teacher_feed_teacher_deleted"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
BEGIN
  IF OLD."school_id" = ANY ("teacher_feed_open"(ARRAY[OLD."school_id"], false)) THEN
    EXECUTE format($sql$
      INSERT INTO %5$s ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id", "student_number")
      WITH "rooms" AS (
        SELECT tc."classroom_id" FROM %1$s tc
        WHERE tc."school_id" = $1 AND tc."teacher_id" = $2
      ), "colleagues" AS (
        SELECT DISTINCT t."id", t."sourced_id"
        FROM %1$s tc
        JOIN %2$s t ON t."school_id" = tc."school_id" AND t."id" = tc."teacher_id"
        WHERE tc."school_id" = $1 AND tc."classroom_id" IN (SELECT "classroom_id" FROM "rooms") AND tc."teacher_id" <> $2
      ), "entries" AS (
        SELECT $2 AS "audience", 'TEACHER'::"RecordType" AS "record_type", $2 AS "record_id", $3 AS "sourced_id", NULL::text AS "student_number"
        UNION ALL
        SELECT $2, 'CLASSROOM', c."id", c."sourced_id", NULL
        FROM %3$s c WHERE c."school_id" = $1 AND c."id" IN (SELECT "classroom_id" FROM "rooms")
        UNION ALL
        SELECT $2, 'STUDENT', s."id", s."sourced_id", s."student_number"
        FROM %4$s s WHERE s."school_id" = $1 AND s."classroom_id" IN (SELECT "classroom_id" FROM "rooms")
        UNION ALL
        SELECT $2, 'TEACHER', c."id", c."sourced_id", NULL FROM "colleagues" c
        UNION ALL
        SELECT c."id", 'TEACHER', $2, $3, NULL FROM "colleagues" c
      )
      SELECT $1, e."audience", 'DELETED', e."record_type", e."record_id", e."sourced_id", e."student_number"
      FROM "entries" e
      ORDER BY e."audience", e."record_type", e."record_id"
      $sql$, "teacher_feed_relation"('teacher_classrooms', OLD."school_id"), "teacher_feed_relation"('teachers', OLD."school_id"),
      "teacher_feed_relation"('classrooms', OLD."school_id"), "teacher_feed_relation"('students', OLD."school_id"),
      "teacher_feed_relation"('teacher_changes', OLD."school_id"))
      USING OLD."school_id", OLD."id", OLD."sourced_id";
  END IF;
  RETURN OLD;
END
$$;

CREATE OR REPLACE FUNCTION "teacher_feed_assignments"() RETURNS trigger LANGUAGE plpgsql
  SET "app.teacher_id" = '' SET "app.writing_teacher_feed" = 'on'
AS $$
DECLARE
  school uuid;
  assigned text;
  nothing text;
  added text;
  removed text;
  locked uuid[];
BEGIN
  IF TG_OP = 'DELETE' THEN
    SELECT "school_id" INTO school FROM "old_rows" LIMIT 1;
  ELSE
    SELECT "school_id" INTO school FROM "new_rows" LIMIT 1;
  END IF;
  IF school IS NULL THEN
    RETURN NULL;
  END IF;
  assigned := "teacher_feed_relation"('teacher_classrooms', school);
  nothing := format('(SELECT * FROM %s WHERE false) "none"', assigned);
  added := CASE WHEN TG_OP = 'DELETE' THEN nothing ELSE '"new_rows"' END;
  removed := CASE WHEN TG_OP = 'INSERT' THEN nothing ELSE '"old_rows"' END;
  EXECUTE format('SELECT "teacher_feed_open"(ARRAY(SELECT "school_id" FROM %s UNION SELECT "school_id" FROM %s), true)', added, removed)
    INTO locked;
  IF cardinality(locked) = 0 THEN
    RETURN NULL;
  END IF;
  EXECUTE format($sql$
    WITH "n" AS (
      SELECT * FROM %1$s WHERE "school_id" = ANY ($1) EXCEPT SELECT * FROM %2$s
    ), "o" AS (
      SELECT * FROM %2$s WHERE "school_id" = ANY ($1) EXCEPT SELECT * FROM %1$s
    ), "d" AS (
      SELECT "school_id", "teacher_id", "classroom_id" FROM "n"
      UNION SELECT "school_id", "teacher_id", "classroom_id" FROM "o"
    ), "rooms" AS (
      SELECT tc."school_id", tc."classroom_id" FROM %3$s tc
      WHERE (tc."school_id", tc."teacher_id") IN (SELECT "school_id", "teacher_id" FROM "d")
      UNION SELECT "school_id", "classroom_id" FROM "o"
    ), "concerned" AS (
      SELECT tc."school_id", tc."teacher_id" FROM %3$s tc JOIN "rooms" r USING ("school_id", "classroom_id")
      UNION SELECT "school_id", "teacher_id" FROM "o"
    ), "after" AS (
      SELECT tc."school_id", tc."teacher_id", tc."classroom_id" FROM %3$s tc
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
      FROM "assigned" a JOIN %4$s s ON s."school_id" = a."school_id" AND s."classroom_id" = a."classroom_id"
      UNION ALL
      SELECT a."later", a."school_id", a."teacher_id", 'TEACHER', b."teacher_id"
      FROM "assigned" a JOIN "assigned" b ON b."later" = a."later" AND b."school_id" = a."school_id" AND b."classroom_id" = a."classroom_id"
    ), "candidates" AS (
      SELECT "school_id", "teacher_id" AS "audience", 'CLASSROOM'::"RecordType" AS "record_type", "classroom_id" AS "record_id" FROM "d"
      UNION
      SELECT d."school_id", d."teacher_id", 'STUDENT', s."id"
      FROM "d" JOIN %4$s s ON s."school_id" = d."school_id" AND s."classroom_id" = d."classroom_id"
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
    INSERT INTO %7$s ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id", "student_number")
    SELECT e."school_id", e."audience",
           CASE WHEN e."was" AND e."is" THEN 'UPDATED' WHEN e."is" THEN 'CREATED' ELSE 'DELETED' END::"ChangeType",
           e."record_type", e."record_id", coalesce(s."sourced_id", t."sourced_id", c."sourced_id"), s."student_number"
    FROM "entries" e
    LEFT JOIN %4$s s ON e."record_type" = 'STUDENT' AND s."school_id" = e."school_id" AND s."id" = e."record_id"
    LEFT JOIN %5$s t ON e."record_type" = 'TEACHER' AND t."school_id" = e."school_id" AND t."id" = e."record_id"
    LEFT JOIN %6$s c ON e."record_type" = 'CLASSROOM' AND c."school_id" = e."school_id" AND c."id" = e."record_id"
    WHERE (e."was" <> e."is" OR (e."was" AND e."changed"))
      -- A record or teacher deleted by this statement's cascade was told by its BEFORE DELETE trigger.
      AND coalesce(s."id", t."id", c."id") IS NOT NULL
      AND EXISTS (SELECT 1 FROM %5$s a WHERE a."school_id" = e."school_id" AND a."id" = e."audience")
    ORDER BY e."audience", e."record_type", e."record_id"
    $sql$, added, removed, assigned, "teacher_feed_relation"('students', school), "teacher_feed_relation"('teachers', school),
      "teacher_feed_relation"('classrooms', school), "teacher_feed_relation"('teacher_changes', school))
    USING locked;
  RETURN NULL;
END
$$;
