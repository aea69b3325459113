/**
 * Memory per webjs session with 1, 3 and 10 sessions side by side: RSS, PSS and private memory (USS) summed
 * over each session's whole Chromium process tree (browser, zygotes, GPU/utility processes, renderers), read
 * from /proc.
 *
 * Run: `npx tsx bench/webjs-rss.ts`. Environment:
 *   BENCH_SESSIONS     session counts to measure, one after another (default 1,3,10)
 *   SETTLE_MS          wait after the browsers started before sampling (default 15000); 5 samples 1 s apart
 *                      follow, the median is reported
 *   CHROME_PATH        the browser (default /usr/bin/chromium; chrome-headless-shell:
 *                      /usr/lib/chromium/chromium-headless-shell — the binary, not the /usr/bin wrapper script)
 *   BENCH_CHROME_ARGS  extra switches for the driver (as WEBJS_CHROME_ARGS), to compare one against another
 *   BENCH_BLOCK        resource types the page may not load (as WEBJS_BLOCK_RESOURCES), e.g. image,media,font
 *   BENCH_DETAIL=1     every process of every session (default: the processes of the first session only)
 *
 * PSS splits the pages that processes share (Chromium's code above all) between them, so the per-session PSS
 * falls as sessions are added; USS is what only a session's own processes hold (its marginal cost).
 *
 * What "session" means here: each is started through the real driver (LocalAuth profile, the driver's
 * switches, headless) and left alone. This machine cannot reach web.whatsapp.com, so the page each session
 * sits on is a trivial local page served through the library's web-version cache instead of WhatsApp Web: the
 * figures are the per-session floor of the browser itself. A linked session adds WhatsApp Web's own page (its
 * scripts, heap, DOM, images) on top, which can only be measured with network access (the same script does it
 * there: set REAL=1 and link the phones within the settle time).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Clock } from '../src/clock.js';
import { WebjsDriver } from '../src/drivers/webjs/driver.js';
import { pidsWithUserDataDir, processMemory, processTree, treeMemory, type TreeMemory } from '../src/drivers/webjs/processes.js';
import { loadConfig } from '../src/config.js';

// the switches and blocked types go through the gateway's own configuration schema (WEBJS_CHROME_ARGS, WEBJS_BLOCK_RESOURCES)
const config = loadConfig({ CHROME_PATH: process.env.CHROME_PATH, WEBJS_CHROME_ARGS: process.env.BENCH_CHROME_ARGS, WEBJS_BLOCK_RESOURCES: process.env.BENCH_BLOCK });
const CHROME = config.CHROME_PATH;
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 15_000);
const REAL = process.env.REAL === '1';
const COUNTS = (process.env.BENCH_SESSIONS ?? '1,3,10').split(',').map((s) => Math.max(1, Number(s.trim()) || 1));
const CHROME_ARGS = config.WEBJS_CHROME_ARGS;
const BLOCK = config.WEBJS_BLOCK_RESOURCES;
const DETAIL = process.env.BENCH_DETAIL === '1';
const SAMPLES = 5;
const OFFLINE_VERSION = 'bench-offline';

const clock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** The browser's main process: the one with the session's profile that this process started. */
function leaderOf(userDataDir: string): number | null {
  for (const pid of pidsWithUserDataDir(userDataDir)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      // ended since it was listed (a run with 10 sessions stopped on ENOENT here)
      continue;
    }
    if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid) return pid;
  }
  return null;
}

function kindOf(pid: number): string {
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    const type = /--type=([a-z-]+)/.exec(cmd)?.[1];
    const sub = /--utility-sub-type=([A-Za-z.]+)/.exec(cmd)?.[1];
    const webui = cmd.includes('--top-chrome-webui') ? ' (browser UI)' : '';
    return type ? (sub ? `${type} (${sub.split('.').pop()})` : `${type}${webui}`) : 'browser';
  } catch {
    return 'gone';
  }
}

function detail(label: string, leader: number): void {
  console.log(label);
  const rows = processTree(leader).map((pid) => ({ pid, kind: kindOf(pid), ...processMemory(pid) }));
  for (const r of rows.sort((a, b) => b.pssBytes - a.pssBytes)) {
    console.log(`  ${String(r.pid).padStart(7)}  ${r.kind.padEnd(34)} RSS ${mib(r.rssBytes).padStart(10)}  PSS ${mib(r.pssBytes).padStart(10)}  USS ${mib(r.privateBytes).padStart(10)}`);
  }
}

/**
 * Chromium processes on this machine outside the measured trees (another program's browser): they share
 * Chromium's code pages with the measured ones, so while they run the PSS and USS measured here are lower.
 * (Debian's full Chromium also starts two chrome_crashpad_handler processes per browser, about 1.5 MiB PSS
 * each, outside its tree; they end with it and are neither measured nor counted here.)
 */
function otherChromium(measured: Set<number>): number {
  let n = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || measured.has(Number(d))) continue;
    try {
      if (/^(chromium|chrome)(-headless-shell)?$/.test(path.basename(readlinkSync(`/proc/${d}/exe`)))) n++;
    } catch {
      // gone, or not ours to read
    }
  }
  return n;
}

/** The sum over every session's tree, sampled SAMPLES times; the sample with the median PSS. */
async function sample(leaders: number[]): Promise<TreeMemory> {
  const samples: TreeMemory[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    if (i > 0) await sleep(1_000);
    const total: TreeMemory = { processes: 0, rssBytes: 0, pssBytes: 0, privateBytes: 0 };
    for (const m of leaders.map(treeMemory)) {
      total.processes += m.processes;
      total.rssBytes += m.rssBytes;
      total.pssBytes += m.pssBytes;
      total.privateBytes += m.privateBytes;
    }
    samples.push(total);
  }
  const mid = median(samples.map((s) => s.pssBytes));
  return samples.find((s) => s.pssBytes === mid) ?? samples[0]!;
}

async function measure(n: number, dataDir: string): Promise<void> {
  const drivers = Array.from(
    { length: n },
    (_, i) =>
      new WebjsDriver({
        instanceId: `rss-bench-${n}-${i + 1}`,
        dataDir,
        callTimeoutMs: 10_000,
        chromePath: CHROME,
        chromeArgs: CHROME_ARGS,
        blockResources: BLOCK,
        clock,
        authTimeoutMs: SETTLE_MS + 120_000,
        startTimeoutMs: SETTLE_MS + 180_000,
        ...(REAL ? {} : { webVersion: OFFLINE_VERSION }),
      }),
  );
  for (const d of drivers) d.on('fatal', (reason) => console.error(`session failed: ${reason}`));
  // initialize() resolves only once WhatsApp Web has loaded, which the stand-in page never does: the sessions
  // are measured while the library waits in the page
  const started = drivers.map((d) => d.initialize().catch(() => undefined));
  try {
    const leaders: number[] = [];
    for (const d of drivers) {
      let leader: number | null = null;
      for (let i = 0; i < 1200 && leader === null; i++) {
        leader = leaderOf(d.paths.userDataDir);
        if (leader === null) await sleep(100);
      }
      if (leader === null) throw new Error(`no browser started (CHROME_PATH=${CHROME})`);
      leaders.push(leader);
    }
    await sleep(SETTLE_MS);
    const total = await sample(leaders);
    console.log(`\n${n} session(s), after ${SETTLE_MS} ms, median of ${SAMPLES} samples:`);
    leaders.forEach((leader, i) => (DETAIL || i === 0) && detail(`  processes of session ${i + 1}:`, leader));
    console.log(`  processes: ${total.processes} (${(total.processes / n).toFixed(1)} per session)`);
    const others = otherChromium(new Set(leaders.flatMap(processTree)));
    if (others > 0) console.log(`  note: ${others} other Chromium processes ran on this machine meanwhile (they share pages with these: figures lower)`);
    console.log(`  total: RSS ${mib(total.rssBytes)}, PSS ${mib(total.pssBytes)}, USS ${mib(total.privateBytes)}`);
    console.log(`per session PSS with ${n} session(s): ${mib(total.pssBytes / n)} (USS ${mib(total.privateBytes / n)}, RSS ${mib(total.rssBytes / n)})`);
  } finally {
    await Promise.all(drivers.map((d) => d.destroy()));
    await Promise.all(started);
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'webjs-rss-'));
  if (!REAL) {
    mkdirSync(path.join(dataDir, 'wwebjs-cache'), { recursive: true });
    writeFileSync(path.join(dataDir, 'wwebjs-cache', `${OFFLINE_VERSION}.html`), '<!doctype html><title>idle</title><p>idle session</p>');
  }
  const page = REAL ? 'WhatsApp Web' : 'a trivial local page instead of WhatsApp Web (no network here): the floor of the browser itself';
  console.log(`Chromium ${CHROME}; idle webjs sessions on ${page}`);
  console.log(`extra switches: ${CHROME_ARGS.join(' ') || 'none'}; blocked resource types: ${BLOCK.join(',') || 'none'}`);
  try {
    for (const n of COUNTS) await measure(n, dataDir);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
