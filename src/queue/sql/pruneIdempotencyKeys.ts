/** Forget keys older than the retention (7 days); a key whose row is gone may be used again (housekeeping). */
import type { Queryable } from '../../store/pool.js';

export async function pruneIdempotencyKeys(q: Queryable, olderThan: number): Promise<number> {
  const r = await q.query('DELETE FROM idempotency_keys WHERE created_at <= $1', [new Date(olderThan)]);
  return r.rowCount ?? 0;
}
