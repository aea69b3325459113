/**
 * Rounds of a load against the gateway with pgbench's single-row INSERT rate measured before and after each,
 * so that a ratio compares two rates of the same minute: this machine's speed changes by up to 2x from one
 * minute to the next, and a yardstick measured once, a minute away, moved the ratio as much as the code did.
 * A round's ratio is its rate over the mean of the pgbench rates around it; the figure is the median of the
 * rounds (each is printed too).
 */
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { openPgbench } from './pgbench.js';
import { fmt, runLoad, type LoadResult, type LoadSpec } from './load.js';
import { median } from './queue-fixture.js';
import { GROUP_MS_BOUNDS, type GroupCommitStats } from '../../src/queue/group-commit.js';

export interface Rounds {
  /** the gateway's load runs, in order */
  runs: LoadResult[];
  /** pgbench before the first round, then after each */
  tps: number[];
  /** those pgbench runs' transaction latency p99 (ms): what PostgreSQL alone gives the same clients */
  pgbenchP99: number[];
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
  /**
   * The whole machine's busy CPU time (every core, every process: the gateway, PostgreSQL, the load generator)
   * per answered request in each round, and per pgbench transaction in each pgbench run (pgbench and
   * PostgreSQL); empty where /proc/stat cannot be read (not Linux).
   */
  machineUs: number[];
  pgbenchMachineUs: number[];
  /** per round: the share of the machine's cores that was busy */
  machineBusy: number[];
  /**
   * per round: the machine's busy CPU per request that neither the gateway's process, its load generator,
   * PostgreSQL's running processes nor the kernel's interrupt handling (`interruptsUs`) spent (µs): small in a
   * quiet minute (the load generator's start, PostgreSQL's short-lived workers), large when something else ran
   */
  otherUs: number[];
  /** per round: the kernel's interrupt and softirq time per request (µs; loopback traffic is handled there) */
  interruptsUs: number[];
  /** per round, when the gateway's group commit was given (`groupCommit`): what it did in the round */
  groups: GroupRound[];
}

/** The group commit in one round: groups a second, requests and instance batches per group, their time. */
export interface GroupRound {
  perSecond: number;
  rows: number;
  units: number;
  /** mean time of a group from its start to its outcome (ms) */
  ms: number;
  /** the share of the round during which at least one group was running */
  busy: number;
  /** the share of the round's requests whose group took longer than SLOW_GROUP_MS from its start to its outcome */
  slow: number;
}

/**
 * The acceptance p99 goal (ms): a request whose group commit took longer waits longer, whatever the gateway does
 * around it, so when more than 1 % of the requests were in such groups, the commits alone put the p99 above the
 * goal. A group's time is PostgreSQL's statement and COMMIT (its fsync) and the event loop's turn to read the
 * answer; a stall of the server shows as a run of slow groups. One of GROUP_MS_BOUNDS (src/queue/group-commit.ts).
 */
const SLOW_GROUP_MS = 25;

/** A clock tick of /proc's CPU times in µs (USER_HZ: 100 on Linux). */
const TICK_US = 1e6 / 100;

/** The machine's CPU time so far, busy and in all (µs, every core), from /proc/stat; null where it cannot be read. */
function machineCpu(): { busy: number; total: number; interrupts: number } | null {
  try {
    const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is counted in user already)
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
    const busy = user + nice + system + irq + softirq + steal;
    return { busy: busy * TICK_US, total: (busy + idle + iowait) * TICK_US, interrupts: (irq + softirq) * TICK_US };
  } catch {
    return null;
  }
}

/**
 * The CPU time (µs, user and system) so far of the PostgreSQL server's processes running now (their `comm` is
 * `postgres`), from /proc/<pid>/stat; null where /proc cannot be read. A backend that exits takes its time along,
 * so it is measured around the gateway's rounds, whose pool keeps its connections, not around pgbench's.
 */
function postgresCpu(): number | null {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  let ticks = 0;
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const close = stat.lastIndexOf(')');
    if (stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue;
    // the fields after the name start at the third (state); utime and stime are the 14th and 15th
    const fields = stat.slice(close + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks * TICK_US;
}

/** `work()` with the machine's busy CPU time it took, and the share of the cores that was busy (null where unknown). */
export async function measured<T>(work: () => Promise<T>): Promise<{ value: T; busyUs: number | null; share: number | null; interruptsUs: number | null }> {
  const m0 = machineCpu();
  const value = await work();
  const m1 = machineCpu();
  if (!m0 || !m1 || m1.total <= m0.total) return { value, busyUs: null, share: null, interruptsUs: null };
  return { value, busyUs: m1.busy - m0.busy, share: (m1.busy - m0.busy) / (m1.total - m0.total), interruptsUs: m1.interrupts - m0.interrupts };
}

/**
 * `rounds` load runs of `specOf(round)` (a round's own idempotency keys: a load's `{{n}}` counts from 0 in
 * every run), with pgbench (`pgClients` clients, as long as a run) before the first and after each.
 */
export async function roundsAgainstPgbench(
  base: string,
  pgClients: number,
  rounds: number,
  specOf: (round: number) => LoadSpec,
  groupCommit?: () => GroupCommitStats,
): Promise<Rounds> {
  const groups: GroupRound[] = [];
  const runs: LoadResult[] = [];
  const tps: number[] = [];
  const pgbenchP99: number[] = [];
  const serverCpuUs: number[] = [];
  const loopUs: number[] = [];
  const machineUs: number[] = [];
  const pgbenchMachineUs: number[] = [];
  const machineBusy: number[] = [];
  const otherUs: number[] = [];
  const interruptsUs: number[] = [];
  // one database for all of pgbench's runs (bench/lib/pgbench.ts: a drop between rounds forced a checkpoint)
  const pgbench = await openPgbench(base);
  const pgbenchRun = async (durationMs: number) => {
    const m = await measured(() => pgbench.run(pgClients, durationMs));
    tps.push(m.value.tps);
    pgbenchP99.push(m.value.p99);
    if (m.busyUs !== null) pgbenchMachineUs.push(m.busyUs / Math.max(1, (m.value.tps * durationMs) / 1000));
  };
  try {
    for (let i = 0; i < rounds; i++) {
      const spec = specOf(i);
      if (i === 0) await pgbenchRun(spec.durationMs);
      const cpu0 = process.cpuUsage();
      const loop0 = performance.eventLoopUtilization();
      const g0 = groupCommit?.();
      const t0 = performance.now();
      const pg0 = postgresCpu();
      const { value: run, busyUs, share, interruptsUs: irqUs } = await measured(() => runLoad(spec));
      const pg1 = postgresCpu();
      const wallMs = performance.now() - t0;
      const g1 = groupCommit?.();
      if (g0 && g1 && g1.runs > g0.runs) {
        const n = g1.runs - g0.runs;
        const over = GROUP_MS_BOUNDS.indexOf(SLOW_GROUP_MS) + 1;
        const slowRows = g1.rowsByMs.slice(over).reduce((sum, rows, i) => sum + rows - (g0.rowsByMs[over + i] ?? 0), 0);
        groups.push({
          perSecond: (1000 * n) / wallMs,
          rows: (g1.rows - g0.rows) / n,
          units: (g1.units - g0.units) / Math.max(1, g1.groups - g0.groups),
          ms: (g1.groupMs - g0.groupMs) / n,
          busy: (g1.busyMs - g0.busyMs) / wallMs,
          slow: slowRows / Math.max(1, g1.rows - g0.rows),
        });
      }
      const cpu = process.cpuUsage(cpu0);
      const loop = performance.eventLoopUtilization(loop0);
      runs.push(run);
      serverCpuUs.push((cpu.user + cpu.system) / Math.max(1, run.requests));
      loopUs.push((loop.active * 1000) / Math.max(1, run.requests));
      if (busyUs !== null && share !== null) {
        machineUs.push(busyUs / Math.max(1, run.requests));
        machineBusy.push(share);
        if (pg0 !== null && pg1 !== null && irqUs !== null) {
          const known = cpu.user + cpu.system + run.clientCpuUs * run.requests + (pg1 - pg0) + irqUs;
          otherUs.push(Math.max(0, busyUs - known) / Math.max(1, run.requests));
          interruptsUs.push(irqUs / Math.max(1, run.requests));
        }
      }
      await pgbenchRun(spec.durationMs);
    }
  } finally {
    await pgbench.close();
  }
  const ratios = runs.map((r, i) => r.rps / (((tps[i] as number) + (tps[i + 1] as number)) / 2));
  return { runs, tps, pgbenchP99, ratios, serverCpuUs, loopUs, machineUs, pgbenchMachineUs, machineBusy, otherUs, interruptsUs, groups };
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

/**
 * The pgbench lines: the median of its runs, and each run; then their latency p99, the yardstick of a p99 goal
 * (what PostgreSQL alone answers the same clients in, on this machine in this minute: one commit each).
 */
export function printPgbench(rounds: Rounds, clients: number): void {
  console.log(`pgbench single-row INSERT:        ${fmt(median(rounds.tps), 0)} tps (${clients} clients; median of ${rounds.tps.length}: ${listed(rounds.tps, 0)})`);
  console.log(`  its latency p99:                ${fmt(median(rounds.pgbenchP99), 2)} ms (median of the runs: ${listed(rounds.pgbenchP99, 1)})`);
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
 * What the machine's cores allow: when pgbench and the gateway are both bound by CPU, a ratio of their rates
 * cannot exceed the ratio of the machine's CPU time each spends per row (pgbench: its client and PostgreSQL;
 * an acceptance: the gateway, PostgreSQL and the load generator), and the cores cap the rate at cores / that
 * time. The share of the cores busy during the rounds says whether the machine or one thread was the limit.
 */
export function printMachineCeiling(rounds: Rounds, ratioGoal: number): void {
  if (rounds.machineUs.length === 0 || rounds.pgbenchMachineUs.length === 0) {
    console.log('  machine CPU per request:        not measured (/proc/stat cannot be read here)');
    return;
  }
  const cores = os.availableParallelism();
  const acc = median(rounds.machineUs);
  const pgb = median(rounds.pgbenchMachineUs);
  console.log(`  machine CPU per request:        ${fmt(acc, 0)} µs an acceptance (all processes), ${fmt(pgb, 0)} µs a pgbench INSERT; the ${cores} cores ${fmt(100 * median(rounds.machineBusy), 0)} % busy in the rounds (medians)`);
  if (rounds.otherUs.length > 0) {
    console.log(`  … of it, other processes:       ${fmt(median(rounds.otherUs), 0)} µs a request (rounds: ${listed(rounds.otherUs, 0)}; neither the gateway, its load generator, PostgreSQL's running processes nor the kernel's interrupts, ${listed(rounds.interruptsUs, 0)} µs: what else ran beside each round; a large one was a disturbed minute)`);
  }
  console.log(`  ceiling of this machine's CPU:  ${fmt((cores * 1e6) / acc, 0)} req/s at ${fmt(acc, 0)} µs a request, a ratio of ${fmt(pgb / acc, 3)} to pgbench at most (goal ≥ ${ratioGoal}; CPU-bound both, the ratio cannot pass pgbench's CPU per row over the acceptance's)`);
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

/**
 * The group commit in the rounds (medians): how many groups a second, how many requests (and instance batches)
 * each, how long one takes from its start to its outcome, and the share of the time one was running. An
 * instance decides its next batch once the previous one is committed, so on one instance a group is either
 * running or about to: the share says how much of the rate the commits' order leaves to the thread.
 */
export function printGroupCommit(rounds: Rounds): void {
  if (rounds.groups.length === 0) return;
  const m = (f: (g: GroupRound) => number) => median(rounds.groups.map(f));
  console.log(`  group commit:                   ${fmt(m((g) => g.perSecond), 0)} groups/s of ${fmt(m((g) => g.rows), 1)} requests (${fmt(m((g) => g.units), 1)} instance batches), ${fmt(m((g) => g.ms), 2)} ms each from start to outcome; one running ${fmt(100 * m((g) => g.busy), 0)} % of the time (medians of the rounds)`);
  console.log(`  requests in groups over ${SLOW_GROUP_MS} ms:    ${fmt(100 * m((g) => g.slow), 2)} % (rounds: ${listed(rounds.groups.map((g) => 100 * g.slow), 2)} %; over 1 %, the commits alone hold the p99 above ${SLOW_GROUP_MS} ms)`);
}
