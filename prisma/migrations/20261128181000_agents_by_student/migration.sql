-- A student's agents (OneRoster's `agents` of a user, src/db/typed-reads.ts agentKeys) are found by
-- the student's id in the agents' student_ids: by this index, not by a scan of the school's agents
-- for each student of a page (a school of 2,000 students has thousands of guardians).
CREATE INDEX "agents_student_ids_idx" ON "agents" USING GIN ("student_ids");
