-- What OneRoster's classes.csv and its REST binding hold of a class (docs/api/oneroster.md): its
-- course, its terms, code, type, location, periods, grades, subjects and subject codes (grade_level
-- and subject stay, as the GraphQL API reads them). A classroom made by GraphQL
-- or the CLI has none of them (all NULL): the binding does not serve it as a class.
--
-- terms: the academic sessions the class is taught in, by id, in the file's order. A list, not a
-- link table: the import checks each names a session of the school's and refuses to remove one a
-- class keeps; a reader reads them by a subquery that takes the school (typed-reads.ts termKeys),
-- so an id without its session is not answered.
ALTER TABLE "classrooms"
  ADD COLUMN "course_id" UUID,
  ADD COLUMN "term_ids" UUID[],
  ADD COLUMN "class_code" TEXT,
  ADD COLUMN "class_type" TEXT,
  ADD COLUMN "location" TEXT,
  ADD COLUMN "periods" TEXT[],
  ADD COLUMN "grades" TEXT[],
  ADD COLUMN "subjects" TEXT[],
  ADD COLUMN "subject_codes" TEXT[];

-- 1EdTech's class types; an extension is written ext:name.
ALTER TABLE "classrooms" ADD CONSTRAINT "classrooms_class_type_check"
  CHECK ("class_type" IN ('homeroom', 'scheduled') OR "class_type" ~ '^ext:[a-zA-Z0-9.\-_]+$');

-- CreateIndex
CREATE INDEX "classrooms_school_id_course_id_idx" ON "classrooms"("school_id", "course_id");

-- The key to courses (the school first, as every key; classrooms and courses are both distributed
-- by school, so the key is between co-located tables). NoAction: the import refuses to remove a
-- course a class it keeps names, and clears the course of a class it moves before it removes one.
ALTER TABLE "classrooms" ADD CONSTRAINT "classrooms_school_id_course_id_fkey" FOREIGN KEY ("school_id", "course_id") REFERENCES "courses"("school_id", "id") ON DELETE NO ACTION ON UPDATE CASCADE;
