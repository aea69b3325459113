/** The instance's planner state kept across restarts: the last dispatch (minimum spacing) and the plan epoch. */
import type { Queryable } from '../../store/pool.js';

export async function loadPlanState(q: Queryable, instanceId: string): Promise<{ lastDispatchAt: number | null; epoch: number }> {
  const { rows } = await q.query<{ last: Date | null; epoch: number }>(
    'SELECT last_dispatch_at AS last, plan_epoch AS epoch FROM instances WHERE id = $1',
    [instanceId],
  );
  const r = rows[0];
  return { lastDispatchAt: r?.last ? r.last.getTime() : null, epoch: r?.epoch ?? 0 };
}
