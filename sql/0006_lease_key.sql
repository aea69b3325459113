-- 0006: renewing a lease never waits for the owner's own queue writes.
-- A queue write reads its instance's lease row FOR KEY SHARE (src/cluster/leases.ts). Making the epoch part of
-- a unique key turns every change of epoch (a takeover) into a key update, which waits for those readers: a
-- takeover still happens only after the old owner's writing transaction ended. A renewal or a release changes
-- only `expires_at`, which a FOR KEY SHARE reader does not block: the heartbeat of a busy instance is never
-- held up behind its own transactions (with FOR SHARE it was, and a lease could run out under load).
ALTER TABLE instance_leases ADD CONSTRAINT instance_leases_epoch_key UNIQUE (instance_id, epoch);
