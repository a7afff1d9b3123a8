-- CreateEnum
CREATE TYPE "UserRole" AS ENUM ('ADMIN', 'TEACHER');

-- AlterTable
ALTER TABLE "users" ADD COLUMN     "role" "UserRole" NOT NULL DEFAULT 'ADMIN',
ADD COLUMN     "teacher_id" UUID;

-- Added by hand (Prisma does not model CHECK constraints, policies or triggers).

-- A TEACHER is one teacher record; an ADMIN is none.
ALTER TABLE "users"
    ADD CONSTRAINT "users_teacher_check" CHECK (("role" = 'TEACHER') = ("teacher_id" IS NOT NULL));

-- A change of role or of teacher record is an access change like a move or a disabling: every API
-- node refuses the access tokens issued before (they carry the role and the teacher). Refresh tokens
-- stay: a refresh issues a token with the user's role as it is then.
CREATE OR REPLACE FUNCTION "user_access_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  new_school uuid;
  is_disabled boolean;
BEGIN
  IF TG_OP = 'DELETE' THEN
    new_school := NULL;
    is_disabled := true;
  ELSE
    IF NEW."school_id" IS NOT DISTINCT FROM OLD."school_id"
       AND (NEW."disabled_at" IS NULL) = (OLD."disabled_at" IS NULL)
       AND NEW."role" = OLD."role"
       AND NEW."teacher_id" IS NOT DISTINCT FROM OLD."teacher_id" THEN
      RETURN NEW;
    END IF;
    new_school := NEW."school_id";
    is_disabled := NEW."disabled_at" IS NOT NULL;
    IF (OLD."school_id" IS NOT NULL AND NEW."school_id" IS DISTINCT FROM OLD."school_id") OR is_disabled THEN
      UPDATE "refresh_tokens" SET "revoked_at" = now()
        WHERE "user_id" = NEW."id" AND "revoked_at" IS NULL;
    END IF;
  END IF;
  PERFORM "record_access_change"(OLD."id", new_school, is_disabled);
  RETURN NULL;
END
$$;

DROP TRIGGER "users_access_changed" ON "users";
CREATE TRIGGER "users_access_changed"
  AFTER UPDATE OF "school_id", "disabled_at", "role", "teacher_id" OR DELETE ON "users"
  FOR EACH ROW EXECUTE FUNCTION "user_access_changed"();

-- Wall 2 for teachers. A teacher's transaction sets app.teacher_id beside app.school_id (both with
-- SET LOCAL or set_config(..., true)); the policies below then admit, of the school's rows, only the
-- teacher's reach: the classrooms the teacher is assigned to (any role), their students, their
-- assignments, the teachers of those classrooms and the teacher's own record. The school's change
-- feed is not in a teacher's reach (a teacher has a feed of their own). With no teacher set (an
-- administrator, a client, the service's own writes) the policies are the school's alone.
--
-- The teacher's classrooms are read by functions, not by a subquery of the policies: the policy of
-- teacher_classrooms would otherwise read teacher_classrooms (PostgreSQL refuses a policy that
-- recurses). Each function runs with app.teacher_id cleared (its SET clause, undone when it
-- returns), so its own read of teacher_classrooms is confined to the school only. Policies call them
-- through a scalar subquery: evaluated once per statement, and only when a teacher is set. They are
-- PL/pgSQL, whose statement plans are kept for the session: a SQL function with a SET clause is not
-- inlined and plans its query anew at each call site of each statement (a teacher's students read
-- 2,150 against 2,860 statements per second, pgbench on the bench's data).
--
-- The teacher's test is a CASE, not `teacher IS NULL OR ...`: the planner cannot know the setting,
-- estimates such an OR to keep about 1% of the rows, and then reads a whole school and sorts it
-- where an index in order would stop after a page (an administrator's first page of students went
-- from 8,000 to 390 statements per second); a CASE is estimated at half.
CREATE FUNCTION "teacher_classroom_ids"(teacher uuid) RETURNS uuid[] LANGUAGE plpgsql STABLE
  SET "app.teacher_id" = ''
AS $$
BEGIN
  RETURN (SELECT coalesce(array_agg(tc."classroom_id"), '{}')
    FROM "teacher_classrooms" tc
    WHERE tc."school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid AND tc."teacher_id" = teacher);
END
$$;

-- The teacher and everyone assigned to one of the teacher's classrooms.
CREATE FUNCTION "teacher_colleague_ids"(teacher uuid) RETURNS uuid[] LANGUAGE plpgsql STABLE
  SET "app.teacher_id" = ''
AS $$
BEGIN
  RETURN (SELECT array_agg(DISTINCT t) FROM (
    SELECT teacher AS t
    UNION ALL
    SELECT tc."teacher_id" FROM "teacher_classrooms" tc
    WHERE tc."school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
      AND tc."classroom_id" = ANY ("teacher_classroom_ids"(teacher))
  ) reach);
END
$$;

DROP POLICY "school_isolation" ON "classrooms";
CREATE POLICY "school_isolation" ON "classrooms"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND CASE WHEN NULLIF(current_setting('app.teacher_id', true), '') IS NULL THEN true
              ELSE "id" = ANY ((SELECT "teacher_classroom_ids"(NULLIF(current_setting('app.teacher_id', true), '')::uuid))::uuid[]) END)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND CASE WHEN NULLIF(current_setting('app.teacher_id', true), '') IS NULL THEN true
              ELSE "id" = ANY ((SELECT "teacher_classroom_ids"(NULLIF(current_setting('app.teacher_id', true), '')::uuid))::uuid[]) END);

DROP POLICY "school_isolation" ON "students";
CREATE POLICY "school_isolation" ON "students"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND CASE WHEN NULLIF(current_setting('app.teacher_id', true), '') IS NULL THEN true
              ELSE "classroom_id" = ANY ((SELECT "teacher_classroom_ids"(NULLIF(current_setting('app.teacher_id', true), '')::uuid))::uuid[]) END)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND CASE WHEN NULLIF(current_setting('app.teacher_id', true), '') IS NULL THEN true
              ELSE "classroom_id" = ANY ((SELECT "teacher_classroom_ids"(NULLIF(current_setting('app.teacher_id', true), '')::uuid))::uuid[]) END);

DROP POLICY "school_isolation" ON "teacher_classrooms";
CREATE POLICY "school_isolation" ON "teacher_classrooms"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND CASE WHEN NULLIF(current_setting('app.teacher_id', true), '') IS NULL THEN true
              ELSE "classroom_id" = ANY ((SELECT "teacher_classroom_ids"(NULLIF(current_setting('app.teacher_id', true), '')::uuid))::uuid[]) END)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND CASE WHEN NULLIF(current_setting('app.teacher_id', true), '') IS NULL THEN true
              ELSE "classroom_id" = ANY ((SELECT "teacher_classroom_ids"(NULLIF(current_setting('app.teacher_id', true), '')::uuid))::uuid[]) END);

DROP POLICY "school_isolation" ON "teachers";
CREATE POLICY "school_isolation" ON "teachers"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND CASE WHEN NULLIF(current_setting('app.teacher_id', true), '') IS NULL THEN true
              ELSE "id" = ANY ((SELECT "teacher_colleague_ids"(NULLIF(current_setting('app.teacher_id', true), '')::uuid))::uuid[]) END)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND CASE WHEN NULLIF(current_setting('app.teacher_id', true), '') IS NULL THEN true
              ELSE "id" = ANY ((SELECT "teacher_colleague_ids"(NULLIF(current_setting('app.teacher_id', true), '')::uuid))::uuid[]) END);

DROP POLICY "school_isolation" ON "changes";
CREATE POLICY "school_isolation" ON "changes"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND NULLIF(current_setting('app.teacher_id', true), '') IS NULL)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND NULLIF(current_setting('app.teacher_id', true), '') IS NULL);
