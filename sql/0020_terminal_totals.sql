-- 0020: the totals of 0018 are kept for every end of a job, `cancelled` and `expired` too, so that the operator's
-- GET /metrics reads mgw_jobs (jobs by state, every instance) from them and from the waiting and sending jobs of
-- each instance, instead of counting every job the database ever held on every scrape: 170 ms of PostgreSQL
-- (three processes) for 1,060,000 jobs, growing with every message sent, per node and per scrape (an outside
-- probe). A queue's start and GET /api/status read only sent, failed and unknown of them (src/queue/sql/
-- loadOutcomes.ts, loadStarts.ts). `cancelled` and `expired` are reached only from a waiting job (never from an
-- outcome, and no job leaves them), so the trigger fires on the same updates as before and on those.
--
-- As in 0018, the new rows are filled from the jobs already there under a lock that holds every other write to
-- jobs off until this migration commits: on a large table, writes wait for that one count.
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;

ALTER TABLE job_outcome_totals DROP CONSTRAINT IF EXISTS job_outcome_totals_state_check;
ALTER TABLE job_outcome_totals ADD CONSTRAINT job_outcome_totals_state_check
  CHECK (state IN ('sent','failed','unknown','cancelled','expired'));

CREATE OR REPLACE FUNCTION job_outcome_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.state IN ('sent','failed','unknown','cancelled','expired') THEN
    UPDATE job_outcome_totals SET n = n - 1 WHERE instance_id = OLD.instance_id AND state = OLD.state;
  END IF;
  IF NEW.state IN ('sent','failed','unknown','cancelled','expired') THEN
    INSERT INTO job_outcome_totals AS t (instance_id, state, n) VALUES (NEW.instance_id, NEW.state, 1)
      ON CONFLICT (instance_id, state) DO UPDATE SET n = t.n + 1;
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER jobs_outcome_counted ON jobs;
CREATE TRIGGER jobs_outcome_counted AFTER UPDATE OF state ON jobs FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state
        AND (OLD.state IN ('sent','failed','unknown','cancelled','expired')
             OR NEW.state IN ('sent','failed','unknown','cancelled','expired')))
  EXECUTE FUNCTION job_outcome_counted();

INSERT INTO job_outcome_totals (instance_id, state, n)
  SELECT j.instance_id, j.state, count(*) FROM jobs j JOIN instances i ON i.id = j.instance_id
   WHERE j.state IN ('cancelled','expired') GROUP BY j.instance_id, j.state
  ON CONFLICT (instance_id, state) DO NOTHING;
