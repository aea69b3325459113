/**
 * A re-plan found no slot for these jobs before their expiry (or stopped at its attempt cap): the job
 * machine's UNSCHEDULED takes each back to waiting without a slot, until a later re-plan or its expiry.
 *
 * Strategy: one set-based UPDATE for all of them, conditional on the states UNSCHEDULED is allowed in (a job
 * already without a slot, or one that left the queue meanwhile, is not touched). No `message.*` event.
 */
import { bulkJobEvent } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import { sqlStates } from './row.js';

const { from, step } = bulkJobEvent('UNSCHEDULED');
const SQL = `UPDATE jobs SET state = '${step.next}', scheduled_at = NULL, plan_epoch = $3
              WHERE instance_id = $1 AND id = ANY($2::text[]) AND state IN (${sqlStates(from)})`;

export async function unscheduleJobs(q: Queryable, instanceId: string, jobIds: readonly string[], epoch: number): Promise<number> {
  if (jobIds.length === 0) return 0;
  const r = await q.query(SQL, [instanceId, jobIds, epoch]);
  return r.rowCount ?? 0;
}
