/**
 * Remember the idempotency keys of an acceptance batch (7 days, SPEC.md).
 *
 * Strategy: one `INSERT … ON CONFLICT DO UPDATE … WHERE` for the whole batch, run inside the jobs' insert
 * (src/queue/sql/insertJobs.ts), so one statement writes both. A key older than the retention is free again
 * even if housekeeping has not removed it yet (the update takes it over); a younger one (another node took it
 * meanwhile) updates nothing, so fewer rows than keys come back and the caller throws `keyTakenConcurrently`,
 * which rolls its transaction back.
 */

/**
 * The upsert as a data-modifying CTE body; `rows` is a SELECT of (instance_id, key, job_id, payload_hash,
 * created_at). Returns one row per key remembered.
 */
export function rememberKeysFrom(rows: string): string {
  return `INSERT INTO idempotency_keys AS k (instance_id, key, job_id, payload_hash, created_at) ${rows}
     ON CONFLICT (instance_id, key) DO UPDATE
        SET job_id = EXCLUDED.job_id, payload_hash = EXCLUDED.payload_hash, created_at = EXCLUDED.created_at
      WHERE k.created_at <= EXCLUDED.created_at - interval '7 days'
     RETURNING 1`;
}

export const keyTakenConcurrently = () => new Error('idempotency key taken concurrently');

/**
 * For a statement that is its own transaction: a condition (in a WHERE) that raises a unique_violation, and so
 * undoes the whole statement, when `remembered` (a count over the upsert's RETURNING) is not `expected`
 * (sql/0009_key_taken.sql).
 */
export const allKeysRemembered = (remembered: string, expected: string) => `idempotency_keys_remembered((${remembered}), (${expected}))`;

/** The error of `allKeysRemembered` (PostgreSQL's unique_violation with its message). */
export function isKeyTakenError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e !== null && typeof e === 'object' && e.code === '23505' && typeof e.message === 'string' && e.message.startsWith('idempotency key taken concurrently');
}
