-- A teacher's demographics (DemographicsDType, docs/api/oneroster.md): OneRoster's demographics.csv
-- keys its rows by the user's sourcedId, any user's, and a teacher's row is kept as a student's is
-- (migration student_demographics): the date of birth, sex, the race and ethnicity flags, the
-- country, state and city of birth and the public school residence status. Columns of the teacher,
-- read through the teacher's row-level security and wall 1's column scopes
-- (roster-demographics.readonly), with nothing to distribute on Citus. A teacher with none of them
-- has no demographics record.
ALTER TABLE "teachers"
  ADD COLUMN "date_of_birth" DATE,
  ADD COLUMN "sex" TEXT,
  ADD COLUMN "american_indian_or_alaska_native" BOOLEAN,
  ADD COLUMN "asian" BOOLEAN,
  ADD COLUMN "black_or_african_american" BOOLEAN,
  ADD COLUMN "native_hawaiian_or_other_pacific_islander" BOOLEAN,
  ADD COLUMN "white" BOOLEAN,
  ADD COLUMN "demographic_race_two_or_more_races" BOOLEAN,
  ADD COLUMN "hispanic_or_latino_ethnicity" BOOLEAN,
  ADD COLUMN "country_of_birth_code" TEXT,
  ADD COLUMN "state_of_birth_abbreviation" TEXT,
  ADD COLUMN "city_of_birth" TEXT,
  ADD COLUMN "public_school_residence_status" TEXT;

-- 1EdTech's values of sex, as for a student; an extension is written ext:name.
ALTER TABLE "teachers" ADD CONSTRAINT "teachers_sex_check"
  CHECK ("sex" IN ('male', 'female', 'unspecified', 'other') OR "sex" ~ '^ext:[a-zA-Z0-9.\-_]+$');
