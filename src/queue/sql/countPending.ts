/**
 * How many jobs of an instance are not final yet (waiting or being sent): what QUEUE_FULL compares with
 * QUEUE_MAX_PENDING. The states are the job machine's non-final ones. Read once at start; the worker keeps
 * the count in memory after that.
 */
import { PENDING_JOB_STATES } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import { sqlStates } from './row.js';

const SQL = `SELECT count(*)::int AS n FROM jobs WHERE instance_id = $1 AND state IN (${sqlStates(PENDING_JOB_STATES)})`;

export async function countPending(q: Queryable, instanceId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(SQL, [instanceId]);
  return rows[0]?.n ?? 0;
}
