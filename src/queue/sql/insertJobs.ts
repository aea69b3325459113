/**
 * Insert an acceptance batch's jobs in one statement. Returns them with their seq, in the batch's order.
 *
 * Strategy: `unnest` of one array per column keeps a batch of hundreds to one round trip (a multi-row VALUES
 * would need a parameter per cell); WITH ORDINALITY keeps the batch's arrival order in `seq`. The state each
 * job is inserted in is the job machine's: its initial state, then PLANNED when acceptance gave it a slot.
 * Only `seq` comes back: everything else of the job is what was just written (a send-bulk of 5,000 does not
 * ship and parse its 5,000 rows twice).
 */
import { acceptJob, applyJobEvent, type JobState } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import type { Job, NewJob } from '../job.js';
import { sendPart } from '../payload.js';
import { toDate } from './row.js';

const INITIAL = acceptJob().next;
const PLANNED = applyJobEvent(INITIAL, { type: 'PLANNED' })?.next;

/** The state a new job is stored in. */
export function insertedState(job: Pick<NewJob, 'scheduledAt'>): JobState {
  if (job.scheduledAt === null) return INITIAL;
  if (PLANNED === undefined) throw new Error('the job machine does not allow PLANNED from its initial state');
  return PLANNED;
}

export async function insertJobs(q: Queryable, jobs: NewJob[]): Promise<Job[]> {
  if (jobs.length === 0) return [];
  const { rows } = await q.query<{ id: string; seq: number }>(
    `INSERT INTO jobs (id, instance_id, state, kind, origin_route, chat_id, phone, payload, payload_hash,
        idempotency_key, priority, not_before, queued_at, scheduled_at, expires_at, previous_job_id, caller_boot)
     SELECT id, inst, state, kind, route, chat, phone, payload::jsonb, hash, key, prio, nb, qa, sa, ea, prev, boot
       FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                   $9::text[], $10::text[], $11::smallint[], $12::timestamptz[], $13::timestamptz[],
                   $14::timestamptz[], $15::timestamptz[], $16::text[], $17::text[])
            WITH ORDINALITY AS t(id, inst, state, kind, route, chat, phone, payload, hash, key, prio, nb, qa, sa, ea, prev, boot, ord)
      ORDER BY ord
     RETURNING id, seq`,
    [
      jobs.map((j) => j.id), jobs.map((j) => j.instanceId), jobs.map(insertedState), jobs.map((j) => j.kind),
      jobs.map((j) => j.originRoute), jobs.map((j) => j.chatId), jobs.map((j) => j.phone),
      jobs.map((j) => JSON.stringify(j.payload)), jobs.map((j) => j.payloadHash), jobs.map((j) => j.idempotencyKey),
      jobs.map((j) => j.priority), jobs.map((j) => toDate(j.notBefore)), jobs.map((j) => new Date(j.queuedAt)),
      jobs.map((j) => toDate(j.scheduledAt)), jobs.map((j) => new Date(j.expiresAt)), jobs.map((j) => j.previousJobId),
      jobs.map((j) => j.callerBoot),
    ],
  );
  const seqOf = new Map(rows.map((r) => [r.id, Number(r.seq)]));
  return jobs.map((j) => {
    const seq = seqOf.get(j.id);
    if (seq === undefined) throw new Error(`job ${j.id} was not inserted`);
    return insertedJob(j, seq);
  });
}

/**
 * A job as its insert stored it: the column defaults for everything acceptance does not write. Written out
 * field by field, the send last: a literal that starts with a spread is far slower to build (src/queue/sql/row.ts).
 */
function insertedJob(j: NewJob, seq: number): Job {
  return {
    id: j.id,
    seq,
    instanceId: j.instanceId,
    state: insertedState(j),
    originRoute: j.originRoute,
    chatId: j.chatId,
    phone: j.phone,
    payloadHash: j.payloadHash,
    idempotencyKey: j.idempotencyKey,
    priority: j.priority,
    notBefore: j.notBefore,
    queuedAt: j.queuedAt,
    scheduledAt: j.scheduledAt,
    dispatchedAt: null,
    terminalAt: null,
    expiresAt: j.expiresAt,
    attempts: 0,
    deliveryConfidence: null,
    messageId: null,
    resultCode: null,
    errorMessage: null,
    unknownReason: null,
    previousJobId: j.previousJobId,
    ...sendPart(j),
  };
}
