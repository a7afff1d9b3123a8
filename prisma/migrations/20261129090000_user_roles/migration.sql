-- A user's roles in the school (OneRoster 1.2's roles.csv, RoleDType of the REST binding, issue 37):
-- the begin and end dates of the user's primary role (its kind: a student's, a teacher's, an
-- agent's own role), and the user's secondary roles in the school, each with its roles.csv
-- sourcedId (the key a delta names it by), its role (1EdTech's RoleEnum, or ext:name) and its
-- dates, in the file's order. Columns of the user's own row, as the demographics are (migrations
-- student_demographics, teacher_demographics): read through the same row-level security, written
-- with the user (so a change of roles moves the user's updated_at, which a OneRoster delta
-- follows), nothing to distribute on Citus. NULL when the file gave none.
ALTER TABLE "students"
  ADD COLUMN "role_begin_date" DATE,
  ADD COLUMN "role_end_date" DATE,
  ADD COLUMN "secondary_roles" JSONB;
ALTER TABLE "teachers"
  ADD COLUMN "role_begin_date" DATE,
  ADD COLUMN "role_end_date" DATE,
  ADD COLUMN "secondary_roles" JSONB;
ALTER TABLE "agents"
  ADD COLUMN "role_begin_date" DATE,
  ADD COLUMN "role_end_date" DATE,
  ADD COLUMN "secondary_roles" JSONB;

-- The import checks each role (src/import/oneroster.ts); the database keeps the list an array, and a
-- primary role's end not before its begin, as an enrollment's (1EdTech: the end date is excluded).
ALTER TABLE "students" ADD CONSTRAINT "students_secondary_roles_check" CHECK (jsonb_typeof("secondary_roles") = 'array');
ALTER TABLE "students" ADD CONSTRAINT "students_role_dates_check" CHECK ("role_end_date" >= "role_begin_date");
ALTER TABLE "teachers" ADD CONSTRAINT "teachers_secondary_roles_check" CHECK (jsonb_typeof("secondary_roles") = 'array');
ALTER TABLE "teachers" ADD CONSTRAINT "teachers_role_dates_check" CHECK ("role_end_date" >= "role_begin_date");
ALTER TABLE "agents" ADD CONSTRAINT "agents_secondary_roles_check" CHECK (jsonb_typeof("secondary_roles") = 'array');
ALTER TABLE "agents" ADD CONSTRAINT "agents_role_dates_check" CHECK ("role_end_date" >= "role_begin_date");
