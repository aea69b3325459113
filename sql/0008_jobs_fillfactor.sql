-- 0008: new pages of jobs are filled to half, so that a re-plan's new slots (scheduled_at, plan_epoch; the state
-- stays `scheduled`) find room on the rows' own page: HOT updates, with no new entry in any index (none includes
-- scheduled_at since 0007). With packed pages (the default, 100 %) every moved slot was a new row version on
-- another page with an entry in each of the table's indexes. Half, because a re-plan where every slot moved
-- rewrites every waiting row of a page at once: at 70 % the first such rewrite still went mostly elsewhere.
-- Writing 4,999 moved slots, alternately on this (loaded) machine: 94–139 ms packed, 95–146 ms then 38–77 ms at
-- 70 %, 32–55 ms at 50 %. The cost: the table's pages hold half as many rows. Pages written before keep their
-- packing until the table is rewritten (VACUUM FULL jobs, or as rows are updated and pages pruned).
ALTER TABLE jobs SET (fillfactor = 50);
