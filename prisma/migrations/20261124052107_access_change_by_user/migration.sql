-- CreateIndex
CREATE INDEX "user_access_changes_user_id_id_idx" ON "user_access_changes"("user_id", "id");
