/**
 * Write a plan: new slots for many waiting jobs, each by the job machine's REPLANNED (the states it is
 * allowed in, the state it leads to); a job that left them meanwhile (cancelled, expired) is not touched.
 *
 * Strategy: one UPDATE … FROM unnest(ids, slots) for the whole plan: a re-plan of 5,000 jobs is one round
 * trip, not 5,000. No `message.*` event: a new slot is not one (there is no message.scheduled).
 */
import { bulkJobEvent } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import { sqlStates } from './row.js';

const { from, step } = bulkJobEvent('REPLANNED');
const SQL = `UPDATE jobs j SET scheduled_at = s.at, state = '${step.next}', plan_epoch = $3
               FROM unnest($1::text[], $2::timestamptz[]) AS s(id, at)
              WHERE j.id = s.id AND j.state IN (${sqlStates(from)})`;

export async function saveSlots(q: Queryable, slots: readonly { jobId: string; scheduledAt: number }[], epoch: number): Promise<number> {
  if (slots.length === 0) return 0;
  const r = await q.query(SQL, [slots.map((s) => s.jobId), slots.map((s) => new Date(s.scheduledAt)), epoch]);
  return r.rowCount ?? 0;
}
