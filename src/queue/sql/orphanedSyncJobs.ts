/**
 * Waiting jobs whose synchronous v1 caller belonged to a process that is no longer alive (an earlier process,
 * a node that died; src/queue/sync-callers.ts), in the states the job machine lets EXPIRE move them from: every
 * one of the instance (a queue's start), or the one job a claim refused (`jobId`, src/queue/dispatch-claim.ts).
 * `syncJobsOfCaller`: those of one named process, which the caller of it found gone (src/cluster/lost-callers.ts).
 *
 * Strategy: FOR UPDATE inside the expiring transaction, so the rows cannot move under the EXPIRE that follows
 * (a claim, a conditional UPDATE of the same rows, waits for it and then finds them expired). A job claimed
 * (`sending`) is never selected: it may be on the network.
 */
import { statesAccepting } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import type { Job } from '../job.js';
import { rowToJob, sqlStates, type JobRow } from './row.js';
import { CALLER_GONE } from '../sync-callers.js';

const EXPIRABLE = sqlStates(statesAccepting('EXPIRE'));

const SQL = `SELECT * FROM jobs
              WHERE instance_id = $1 AND caller_boot IS NOT NULL AND caller_boot <> $2 AND ${CALLER_GONE}
                AND state IN (${EXPIRABLE}) AND ($3::text IS NULL OR id = $3)
              FOR UPDATE OF jobs`;

export async function orphanedSyncJobs(q: Queryable, instanceId: string, bootId: string, jobId: string | null = null): Promise<Job[]> {
  const { rows } = await q.query<JobRow>(SQL, [instanceId, bootId, jobId]);
  return rows.map((r) => rowToJob(r));
}

const OF_CALLER = `SELECT * FROM jobs WHERE instance_id = $1 AND caller_boot = $2 AND state IN (${EXPIRABLE}) FOR UPDATE OF jobs`;

export async function syncJobsOfCaller(q: Queryable, instanceId: string, callerBoot: string): Promise<Job[]> {
  const { rows } = await q.query<JobRow>(OF_CALLER, [instanceId, callerBoot]);
  return rows.map((r) => rowToJob(r));
}
