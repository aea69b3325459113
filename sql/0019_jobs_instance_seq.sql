-- 0019: an index of each instance's jobs in arrival order, for GET /api/v2/queue/items without a state (src/queue/
-- sql/listJobs.ts). Without it PostgreSQL answered that page by walking the unique index on seq from the cursor
-- and skipping the jobs of every other instance: 72 ms for the first page of an instance holding 2,000 of a
-- million jobs, and the more jobs the others sent, the longer (the gateway keeps every job). With it, a page is one
-- range, about a millisecond however large the table. A new job writes its entry here as it wrote one in
-- jobs_waiting, which 0017 dropped (no read needed that one): an acceptance writes as many index entries as before
-- 0017.
CREATE INDEX IF NOT EXISTS jobs_instance_seq ON jobs (instance_id, seq);
