/**
 * What the queue's tally (src/queue/tally.ts) starts from: every outcome of an instance counted by state, and the
 * terminal times of the outcomes of the last 24 h (to slide the 24 h window in memory).
 */
import type { Queryable } from '../../store/pool.js';

export type Outcome = 'sent' | 'failed' | 'unknown';

export interface LoadedOutcomes {
  totals: Record<Outcome, number>;
  recent: { state: Outcome; at: number }[];
}

export async function loadOutcomes(q: Queryable, instanceId: string, now: number): Promise<LoadedOutcomes> {
  const [totals, recent] = await Promise.all([
    q.query<Record<Outcome, number>>(
      `SELECT count(*) FILTER (WHERE state = 'sent')::int AS sent,
              count(*) FILTER (WHERE state = 'failed')::int AS failed,
              count(*) FILTER (WHERE state = 'unknown')::int AS unknown
         FROM jobs WHERE instance_id = $1`,
      [instanceId],
    ),
    q.query<{ state: Outcome; terminal_at: Date }>(
      `SELECT state, terminal_at FROM jobs
        WHERE instance_id = $1 AND state IN ('sent', 'failed', 'unknown') AND terminal_at > $2
        ORDER BY terminal_at`,
      [instanceId, new Date(now - 86_400_000)],
    ),
  ]);
  return {
    totals: totals.rows[0] ?? { sent: 0, failed: 0, unknown: 0 },
    recent: recent.rows.map((r) => ({ state: r.state, at: r.terminal_at.getTime() })),
  };
}
