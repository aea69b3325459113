/**
 * Move one job by a job-machine event: a conditional UPDATE, so two paths (or nodes) can never move one job
 * twice. The machine decides: the WHERE is every state the event is allowed in, the SET the state it leads
 * to and the deliveryConfidence it records (machines/job.machine.ts `bulkJobEvent`). Zero rows: the job was
 * not in such a state any more (someone else moved it first), and null comes back.
 *
 * Strategy: one statement with CASE/COALESCE per column rather than a statement per transition kind, so
 * every move shares one query text (and one plan); a column not given is left as it is.
 */
import { bulkJobEvent, type JobEvent, type JobStep } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import type { Job, TransitionFields } from '../job.js';
import { dateOf } from '../../clock.js';
import { JOB_ROW_NAMES, rowToJob, type JobRow } from './row.js';

export interface Moved {
  job: Job;
  step: JobStep;
}

export async function transitionJob(q: Queryable, jobId: string, event: JobEvent, f: TransitionFields = {}): Promise<Moved | null> {
  const { from, step } = bulkJobEvent(event.type);
  // prepared once per connection, its columns named (src/queue/sql/claimJob.ts says why)
  const { rows } = await q.query<JobRow>({
    name: 'transition_job',
    text: `UPDATE jobs SET state = $3,
        scheduled_at = CASE WHEN $4::boolean THEN $5::timestamptz ELSE scheduled_at END,
        dispatched_at = CASE WHEN $6::boolean THEN $7::timestamptz ELSE dispatched_at END,
        terminal_at = COALESCE($8::timestamptz, terminal_at),
        delivery_confidence = COALESCE($9, delivery_confidence),
        message_id = COALESCE($10, message_id),
        result_code = COALESCE($11, result_code),
        error_message = COALESCE($12, error_message),
        unknown_reason = COALESCE($13, unknown_reason),
        attempts = attempts + CASE WHEN $14::boolean THEN 1 ELSE 0 END
      WHERE id = $1 AND state = ANY($2::text[])
      RETURNING ${JOB_ROW_NAMES}`,
    values: [jobId, from, step.next, f.scheduledAt !== undefined, dateOf(f.scheduledAt), f.dispatchedAt !== undefined,
      dateOf(f.dispatchedAt), dateOf(f.terminalAt), step.deliveryConfidence, f.messageId ?? null, f.resultCode ?? null,
      f.errorMessage ?? null, f.unknownReason ?? null, f.attemptsIncrement ?? false],
  });
  return rows[0] ? { job: rowToJob(rows[0]), step } : null;
}
