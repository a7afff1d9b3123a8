-- A student's guardians, parents and relatives (OneRoster's agents, issue 37): users.csv rows of
-- those roles, kept as the school's records instead of being skipped by the import, with the fields
-- users.csv gives a user (as students and teachers keep them, migration user_names_and_contacts)
-- and the students each is an agent of (users.csv's agentSourcedIds, both ways), by the students'
-- ids as a classroom keeps its terms' (term_ids). NULL (or no identifiers) when the file gave none.
CREATE TABLE "agents" (
    "school_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "sourced_id" TEXT,
    "role" TEXT NOT NULL,
    "given_name" TEXT NOT NULL DEFAULT '',
    "family_name" TEXT NOT NULL DEFAULT '',
    "preferred_name" TEXT,
    "middle_name" TEXT,
    "preferred_middle_name" TEXT,
    "preferred_last_name" TEXT,
    "pronouns" TEXT,
    "username" TEXT,
    "user_ids" TEXT[],
    "email" TEXT,
    "sms" TEXT,
    "phone" TEXT,
    "status" "TeacherStatus" NOT NULL DEFAULT 'ACTIVE',
    "student_ids" UUID[],
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "agents_pkey" PRIMARY KEY ("school_id","id"),
    -- OneRoster 1.2's roles of a student's agents (RoleEnum): no other is kept here.
    CONSTRAINT "agents_role_check" CHECK ("role" IN ('guardian', 'parent', 'relative'))
);

-- CreateIndex
CREATE UNIQUE INDEX "agents_school_id_sourced_id_key" ON "agents"("school_id", "sourced_id");

-- CreateIndex
CREATE INDEX "agents_school_id_updated_at_id_idx" ON "agents"("school_id", "updated_at", "id");

-- Wall 2: the school's rows only, as on every tenant table, and none of them to a teacher
-- (docs/decisions.md "A student's agents"): a teacher's session reads no agent and writes none.
ALTER TABLE "agents" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "agents" FORCE ROW LEVEL SECURITY;
CREATE POLICY "school_isolation" ON "agents"
  USING ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND NULLIF(current_setting('app.teacher_id', true), '') IS NULL)
  WITH CHECK ("school_id" = NULLIF(current_setting('app.school_id', true), '')::uuid
         AND NULLIF(current_setting('app.teacher_id', true), '') IS NULL);

-- Answers kept by the response cache are dropped on a write, as for the other records.
CREATE TRIGGER "agents_changed" AFTER INSERT OR UPDATE OR DELETE ON "agents"
  FOR EACH ROW EXECUTE FUNCTION "school_data_changed"();

-- Versions, moved by the database as for the other records (migration record_versions_and_idempotency).
CREATE TRIGGER "agents_version" BEFORE UPDATE ON "agents" FOR EACH ROW EXECUTE FUNCTION "record_versions"();

-- The key last, as in migration academic_sessions_and_courses (Citus: policies before the key to
-- the reference table; `migrate` then distributes the table, src/db/migrations/citus-tables.ts).
ALTER TABLE "agents" ADD CONSTRAINT "agents_school_id_fkey" FOREIGN KEY ("school_id") REFERENCES "schools"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Reads of agents are audited as the students' and teachers' are (src/audit/access.ts): the access
-- audit's record type admits them.
ALTER TABLE "access_audit" DROP CONSTRAINT "access_audit_record_type_check";
ALTER TABLE "access_audit" ADD CONSTRAINT "access_audit_record_type_check" CHECK ("record_type" IN ('Student', 'Teacher', 'Agent'));
