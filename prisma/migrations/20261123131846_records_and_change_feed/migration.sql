-- CreateEnum
CREATE TYPE "GradeLevel" AS ENUM ('PRE_KINDERGARTEN', 'KINDERGARTEN', 'GRADE_1', 'GRADE_2', 'GRADE_3', 'GRADE_4', 'GRADE_5', 'GRADE_6', 'GRADE_7', 'GRADE_8', 'GRADE_9', 'GRADE_10', 'GRADE_11', 'GRADE_12', 'GRADE_13', 'UNGRADED');

-- CreateEnum
CREATE TYPE "StudentStatus" AS ENUM ('ACTIVE', 'INACTIVE', 'GRADUATED', 'TRANSFERRED', 'WITHDRAWN');

-- CreateEnum
CREATE TYPE "TeacherStatus" AS ENUM ('ACTIVE', 'INACTIVE');

-- CreateEnum
CREATE TYPE "TeacherRole" AS ENUM ('PRIMARY', 'ASSISTANT');

-- CreateEnum
CREATE TYPE "ChangeType" AS ENUM ('CREATED', 'UPDATED', 'DELETED');

-- CreateEnum
CREATE TYPE "RecordType" AS ENUM ('STUDENT', 'TEACHER', 'CLASSROOM');

-- AlterTable
ALTER TABLE "classrooms" ADD COLUMN     "grade_level" "GradeLevel",
ADD COLUMN     "sourced_id" TEXT,
ADD COLUMN     "subject" TEXT;

-- AlterTable
ALTER TABLE "schools" ADD COLUMN     "address_line1" TEXT,
ADD COLUMN     "address_line2" TEXT,
ADD COLUMN     "change_seq" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN     "city" TEXT,
ADD COLUMN     "country" TEXT,
ADD COLUMN     "phone" TEXT,
ADD COLUMN     "postal_code" TEXT,
ADD COLUMN     "region" TEXT,
ADD COLUMN     "time_zone" TEXT NOT NULL DEFAULT 'UTC',
ADD COLUMN     "website" TEXT;

-- AlterTable
ALTER TABLE "students" ADD COLUMN     "date_of_birth" DATE,
ADD COLUMN     "email" TEXT,
ADD COLUMN     "enrollment_end_date" DATE,
ADD COLUMN     "enrollment_start_date" DATE,
ADD COLUMN     "family_name" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "given_name" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "grade_level" "GradeLevel",
ADD COLUMN     "preferred_name" TEXT,
ADD COLUMN     "sourced_id" TEXT,
ADD COLUMN     "status" "StudentStatus" NOT NULL DEFAULT 'ACTIVE',
ADD COLUMN     "student_number" TEXT,
ALTER COLUMN "full_name" SET DEFAULT '';

-- AlterTable
ALTER TABLE "teacher_classrooms" ADD COLUMN     "role" "TeacherRole" NOT NULL DEFAULT 'PRIMARY';

-- AlterTable
ALTER TABLE "teachers" ADD COLUMN     "email" TEXT,
ADD COLUMN     "family_name" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "given_name" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "preferred_name" TEXT,
ADD COLUMN     "sourced_id" TEXT,
ADD COLUMN     "status" "TeacherStatus" NOT NULL DEFAULT 'ACTIVE',
ADD COLUMN     "title" TEXT,
ALTER COLUMN "full_name" SET DEFAULT '';

-- CreateTable
CREATE TABLE "changes" (
    "school_id" UUID NOT NULL,
    "seq" BIGINT NOT NULL,
    "type" "ChangeType" NOT NULL,
    "record_type" "RecordType" NOT NULL,
    "record_id" UUID NOT NULL,
    "sourced_id" TEXT,
    "student_number" TEXT,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "changes_pkey" PRIMARY KEY ("school_id","seq")
);

-- CreateIndex
CREATE INDEX "changes_school_id_at_idx" ON "changes"("school_id", "at");

-- CreateIndex
CREATE INDEX "classrooms_school_id_created_at_id_idx" ON "classrooms"("school_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "classrooms_school_id_updated_at_id_idx" ON "classrooms"("school_id", "updated_at", "id");

-- CreateIndex
CREATE UNIQUE INDEX "classrooms_school_id_sourced_id_key" ON "classrooms"("school_id", "sourced_id");

-- CreateIndex
CREATE INDEX "students_school_id_family_name_given_name_id_idx" ON "students"("school_id", "family_name", "given_name", "id");

-- CreateIndex
CREATE INDEX "students_school_id_given_name_family_name_id_idx" ON "students"("school_id", "given_name", "family_name", "id");

-- CreateIndex
CREATE INDEX "students_school_id_created_at_id_idx" ON "students"("school_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "students_school_id_updated_at_id_idx" ON "students"("school_id", "updated_at", "id");

-- CreateIndex
CREATE UNIQUE INDEX "students_school_id_sourced_id_key" ON "students"("school_id", "sourced_id");

-- CreateIndex
CREATE UNIQUE INDEX "students_school_id_student_number_key" ON "students"("school_id", "student_number");

-- CreateIndex
CREATE INDEX "teachers_school_id_family_name_given_name_id_idx" ON "teachers"("school_id", "family_name", "given_name", "id");

-- CreateIndex
CREATE INDEX "teachers_school_id_given_name_family_name_id_idx" ON "teachers"("school_id", "given_name", "family_name", "id");

-- CreateIndex
CREATE INDEX "teachers_school_id_created_at_id_idx" ON "teachers"("school_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "teachers_school_id_updated_at_id_idx" ON "teachers"("school_id", "updated_at", "id");

-- CreateIndex
CREATE UNIQUE INDEX "teachers_school_id_sourced_id_key" ON "teachers"("school_id", "sourced_id");

-- AddForeignKey
ALTER TABLE "changes" ADD CONSTRAINT "changes_school_id_fkey" FOREIGN KEY ("school_id") REFERENCES "schools"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Names. full_name stays the stored display name (the specification's `fullName`). A write that
-- leaves it empty gets "given family"; one that gives only full_name gets its last word as the
-- family name and the rest as the given names. An update of the names renews a full_name that
-- was derived from the former names, and keeps one that was written on its own.
CREATE FUNCTION "record_names"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."given_name" = '' AND NEW."family_name" = '' AND btrim(NEW."full_name") <> '' THEN
    NEW."family_name" := substring(btrim(NEW."full_name") from '(\S+)$');
    NEW."given_name" := regexp_replace(btrim(NEW."full_name"), '\s*\S+$', '');
  END IF;
  IF TG_OP = 'UPDATE' AND NEW."full_name" = OLD."full_name"
     AND (NEW."given_name", NEW."family_name") IS DISTINCT FROM (OLD."given_name", OLD."family_name")
     AND OLD."full_name" = concat_ws(' ', NULLIF(OLD."given_name", ''), NULLIF(OLD."family_name", '')) THEN
    NEW."full_name" := '';
  END IF;
  IF NEW."full_name" = '' THEN
    NEW."full_name" := concat_ws(' ', NULLIF(NEW."given_name", ''), NULLIF(NEW."family_name", ''));
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER "students_names" BEFORE INSERT OR UPDATE ON "students"
  FOR EACH ROW EXECUTE FUNCTION "record_names"();
CREATE TRIGGER "teachers_names" BEFORE INSERT OR UPDATE ON "teachers"
  FOR EACH ROW EXECUTE FUNCTION "record_names"();

-- Names of the records that exist already (row-level security binds the owner: lifted for this).
ALTER TABLE "students" NO FORCE ROW LEVEL SECURITY;
ALTER TABLE "teachers" NO FORCE ROW LEVEL SECURITY;
UPDATE "students" SET "given_name" = '' WHERE "given_name" = '' AND "family_name" = '';
UPDATE "teachers" SET "given_name" = '' WHERE "given_name" = '' AND "family_name" = '';
ALTER TABLE "students" FORCE ROW LEVEL SECURITY;
ALTER TABLE "teachers" FORCE ROW LEVEL SECURITY;

-- The change feed is a tenant table: the same wall as the others, and the response-cache notice.
ALTER TABLE "changes" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "changes" FORCE ROW LEVEL SECURITY;
CREATE POLICY "school_isolation" ON "changes"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid);
CREATE TRIGGER "changes_changed" AFTER INSERT OR UPDATE OR DELETE ON "changes"
  FOR EACH ROW EXECUTE FUNCTION "school_data_changed"();

-- The change feed, written in the transaction of every write to students, teachers and
-- classrooms (one statement per written statement, from its transition table).
--
-- Order: a reader following `seq` must never find a change committed later with a lower seq
-- than one it has already passed (a plain sequence allows that: numbers are drawn in one order
-- and committed in another). So each school's counter lives in its own row
-- (schools.change_seq) and is bumped by UPDATE: the row lock it takes is held until the writing
-- transaction ends, so a second writer of the same school waits for it, and a school's changes
-- commit in the order of their numbers, which are dense (a rollback returns its numbers). Writes
-- of one school queue behind each other's commit; other schools are not touched. The feed keeps
-- at least 90 days: each write prunes its school's changes older than that.
--
-- Arguments: record type; the id column; an expression (over the row r) of its sourced id; of its
-- student number.
CREATE FUNCTION "record_changes"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format($sql$
    WITH "rows" AS (
      SELECT DISTINCT r."school_id", r.%1$I AS "id", %2$s AS "sourced_id", %3$s AS "student_number"
      FROM %4$I r
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
    INSERT INTO "changes" ("school_id", "seq", "type", "record_type", "record_id", "sourced_id", "student_number")
    SELECT r."school_id", b."base" + row_number() OVER (PARTITION BY r."school_id" ORDER BY r."id"),
           %6$L::"ChangeType", %7$L::"RecordType", r."id", r."sourced_id", r."student_number"
    FROM "rows" r JOIN "bumped" b ON b."school_id" = r."school_id"
    $sql$,
    TG_ARGV[1], TG_ARGV[2], TG_ARGV[3],
    CASE TG_OP WHEN 'DELETE' THEN 'old_rows' ELSE 'new_rows' END,
    COALESCE(TG_ARGV[4], 'true'),
    CASE WHEN TG_ARGV[4] IS NOT NULL THEN 'UPDATED' WHEN TG_OP = 'INSERT' THEN 'CREATED' WHEN TG_OP = 'UPDATE' THEN 'UPDATED' ELSE 'DELETED' END,
    TG_ARGV[0]);
  RETURN NULL;
END
$$;

CREATE TRIGGER "students_created" AFTER INSERT ON "students" REFERENCING NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('STUDENT', 'id', 'r.sourced_id', 'r.student_number');
CREATE TRIGGER "students_updated" AFTER UPDATE ON "students" REFERENCING NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('STUDENT', 'id', 'r.sourced_id', 'r.student_number');
CREATE TRIGGER "students_deleted" AFTER DELETE ON "students" REFERENCING OLD TABLE AS "old_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('STUDENT', 'id', 'r.sourced_id', 'r.student_number');
CREATE TRIGGER "teachers_created" AFTER INSERT ON "teachers" REFERENCING NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('TEACHER', 'id', 'r.sourced_id', 'NULL::text');
CREATE TRIGGER "teachers_updated" AFTER UPDATE ON "teachers" REFERENCING NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('TEACHER', 'id', 'r.sourced_id', 'NULL::text');
CREATE TRIGGER "teachers_deleted" AFTER DELETE ON "teachers" REFERENCING OLD TABLE AS "old_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('TEACHER', 'id', 'r.sourced_id', 'NULL::text');
CREATE TRIGGER "classrooms_created" AFTER INSERT ON "classrooms" REFERENCING NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('CLASSROOM', 'id', 'r.sourced_id', 'NULL::text');
CREATE TRIGGER "classrooms_updated" AFTER UPDATE ON "classrooms" REFERENCING NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('CLASSROOM', 'id', 'r.sourced_id', 'NULL::text');
CREATE TRIGGER "classrooms_deleted" AFTER DELETE ON "classrooms" REFERENCING OLD TABLE AS "old_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('CLASSROOM', 'id', 'r.sourced_id', 'NULL::text');

-- A teacher's classroom assignments are part of the teacher record: a change to them is an update
-- of the teacher (unless the teacher is gone: a cascade from deleting the teacher).
CREATE TRIGGER "teacher_classrooms_created" AFTER INSERT ON "teacher_classrooms" REFERENCING NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('TEACHER', 'teacher_id',
    '(SELECT t.sourced_id FROM teachers t WHERE t.school_id = r.school_id AND t.id = r.teacher_id)', 'NULL::text',
    'EXISTS (SELECT 1 FROM teachers t WHERE t.school_id = r.school_id AND t.id = r.teacher_id)');
CREATE TRIGGER "teacher_classrooms_updated" AFTER UPDATE ON "teacher_classrooms" REFERENCING NEW TABLE AS "new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('TEACHER', 'teacher_id',
    '(SELECT t.sourced_id FROM teachers t WHERE t.school_id = r.school_id AND t.id = r.teacher_id)', 'NULL::text',
    'EXISTS (SELECT 1 FROM teachers t WHERE t.school_id = r.school_id AND t.id = r.teacher_id)');
CREATE TRIGGER "teacher_classrooms_deleted" AFTER DELETE ON "teacher_classrooms" REFERENCING OLD TABLE AS "old_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "record_changes"('TEACHER', 'teacher_id',
    '(SELECT t.sourced_id FROM teachers t WHERE t.school_id = r.school_id AND t.id = r.teacher_id)', 'NULL::text',
    'EXISTS (SELECT 1 FROM teachers t WHERE t.school_id = r.school_id AND t.id = r.teacher_id)');
