/**
 * Rounds of a load against the gateway with pgbench's single-row INSERT rate measured before and after each,
 * so that a ratio compares two rates of the same minute: this machine's speed changes by up to 2x from one
 * minute to the next, and a yardstick measured once, a minute away, moved the ratio as much as the code did.
 * A round's ratio is its rate over the mean of the pgbench rates around it; the figure is the median of the
 * rounds (each is printed too).
 */
import { performance } from 'node:perf_hooks';
import { openPgbench } from './pgbench.js';
import { fmt, runLoad, type LoadResult, type LoadSpec } from './load.js';
import { median } from './queue-fixture.js';

export interface Rounds {
  /** the gateway's load runs, in order */
  runs: LoadResult[];
  /** pgbench before the first round, then after each */
  tps: number[];
  /** per round: its rate over the mean of the pgbench rates around it */
  ratios: number[];
  /** per round: this process's CPU time per answered request (µs), when the server under test runs in it */
  serverCpuUs: number[];
  /**
   * per round: the time this process's event loop was busy per answered request (µs). Part of the CPU time
   * (GC helpers and libuv's threads run beside it), and what bounds the rate: one thread serves at most
   * 1e6 / loopUs requests a second.
   */
  loopUs: number[];
}

/**
 * `rounds` load runs of `specOf(round)` (a round's own idempotency keys: a load's `{{n}}` counts from 0 in
 * every run), with pgbench (`pgClients` clients, as long as a run) before the first and after each.
 */
export async function roundsAgainstPgbench(base: string, pgClients: number, rounds: number, specOf: (round: number) => LoadSpec): Promise<Rounds> {
  const runs: LoadResult[] = [];
  const tps: number[] = [];
  const serverCpuUs: number[] = [];
  const loopUs: number[] = [];
  // one database for all of pgbench's runs (bench/lib/pgbench.ts: a drop between rounds forced a checkpoint)
  const pgbench = await openPgbench(base);
  try {
    for (let i = 0; i < rounds; i++) {
      const spec = specOf(i);
      if (i === 0) tps.push(await pgbench.tps(pgClients, spec.durationMs));
      const cpu0 = process.cpuUsage();
      const loop0 = performance.eventLoopUtilization();
      const run = await runLoad(spec);
      const cpu = process.cpuUsage(cpu0);
      const loop = performance.eventLoopUtilization(loop0);
      runs.push(run);
      serverCpuUs.push((cpu.user + cpu.system) / Math.max(1, run.requests));
      loopUs.push((loop.active * 1000) / Math.max(1, run.requests));
      tps.push(await pgbench.tps(pgClients, spec.durationMs));
    }
  } finally {
    await pgbench.close();
  }
  const ratios = runs.map((r, i) => r.rps / (((tps[i] as number) + (tps[i + 1] as number)) / 2));
  return { runs, tps, ratios, serverCpuUs, loopUs };
}

/** "0.51, 0.48, 0.55": one figure per round */
export const listed = (xs: readonly number[], digits: number) => xs.map((x) => fmt(x, digits)).join(', ');

/** The rounds' load figures as one: the median of each (rate, p50, p99) over the rounds, and their errors summed. */
export function medianRun(runs: readonly LoadResult[]): LoadResult {
  const failures: Record<string, number> = {};
  for (const r of runs) for (const [k, n] of Object.entries(r.failures)) failures[k] = (failures[k] ?? 0) + n;
  const sample = runs.find((r) => r.sample !== undefined)?.sample;
  return {
    requests: runs.reduce((n, r) => n + r.requests, 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
    failures,
    ...(sample !== undefined ? { sample } : {}),
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    clientCpuUs: median(runs.map((r) => r.clientCpuUs)),
  };
}

/** The pgbench line: the median of its runs, and each run. */
export function printPgbench(rounds: Rounds, clients: number): void {
  console.log(`pgbench single-row INSERT:        ${fmt(median(rounds.tps), 0)} tps (${clients} clients; median of ${rounds.tps.length}: ${listed(rounds.tps, 0)})`);
}

/**
 * Little's law for a closed loop: `clients` that each send again once answered wait clients / rate on average,
 * and one thread busy `loopUs` per request serves at most 1e6 / loopUs a second; so the mean latency cannot
 * fall under clients × loopUs, however the work is scheduled. The line says how far a p99 goal sits above it.
 */
export function printLatencyFloor(rounds: Rounds, clients: number, p99GoalMs: number): void {
  const loop = median(rounds.loopUs);
  const floor = (clients * loop) / 1000;
  console.log(`  latency floor of one thread:    ${fmt(floor, 1)} ms mean (${clients} clients × ${fmt(loop, 0)} µs of its event loop per request); a p99 of ${p99GoalMs} ms needs the p99 within ${fmt(p99GoalMs / floor, 2)}× of that mean, at ${fmt(1e6 / loop, 0)} req/s at most`);
}

/**
 * Under the acceptance line: each round, the CPU per request of the gateway and of the load generator, and the
 * two load generators run in turn in the same minute (`viaHttp`: node's http client, `viaRaw`: plain sockets).
 */
export function printRounds(rounds: Rounds, viaHttp: LoadResult, viaRaw: LoadResult): void {
  const r = medianRun(rounds.runs);
  console.log(`  rounds:                         ${listed(rounds.runs.map((x) => x.rps), 0)} req/s; p99 ${listed(rounds.runs.map((x) => x.p99), 1)} ms; ratios ${listed(rounds.ratios, 3)}`);
  console.log(`  CPU per request:                the gateway ${fmt(median(rounds.serverCpuUs), 0)} µs (its event loop busy ${fmt(median(rounds.loopUs), 0)} µs), the load generator ${fmt(r.clientCpuUs, 0)} µs (medians of the rounds; the two share the machine with PostgreSQL)`);
  console.log(`  load generators in turn:       node's http client ${fmt(viaHttp.rps, 0)} req/s (p99 ${fmt(viaHttp.p99, 1)} ms, its CPU ${fmt(viaHttp.clientCpuUs, 0)} µs per request); plain sockets ${fmt(viaRaw.rps, 0)} req/s (p99 ${fmt(viaRaw.p99, 1)} ms, ${fmt(viaRaw.clientCpuUs, 0)} µs); ratio ${fmt(viaRaw.rps / viaHttp.rps, 2)}`);
}
