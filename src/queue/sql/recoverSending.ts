/**
 * At start: jobs an earlier process (a crash, a killed node) left in `sending` have an outcome nobody can
 * know. The job machine's RECOVERED_SENDING moves each (to `unknown`, never resent, result code `UNKNOWN` as
 * every unknown outcome has); the caller emits the event the step names for each returned job.
 *
 * Strategy: one UPDATE … RETURNING over the instance's jobs in the states the event is allowed in, inside the
 * start transaction, so the moves and their events commit together.
 */
import { bulkJobEvent } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import { rowToJob, sqlStates, type JobRow } from './row.js';
import type { Moved } from './transitionJob.js';

export const RECOVERED_REASON = 'gateway stopped while the message was being dispatched; it may or may not have been sent';

const { from, step } = bulkJobEvent('RECOVERED_SENDING');
const SQL = `UPDATE jobs SET state = '${step.next}', terminal_at = $2, delivery_confidence = COALESCE($3, delivery_confidence),
                    unknown_reason = $4, result_code = 'UNKNOWN'
              WHERE instance_id = $1 AND state IN (${sqlStates(from)}) RETURNING *`;

export async function recoverSending(q: Queryable, instanceId: string, now: number): Promise<Moved[]> {
  const { rows } = await q.query<JobRow>(SQL, [instanceId, new Date(now), step.deliveryConfidence, RECOVERED_REASON]);
  return rows.map((r) => ({ job: rowToJob(r), step }));
}
