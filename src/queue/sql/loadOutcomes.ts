/**
 * What the queue's tally (src/queue/tally.ts) starts from: the totals of an instance's outcomes by state (kept by
 * sql/0018_outcome_totals.sql's trigger), and the terminal times of the outcomes of the last 24 h (to slide the
 * 24 h window in memory).
 */
import type { Queryable } from '../../store/pool.js';
import { sqlStates } from './row.js';
import { OUTCOME_JOB_STATES, type OutcomeState } from '../../../machines/job.machine.js';

export type Outcome = OutcomeState;

export interface LoadedOutcomes {
  totals: Record<Outcome, number>;
  recent: { state: Outcome; at: number }[];
}

// the table keeps cancelled and expired too (sql/0020_terminal_totals.sql, for GET /metrics): only the outcomes here
const TOTALS = `SELECT state, n::float8 AS n FROM job_outcome_totals WHERE instance_id = $1 AND state IN (${sqlStates(OUTCOME_JOB_STATES)})`;

export async function loadOutcomes(q: Queryable, instanceId: string, now: number): Promise<LoadedOutcomes> {
  const [totals, recent] = await Promise.all([
    // kept by a trigger as jobs reach their outcomes (sql/0018_outcome_totals.sql), not counted over every job
    q.query<{ state: Outcome; n: number }>(TOTALS, [instanceId]),
    q.query<{ state: Outcome; terminal_at: Date }>(
      `SELECT state, terminal_at FROM jobs
        WHERE instance_id = $1 AND state = ANY($2::text[]) AND terminal_at > $3
        ORDER BY terminal_at`,
      [instanceId, OUTCOME_JOB_STATES, new Date(now - 86_400_000)],
    ),
  ]);
  const counted = Object.fromEntries(OUTCOME_JOB_STATES.map((s) => [s, 0])) as Record<Outcome, number>;
  for (const r of totals.rows) counted[r.state] = r.n;
  return {
    totals: counted,
    recent: recent.rows.map((r) => ({ state: r.state, at: r.terminal_at.getTime() })),
  };
}
