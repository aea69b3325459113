/** One job of one instance by id (the instance in the WHERE: a job id of another instance is not found). */
import type { Queryable } from '../../store/pool.js';
import type { Job } from '../job.js';
import { rowToJob, type JobRow } from './row.js';

export async function getJob(q: Queryable, instanceId: string, jobId: string): Promise<Job | null> {
  const { rows } = await q.query<JobRow>('SELECT * FROM jobs WHERE id = $1 AND instance_id = $2', [jobId, instanceId]);
  return rows[0] ? rowToJob(rows[0]) : null;
}
