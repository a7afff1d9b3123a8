-- AlterTable
ALTER TABLE "users" ADD COLUMN     "disabled_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "user_access_changes" (
    "id" BIGSERIAL NOT NULL,
    "user_id" UUID NOT NULL,
    "school_id" UUID,
    "disabled" BOOLEAN NOT NULL,
    "changed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "user_access_changes_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "user_access_changes_changed_at_idx" ON "user_access_changes"("changed_at");

-- Wall 2 of tenant isolation: row-level security on every tenant table, forced on the owner too.
-- The service sets the caller's school for each transaction with
-- set_config('app.school_id', <uuid>, true); with no school set, nothing is visible or writable.
-- NULLIF: once set in a session, the setting reads '' outside the transaction that set it.
ALTER TABLE "classrooms" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "classrooms" FORCE ROW LEVEL SECURITY;
CREATE POLICY "school_isolation" ON "classrooms"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid);

ALTER TABLE "students" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "students" FORCE ROW LEVEL SECURITY;
CREATE POLICY "school_isolation" ON "students"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid);

ALTER TABLE "teachers" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "teachers" FORCE ROW LEVEL SECURITY;
CREATE POLICY "school_isolation" ON "teachers"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid);

ALTER TABLE "teacher_classrooms" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "teacher_classrooms" FORCE ROW LEVEL SECURITY;
CREATE POLICY "school_isolation" ON "teacher_classrooms"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid);

-- Schools are not tenant rows (authentication and administration read them with no school set),
-- but a transaction that has set its school sees only that school's row.
ALTER TABLE "schools" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "schools" FORCE ROW LEVEL SECURITY;
CREATE POLICY "own_school_when_set" ON "schools"
  USING (NULLIF(current_setting('app.school_id', true), '') IS NULL
         OR "id" = NULLIF(current_setting('app.school_id', true), '')::uuid);

-- A user moved to another school, disabled or deleted: record the change, revoke the user's
-- refresh tokens (unless the user only gained a first school), and tell every API node, which
-- then refuses access tokens issued for the former state. Changes older than 30 days are pruned
-- (access tokens live minutes).
CREATE FUNCTION "user_access_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  change_id bigint;
  new_school uuid;
  is_disabled boolean;
BEGIN
  IF TG_OP = 'DELETE' THEN
    new_school := NULL;
    is_disabled := true;
  ELSE
    IF NEW."school_id" IS NOT DISTINCT FROM OLD."school_id"
       AND (NEW."disabled_at" IS NULL) = (OLD."disabled_at" IS NULL) THEN
      RETURN NEW;
    END IF;
    new_school := NEW."school_id";
    is_disabled := NEW."disabled_at" IS NOT NULL;
    IF OLD."school_id" IS NOT NULL OR is_disabled THEN
      UPDATE "refresh_tokens" SET "revoked_at" = now()
        WHERE "user_id" = NEW."id" AND "revoked_at" IS NULL;
    END IF;
  END IF;
  INSERT INTO "user_access_changes" ("user_id", "school_id", "disabled")
    VALUES (OLD."id", new_school, is_disabled)
    RETURNING "id" INTO change_id;
  DELETE FROM "user_access_changes" WHERE "changed_at" < now() - interval '30 days';
  PERFORM pg_notify('user_access_changed', json_build_object(
    'id', change_id, 'userId', OLD."id", 'schoolId', new_school, 'disabled', is_disabled)::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER "users_access_changed"
  AFTER UPDATE OF "school_id", "disabled_at" OR DELETE ON "users"
  FOR EACH ROW EXECUTE FUNCTION "user_access_changed"();
