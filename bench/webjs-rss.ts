/**
 * Memory of one idle webjs session's Chromium: RSS and PSS summed over the browser's whole process tree
 * (browser, zygotes, GPU/utility processes, renderers), read from /proc.
 *
 * Run: `npx tsx bench/webjs-rss.ts` (CHROME_PATH, default /usr/bin/chromium; SETTLE_MS, default 15000;
 * SESSIONS=n runs n sessions side by side and also prints the average per session, since PSS splits the
 * pages the sessions share).
 *
 * What "idle" means here: the session is started through the real driver (LocalAuth profile, the same
 * switches, headless) and left alone. This machine cannot reach web.whatsapp.com, so the page it sits on is a
 * trivial local page served through the library's web-version cache instead of WhatsApp Web; the figure is
 * the per-session floor of the browser itself. A linked session adds WhatsApp Web's own page (its scripts,
 * heap and DOM) on top, which can only be measured with network access (the same script does it there: set
 * REAL=1 and link a phone within the settle time).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Clock } from '../src/clock.js';
import { WebjsDriver } from '../src/drivers/webjs/driver.js';
import { pidsWithUserDataDir, processTree, treeMemory } from '../src/drivers/webjs/processes.js';

const CHROME = process.env.CHROME_PATH || '/usr/bin/chromium';
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 15_000);
const REAL = process.env.REAL === '1';
const SESSIONS = Math.max(1, Number(process.env.SESSIONS ?? 1));
const OFFLINE_VERSION = 'bench-offline';

const clock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function leaderOf(userDataDir: string): number | null {
  for (const pid of pidsWithUserDataDir(userDataDir)) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid) return pid;
  }
  return null;
}

function kindOf(pid: number): string {
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    const type = /--type=([a-z-]+)/.exec(cmd)?.[1];
    const sub = /--utility-sub-type=([A-Za-z.]+)/.exec(cmd)?.[1];
    return type ? (sub ? `${type} (${sub.split('.').pop()})` : type) : 'browser';
  } catch {
    return 'gone';
  }
}

function kb(pid: number, file: string, field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/${file}`, 'utf8'));
    return m?.[1] ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

function report(label: string, leader: number): { rss: number; pss: number; processes: number } {
  const total = treeMemory(leader);
  const rows = processTree(leader).map((pid) => ({ pid, kind: kindOf(pid), rss: kb(pid, 'status', 'VmRSS'), pss: kb(pid, 'smaps_rollup', 'Pss') }));
  console.log(label);
  for (const r of rows.sort((a, b) => b.pss - a.pss)) console.log(`  ${String(r.pid).padStart(7)}  ${r.kind.padEnd(34)} RSS ${mib(r.rss).padStart(10)}  PSS ${mib(r.pss).padStart(10)}`);
  console.log(`  processes: ${total.processes}`);
  console.log(`  RSS (sum over the tree, shared pages counted per process): ${mib(total.rssBytes)}`);
  console.log(`  PSS (sum over the tree, shared pages split):               ${mib(total.pssBytes)}`);
  return { rss: total.rssBytes, pss: total.pssBytes, processes: total.processes };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'webjs-rss-'));
  if (!REAL) {
    mkdirSync(path.join(dataDir, 'wwebjs-cache'), { recursive: true });
    writeFileSync(path.join(dataDir, 'wwebjs-cache', `${OFFLINE_VERSION}.html`), '<!doctype html><title>idle</title><p>idle session</p>');
  }
  const drivers = Array.from(
    { length: SESSIONS },
    (_, i) =>
      new WebjsDriver({
        instanceId: `rss-bench-${i + 1}`,
        dataDir,
        callTimeoutMs: 10_000,
        chromePath: CHROME,
        clock,
        authTimeoutMs: SETTLE_MS + 60_000,
        startTimeoutMs: SETTLE_MS + 90_000,
        ...(REAL ? {} : { webVersion: OFFLINE_VERSION }),
      }),
  );
  for (const d of drivers) d.on('fatal', (reason) => console.error(`session failed: ${reason}`));
  const started = drivers.map((d) => d.initialize().catch(() => undefined));
  try {
    const leaders: number[] = [];
    for (const d of drivers) {
      let leader: number | null = null;
      for (let i = 0; i < 300 && leader === null; i++) {
        leader = leaderOf(d.paths.userDataDir);
        if (leader === null) await sleep(100);
      }
      if (leader === null) throw new Error(`no browser started (CHROME_PATH=${CHROME})`);
      leaders.push(leader);
    }
    await sleep(SETTLE_MS);
    const page = REAL ? 'WhatsApp Web' : 'local idle page, no network';
    console.log(`Chromium ${CHROME}, ${SESSIONS} idle webjs session(s) (${page}), after ${SETTLE_MS} ms:`);
    const totals = leaders.map((leader, i) => report(`session ${i + 1}:`, leader));
    if (SESSIONS > 1) {
      const sum = (k: 'rss' | 'pss') => totals.reduce((a, t) => a + t[k], 0);
      console.log(`all ${SESSIONS} sessions: RSS ${mib(sum('rss'))}, PSS ${mib(sum('pss'))}; per session PSS ${mib(sum('pss') / SESSIONS)}`);
    }
  } finally {
    await Promise.all(drivers.map((d) => d.destroy()));
    await Promise.all(started);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
