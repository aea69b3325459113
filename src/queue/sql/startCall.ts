/**
 * The last step before a media job's call (sql/0014): its media is ready, the call is about to be handed to the
 * session. Until this committed, a start that finds the job in `sending` knows the network was never called
 * (src/queue/sql/recoverSending.ts: `failed`, not `unknown`); so the call is made only when this moved the row.
 *
 * Strategy: one conditional UPDATE of the claimed row, on the claims' own connections (a due job waits for
 * it). Conditional on `sending` and `preparing`: a node that took the instance over meanwhile (this node paused
 * past its lease) moved the row out of `sending` at its start, and then nothing is called here. No lease fence
 * is needed for that: the takeover's recovery and this write serialize on the row, and whichever comes first
 * decides, truthfully, what the recovery calls the job.
 */
import type { Queryable } from '../../store/pool.js';

const SQL = `UPDATE jobs SET preparing = false WHERE id = $1 AND instance_id = $2 AND state = 'sending' AND preparing`;

/** Record that `jobId`'s call starts now; false when the row is no longer this claim's (nothing may be called). */
export async function startCall(q: Queryable, instanceId: string, jobId: string): Promise<boolean> {
  const { rowCount } = await q.query({ name: 'start_call', text: SQL, values: [jobId, instanceId] });
  return rowCount === 1;
}
