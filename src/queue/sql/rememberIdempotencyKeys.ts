/**
 * Remember the idempotency keys of an acceptance batch (7 days, SPEC.md).
 *
 * Strategy: one `INSERT … ON CONFLICT DO UPDATE … WHERE` for the whole batch. A key older than the retention
 * is free again even if housekeeping has not removed it yet (the update takes it over); a younger one
 * (another node took it meanwhile) updates nothing, so fewer rows than keys come back and the caller's
 * transaction is rolled back by the throw.
 */
import type { Queryable } from '../../store/pool.js';
import type { NewJob } from '../job.js';

export async function rememberIdempotencyKeys(q: Queryable, jobs: readonly NewJob[]): Promise<void> {
  const keyed = jobs.filter((j) => j.idempotencyKey !== null);
  if (keyed.length === 0) return;
  const { rowCount } = await q.query(
    `INSERT INTO idempotency_keys AS k (instance_id, key, job_id, payload_hash, created_at)
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
     ON CONFLICT (instance_id, key) DO UPDATE
        SET job_id = EXCLUDED.job_id, payload_hash = EXCLUDED.payload_hash, created_at = EXCLUDED.created_at
      WHERE k.created_at <= EXCLUDED.created_at - interval '7 days'`,
    [keyed.map((j) => j.instanceId), keyed.map((j) => j.idempotencyKey), keyed.map((j) => j.id),
      keyed.map((j) => j.payloadHash), keyed.map((j) => new Date(j.queuedAt))],
  );
  if ((rowCount ?? 0) !== keyed.length) throw new Error('idempotency key taken concurrently');
}
