-- CreateTable
CREATE TABLE "clients" (
    "id" UUID NOT NULL,
    "school_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "scopes" TEXT[],
    "revoked_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "clients_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "client_secrets" (
    "id" UUID NOT NULL,
    "client_id" UUID NOT NULL,
    "secret_hash" BYTEA NOT NULL,
    "expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "client_secrets_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "clients_school_id_idx" ON "clients"("school_id");

-- CreateIndex
CREATE UNIQUE INDEX "client_secrets_secret_hash_key" ON "client_secrets"("secret_hash");

-- CreateIndex
CREATE INDEX "client_secrets_client_id_idx" ON "client_secrets"("client_id");

-- AddForeignKey
ALTER TABLE "clients" ADD CONSTRAINT "clients_school_id_fkey" FOREIGN KEY ("school_id") REFERENCES "schools"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "client_secrets" ADD CONSTRAINT "client_secrets_client_id_fkey" FOREIGN KEY ("client_id") REFERENCES "clients"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AlterTable: the access audit names a user or a client.
ALTER TABLE "access_audit" ALTER COLUMN "user_id" DROP NOT NULL,
ADD COLUMN     "client_id" UUID;

-- Added by hand (Prisma does not model CHECK constraints or triggers).
-- Each audit row names exactly one caller: a user or a client.
ALTER TABLE "access_audit"
    ADD CONSTRAINT "access_audit_caller_check" CHECK (("user_id" IS NULL) <> ("client_id" IS NULL));

-- One access change, for a user or a client (ids are UUIDs: a client's never equals a user's):
-- recorded in user_access_changes, pruned to 30 days, and announced on user_access_changed, where
-- every API node hears it (src/auth/access-changes.ts). Both triggers below call it.
CREATE FUNCTION "record_access_change"(subject uuid, school uuid, is_disabled boolean) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  change_id bigint;
BEGIN
  INSERT INTO "user_access_changes" ("user_id", "school_id", "disabled")
    VALUES (subject, school, is_disabled)
    RETURNING "id" INTO change_id;
  DELETE FROM "user_access_changes" WHERE "changed_at" < now() - interval '30 days';
  PERFORM pg_notify('user_access_changed', json_build_object(
    'id', change_id, 'userId', subject, 'schoolId', school, 'disabled', is_disabled)::text);
END
$$;

-- The users trigger of migration tenant_walls, unchanged in what it does, now through the function.
CREATE OR REPLACE FUNCTION "user_access_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  new_school uuid;
  is_disabled boolean;
BEGIN
  IF TG_OP = 'DELETE' THEN
    new_school := NULL;
    is_disabled := true;
  ELSE
    IF NEW."school_id" IS NOT DISTINCT FROM OLD."school_id"
       AND (NEW."disabled_at" IS NULL) = (OLD."disabled_at" IS NULL) THEN
      RETURN NEW;
    END IF;
    new_school := NEW."school_id";
    is_disabled := NEW."disabled_at" IS NOT NULL;
    IF OLD."school_id" IS NOT NULL OR is_disabled THEN
      UPDATE "refresh_tokens" SET "revoked_at" = now()
        WHERE "user_id" = NEW."id" AND "revoked_at" IS NULL;
    END IF;
  END IF;
  PERFORM "record_access_change"(OLD."id", new_school, is_disabled);
  RETURN NULL;
END
$$;

-- A client revoked (or given back), deleted, or whose scopes change loses every access token issued
-- before, on every API node at once: the same mechanism as users'. A revoked or deleted client
-- counts as disabled.
CREATE FUNCTION "client_access_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE'
     AND (NEW."revoked_at" IS NULL) = (OLD."revoked_at" IS NULL)
     AND NEW."scopes" IS NOT DISTINCT FROM OLD."scopes" THEN
    RETURN NULL;
  END IF;
  PERFORM "record_access_change"(OLD."id", OLD."school_id", TG_OP = 'DELETE' OR NEW."revoked_at" IS NOT NULL);
  RETURN NULL;
END
$$;

CREATE TRIGGER "clients_access_changed"
  AFTER UPDATE OF "revoked_at", "scopes" OR DELETE ON "clients"
  FOR EACH ROW EXECUTE FUNCTION "client_access_changed"();
