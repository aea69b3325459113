/** A page of an instance's jobs in arrival order, optionally of one state (GET /api/v2/queue/items). */
import type { JobState } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import type { Job } from '../job.js';
import { rowToJob, type JobRow } from './row.js';

export interface ListJobsOptions {
  state?: JobState;
  limit: number;
  /** seq of the last item of the previous page (keyset paging: no OFFSET scan on a long history) */
  afterSeq?: number;
}

export async function listJobs(q: Queryable, instanceId: string, o: ListJobsOptions): Promise<Job[]> {
  const { rows } = await q.query<JobRow>(
    `SELECT * FROM jobs WHERE instance_id = $1 AND ($2::text IS NULL OR state = $2) AND seq > $3
      ORDER BY seq LIMIT $4`,
    [instanceId, o.state ?? null, o.afterSeq ?? 0, o.limit],
  );
  return rows.map((r) => rowToJob(r));
}
