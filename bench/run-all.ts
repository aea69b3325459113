/**
 * `npm run bench`: every benchmark under bench/, one after another (each measures its own ratio in its own
 * run), then one table: figure, goal, measured, met or not. The full output of each benchmark is printed as it
 * runs. Benchmarks that need what this machine lacks (PostgreSQL for the server benchmarks, Chromium for webjs)
 * are reported as skipped with the reason.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench
 *   BENCH_ONLY=accept,status npm run bench        (a subset)
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFlags } from './lib/start-flags.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface Figure {
  figure: string;
  goal: string;
  /** the measured value from the output, or null when the line is missing */
  read(out: string): number | null;
  unit: string;
  /** whether the goal is met; none for a figure only reported (the table says —) */
  met?: (v: number) => boolean;
}

interface Bench {
  name: string;
  file: string;
  needs?: 'postgres' | 'chromium';
  env?: Record<string, string>;
  figures: Figure[];
}

const num = (re: RegExp) => (out: string): number | null => {
  const m = re.exec(out);
  return m?.[1] !== undefined ? Number(m[1].replace(/,/g, '')) : null;
};

const BENCHES: Bench[] = [
  {
    name: 'accept', file: 'bench/accept.ts', needs: 'postgres',
    figures: [
      { figure: 'v2 acceptance / pgbench INSERT', goal: '≥ 0.6', unit: '', read: num(/ratio acceptance \/ pgbench:\s+([\d.]+)/), met: (v) => v >= 0.6 },
      { figure: 'v2 acceptance p99', goal: '≤ 25 ms', unit: ' ms', read: num(/v2 send-message acceptance:.*?p99 ([\d.]+) ms/), met: (v) => v <= 25 },
      { figure: '  pgbench INSERT p99, same clients (PostgreSQL alone)', goal: 'report', unit: ' ms', read: num(/its latency p99:\s+([\d.]+) ms/) },
      { figure: '  CPU of other processes per request (large: a disturbed minute)', goal: 'report', unit: ' µs', read: num(/other processes:\s+([\d.]+) µs/) },
      { figure: '  requests whose group commit took over 25 ms (over 1 %: p99 > 25 ms)', goal: 'report', unit: ' %', read: num(/requests in groups over 25 ms:\s+([\d.]+) %/) },
      { figure: '  the most this machine\'s CPU allows / pgbench INSERT', goal: 'report', unit: '', read: num(/a ratio of ([\d.]+) to pgbench at most/) },
      { figure: '  HTTP alone: a bare Koa server, machine CPU per request', goal: 'report', unit: ' µs', read: num(/bare Koa POST.*?machine CPU ([\d.]+) µs per request/) },
      { figure: '  HTTP alone: a bare node:http server, machine CPU per request', goal: 'report', unit: ' µs', read: num(/bare node:http POST.*?machine CPU ([\d.]+) µs per request/) },
    ],
  },
  {
    name: 'accept-spread', file: 'bench/accept-spread.ts', needs: 'postgres',
    figures: [
      { figure: 'acceptance over 500 instances / pgbench INSERT', goal: '≥ 0.6', unit: '', read: num(/ratio spread acceptance \/ pgbench:\s+([\d.]+)/), met: (v) => v >= 0.6 },
      { figure: 'acceptance over 500 instances p99', goal: '≤ 25 ms', unit: ' ms', read: num(/acceptance over \d+ instances:.*?p99 ([\d.]+) ms/), met: (v) => v <= 25 },
      { figure: '  pgbench INSERT p99, same clients (PostgreSQL alone)', goal: 'report', unit: ' ms', read: num(/its latency p99:\s+([\d.]+) ms/) },
      { figure: '  CPU of other processes per request (large: a disturbed minute)', goal: 'report', unit: ' µs', read: num(/other processes:\s+([\d.]+) µs/) },
      { figure: '  requests whose group commit took over 25 ms (over 1 %: p99 > 25 ms)', goal: 'report', unit: ' %', read: num(/requests in groups over 25 ms:\s+([\d.]+) %/) },
      { figure: '  the most this machine\'s CPU allows / pgbench INSERT', goal: 'report', unit: '', read: num(/a ratio of ([\d.]+) to pgbench at most/) },
      { figure: '  without idempotency keys / with them (plain sockets, in turn)', goal: 'report', unit: '', read: num(/without idempotency keys:.*?: ([\d.]+) of its rate/) },
    ],
  },
  {
    name: 'request-log', file: 'bench/request-log.ts', needs: 'postgres',
    figures: [
      { figure: 'the request log (npm start\'s default), CPU per acceptance', goal: 'report', unit: ' µs', read: num(/the request line's CPU per acceptance:\s+(-?[\d.]+) µs/) },
      { figure: '  acceptance with the request log / without (gateway processes, in turn)', goal: 'report', unit: '', read: num(/rate with the request log \/ without:\s+([\d.]+)/) },
    ],
  },
  {
    name: 'auth-flood', file: 'bench/auth-flood.ts', needs: 'postgres',
    figures: [
      { figure: 'acceptance beside a flood of unknown API keys / alone', goal: 'report', unit: '', read: num(/ratio beside \/ alone:\s+([\d.]+)/) },
      { figure: '  the flood\'s own rate (a new unknown key each request, all 401)', goal: 'report', unit: ' req/s', read: num(/the flood \(.*?\): ([\d.]+) req\/s/) },
    ],
  },
  {
    name: 'status', file: 'bench/status.ts', needs: 'postgres',
    figures: [
      { figure: 'GET /api/status / Koa hello-world', goal: '≥ 0.5', unit: '', read: num(/ratio status \/ hello:\s+([\d.]+)/), met: (v) => v >= 0.5 },
      { figure: 'GET /api/v2/queue / Koa hello-world', goal: '≥ 0.5', unit: '', read: num(/ratio queue \/ hello:\s+([\d.]+)/), met: (v) => v >= 0.5 },
    ],
  },
  {
    name: 'replan', file: 'bench/replan.ts',
    figures: [
      { figure: 're-plan of 5,000 jobs, CPU median (the planning rule alone)', goal: '≤ 10 ms', unit: ' ms', read: num(/cpu time: median ([\d.]+) ms/), met: (v) => v <= 10 },
      { figure: 're-plan of 5,000 jobs by the queue\'s planner, every slot moved: CPU median', goal: '≤ 10 ms', unit: ' ms', read: num(/queue planner re-plan of \d+ .*?, ([\d.]+) ms every slot moved/), met: (v) => v <= 10 },
      { figure: '  the same, nothing moved', goal: 'report', unit: ' ms', read: num(/queue planner re-plan of \d+ .*?cpu median ([\d.]+) ms nothing moved/) },
      { figure: 'append of one job to a plan of 5,000 (CPU)', goal: 'report', unit: ' µs', read: num(/append to a plan of \d+:\s+([\d.]+) µs/) },
      { figure: 'limits of an acceptance, a day of dispatches at 1.5-3 s (CPU)', goal: 'report', unit: ' µs', read: num(/limits of an acceptance with \d+ dispatches in 24 h:\s+([\d.]+) µs/) },
    ],
  },
  {
    name: 'full-queue', file: 'bench/full-queue.ts', needs: 'postgres',
    figures: [
      { figure: 'acceptance at 4,999 pending / empty queue (time per request)', goal: '≤ 2', unit: '', read: num(/ratio full \/ empty:\s+([\d.]+)/), met: (v) => v <= 2 },
      { figure: 're-plan of 5,000 pending, nothing moved: answer', goal: '≤ 50 ms', unit: ' ms', read: num(/replan, full queue, nothing new:\s+median ([\d.]+) ms/), met: (v) => v <= 50 },
      { figure: 're-plan of 5,000 pending, every slot moved: answer (plan, writes, epoch, event)', goal: '≤ 50 ms', unit: ' ms', read: num(/replan after the first job left:\s+median ([\d.]+) ms/), met: (v) => v <= 50 },
      { figure: 're-plan of 5,000 pending, every slot moved: its writes alone', goal: '≤ 50 ms', unit: ' ms', read: num(/its write alone \(\d+ rows\): median ([\d.]+) ms/), met: (v) => v <= 50 },
      { figure: 'cancel p99 at 5,000 pending while accepting', goal: '≤ 1,000 ms', unit: ' ms', read: num(/cancel while accepting:.*?p99 ([\d.]+) ms/), met: (v) => v <= 1_000 },
      { figure: 're-plan p99 at 5,000 pending while accepting', goal: '≤ 1,000 ms', unit: ' ms', read: num(/replan while accepting:.*?p99 ([\d.]+) ms/), met: (v) => v <= 1_000 },
      { figure: '504 INSTANCE_TIMEOUT of cancel and re-plan', goal: '0', unit: '', read: num(/504 INSTANCE_TIMEOUT \(cancel \+ replan\): (\d+)/), met: (v) => v === 0 },
      { figure: 'acceptance during cancels and re-plans / full queue alone (a stall under 0.1)', goal: '≥ 0.1', unit: '', read: num(/acceptance during cancels and re-plans \/ full queue alone:\s+([\d.]+)/), met: (v) => v >= 0.1 },
    ],
  },
  {
    name: 'bulk', file: 'bench/bulk.ts', needs: 'postgres',
    figures: [{ figure: 'send-bulk of 5,000 entries, median', goal: '≤ 250 ms', unit: ' ms', read: num(/send-bulk of\s+5000 entries: median ([\d.]+) ms/), met: (v) => v <= 250 }],
  },
  {
    name: 'job-rows', file: 'bench/job-rows.ts', needs: 'postgres',
    figures: [
      { figure: 'insert of 8 jobs: arrays / JSON (the gateway sends JSON)', goal: '> 1', unit: '', read: num(/^\s*8 rows:.*?arrays \/ JSON ([\d.]+)/m), met: (v) => v > 1 },
      { figure: 'insert of 1,000 jobs: arrays / JSON (the gateway sends arrays)', goal: '< 1', unit: '', read: num(/^\s*1000 rows:.*?arrays \/ JSON ([\d.]+)/m), met: (v) => v < 1 },
      { figure: '  the same, the columns of one value as single parameters / arrays (what the gateway sends)', goal: 'report', unit: '', read: num(/^\s*1000 rows:.*?columns \/ arrays ([\d.]+)/m) },
    ],
  },
  {
    name: 'job-ids', file: 'bench/job-ids.ts', needs: 'postgres',
    figures: [
      { figure: 'WAL of a job into 1,000,000 jobs: time-ordered ids / random (before)', goal: '< 1', unit: '', read: num(/WAL a job, time-ordered \/ random:\s+([\d.]+)/), met: (v) => v < 1 },
      { figure: '  the same, a 16-job statement\'s time (commit included)', goal: 'report', unit: '', read: num(/statement time, time-ordered \/ random:\s+([\d.]+)/) },
      { figure: 'a start\'s read of one instance\'s queue with 1,000,000 jobs of history', goal: 'report', unit: ' ms', read: num(/a start's read of the instance's queue:\s+([\d.]+) ms/) },
    ],
  },
  {
    name: 'dispatch', file: 'bench/dispatch.ts', needs: 'postgres',
    figures: [
      { figure: 'dispatch lateness p99 (idle)', goal: '≤ 50 ms', unit: ' ms', read: num(/lateness vs scheduledAt \(idle\):.*?p99 ([\d.]+) ms/), met: (v) => v <= 50 },
      { figure: 'dispatch lateness p99 under acceptance load', goal: '≤ 50 ms', unit: ' ms', read: num(/lateness vs scheduledAt \(under acceptance load\):.*?p99 ([\d.]+) ms/), met: (v) => v <= 50 },
      { figure: 'limit violations (spacing + hourly, both runs)', goal: '0', unit: '', read: (out) => {
        const all = [...out.matchAll(/limit violations \([^)]*\): spacing (\d+), hourly (\d+)/g)];
        return all.length === 2 ? all.reduce((n, m) => n + Number(m[1]) + Number(m[2]), 0) : null;
      }, met: (v) => v === 0 },
    ],
  },
  {
    name: 'webhooks', file: 'bench/webhooks.ts', needs: 'postgres',
    figures: [{ figure: 'webhook commit → receipt p99 (1 instance)', goal: '≤ 50 ms', unit: ' ms', read: num(/latency\s+1 instance\(s\):.*?p99 ([\d.]+) ms/), met: (v) => v <= 50 }],
  },
  {
    name: 'instances', file: 'bench/instances.ts', needs: 'postgres',
    figures: [
      { figure: 'instances created through the operator API', goal: '≥ 500/s', unit: '/s', read: num(/creation rate: ([\d.]+) instances\/s/), met: (v) => v >= 500 },
      { figure: 'memory per sandbox instance (RSS after GC)', goal: '≤ 256 KiB', unit: ' KiB', read: num(/memory per instance: rss ([\d.]+) KiB/), met: (v) => v <= 256 },
      { figure: 'idle CPU with every instance connected (once V8 settled)', goal: '≤ 2 %', unit: ' %', read: num(/idle CPU with \d+ connected instances: ([\d.]+) %/), met: (v) => v <= 2 },
      { figure: '  V8 settling after the burst (its memory reducer ran): CPU of its collections', goal: 'report', unit: ' s', read: num(/V8 settling after the burst: \d+ collections(?: \(\d+ of the memory reducer\))?, ([\d.]+) s of CPU/) },
      { figure: 'GET /health with every instance there, gateway CPU per request', goal: 'report', unit: ' µs', read: num(/GET \/health with \d+ instances:.*?gateway CPU ([\d.]+) µs a request/) },
      { figure: 'start-up until every instance is connected', goal: '≤ 30 s', unit: ' s', read: num(/start-up until all \d+ connected: ([\d.]+) s/), met: (v) => v <= 30 },
    ],
  },
  {
    name: 'full-node', file: 'bench/full-node.ts', needs: 'postgres',
    figures: [
      { figure: 'restart with a million waiting jobs (200 full queues): every queue loaded', goal: '≤ 30 s', unit: ' s', read: num(/restart with \d+ waiting jobs: every queue loaded ([\d.]+) s/), met: (v) => v <= 30 },
      { figure: '  heap per waiting job', goal: 'report', unit: ' B', read: num(/heap per waiting job: ([\d.]+) B/) },
    ],
  },
  {
    name: 'cluster', file: 'bench/cluster.ts', needs: 'postgres', env: { BENCH_KILLS: process.env.BENCH_KILLS ?? '20' },
    figures: [
      { figure: 'failover p99 (LEASE_TTL_MS 3000)', goal: '≤ 15,000 ms', unit: ' ms', read: num(/failover .*?p99 ([\d.]+) ms/), met: (v) => v <= 15_000 },
      { figure: 'acceptance, 3 nodes / 1 node (one machine)', goal: 'report', unit: '', read: num(/acceptance with 3 node\(s\):.*?ratio to 1 node ([\d.]+)/) },
    ],
  },
  {
    name: 'webjs-rss', file: 'bench/webjs-rss.ts', needs: 'chromium',
    // sessions on a local stand-in page (no network here): the browser's floor, WhatsApp Web's page comes on top
    figures: [
      { figure: 'PSS per webjs session, 10 sessions (stand-in page)', goal: '≤ 200 MiB', unit: ' MiB', read: num(/per session PSS with 10 session\(s\):\s+([\d.]+) MiB/), met: (v) => v <= 200 },
      { figure: 'PSS of one webjs session alone (stand-in page)', goal: 'report', unit: ' MiB', read: num(/per session PSS with 1 session\(s\):\s+([\d.]+) MiB/) },
    ],
  },
  {
    name: 'module-load', file: 'bench/module-load.ts',
    figures: [
      { figure: 'loading the gateway\'s code (a start, before it does anything): CPU median', goal: 'report', unit: ' ms', read: num(/the gateway's imports \(a start\):\s+CPU median ([\d.]+) ms/) },
      { figure: '  the same without / with whatsapp-web.js required (every start until AK)', goal: 'report', unit: '', read: num(/ratio CPU without \/ with whatsapp-web.js:\s+([\d.]+)/) },
    ],
  },
];

/**
 * Each benchmark runs the gateway in its own process: with the V8 flags `npm start` gives it (its young
 * generation: README, Benchmarks), so that it measures what an operator runs.
 */
const FLAGS = startFlags();

function run(b: Bench): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const child = spawn(process.execPath, [...FLAGS, '--import', 'tsx', b.file], { cwd: ROOT, env: { ...process.env, ...b.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const take = (chunk: Buffer) => {
      const s = chunk.toString();
      out += s;
      process.stdout.write(s);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', () => resolve(out));
  });
}

const only = (process.env.BENCH_ONLY ?? '').split(',').map((s) => s.trim()).filter(Boolean);
const chromium = process.env.CHROME_PATH ?? '/usr/bin/chromium';
const rows: string[][] = [];
console.log(`the gateway's V8 flags (npm start's): ${FLAGS.join(' ') || 'none'}`);
for (const b of BENCHES) {
  if (only.length > 0 && !only.includes(b.name)) continue;
  const missing =
    b.needs === 'postgres' && !process.env.TEST_DATABASE_URL ? 'needs TEST_DATABASE_URL'
    : b.needs === 'chromium' && !existsSync(chromium) ? `needs Chromium at ${chromium}`
    : null;
  if (missing) {
    for (const f of b.figures) rows.push([f.figure, f.goal, '—', `skipped: ${missing}`]);
    continue;
  }
  console.log(`\n===== ${b.name} (${b.file})`);
  const out = await run(b);
  for (const f of b.figures) {
    const v = f.read(out);
    rows.push([f.figure, f.goal, v === null ? 'not printed' : `${v}${f.unit}`, v === null ? 'no figure (see its output)' : !f.met ? '—' : f.met(v) ? 'met' : 'not met']);
  }
}

const head = ['figure', 'goal', 'measured', 'met?'];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ');
console.log(`\n${line(head)}\n${widths.map((w) => '-'.repeat(w)).join('-|-')}`);
for (const r of rows) console.log(line(r));
