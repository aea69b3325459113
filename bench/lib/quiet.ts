/**
 * Until a gateway's store pool has had no query in flight or waiting for `quietMs` (at most `limitMs`): what a
 * warm-up set going (its first messages' dispatches, their delivery and read receipts, each written to
 * PostgreSQL) is over before a measured run begins. Resolves with how long it waited; past `limitMs` it throws,
 * or (`pastLimit: 'go on'`) resolves. Whether it was quiet is `quietWithin(waited, limitMs)`: a benchmark goes on
 * and says so beside its figures, rather than print nothing (on a slow machine, S's third run in docs/
 * benchmarks.md, the spread benchmark's warm-up never had 6 s of silence within a minute, and the run died there).
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

/** Whether `untilStoreQuiet` found its silence (`waited` what it resolved with) rather than going on past `limitMs`. */
export const quietWithin = (waited: number, limitMs = 60_000): boolean => waited < limitMs;
