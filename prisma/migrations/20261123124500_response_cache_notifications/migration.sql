-- Every write to a school's records announces the school on the channel school_data_changed, so
-- that every API node drops the answers it keeps for that school (src/graphql/response-cache.ts).
-- PostgreSQL delivers a notification at commit, and once per distinct payload per transaction.
CREATE FUNCTION "school_data_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('school_data_changed', OLD."school_id"::text);
  ELSE
    PERFORM pg_notify('school_data_changed', NEW."school_id"::text);
    IF TG_OP = 'UPDATE' AND OLD."school_id" IS DISTINCT FROM NEW."school_id" THEN
      PERFORM pg_notify('school_data_changed', OLD."school_id"::text);
    END IF;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER "classrooms_changed" AFTER INSERT OR UPDATE OR DELETE ON "classrooms"
  FOR EACH ROW EXECUTE FUNCTION "school_data_changed"();
CREATE TRIGGER "students_changed" AFTER INSERT OR UPDATE OR DELETE ON "students"
  FOR EACH ROW EXECUTE FUNCTION "school_data_changed"();
CREATE TRIGGER "teachers_changed" AFTER INSERT OR UPDATE OR DELETE ON "teachers"
  FOR EACH ROW EXECUTE FUNCTION "school_data_changed"();
CREATE TRIGGER "teacher_classrooms_changed" AFTER INSERT OR UPDATE OR DELETE ON "teacher_classrooms"
  FOR EACH ROW EXECUTE FUNCTION "school_data_changed"();

-- A school's own row (its name) is part of answers too.
CREATE FUNCTION "school_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('school_data_changed', OLD."id"::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER "schools_changed" AFTER UPDATE OR DELETE ON "schools"
  FOR EACH ROW EXECUTE FUNCTION "school_changed"();
