-- A school's contacts (agents) in the orders GraphQL's `contacts` and `contactsPage` offer, as the
-- students' and teachers' have them (migration records_and_change_feed): by family name, by given
-- name, by creation. Without them a page was sorted from all of the school's contacts: for a school
-- of 4,000 contacts a page of 21 by family name took PostgreSQL 0.90-1.05 ms (a top-N sort of
-- every row), 0.02-0.05 ms with the index (EXPLAIN ANALYZE, 2026-11-29).

-- CreateIndex
CREATE INDEX "agents_school_id_family_name_given_name_id_idx" ON "agents"("school_id", "family_name", "given_name", "id");

-- CreateIndex
CREATE INDEX "agents_school_id_given_name_family_name_id_idx" ON "agents"("school_id", "given_name", "family_name", "id");

-- CreateIndex
CREATE INDEX "agents_school_id_created_at_id_idx" ON "agents"("school_id", "created_at", "id");
