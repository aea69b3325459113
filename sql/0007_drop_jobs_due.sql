-- 0007: the partial index jobs_due (scheduled_at of scheduled jobs) goes. Nothing reads it: the dispatch timer
-- runs from the planner's memory (src/queue/planning.ts) and no query selects or orders jobs by scheduled_at.
-- It cost every acceptance an index entry and made every slot a re-plan moves a non-HOT update with an index
-- insertion (about a fifth of the time of writing 5,000 slots here).
DROP INDEX IF EXISTS jobs_due;
