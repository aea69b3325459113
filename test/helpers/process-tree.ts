/**
 * Processes as a user sees them: the tree under a pid, every process working in a directory, whether a
 * port is free. Linux /proc only (the e2e tests run on Linux).
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

interface Proc {
  pid: number;
  ppid: number;
}

function processes(): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // "pid (comm) state ppid …": comm may contain spaces and parentheses, so read after the last ')'
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.push({ pid: Number(name), ppid: Number(rest[1]) });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** `pid` and all its descendants alive now. */
export function processTree(pid: number): number[] {
  const all = processes();
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    for (const p of all) if (p.ppid === tree[i] && !tree.includes(p.pid)) tree.push(p.pid);
  }
  return tree.filter((p) => alive(p));
}

export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Every (readable) process whose working directory is `dir` or below it. */
export function processesIn(dir: string): number[] {
  const root = path.resolve(dir);
  const found: number[] = [];
  for (const { pid } of processes()) {
    if (pid === process.pid) continue;
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if ((cwd === root || cwd.startsWith(`${root}/`)) && alive(pid)) found.push(pid);
    } catch {
      // another user's process, or gone
    }
  }
  return found;
}

/** Wait (polling the real processes, bounded) until none of `pids` is alive; returns those still alive. */
export async function untilGone(pids: readonly number[], limitMs = 30_000): Promise<number[]> {
  const until = Date.now() + limitMs;
  for (;;) {
    const left = pids.filter((p) => alive(p));
    if (left.length === 0 || Date.now() > until) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether nothing listens on 127.0.0.1:`port` any more (we can bind it ourselves). */
export function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });
}
