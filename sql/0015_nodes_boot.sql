-- 0015: a synchronous v1 caller's job is expired at a takeover only when the process its caller waits in is
-- gone. A waiting v1 job carries the boot id of that process (`jobs.caller_boot`, 0003); a queue that started
-- expired every waiting job of another boot id, which on one node means "an earlier process", but with several
-- nodes the caller may wait on a live node that forwarded the send, or on the node that just handed the instance
-- over (found from the outside: a move, or a graceful stop, of an instance expired the messages of callers still
-- waiting on live nodes, and nothing was sent). Each node now registers the boot id of its process and the time
-- its heartbeat stays good (its LEASE_TTL_MS); a caller's process is alive while a node row names its boot id
-- with a heartbeat younger than that.
ALTER TABLE nodes ADD COLUMN boot_id text, ADD COLUMN live_ms integer;
