-- What OneRoster's demographics.csv and its REST binding hold of a student beside the date of birth
-- (DemographicsDType, docs/api/oneroster.md): sex, the race and ethnicity flags, the country, state
-- and city of birth and the public school residence status. Columns of the student, not a table of
-- their own: a demographics record is the student's (its sourcedId is the user's), read through the
-- student's row-level security and wall 1's column scopes (roster-demographics.readonly, as
-- date_of_birth), with nothing to distribute on Citus. A student with none of them (and no date of
-- birth) has no demographics record.
ALTER TABLE "students"
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

-- 1EdTech's values of sex; an extension is written ext:name.
ALTER TABLE "students" ADD CONSTRAINT "students_sex_check"
  CHECK ("sex" IN ('male', 'female', 'unspecified', 'other') OR "sex" ~ '^ext:[a-zA-Z0-9.\-_]+$');
