/**
 * An instance's waiting jobs in planning order (priority desc, arrival asc): the planner's mirror at start.
 * The states are the ones a re-plan moves (the job machine's REPLANNED); `jobs_instance_state` (instance,
 * state, seq) finds them, and PostgreSQL sorts them (sql/0017_drop_jobs_waiting.sql).
 *
 * Strategy: only the columns planning reads, never the payloads: a start with 5,000 waiting jobs neither
 * ships nor parses 5,000 payloads (each is read and checked when its job is claimed).
 */
import { CLAIMED_JOB_STATES, WAITING_JOB_STATES } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import type { MirrorJob } from '../planning-types.js';
import { sqlStates } from './row.js';

const SQL = `SELECT id, priority, seq, not_before, expires_at, scheduled_at FROM jobs
              WHERE instance_id = $1 AND state IN (${sqlStates(WAITING_JOB_STATES)}) ORDER BY priority DESC, seq`;

/** A waiting job's row as the mirror reads it (also src/queue/sql/loadStarts.ts, for many instances). */
export interface WaitingRow {
  id: string;
  priority: number;
  seq: number;
  not_before: Date | null;
  expires_at: Date;
  scheduled_at: Date | null;
}

export async function listWaiting(q: Queryable, instanceId: string): Promise<MirrorJob[]> {
  const { rows } = await q.query<WaitingRow>(SQL, [instanceId]);
  return rows.map(mirrorJobOf);
}

const WITH_CLAIMED = `SELECT id, priority, seq, not_before, expires_at, scheduled_at, state FROM jobs
              WHERE instance_id = $1 AND state IN (${sqlStates([...WAITING_JOB_STATES, ...CLAIMED_JOB_STATES])}) ORDER BY priority DESC, seq`;

/**
 * The waiting jobs, and those claimed (`sending`) whose claim this process does not hold (`held`: a call in
 * flight, an outcome not yet written), in planning order: what a running queue reads again (src/queue/core.ts
 * `reload`). Such a claim is one whose answer was lost: it committed, but the lane saw a failure and made no
 * call. In the mirror its next claim finds it claimed and puts it back first (src/queue/dispatch-claim.ts);
 * left out, nothing would ever claim, put back or end it.
 */
export async function listWaitingAndLostClaims(q: Queryable, instanceId: string, held: (jobId: string) => boolean): Promise<MirrorJob[]> {
  const { rows } = await q.query<WaitingRow & { state: string }>(WITH_CLAIMED, [instanceId]);
  return rows.filter((r) => !CLAIMED_JOB_STATES.some((s) => s === r.state) || !held(r.id)).map(mirrorJobOf);
}

export function mirrorJobOf(r: WaitingRow): MirrorJob {
  return {
    id: r.id,
    priority: r.priority,
    seq: r.seq,
    notBefore: r.not_before ? r.not_before.getTime() : null,
    expiresAt: r.expires_at.getTime(),
    scheduledAt: r.scheduled_at ? r.scheduled_at.getTime() : null,
  };
}
