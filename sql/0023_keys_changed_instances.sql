-- 0023: the notice of 0013 names the instances whose keys stopped working (their ids, comma-separated), so that
-- each node drops those instances' cached keys alone. An empty notice dropped every cached key of every instance:
-- a key not used again between a rotation anywhere and the next outage of the store could not be verified during
-- that outage, and every route of its instance (v1 sends included, which SPEC.md keeps working in every mode)
-- answered 503 for the whole outage (found from the outside). A notice too long for pg_notify's payload (8,000
-- bytes: some 200 instances in one statement) is sent empty, which still means "any key may have changed".
-- Statement-level triggers with their old rows (transition tables: one event per trigger).
CREATE OR REPLACE FUNCTION keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids text;
BEGIN
  SELECT string_agg(DISTINCT instance_id::text, ',') INTO ids FROM changed_rows;
  IF ids IS NOT NULL THEN
    PERFORM pg_notify('mgw_keys_changed', CASE WHEN length(ids) < 7900 THEN ids ELSE '' END);
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION instance_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids text;
BEGIN
  SELECT string_agg(DISTINCT id::text, ',') INTO ids FROM changed_rows;
  IF ids IS NOT NULL THEN
    PERFORM pg_notify('mgw_keys_changed', CASE WHEN length(ids) < 7900 THEN ids ELSE '' END);
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER keys_changed ON api_keys;
DROP TRIGGER instance_keys_changed ON instances;
CREATE TRIGGER keys_revoked AFTER UPDATE ON api_keys REFERENCING OLD TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION keys_changed();
CREATE TRIGGER keys_deleted AFTER DELETE ON api_keys REFERENCING OLD TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION keys_changed();
CREATE TRIGGER instance_keys_changed AFTER DELETE ON instances REFERENCING OLD TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION instance_keys_changed();
