/**
 * The queue's own count of its outcomes, kept as it changes them: loaded once from PostgreSQL when the queue
 * (re)loads its mirror, then moved by every committed transition to `sent`, `failed` or `unknown`
 * (QueueCore applies a transaction's changes only after its COMMIT). Together with the planner's waiting jobs
 * and the dispatcher's in-flight one it answers GET /api/status and GET /api/v2/queue without a query.
 * test/integration/queue-tally.test.ts compares it with PostgreSQL after a mix of outcomes.
 */
import { OUTCOME_JOB_STATES } from '../../machines/job.machine.js';
import type { LoadedOutcomes, Outcome } from './sql/loadOutcomes.js';

const DAY_MS = 86_400_000;

export const isOutcome = (state: string): state is Outcome => (OUTCOME_JOB_STATES as readonly string[]).includes(state);
const none = (): Record<Outcome, number> => ({ sent: 0, failed: 0, unknown: 0 });

export class Tally {
  private totals: Record<Outcome, number> = none();
  /** terminal times of the last 24 h per outcome, oldest first */
  private recent: Record<Outcome, number[]> = { sent: [], failed: [], unknown: [] };

  load(loaded: LoadedOutcomes): void {
    this.totals = { ...loaded.totals };
    this.recent = { sent: [], failed: [], unknown: [] };
    for (const r of loaded.recent) this.recent[r.state].push(r.at);
  }

  /** A committed transition ended a job in `state` at `at`. */
  ended(state: Outcome, at: number): void {
    this.totals[state] += 1;
    const times = this.recent[state];
    // nearly always the newest; an outcome written back late goes to its place
    let i = times.length;
    while (i > 0 && (times[i - 1] as number) > at) i--;
    times.splice(i, 0, at);
  }

  /** Totals and the last 24 h at `now`. */
  read(now: number): { totals: Record<Outcome, number>; last24h: Record<Outcome, number> } {
    const since = now - DAY_MS;
    const last24h = none();
    for (const k of OUTCOME_JOB_STATES) {
      const times = this.recent[k];
      let drop = 0;
      while (drop < times.length && (times[drop] as number) <= since) drop++;
      if (drop > 0) times.splice(0, drop);
      last24h[k] = times.length;
    }
    return { totals: { ...this.totals }, last24h };
  }
}
