-- 0013: every node hears at once that API keys stopped working, whichever node (or version, or hand-written
-- statement) stopped them. Each node caches a verified key for 30 s (src/http/auth.ts KeyResolver); the node
-- that rotated a key or deleted an instance cleared its own cache, the others answered the old key for up to
-- 30 s more (sends included). A revocation (UPDATE), a key's delete, and an instance's delete (its keys go by the
-- foreign key's cascade) now notify the channel mgw_keys_changed when their transaction commits; each node
-- LISTENs on it (src/store/key-changes.ts) and drops its cached keys and instance records. New keys need no
-- notice: only verified keys are cached.
CREATE FUNCTION keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('mgw_keys_changed', '');
  RETURN NULL;
END $$;
CREATE TRIGGER keys_changed AFTER UPDATE OR DELETE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION keys_changed();
CREATE TRIGGER instance_keys_changed AFTER DELETE ON instances FOR EACH STATEMENT EXECUTE FUNCTION keys_changed();
