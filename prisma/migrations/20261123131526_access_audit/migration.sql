-- CreateTable
CREATE TABLE "access_audit" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "school_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "request_id" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "record_type" TEXT NOT NULL,
    "record_count" INTEGER NOT NULL,
    "action" TEXT NOT NULL,

    CONSTRAINT "access_audit_pkey" PRIMARY KEY ("school_id","id")
);

-- CreateIndex
CREATE INDEX "access_audit_school_id_at_idx" ON "access_audit"("school_id", "at");

-- Added by hand (Prisma does not model CHECK constraints): the audit only ever holds these values.
ALTER TABLE "access_audit"
    ADD CONSTRAINT "access_audit_record_type_check" CHECK ("record_type" IN ('Student', 'Teacher')),
    ADD CONSTRAINT "access_audit_action_check" CHECK ("action" IN ('read', 'write')),
    ADD CONSTRAINT "access_audit_record_count_check" CHECK ("record_count" > 0);
