/**
 * Random histories of the planner's memory (src/queue/planning.ts) for property tests: seeded integers, and
 * one fresh, empty Planner per run. The test drives each run's steps (acceptances, dispatches, cancellations,
 * re-plans) with `r` and checks what it defines after each.
 */
import { Planner } from '../../src/queue/planning.js';
import { seededRandomDelay } from '../../src/queue/plan.js';

/** Seeded integers in [min, max]. */
export function seededInts(seed: number): (min: number, max: number) => number {
  const rnd = seededRandomDelay(seed);
  return (min, max) => rnd(min, max, '');
}

/** `runs` fresh planners, each loaded empty, salted `${salt}${run}`. */
export function* emptyPlanners(runs: number, salt: string): Generator<{ p: Planner; run: number }> {
  for (let run = 0; run < runs; run++) {
    const p = new Planner({ salt: `${salt}${run}` });
    p.load({ history: [], lastDispatchAt: null, waiting: [] });
    yield { p, run };
  }
}
