/**
 * Record dispatch instants in the history the sliding windows count (one claimed job, or the sends kept in
 * memory while the store was unreachable, which belong to no job), and move the instance's
 * `last_dispatch_at` forward (the minimum spacing after a restart).
 *
 * Strategy: one statement, the INSERT in a CTE feeding the UPDATE, so a claim's dispatch costs one round
 * trip; GREATEST keeps `last_dispatch_at` from going back when older kept sends are written late.
 */
import type { Queryable } from '../../store/pool.js';

export async function insertDispatches(q: Queryable, instanceId: string, sends: readonly { jobId: string | null; at: number }[]): Promise<void> {
  if (sends.length === 0) return;
  await q.query(
    `WITH d AS (
       INSERT INTO dispatches (instance_id, job_id, dispatched_at)
       SELECT $1, job_id, at FROM unnest($2::text[], $3::timestamptz[]) AS t(job_id, at)
       RETURNING dispatched_at)
     UPDATE instances SET last_dispatch_at = GREATEST(COALESCE(last_dispatch_at, m.at), m.at)
       FROM (SELECT max(dispatched_at) AS at FROM d) AS m
      WHERE id = $1`,
    [instanceId, sends.map((s) => s.jobId), sends.map((s) => new Date(s.at))],
  );
}
