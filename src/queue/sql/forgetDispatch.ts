/** A dispatch that ended provably unsent (`failed`, or the call never reached the network) stops counting. */
import type { Queryable } from '../../store/pool.js';

export async function forgetDispatch(q: Queryable, jobId: string): Promise<void> {
  await q.query('DELETE FROM dispatches WHERE job_id = $1', [jobId]);
}
