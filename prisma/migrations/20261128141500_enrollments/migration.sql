-- What OneRoster's enrollments hold that the links of the model lacked (issue 37,
-- docs/decisions.md "Enrollments are the model's links"): an enrollment is a student's classroom
-- (students.classroom_id) or a teacher's assignment (teacher_classrooms); each now keeps its own
-- sourcedId (the import's enrollments.csv), and an assignment its begin and end dates and its last
-- change. A student's dates were kept already (enrollment_start_date, enrollment_end_date), and its
-- last change is the student's updated_at. No table of their own: a move, an assignment or an
-- unassignment (GraphQL, CLI, import) is the enrollment's change or removal, and nothing can drift.
--
-- Row-level security (wall 2) holds as it did: these are columns of tables whose policies already
-- confine every row to the school, and a teacher to her classrooms' rows.
ALTER TABLE "students" ADD COLUMN "enrollment_sourced_id" TEXT;

-- An assignment's id: the enrollment's sourcedId when the import gave none (one made by GraphQL or
-- the CLI). Added with their defaults, not by an UPDATE: no trigger fires, so the change feeds get
-- no entry for the rows that exist (their updated_at is the migration's time). On Citus each shard
-- draws its own rows' ids (a hash-distributed table, no replica to diverge).
ALTER TABLE "teacher_classrooms"
  ADD COLUMN "id" UUID NOT NULL DEFAULT gen_random_uuid(),
  ADD COLUMN "sourced_id" TEXT,
  ADD COLUMN "begin_date" DATE,
  ADD COLUMN "end_date" DATE,
  ADD COLUMN "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- CreateIndex
CREATE UNIQUE INDEX "teacher_classrooms_school_id_id_key" ON "teacher_classrooms"("school_id", "id");

-- An assignment's last change (its enrollment's dateLastModified), moved by the database on each
-- update that changes the row, whoever writes it (the API, the CLI, the import, plain SQL); an
-- update that changes nothing keeps it, so that it changes nothing in the teacher's feed either
-- (which compares the rows whole). It touches nothing but its own row: kept on Citus
-- (src/db/migrations/citus-tables.ts KEPT_TRIGGERS).
CREATE FUNCTION "assignment_updated_at"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW."updated_at" := OLD."updated_at";
  IF NEW IS DISTINCT FROM OLD THEN
    NEW."updated_at" := now();
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER "teacher_classrooms_updated_at" BEFORE UPDATE ON "teacher_classrooms" FOR EACH ROW EXECUTE FUNCTION "assignment_updated_at"();
