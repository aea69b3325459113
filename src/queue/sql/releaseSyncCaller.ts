/** The synchronous caller has the job's id now: the job no longer depends on this process. */
import type { Queryable } from '../../store/pool.js';

export async function releaseSyncCaller(q: Queryable, instanceId: string, jobId: string): Promise<void> {
  await q.query('UPDATE jobs SET caller_boot = NULL WHERE instance_id = $1 AND id = $2', [instanceId, jobId]);
}
