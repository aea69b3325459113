-- 0018: each instance's outcome totals (sent, failed, unknown: what GET /api/status answers as queue.sent, .failed,
-- .unknown) are kept in a row per instance and state, by a trigger on the jobs' state, instead of counted from
-- jobs when a queue starts. The gateway keeps every job, so that count grew with every message ever sent: a start
-- (or a node taking an instance over) counted for 123 ms in PostgreSQL for an instance with a million jobs sent,
-- for every instance it starts; its whole read of such an instance is 7.6 ms with the totals kept (bench/job-ids.ts).
--
-- The trigger fires only when a job's state changes into or out of an outcome, whichever node or version writes it
-- (the outcome writer, the recovery at start, a later version's): acceptance, which inserts jobs `queued` or
-- `scheduled` (src/queue/sql/job-rows.ts insertedState), and re-plans, which move `queued` ↔ `scheduled`, do not fire
-- it. Deleting an instance deletes its totals with it (the foreign key); its jobs go by 0012's trigger, which fires
-- no count. The totals are filled from the jobs already there under a lock that holds every other write to jobs
-- off until this migration commits (its count and the trigger see the same jobs): on a large table, writes wait
-- for that one count.
CREATE TABLE job_outcome_totals (
  instance_id uuid NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
  state       text NOT NULL CHECK (state IN ('sent','failed','unknown')),
  n           bigint NOT NULL,
  PRIMARY KEY (instance_id, state)
);

CREATE FUNCTION job_outcome_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.state IN ('sent','failed','unknown') THEN
    UPDATE job_outcome_totals SET n = n - 1 WHERE instance_id = OLD.instance_id AND state = OLD.state;
  END IF;
  IF NEW.state IN ('sent','failed','unknown') THEN
    INSERT INTO job_outcome_totals AS t (instance_id, state, n) VALUES (NEW.instance_id, NEW.state, 1)
      ON CONFLICT (instance_id, state) DO UPDATE SET n = t.n + 1;
  END IF;
  RETURN NULL;
END $$;

LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO job_outcome_totals (instance_id, state, n)
  SELECT j.instance_id, j.state, count(*) FROM jobs j JOIN instances i ON i.id = j.instance_id
   WHERE j.state IN ('sent','failed','unknown') GROUP BY j.instance_id, j.state;
CREATE TRIGGER jobs_outcome_counted AFTER UPDATE OF state ON jobs FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state
        AND (OLD.state IN ('sent','failed','unknown') OR NEW.state IN ('sent','failed','unknown')))
  EXECUTE FUNCTION job_outcome_counted();
