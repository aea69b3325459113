/**
 * Chromium processes of one session, found and killed through /proc (Linux).
 *
 * Puppeteer starts Chromium detached, as the leader of its own process group, so `kill(-pid)` reaches the
 * zygotes, renderers and utility processes. That alone is not enough when the gateway itself died earlier
 * (the browser of the last run is still there, holding the profile lock) or when the pid was never learned
 * (a launch that failed half-way). Every browser of a session is started with the session's own
 * `--user-data-dir`, unique per instance, so that argument finds it: no broad name matching. The full
 * Chromium repeats the argument in its zygotes and renderers; chrome-headless-shell does not, so the processes
 * below every match are taken too.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Clock } from '../../clock.js';
import { sleep } from '../../clock.js';

interface ProcInfo {
  pid: number;
  ppid: number;
  state: string;
}

function readProc(pid: number): ProcInfo | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may itself contain spaces or parentheses.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: Number(rest[1]), state: rest[0] ?? '?' };
  } catch {
    return null;
  }
}

function allPids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((d) => /^[0-9]+$/.test(d))
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * The command line as one space-separated string. Chromium rewrites the title of its child processes into a
 * single space-separated argument, so NUL separators cannot be relied on.
 */
function cmdline(pid: number): string {
  try {
    return ` ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')} `;
  } catch {
    return '';
  }
}

/** Running (not zombie) processes whose command line has the argument `--user-data-dir=<dir>`. */
export function pidsWithUserDataDir(dir: string): number[] {
  const arg = ` --user-data-dir=${dir} `;
  return allPids().filter((pid) => pid !== process.pid && cmdline(pid).includes(arg) && isRunning(pid));
}

/** `pid` and every running process below it. */
export function processTree(pid: number): number[] {
  return processTrees([pid]);
}

/** The `roots` and every running process below them (one pass over /proc). */
function processTrees(roots: number[]): number[] {
  const infos = allPids()
    .map(readProc)
    .filter((p): p is ProcInfo => p !== null);
  const children = new Map<number, number[]>();
  for (const p of infos) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const out: number[] = [];
  const queue = [...roots];
  while (queue.length > 0) {
    const next = queue.shift();
    if (next === undefined || out.includes(next)) continue;
    out.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  return out.filter(isRunning);
}

/** Alive and not a zombie (a killed child waiting to be reaped holds no memory and no lock). */
export function isRunning(pid: number): boolean {
  const info = readProc(pid);
  return info !== null && info.state !== 'Z' && info.state !== 'X';
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone, or not ours to signal
  }
}

/**
 * SIGKILL the session's browser: its process group (when the leader pid is known), its process tree and
 * everything else started with its user data dir, with the processes below those. Returns the pids that
 * were signalled.
 */
export function killSessionBrowser(userDataDir: string, leaderPid: number | null): number[] {
  const leader = leaderPid !== null && leaderPid > 0 ? [leaderPid] : [];
  const targets = new Set<number>(processTrees([...leader, ...pidsWithUserDataDir(userDataDir)]));
  for (const pid of leader) signal(-pid, 'SIGKILL');
  targets.delete(process.pid);
  for (const pid of targets) signal(pid, 'SIGKILL');
  return [...targets];
}

/** Wait (on `clock`) until none of `pids` and no process with `userDataDir` runs; false on timeout. */
export async function waitGone(userDataDir: string, pids: number[], clock: Clock, timeoutMs: number): Promise<boolean> {
  const deadline = clock.now() + timeoutMs;
  for (;;) {
    const left = pids.filter(isRunning).length + pidsWithUserDataDir(userDataDir).length;
    if (left === 0) return true;
    if (clock.now() >= deadline) return false;
    await sleep(clock, 50);
  }
}

export interface ProcessMemory {
  /** VmRSS: counts pages shared with other processes in full */
  rssBytes: number;
  /** Pss: shared pages split between the processes that map them (the fairer figure) */
  pssBytes: number;
  /** Private_Clean + Private_Dirty (USS): what only this process maps */
  privateBytes: number;
}

export interface TreeMemory extends ProcessMemory {
  processes: number;
}

function kbField(text: string, name: string): number {
  const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text);
  return m?.[1] ? Number(m[1]) * 1024 : 0;
}

/** One process's memory from /proc; zeros when it has exited. */
export function processMemory(pid: number): ProcessMemory {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    return {
      rssBytes: kbField(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmRSS'),
      pssBytes: kbField(rollup, 'Pss'),
      privateBytes: kbField(rollup, 'Private_Clean') + kbField(rollup, 'Private_Dirty'),
    };
  } catch {
    return { rssBytes: 0, pssBytes: 0, privateBytes: 0 };
  }
}

/** Memory of a browser's whole process tree (sums over its processes). */
export function treeMemory(pid: number): TreeMemory {
  const pids = processTree(pid);
  const total: TreeMemory = { processes: pids.length, rssBytes: 0, pssBytes: 0, privateBytes: 0 };
  for (const p of pids) {
    const m = processMemory(p);
    total.rssBytes += m.rssBytes;
    total.pssBytes += m.pssBytes;
    total.privateBytes += m.privateBytes;
  }
  return total;
}
