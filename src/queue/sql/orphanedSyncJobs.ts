/**
 * Waiting jobs whose synchronous v1 caller belonged to a process that is no longer alive (an earlier process,
 * a node that died; src/queue/sync-callers.ts), in the states the job machine lets EXPIRE move them from.
 *
 * Strategy: FOR UPDATE inside the start transaction, so the rows cannot move under the EXPIRE that follows.
 */
import { statesAccepting } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import type { Job } from '../job.js';
import { rowToJob, sqlStates, type JobRow } from './row.js';
import { CALLER_GONE } from '../sync-callers.js';

const SQL = `SELECT * FROM jobs
              WHERE instance_id = $1 AND caller_boot IS NOT NULL AND caller_boot <> $2 AND ${CALLER_GONE}
                AND state IN (${sqlStates(statesAccepting('EXPIRE'))})
              FOR UPDATE OF jobs`;

export async function orphanedSyncJobs(q: Queryable, instanceId: string, bootId: string): Promise<Job[]> {
  const { rows } = await q.query<JobRow>(SQL, [instanceId, bootId]);
  return rows.map((r) => rowToJob(r));
}
