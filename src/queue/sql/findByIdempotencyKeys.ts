/**
 * The jobs idempotency keys name, if remembered (younger than `since`).
 *
 * Strategy: one query over the (instance, key) pairs of every batch of a group commit (many instances at
 * once) rather than a query per request or per instance; the key's own payload hash comes along, since the job
 * may be a requeue whose hash is its own.
 */
import type { Queryable } from '../../store/pool.js';
import type { Job } from '../job.js';
import { JOB_ROW_COLUMNS, rowToJob, type JobRow } from './row.js';

export interface KeyedJob {
  job: Job;
  payloadHash: string;
}

/** The job one idempotency key names (a requeue's derived key, the status route). */
export async function findByIdempotencyKey(q: Queryable, instanceId: string, key: string, since: number): Promise<KeyedJob | null> {
  return (await findKeysAcross(q, [{ instanceId, keys: [key], since }])).get(instanceId)?.get(key) ?? null;
}

/** The remembered keys of many instances' batches in one query: instance id → key → job. */
export async function findKeysAcross(
  q: Queryable,
  wanted: readonly { instanceId: string; keys: readonly string[]; since: number }[],
): Promise<Map<string, Map<string, KeyedJob>>> {
  const out = new Map<string, Map<string, KeyedJob>>();
  const instances: string[] = [];
  const keys: string[] = [];
  const since: Date[] = [];
  for (const w of wanted) for (const k of w.keys) (instances.push(w.instanceId), keys.push(k), since.push(new Date(w.since)));
  if (keys.length === 0) return out;
  // Prepared once per connection (as the group commit's statement, src/queue/sql/insertJobsFenced.ts): a replay
  // over many instances runs it for every group. The columns are named, not j.*: a prepared statement whose
  // result would change shape (a column another node's migration added) fails instead of answering.
  const { rows } = await q.query<JobRow & { key_hash: string; key: string }>({
    name: 'find_keys_across',
    text: `SELECT ${JOB_ROW_COLUMNS}, k.payload_hash AS key_hash, k.key AS key
       FROM unnest($1::uuid[], $2::text[], $3::timestamptz[]) AS w(instance_id, key, since)
       JOIN idempotency_keys k ON k.instance_id = w.instance_id AND k.key = w.key AND k.created_at > w.since
       JOIN jobs j ON j.id = k.job_id`,
    values: [instances, keys, since],
  });
  for (const r of rows) {
    const job = rowToJob(r);
    let m = out.get(job.instanceId);
    if (!m) out.set(job.instanceId, (m = new Map()));
    m.set(r.key, { job, payloadHash: r.key_hash });
  }
  return out;
}
