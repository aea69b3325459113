/**
 * The jobs idempotency keys name, if remembered (younger than `since`).
 *
 * Strategy: one `key = ANY($2)` query for a whole acceptance batch rather than a query per request; the
 * key's own payload hash comes along, since the job may be a requeue whose hash is its own.
 */
import type { Queryable } from '../../store/pool.js';
import type { Job } from '../job.js';
import { rowToJob, type JobRow } from './row.js';

export interface KeyedJob {
  job: Job;
  payloadHash: string;
}

export async function findByIdempotencyKeys(q: Queryable, instanceId: string, keys: readonly string[], since: number): Promise<Map<string, KeyedJob>> {
  const out = new Map<string, KeyedJob>();
  if (keys.length === 0) return out;
  const { rows } = await q.query<JobRow & { key_hash: string; key: string }>(
    `SELECT j.*, k.payload_hash AS key_hash, k.key AS key FROM idempotency_keys k JOIN jobs j ON j.id = k.job_id
      WHERE k.instance_id = $1 AND k.key = ANY($2::text[]) AND k.created_at > $3`,
    [instanceId, keys, new Date(since)],
  );
  for (const r of rows) out.set(r.key, { job: rowToJob(r), payloadHash: r.key_hash });
  return out;
}

/** The job one idempotency key names (a requeue's derived key, the status route). */
export async function findByIdempotencyKey(q: Queryable, instanceId: string, key: string, since: number): Promise<KeyedJob | null> {
  return (await findByIdempotencyKeys(q, instanceId, [key], since)).get(key) ?? null;
}
