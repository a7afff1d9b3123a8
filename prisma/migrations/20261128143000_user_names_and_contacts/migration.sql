-- What OneRoster's users.csv and UserDType hold of a student or a teacher that the model did not
-- keep (docs/api/oneroster.md): the middle name, the preferred middle and last names, the pronouns,
-- the username, the other identifiers (userIds, each `type:identifier`, in the file's order), and
-- the SMS and phone numbers. NULL (or no identifiers) when the file gave none: nothing is filled in.
ALTER TABLE "students"
  ADD COLUMN "middle_name" TEXT,
  ADD COLUMN "preferred_middle_name" TEXT,
  ADD COLUMN "preferred_last_name" TEXT,
  ADD COLUMN "pronouns" TEXT,
  ADD COLUMN "username" TEXT,
  ADD COLUMN "user_ids" TEXT[],
  ADD COLUMN "sms" TEXT,
  ADD COLUMN "phone" TEXT;

ALTER TABLE "teachers"
  ADD COLUMN "middle_name" TEXT,
  ADD COLUMN "preferred_middle_name" TEXT,
  ADD COLUMN "preferred_last_name" TEXT,
  ADD COLUMN "pronouns" TEXT,
  ADD COLUMN "username" TEXT,
  ADD COLUMN "user_ids" TEXT[],
  ADD COLUMN "sms" TEXT,
  ADD COLUMN "phone" TEXT;
