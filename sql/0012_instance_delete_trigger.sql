-- 0012: deleting an instance's row deletes its jobs and idempotency keys in the same statement, whichever node
-- (and whichever version of the gateway) deletes it. Since 0011 no foreign key cascades to them, and the delete
-- took them itself (src/store/instances.ts): a node of a version before 0011, still running while the nodes are
-- replaced, deleted an instance with `DELETE FROM instances` alone and left its jobs and keys behind for ever. The
-- trigger costs nothing on the writes 0011 made cheaper (it fires on an instance's delete only).
--
-- The order is the lease fence's (0011): the lease row goes first, which waits for any write under the fence still
-- open, and only then the jobs and keys, each statement with a snapshot of its own that sees what such a write
-- committed. The trigger deletes the lease row itself rather than count on the foreign key's cascade firing before
-- it (the cascade is a trigger too; two triggers on one event fire in the order of their names); when the cascade
-- came first, the row is already gone and this delete does nothing.
CREATE FUNCTION instance_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM instance_leases WHERE instance_id = OLD.id;
  DELETE FROM jobs WHERE instance_id = OLD.id;
  DELETE FROM idempotency_keys WHERE instance_id = OLD.id;
  RETURN NULL;
END $$;
CREATE TRIGGER instance_deleted AFTER DELETE ON instances FOR EACH ROW EXECUTE FUNCTION instance_deleted();
