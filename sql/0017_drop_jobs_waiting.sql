-- 0017: the partial index jobs_waiting (instance_id, priority DESC, seq of queued and scheduled jobs) goes.
-- Every acceptance entered a row in it, and no read needed it: the two that select waiting jobs in planning
-- order (src/queue/sql/listWaiting.ts, loadStarts.ts) were planned by PostgreSQL as a bitmap scan and a sort
-- with it, and are the same scan and sort over jobs_instance_state (instance_id, state, seq) without it
-- (measured on a table of 1,055,000 jobs over 500 instances: 200 instances' 20,000 waiting jobs 24.8 ms with
-- it and 25.3 without, one instance's 5,000 2.73 and 2.82 ms; on another such table PostgreSQL walked it in order
-- for one instance's 5,000, 1.5 ms, against 3.3 without: a start's read, not a request's). Without it a new job writes one index entry
-- fewer: 592 → 498 bytes of WAL a job in 16-job inserts (pgbench, machine W).
DROP INDEX IF EXISTS jobs_waiting;
