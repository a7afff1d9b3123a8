-- A teacher's feed for a statement that changes many rows: the statement triggers join the
-- statement's new rows to its old ones (transition tables). Joined in the same query as a teacher's
-- assignments, whose row-level security compares school_id with the session's school, the planner
-- carried that comparison over to both transition tables (the join's equal school_id), estimated
-- them at one row each, and joined them by a nested loop: 1,000 changed students cost 1,000 x 1,000
-- comparisons (626 ms of a 900 ms UPDATE as the service role; a CSV import changes 5,000 per
-- statement). The changed rows are now worked out first, in a MATERIALIZED CTE the comparison does
-- not reach: a hash join of the two, then the assignments. Same rows written, same order.

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
      WITH "moved" AS MATERIALIZED (
        SELECT r."school_id", r."id", r."sourced_id", r."student_number", o."classroom_id" AS "was_in", r."classroom_id" AS "is_in"
        FROM "new_rows" r JOIN "old_rows" o ON o."school_id" = r."school_id" AND o."id" = r."id"
        WHERE r."school_id" = ANY ($1)
          AND (to_jsonb(r) - 'updated_at') IS DISTINCT FROM (to_jsonb(o) - 'updated_at')
      )
      INSERT INTO %2$s ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id", "student_number")
      SELECT m."school_id", tc."teacher_id",
             CASE WHEN bool_or(tc."classroom_id" = m."was_in") IS TRUE AND bool_or(tc."classroom_id" = m."is_in") IS TRUE THEN 'UPDATED'
                  WHEN bool_or(tc."classroom_id" = m."is_in") IS TRUE THEN 'CREATED'
                  ELSE 'DELETED' END::"ChangeType",
             'STUDENT', m."id", m."sourced_id", m."student_number"
      FROM "moved" m
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
    WITH "changed" AS MATERIALIZED (
      SELECT r."school_id", r."id", r."sourced_id"
      FROM "new_rows" r
      JOIN "old_rows" o ON o."school_id" = r."school_id" AND o."id" = r."id"
      WHERE r."school_id" = ANY ($1)
        AND (to_jsonb(r) - 'updated_at') IS DISTINCT FROM (to_jsonb(o) - 'updated_at')
    )
    INSERT INTO %2$s ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id")
    SELECT r."school_id", tc."teacher_id", 'UPDATED', 'CLASSROOM', r."id", r."sourced_id"
    FROM "changed" r
    JOIN %1$s tc ON tc."school_id" = r."school_id" AND tc."classroom_id" = r."id"
    ORDER BY tc."teacher_id", r."id"
    $sql$, "teacher_feed_relation"('teacher_classrooms', locked[1]), "teacher_feed_relation"('teacher_changes', locked[1]))
    USING locked;
  RETURN NULL;
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
      WITH "changed" AS MATERIALIZED (
        SELECT r."school_id", r."id", r."sourced_id"
        FROM "new_rows" r
        JOIN "old_rows" o ON o."school_id" = r."school_id" AND o."id" = r."id"
        WHERE r."school_id" = ANY ($1)
          AND (to_jsonb(r) - 'updated_at') IS DISTINCT FROM (to_jsonb(o) - 'updated_at')
      )
      INSERT INTO %2$s ("school_id", "teacher_id", "type", "record_type", "record_id", "sourced_id")
      SELECT r."school_id", a."teacher_id", 'UPDATED', 'TEACHER', r."id", r."sourced_id"
      FROM "changed" r
      CROSS JOIN LATERAL (
        SELECT r."id" AS "teacher_id"
        UNION
        SELECT other."teacher_id"
        FROM %1$s own
        JOIN %1$s other ON other."school_id" = own."school_id" AND other."classroom_id" = own."classroom_id"
        WHERE own."school_id" = r."school_id" AND own."teacher_id" = r."id"
      ) a
      ORDER BY a."teacher_id", r."id"
      $sql$, "teacher_feed_relation"('teacher_classrooms', locked[1]), "teacher_feed_relation"('teacher_changes', locked[1]))
      USING locked;
  END IF;
  RETURN NULL;
END
$$;
