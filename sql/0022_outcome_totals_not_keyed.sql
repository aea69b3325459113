-- 0022: job_outcome_totals loses its foreign key to instances; the instance's delete trigger (0012's) deletes its
-- totals with its jobs instead, as 0011 did for the queue's other rows. With the key, the trigger's insert of an
-- instance's first total of a state (its first sent, failed, unknown, cancelled or expired job) read the
-- instance's row FOR KEY SHARE inside a queue write that already holds the instance's lease row (the fence, FOR
-- KEY SHARE too): a DELETE of the instance, which holds the instance's row and waits for that lease row, and the
-- write then waited for each other, and PostgreSQL aborted one (DELETE /admin/v1/instances/:id answered 500,
-- found by an outside probe). Without the key, the delete waits for the write as it did before 0018, and its
-- trigger deletes the totals that write added (it reads them after the lease row, in a statement of its own).
ALTER TABLE job_outcome_totals DROP CONSTRAINT IF EXISTS job_outcome_totals_instance_id_fkey;

CREATE OR REPLACE FUNCTION instance_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM instance_leases WHERE instance_id = OLD.id;
  DELETE FROM jobs WHERE instance_id = OLD.id;
  DELETE FROM idempotency_keys WHERE instance_id = OLD.id;
  DELETE FROM job_outcome_totals WHERE instance_id = OLD.id;
  RETURN NULL;
END $$;
