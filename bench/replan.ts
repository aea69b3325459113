/**
 * Full re-plan of 5,000 pending jobs (issue 5 goal: ≤ 10 ms). Prints figures; asserts nothing.
 *
 * Realistic worst case: the new-instance defaults (40/h, 500/24 h, 4–12 s pauses, quiet hours 22:00–07:00
 * Europe/Berlin), a full 24 h history of 500 dispatches, mixed priorities, a few notBefore jobs, long TTLs so the
 * plan spans days. Run: `npx tsx bench/replan.ts [runs]`.
 */
import { planAll, seededRandomDelay, type PlanInput, type PlanJob } from '../src/queue/plan.js';
import { NEW_INSTANCE_DEFAULTS } from '../src/queue/settings.js';

const RUNS = Number(process.argv[2] ?? 50);
const JOBS = 5000;
const now = Date.UTC(2026, 2, 27, 9, 0, 0); // two days before the spring-forward change in Europe/Berlin
const rnd = seededRandomDelay(42);

const history: number[] = [];
for (let i = 0; i < 500; i++) history.push(now - 86_000_000 + Math.floor((i * 86_000_000) / 500));

const jobs: PlanJob[] = [];
for (let i = 0; i < JOBS; i++) {
  const r = rnd(0, 999, 'job');
  jobs.push({
    id: `wq_${i.toString(16).padStart(8, '0')}`,
    priority: r < 50 ? 9 : r < 900 ? 5 : 1,
    seq: i + 1,
    notBefore: r % 97 === 0 ? now + rnd(0, 3 * 86_400_000, 'nb') : null,
    expiresAt: now + 30 * 86_400_000,
  });
}

const input: PlanInput = {
  jobs,
  history,
  settings: NEW_INSTANCE_DEFAULTS,
  lastDispatchAt: history[history.length - 1]!,
  now,
  random: seededRandomDelay(7),
};

// Warm up the JIT and the time-zone formatter caches, as a long-running process would be.
for (let i = 0; i < 5; i++) planAll(input);

// Wall time is what a caller waits; CPU time (this process) shows the work itself when the machine is busy.
const times: number[] = [];
const cpu: number[] = [];
let last = planAll(input);
for (let i = 0; i < RUNS; i++) {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  last = planAll({ ...input, random: seededRandomDelay(i) });
  times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  const c = process.cpuUsage(c0);
  cpu.push((c.user + c.system) / 1000);
}
times.sort((a, b) => a - b);
cpu.sort((a, b) => a - b);
const pick = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;
const pct = (p: number) => pick(times, p);
const span = last.placements.length > 0 ? (last.placements[last.placements.length - 1]!.scheduledAt - now) / 86_400_000 : 0;

console.log(`replan: ${JOBS} jobs, ${history.length} dispatches of history, ${RUNS} runs`);
console.log(`  median ${pct(50).toFixed(2)} ms   p99 ${pct(99).toFixed(2)} ms   max ${times[times.length - 1]!.toFixed(2)} ms   (goal ≤ 10 ms)`);
console.log(`  cpu time: median ${pick(cpu, 50).toFixed(2)} ms   p99 ${pick(cpu, 99).toFixed(2)} ms`);
console.log(`  placed ${last.placements.length}, unreachable ${last.unreachable.length}, unplaced ${last.unplaced.length}, plan spans ${span.toFixed(1)} days`);
