/**
 * Random planner cases for the property tests of the planner's fast paths (test/unit/plan-property.test.ts,
 * plan-insert.test.ts): seeded, reproducible queues with priorities, notBefore, limits, quiet hours (with a DST
 * night), pauses, short TTLs and dispatch history, arriving in groups while time passes.
 */
import { seededRandomDelay, stableRandomDelay, type PlanInput, type PlanJob, type PlanSettings, type RandomDelay } from '../../src/queue/plan.js';
import { DAY_MS, HOUR_MS } from '../../src/queue/windows.js';

const MINUTE = 60_000;
export const BASE = Date.parse('2026-03-28T12:00:00Z'); // the day before the spring-forward night in Europe/Berlin

export type Rng = (min: number, max: number) => number;
export const rngOf = (seed: number): Rng => {
  const r = seededRandomDelay(seed);
  return (min, max) => r(min, max, '');
};
export const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng(0, xs.length - 1)]!;

export function genSettings(rng: Rng): PlanSettings {
  const minDelayMs = pick(rng, [0, 0, 1000, rng(0, 20_000)]);
  const maxDelayMs = minDelayMs + pick(rng, [0, 0, 2000, rng(0, 30_000)]);
  return {
    minDelayMs,
    maxDelayMs,
    maxPerHour: pick(rng, [null, null, rng(1, 6), rng(1, 40), 0]),
    maxPer24h: pick(rng, [null, null, rng(2, 30), rng(5, 200), 0]),
    quietHours: pick(rng, [
      null,
      null,
      { start: '22:00', end: '07:00', tz: 'Europe/Berlin' },
      { start: '12:30', end: '13:10', tz: 'UTC' },
      { start: '02:30', end: '04:00', tz: 'Europe/Berlin' },
    ]),
  };
}

export interface Case {
  settings: PlanSettings;
  history: number[];
  lastDispatchAt: number | null;
  now0: number;
  /** arrival groups, seq increasing across groups */
  groups: PlanJob[][];
  /** the `now` of each group's planning, non-decreasing */
  nows: number[];
  random: RandomDelay;
}

/** The planner's input for `jobs` of case `c` at `now`. */
export const inputOf = (c: Case, jobs: PlanJob[], now: number): PlanInput => ({
  jobs, history: c.history, settings: c.settings, lastDispatchAt: c.lastDispatchAt, now, random: c.random,
});

export function genCase(seed: number): Case {
  const rng = rngOf(seed);
  const settings = genSettings(rng);
  const now0 = BASE + rng(-6, 20) * HOUR_MS + rng(0, HOUR_MS);
  // a dense last hour (more dispatches than 200 attempts can step over) makes the attempt cap reachable
  const dense = rng(0, 19) === 0;
  const history = dense
    ? Array.from({ length: 260 }, (_, i) => now0 - HOUR_MS + 1 + i * 10_000)
    : Array.from({ length: pick(rng, [0, 0, rng(1, 5), rng(1, 60)]) }, () => now0 - rng(0, DAY_MS + HOUR_MS)).sort((a, b) => a - b);
  if (dense) settings.maxPerHour = rng(1, 3);
  const lastDispatchAt = history.length > 0 ? history[history.length - 1]! : pick(rng, [null, now0 - rng(0, 10_000)]);
  const nbShare = pick(rng, [0, 0, 1, 3, 6]); // out of 10
  const prios = pick(rng, [[5], [5], [1, 5, 9], [1, 2, 3, 4, 5, 6, 7, 8, 9]]);
  const groups: PlanJob[][] = [];
  const nows: number[] = [];
  let seq = 0;
  let now = now0;
  const nGroups = rng(1, 5);
  for (let g = 0; g < nGroups; g++) {
    if (g > 0) now += pick(rng, [0, 0, 1, rng(1, 5000), rng(1, 3 * HOUR_MS)]);
    nows.push(now);
    groups.push(
      Array.from({ length: g === 0 ? rng(0, 12) : rng(1, 4) }, () => {
        seq++;
        return {
          id: `j${seed}_${seq}`,
          priority: pick(rng, prios),
          seq,
          notBefore: rng(0, 9) < nbShare ? now + pick(rng, [rng(-MINUTE, MINUTE), rng(0, 2 * HOUR_MS), rng(0, 2 * DAY_MS)]) : null,
          expiresAt: now + pick(rng, [3 * DAY_MS, rng(MINUTE, 6 * HOUR_MS), rng(1, 3 * DAY_MS)]),
        };
      }),
    );
  }
  return { settings, history, lastDispatchAt, now0, groups, nows, random: stableRandomDelay(`s${seed}`) };
}
