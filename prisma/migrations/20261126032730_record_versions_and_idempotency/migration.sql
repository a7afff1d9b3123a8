-- AlterTable
ALTER TABLE "classrooms" ADD COLUMN     "version" INTEGER NOT NULL DEFAULT 1;

-- AlterTable
ALTER TABLE "students" ADD COLUMN     "version" INTEGER NOT NULL DEFAULT 1;

-- AlterTable
ALTER TABLE "teachers" ADD COLUMN     "version" INTEGER NOT NULL DEFAULT 1;

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "caller_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "response" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("caller_id","key")
);

-- CreateIndex
CREATE INDEX "idempotency_keys_caller_id_created_at_idx" ON "idempotency_keys"("caller_id", "created_at");

-- Every record's version: bumped by the database on each update that changes the row, whoever
-- writes it (the API, the CLI, the import, plain SQL), so that a change naming the version it was
-- based on is refused once another writer has moved the record on. An update that changes nothing
-- but updated_at (an import run again) keeps the version, as it enters no change feed
-- (migration change_feed_skips_unchanged). The version written by the statement itself is ignored:
-- only the database moves it.
CREATE FUNCTION "record_versions"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  "stamp" timestamptz(3) := NEW."updated_at";
BEGIN
  NEW."updated_at" := OLD."updated_at";
  NEW."version" := OLD."version";
  IF NEW IS DISTINCT FROM OLD THEN
    NEW."version" := OLD."version" + 1;
  END IF;
  NEW."updated_at" := "stamp";
  RETURN NEW;
END
$$;

CREATE TRIGGER "students_version" BEFORE UPDATE ON "students" FOR EACH ROW EXECUTE FUNCTION "record_versions"();
CREATE TRIGGER "teachers_version" BEFORE UPDATE ON "teachers" FOR EACH ROW EXECUTE FUNCTION "record_versions"();
CREATE TRIGGER "classrooms_version" BEFORE UPDATE ON "classrooms" FOR EACH ROW EXECUTE FUNCTION "record_versions"();
