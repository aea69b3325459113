/** Dispatch instants (ms, ascending) of the last 24 h that count against the windows: the planner's history. */
import type { Queryable } from '../../store/pool.js';

export async function loadHistory(q: Queryable, instanceId: string, now: number): Promise<number[]> {
  const { rows } = await q.query<{ at: Date }>(
    'SELECT dispatched_at AS at FROM dispatches WHERE instance_id = $1 AND dispatched_at > $2 ORDER BY dispatched_at',
    [instanceId, new Date(now - 86_400_000)],
  );
  return rows.map((r) => r.at.getTime());
}
