/**
 * Expiring waiting v1 jobs whose synchronous caller is gone (src/queue/sync-callers.ts) while the queue runs: the
 * job a claim refused because its caller's process is gone (src/queue/dispatch-claim.ts), and the jobs of a
 * caller's process found gone when the connection that carried its wait closed (src/cluster/lost-callers.ts).
 * Each is expired as a queue's start expires them (`message.expired` with ORPHAN_REASON), then taken out of the
 * plan and its waiters answered.
 */
import type { PoolClient } from '../store/pool.js';
import type { Job } from './job.js';
import type { QueueCore } from './core.js';
import { ORPHAN_REASON } from './sync-callers.js';

/** Expire what `select` finds (rows it locked FOR UPDATE) in one queue transaction; the jobs expired. */
export async function expireOrphans(core: QueueCore, select: (c: PoolClient) => Promise<Job[]>, now: number): Promise<Job[]> {
  const expired = await core.transaction(async (c) => {
    const moved: Job[] = [];
    for (const j of await select(c)) {
      const m = await core.moveIn(c, j, { type: 'EXPIRE' }, { terminalAt: now }, { reason: ORPHAN_REASON });
      if (m) moved.push(m);
    }
    return moved;
  });
  for (const j of expired) {
    core.planner.remove(j.id);
    core.settledOne();
    core.waiters.settle(j);
  }
  if (expired.length > 0) core.deps.log.warn({ instanceId: core.instanceId, jobs: expired.map((j) => j.id) }, 'waiting v1 jobs whose caller is gone expired: never sent');
  return expired;
}
