-- CreateEnum
CREATE TYPE "AcademicSessionType" AS ENUM ('schoolYear', 'term', 'gradingPeriod', 'semester');

-- CreateTable
CREATE TABLE "academic_sessions" (
    "school_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "sourced_id" TEXT,
    "title" TEXT NOT NULL,
    "type" "AcademicSessionType" NOT NULL,
    "start_date" DATE NOT NULL,
    "end_date" DATE NOT NULL,
    "school_year" INTEGER NOT NULL,
    "parent_id" UUID,
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "academic_sessions_pkey" PRIMARY KEY ("school_id","id")
);

-- CreateTable
CREATE TABLE "courses" (
    "school_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "sourced_id" TEXT,
    "title" TEXT NOT NULL,
    "course_code" TEXT,
    "grades" TEXT[],
    "subjects" TEXT[],
    "subject_codes" TEXT[],
    "school_year_id" UUID,
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "courses_pkey" PRIMARY KEY ("school_id","id")
);

-- CreateIndex
CREATE INDEX "academic_sessions_school_id_parent_id_idx" ON "academic_sessions"("school_id", "parent_id");

-- CreateIndex
CREATE INDEX "academic_sessions_school_id_created_at_id_idx" ON "academic_sessions"("school_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "academic_sessions_school_id_updated_at_id_idx" ON "academic_sessions"("school_id", "updated_at", "id");

-- CreateIndex
CREATE UNIQUE INDEX "academic_sessions_school_id_sourced_id_key" ON "academic_sessions"("school_id", "sourced_id");

-- CreateIndex
CREATE INDEX "courses_school_id_school_year_id_idx" ON "courses"("school_id", "school_year_id");

-- CreateIndex
CREATE INDEX "courses_school_id_created_at_id_idx" ON "courses"("school_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "courses_school_id_updated_at_id_idx" ON "courses"("school_id", "updated_at", "id");

-- CreateIndex
CREATE UNIQUE INDEX "courses_school_id_sourced_id_key" ON "courses"("school_id", "sourced_id");

-- Wall 2: the school's rows only, as on every tenant table. A teacher reads the whole school's
-- sessions and courses (the school's calendar and offer, no one's personal data), so the policy
-- has no teacher clause; writes stay the school's administrators' (the import, as the owner).
ALTER TABLE "academic_sessions" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "academic_sessions" FORCE ROW LEVEL SECURITY;
CREATE POLICY "school_isolation" ON "academic_sessions"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND NULLIF(current_setting('app.teacher_id', true), '') IS NULL);

ALTER TABLE "courses" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "courses" FORCE ROW LEVEL SECURITY;
CREATE POLICY "school_isolation" ON "courses"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND NULLIF(current_setting('app.teacher_id', true), '') IS NULL);

-- Answers kept by the response cache are dropped on a write, as for the other records.
CREATE TRIGGER "academic_sessions_changed" AFTER INSERT OR UPDATE OR DELETE ON "academic_sessions"
  FOR EACH ROW EXECUTE FUNCTION "school_data_changed"();
CREATE TRIGGER "courses_changed" AFTER INSERT OR UPDATE OR DELETE ON "courses"
  FOR EACH ROW EXECUTE FUNCTION "school_data_changed"();

-- Versions, moved by the database as for the other records (migration record_versions_and_idempotency).
CREATE TRIGGER "academic_sessions_version" BEFORE UPDATE ON "academic_sessions" FOR EACH ROW EXECUTE FUNCTION "record_versions"();
CREATE TRIGGER "courses_version" BEFORE UPDATE ON "courses" FOR EACH ROW EXECUTE FUNCTION "record_versions"();

-- The keys last: on a Citus coordinator whose records are distributed, a key to the reference
-- table schools makes the new table a Citus local table, on which Citus 13 refuses CREATE POLICY
-- ("unrecognized node type"); made after the policies and triggers, the key converts the table
-- with them, and `migrate` then distributes it (src/db/migrations/citus-tables.ts).
ALTER TABLE "academic_sessions" ADD CONSTRAINT "academic_sessions_school_id_fkey" FOREIGN KEY ("school_id") REFERENCES "schools"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "academic_sessions" ADD CONSTRAINT "academic_sessions_school_id_parent_id_fkey" FOREIGN KEY ("school_id", "parent_id") REFERENCES "academic_sessions"("school_id", "id") ON DELETE NO ACTION ON UPDATE CASCADE;
ALTER TABLE "courses" ADD CONSTRAINT "courses_school_id_fkey" FOREIGN KEY ("school_id") REFERENCES "schools"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "courses" ADD CONSTRAINT "courses_school_id_school_year_id_fkey" FOREIGN KEY ("school_id", "school_year_id") REFERENCES "academic_sessions"("school_id", "id") ON DELETE NO ACTION ON UPDATE CASCADE;
