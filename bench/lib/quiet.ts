/**
 * Until a gateway's store pool has had no query in flight or waiting for `quietMs` (at most `limitMs`): what a
 * warm-up set going (its first messages' dispatches, their delivery and read receipts, each written to
 * PostgreSQL) is over before a measured run begins. Resolves with how long it waited; past `limitMs` it throws,
 * or (`pastLimit: 'go on'`) resolves.
 */
import type pg from 'pg';

export async function untilStoreQuiet(pool: pg.Pool, quietMs: number, limitMs = 60_000, pastLimit: 'throw' | 'go on' = 'throw'): Promise<number> {
  const t0 = performance.now();
  let quietSince = t0;
  while (performance.now() - quietSince < quietMs) {
    if (performance.now() - t0 > limitMs) {
      if (pastLimit === 'go on') break;
      throw new Error(`the store pool was not quiet for ${quietMs} ms within ${limitMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 10));
    if (pool.waitingCount > 0 || pool.idleCount < pool.totalCount) quietSince = performance.now();
  }
  return performance.now() - t0;
}
