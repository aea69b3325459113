/**
 * Claim one due job for dispatch: the job machine's DISPATCH as a conditional UPDATE (only from the states it
 * is allowed in, so a claim and a cancel or an expiry never both win), its dispatch instant recorded in the
 * history the sliding windows count, and the instance's `last_dispatch_at` moved forward — one statement.
 *
 * The slot the planner dispatched it at is written with it (`scheduled_at`): a slot an acceptance moved may
 * not have been written yet (src/queue/slot-writer.ts), and the row then says when it was due. A media job is
 * claimed `preparing` (sql/0014): it is not handed to the network before src/queue/sql/startCall.ts cleared it.
 * No `message.*` event: DISPATCH emits none.
 *
 * Strategy: one statement of three data-modifying CTEs instead of a read, an UPDATE and an INSERT: the
 * dispatch lane's claim is what a due slot waits for, and every round trip is a turn of a busy event loop.
 * Zero rows: the job was not in a claimable state (cancelled, expired, still claimed by an earlier claim whose
 * answer was lost, or waiting without a stored slot), its synchronous v1 caller waited in a process that is
 * gone (src/queue/sync-callers.ts: the caller resends, so this copy must never go out; the caller expires it),
 * or, with a lease, the lease is no longer this node's; the caller reads it to find out which. A job whose
 * caller waits in this process, or in no process, is never held back by that test.
 *
 * With `lease` the statement fences itself: the lease row is read FOR KEY SHARE at this node's epoch, unexpired,
 * and nothing moves without it (what src/cluster/leases.ts fenceLeases does first in a transaction; a takeover,
 * which changes the epoch, waits for the statement). Without it the caller runs the claim in a fenced
 * transaction.
 *
 * Prepared under its name on each connection, its columns named rather than `*`: a prepared statement whose
 * result changed shape (a column another node's migration added) would fail rather than answer.
 */
import { bulkJobEvent } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import type { Job } from '../job.js';
import { MEDIA_SEND_KINDS } from '../payload.js';
import type { LeaseRef } from '../types.js';
import { JOB_ROW_NAMES, rowToJob, type JobRow } from './row.js';
import { BOOT_ID, CALLER_ALIVE } from '../sync-callers.js';

const dispatch = bulkJobEvent('DISPATCH');
/** A media job is claimed `preparing`: its media is read or fetched before the call (src/queue/sql/startCall.ts). */
const MEDIA_KINDS = MEDIA_SEND_KINDS.map((k) => `'${k}'`).join(', ');

const claim = (fence: boolean) => `WITH ${fence ? `held AS (
       SELECT 1 FROM instance_leases
        WHERE instance_id = $2 AND node_id = $9 AND epoch = $10 AND expires_at > now()
        FOR KEY SHARE),
     ` : ''}moved AS (
       UPDATE jobs SET state = $3, scheduled_at = $4, dispatched_at = $5, attempts = attempts + 1,
                       delivery_confidence = COALESCE($6, delivery_confidence), preparing = kind IN (${MEDIA_KINDS})
        WHERE id = $1 AND instance_id = $2 AND state = ANY($7::text[])
          AND (caller_boot IS NULL OR caller_boot = $8 OR ${CALLER_ALIVE})${fence ? ' AND EXISTS (SELECT 1 FROM held)' : ''}
       RETURNING ${JOB_ROW_NAMES}),
     d AS (
       INSERT INTO dispatches (instance_id, job_id, dispatched_at)
       SELECT instance_id, id, dispatched_at FROM moved
       RETURNING dispatched_at),
     i AS (
       UPDATE instances SET last_dispatch_at = GREATEST(COALESCE(last_dispatch_at, d.dispatched_at), d.dispatched_at)
         FROM d
        WHERE id = $2)
     SELECT ${JOB_ROW_NAMES} FROM moved`;
const SQL = claim(false);
const FENCED = claim(true);

/** Claim `jobId` (due at `slot`) at `at`, under `lease` if given; the claimed job, or null when it was not claimed. */
export async function claimJob(q: Queryable, instanceId: string, jobId: string, slot: number, at: number, lease?: LeaseRef): Promise<Job | null> {
  const values: unknown[] = [jobId, instanceId, dispatch.step.next, new Date(slot), new Date(at), dispatch.step.deliveryConfidence, dispatch.from, BOOT_ID];
  // prepared once per connection (the claim connections stay open): a due slot waits for this statement
  const { rows } = await q.query<JobRow>(
    lease ? { name: 'claim_job_fenced', text: FENCED, values: [...values, lease.nodeId, lease.epoch] } : { name: 'claim_job', text: SQL, values },
  );
  return rows[0] ? rowToJob(rows[0]) : null;
}
