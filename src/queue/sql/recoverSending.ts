/**
 * At start: jobs an earlier process (a crash, a killed node) left in `sending`. Most have an outcome nobody can
 * know: the job machine's RECOVERED_SENDING moves each to `unknown` (never resent, result code `UNKNOWN` as
 * every unknown outcome has). A media job still `preparing` (sql/0014: its media was being read or fetched, and
 * the call is handed to the session only after that flag is cleared) was provably never sent:
 * RECOVERED_UNSENT moves it to `failed` with INTERRUPTED_BEFORE_SEND, and it can be requeued. The caller emits
 * the event each returned step names.
 *
 * Strategy: one UPDATE … RETURNING per outcome over the instance's jobs in the states the events are allowed
 * in, inside the start transaction, so the moves and their events commit together.
 */
import { bulkJobEvent } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import { rowToJob, sqlStates, type JobRow } from './row.js';
import type { Moved } from './transitionJob.js';

export const RECOVERED_REASON = 'gateway stopped while the message was being dispatched; it may or may not have been sent';
export const UNSENT_CODE = 'INTERRUPTED_BEFORE_SEND';
export const UNSENT_MESSAGE = 'the gateway stopped while the message\'s media was being prepared; the network was never called, nothing was sent';

const unknown = bulkJobEvent('RECOVERED_SENDING');
const unsent = bulkJobEvent('RECOVERED_UNSENT');
// provably not sent: its dispatch stops counting against the windows, as every `failed` outcome's (src/queue/outcome.ts)
const UNSENT_SQL = `WITH moved AS (
       UPDATE jobs SET state = '${unsent.step.next}', terminal_at = $2, result_code = $3, error_message = $4, preparing = false
        WHERE instance_id = $1 AND state IN (${sqlStates(unsent.from)}) AND preparing RETURNING *),
     forgot AS (DELETE FROM dispatches d USING moved WHERE d.job_id = moved.id)
     SELECT * FROM moved`;
const UNKNOWN_SQL = `UPDATE jobs SET state = '${unknown.step.next}', terminal_at = $2, delivery_confidence = COALESCE($3, delivery_confidence),
                    unknown_reason = $4, result_code = 'UNKNOWN'
              WHERE instance_id = $1 AND state IN (${sqlStates(unknown.from)}) RETURNING *`;

export async function recoverSending(q: Queryable, instanceId: string, now: number): Promise<Moved[]> {
  const at = new Date(now);
  const never = await q.query<JobRow>(UNSENT_SQL, [instanceId, at, UNSENT_CODE, UNSENT_MESSAGE]);
  const maybe = await q.query<JobRow>(UNKNOWN_SQL, [instanceId, at, unknown.step.deliveryConfidence, RECOVERED_REASON]);
  return [...never.rows.map((r) => ({ job: rowToJob(r), step: unsent.step })), ...maybe.rows.map((r) => ({ job: rowToJob(r), step: unknown.step }))];
}
