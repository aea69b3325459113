/** A re-plan's epoch, written in the re-plan's transaction (queue.replanned carries it). */
import type { Queryable } from '../../store/pool.js';

export async function setPlanEpoch(q: Queryable, instanceId: string, epoch: number): Promise<void> {
  await q.query('UPDATE instances SET plan_epoch = $2 WHERE id = $1', [instanceId, epoch]);
}
