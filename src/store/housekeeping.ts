/**
 * Housekeeping on the runtime clock: forget what the contract lets us forget, so tables stay bounded.
 * Idempotency keys after 7 days (SPEC.md), dispatch history once outside the 24 h window, statistics rows of
 * incoming messages after 24 h, finished webhook deliveries after 7 days (their log stays readable until then).
 * Jobs themselves are kept: they are the record integrators read.
 */
import type { Pool } from './pool.js';
import type { Clock, TimerHandle } from '../clock.js';
import type { Logger } from '../log.js';
import { pruneIdempotencyKeys } from '../queue/jobs.js';
import { pruneDeliveries } from '../webhooks/deliveries.js';

const DAY = 86_400_000;

export interface HousekeepingReport {
  idempotencyKeys: number;
  dispatches: number;
  inbound: number;
  deliveries: number;
}

export async function housekeep(pool: Pool, now: number): Promise<HousekeepingReport> {
  const idempotencyKeys = await pruneIdempotencyKeys(pool, now - 7 * DAY);
  // an hour of margin past the 24 h window: the planner never looks further back
  const dispatches = (await pool.query('DELETE FROM dispatches WHERE dispatched_at < $1', [new Date(now - DAY - 3_600_000)])).rowCount ?? 0;
  const inbound = (await pool.query('DELETE FROM inbound_messages WHERE received_at < $1', [new Date(now - DAY - 3_600_000)])).rowCount ?? 0;
  let deliveries = 0;
  for (let n = -1; n !== 0; deliveries += n) n = await pruneDeliveries(pool, new Date(now - 7 * DAY));
  return { idempotencyKeys, dispatches, inbound, deliveries };
}

export function startHousekeeping(deps: { pool: Pool; clock: Clock; log: Logger; everyMs?: number }): () => void {
  let timer: TimerHandle | null = null;
  let stopped = false;
  const run = () => {
    timer = null;
    void housekeep(deps.pool, deps.clock.now())
      .then((r) => deps.log.debug({ ...r }, 'housekeeping'))
      .catch((err: unknown) => deps.log.warn({ err }, 'housekeeping failed'))
      .finally(() => {
        if (!stopped) timer = deps.clock.setTimeout(run, deps.everyMs ?? 3_600_000);
      });
  };
  timer = deps.clock.setTimeout(run, 60_000);
  return () => {
    stopped = true;
    if (timer !== null) deps.clock.clearTimeout(timer);
  };
}
