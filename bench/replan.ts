/**
 * Full re-plan of 5,000 pending jobs (issue 5 goal: ≤ 10 ms). Prints figures; asserts nothing.
 *
 * Realistic worst case: the new-instance defaults (40/h, 500/24 h, 4–12 s pauses, quiet hours 22:00–07:00
 * Europe/Berlin), a full 24 h history of 500 dispatches, mixed priorities, a few notBefore jobs, long TTLs so the
 * plan spans days. Run: `npx tsx bench/replan.ts [runs]`.
 *
 * Then what every acceptance does to such a plan: append its job (planAppend) to the tail of a plan of 5,000
 * waiting jobs under the existing-instance defaults (no limits, 1.5–3 s pauses: every slot of the plan is in
 * its 24 h window), CPU time per append. Each append clones the tail's window counter; the clone once walked
 * every instant of the window to its first seek: 28 µs per append here (from 5,000 slots in the window to
 * 25,000), 2.4 µs since it is placed by binary search.
 *
 * The figure above is the planning rule alone (planAll). What a re-plan of the queue costs in memory is more: the
 * instance's planner (src/queue/planning.ts) runs the rule, then finds the rows whose slot changed (`writes`,
 * what the re-plan's transaction writes) and takes the new plan (`commit`). It is measured too, on the same
 * 5,000 jobs, once with every slot where PostgreSQL holds it (nothing to write) and once after the first job
 * left (every slot after it moves).
 *
 * And the limits object every acceptance answers with, of an instance with a day of dispatches at those
 * pauses: counted by binary search over the queue's ascending history, and by the linear count, in turn.
 */
import { planAll, planAppend, seededRandomDelay, type PlanInput, type PlanJob, type PlanTail } from '../src/queue/plan.js';
import { EXISTING_INSTANCE_DEFAULTS, NEW_INSTANCE_DEFAULTS } from '../src/queue/settings.js';
import { limitsObject } from '../src/queue/windows.js';
import { Planner } from '../src/queue/planning.js';

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

// ---- the queue's planner: the rule, the rows to write and the new plan taken. Its first re-plan is written
// (committed); a second at the same instant moves nothing; then the first job leaves (cancelled), and the next
// re-plan moves every slot after it, as bench/full-queue.ts's "replan after the first job left" does
const waiting = jobs.map((j) => ({ ...j, scheduledAt: null }));
const kept = { cpu: [] as number[], writes: 0 };
const moved = { cpu: [] as number[], writes: 0 };
const replanned = (planner: Planner, at: number, into: { cpu: number[]; writes: number } | null) => {
  const c0 = process.cpuUsage();
  const proposal = planner.replan(at, NEW_INSTANCE_DEFAULTS);
  const writes = proposal.writes();
  proposal.commit(writes);
  const c = process.cpuUsage(c0);
  if (into) {
    into.cpu.push((c.user + c.system) / 1000);
    into.writes = writes.length;
  }
};
for (let i = 0; i < RUNS + 5; i++) {
  const planner = new Planner({ salt: `bench-${i}` });
  planner.load({ history, lastDispatchAt: input.lastDispatchAt, waiting });
  replanned(planner, now, null);
  replanned(planner, now, i < 5 ? null : kept); // the first five: warm-up
  const first = planner.due(Number.MAX_SAFE_INTEGER); // the head of the dispatch order
  if (first) planner.remove(first);
  replanned(planner, now, i < 5 ? null : moved);
}
kept.cpu.sort((a, b) => a - b);
moved.cpu.sort((a, b) => a - b);
console.log(`queue planner re-plan of ${JOBS} (rule, rows to write, plan taken): cpu median ${pick(kept.cpu, 50).toFixed(2)} ms nothing moved (${kept.writes} rows to write), ${pick(moved.cpu, 50).toFixed(2)} ms every slot moved (${moved.writes} rows); p99 ${pick(kept.cpu, 99).toFixed(2)} and ${pick(moved.cpu, 99).toFixed(2)} ms`);

// ---- appends: one job at a time to the tail of a plan of 5,000, as acceptance does (the chain kept, as the queue keeps it)
const appendJobs = (from: number, n: number): PlanJob[] =>
  Array.from({ length: n }, (_, i) => ({ id: `wq_a${(from + i).toString(16).padStart(8, '0')}`, priority: 5, seq: from + i + 1, notBefore: null, expiresAt: now + 30 * 86_400_000 }));
const base = planAll({ jobs: appendJobs(0, JOBS), history: [], settings: EXISTING_INSTANCE_DEFAULTS, lastDispatchAt: now - 1_000, now, random: seededRandomDelay(5) });
const APPENDS = 20_000;
let tail: PlanTail = base.tail;
const more = appendJobs(JOBS, APPENDS);
const c0 = process.cpuUsage();
for (let i = 0; i < APPENDS; i++) {
  const r = planAppend(tail, [more[i]!], now);
  if (!r || r.placements.length !== 1) throw new Error(`append ${i} did not place its job`);
  tail = r.tail;
}
const c1 = process.cpuUsage(c0);
const appendUs = (c1.user + c1.system) / APPENDS;
const hours = (tail.cursor - now) / 3_600_000;
console.log(`append to a plan of ${JOBS}: ${appendUs.toFixed(2)} µs CPU per append (${APPENDS} appends, one job each; the plan ends with ${JOBS + APPENDS} slots in ${hours.toFixed(1)} h, all in its 24 h window)`);

// ---- the limits every acceptance answers with, of an instance that dispatched all day at the existing-instance
// pauses (1.5–3 s): counted over its ascending history by binary search (as the queue does) and by the linear
// count it used before, in turn in this run
const dayOf = Array.from({ length: Math.floor(86_400_000 / 2_250) }, (_, i) => now - 86_400_000 + 1 + i * 2_250);
const limitsUs = (sorted: boolean): number => {
  const N = sorted ? 200_000 : 2_000;
  let used = 0;
  const c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) used += limitsObject(EXISTING_INSTANCE_DEFAULTS, dayOf, now + (i % 1_000), 'pg', sorted).usedLast24h ?? 0;
  const c1 = process.cpuUsage(c0);
  if (used === 0) throw new Error('no dispatch counted');
  return (c1.user + c1.system) / N;
};
limitsUs(true);
limitsUs(false);
const sortedUs = limitsUs(true);
const linearUs = limitsUs(false);
console.log(`limits of an acceptance with ${dayOf.length} dispatches in 24 h: ${sortedUs.toFixed(2)} µs CPU (the linear count: ${linearUs.toFixed(1)} µs; ${(linearUs / sortedUs).toFixed(0)}x)`);
