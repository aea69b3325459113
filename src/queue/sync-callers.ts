/**
 * Jobs a synchronous v1 caller is waiting for. Such a job carries the boot id of the process whose route
 * waits (`caller_boot`). If that process dies the caller gets no answer and, as SPEC.md tells it, resends:
 * so at the next start of the instance's queue, a waiting job marked by another process is expired (never
 * sent). Once the caller has the job's id (504 QUEUE_WAIT_TIMEOUT), the mark is cleared and the job goes out
 * at its slot like any other.
 */
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../store/pool.js';
import { rowToJob, type Job, type JobRow } from './jobs.js';

/** This process's boot id: differs on every start, so a mark from an earlier process is always recognised. */
export const BOOT_ID = randomUUID();

export const ORPHAN_REASON = 'the synchronous v1 caller lost its answer when the gateway stopped; not sent, so that its resend cannot send it twice';

/** Waiting jobs whose synchronous caller belonged to an earlier process (locked for the caller's transaction). */
export async function orphanedSyncJobs(q: Queryable, instanceId: string): Promise<Job[]> {
  const { rows } = await q.query<JobRow>(
    `SELECT * FROM jobs
      WHERE instance_id = $1 AND caller_boot IS NOT NULL AND caller_boot <> $2 AND state IN ('queued', 'scheduled')
      FOR UPDATE`,
    [instanceId, BOOT_ID],
  );
  return rows.map(rowToJob);
}

/** The caller has the job's id now: the job no longer depends on this process. */
export async function releaseSyncCaller(q: Queryable, instanceId: string, jobId: string): Promise<void> {
  await q.query('UPDATE jobs SET caller_boot = NULL WHERE instance_id = $1 AND id = $2', [instanceId, jobId]);
}
