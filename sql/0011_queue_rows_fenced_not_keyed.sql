-- 0011: jobs and idempotency keys keep their instance by the lease fence, not by a foreign key. PostgreSQL checked
-- each new row's instance with a query of its own (a locking read of the instance's row, queued as a trigger per
-- row): 10 ms of a 1,000-row insert of 43 ms here, about 10 µs a row of every acceptance. Every statement that
-- writes them is fenced (src/cluster/leases.ts, src/store/lease-fence-sql.ts): it reads the instance's lease row
-- FOR KEY SHARE, and that row goes with the instance (ON DELETE CASCADE), so a delete of the instance waits for a
-- writer under the fence and a writer after the delete finds no lease and writes nothing. The delete removes the
-- instance's jobs and keys itself, after the instance's row and so after any such writer (src/store/instances.ts
-- deleteInstance): what ON DELETE CASCADE did.
ALTER TABLE jobs DROP CONSTRAINT jobs_instance_id_fkey;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_instance_id_fkey;
