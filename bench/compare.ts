/**
 * This checkout's gateway against another revision's, in one process: both gateways started side by side, the
 * same load given to one and then the other, in turn, so that the machine's minute falls on both alike. On the
 * machines here the same code measures a quarter apart from one minute to the next, and a change of a few per
 * cent shows only this way. Prints each side's medians and the median of the per-pair ratios (this / base).
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres BENCH_BASE_REV=7ccc6b1 npx tsx bench/compare.ts accept bulk
 *
 * Cases: `accept` (v2 send-message on one instance, no keys: rate, p99, the process's CPU a request), `spread`
 * (500 instances, one request each in turn, with idempotency keys), `bulk` (POST /api/send-bulk of 5,000:
 * time to the answer). BENCH_BASE_REV is checked out into a temporary worktree with a hard-linked copy of
 * node_modules (its own module instances, so that the two gateways share no module state), removed at the end;
 * BENCH_BASE=<dir> takes a checkout that is already there. BENCH_PAIRS (default 10) pairs per case, BENCH_MS
 * (3,000) per acceptance load. The base revision's test/helpers/gateway.ts must start a gateway as this one's
 * does (any revision since issue 18's benchmarks).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runLoad, fmt } from './lib/load.js';
import { bulkBody, holdSettings, median, timed } from './lib/queue-fixture.js';
import * as here from '../test/helpers/gateway.js';

if (!process.env.TEST_DATABASE_URL) {
  console.error('bench/compare.ts needs TEST_DATABASE_URL (a PostgreSQL server)');
  process.exit(2);
}
const CASES = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['accept', 'bulk'];
for (const c of CASES) {
  if (!['accept', 'spread', 'bulk'].includes(c)) {
    console.error(`unknown case ${c}: accept, spread or bulk`);
    process.exit(2);
  }
}
const PAIRS = Number(process.env.BENCH_PAIRS ?? 10);
const LOAD_MS = Number(process.env.BENCH_MS ?? 3_000);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// ---- the base checkout
let base = process.env.BENCH_BASE ?? null;
let worktree: string | null = null;
if (!base) {
  const rev = process.env.BENCH_BASE_REV;
  if (!rev) {
    console.error('bench/compare.ts needs BENCH_BASE_REV (a revision) or BENCH_BASE (a checkout of it)');
    process.exit(2);
  }
  worktree = path.join(mkdtempSync(path.join(tmpdir(), 'mgw-compare-')), 'base');
  execFileSync('git', ['-C', root, 'worktree', 'add', '--detach', worktree, rev], { stdio: 'ignore' });
  execFileSync('cp', ['-al', path.join(root, 'node_modules'), path.join(worktree, 'node_modules')]);
  base = worktree;
}
const removeWorktree = () => {
  if (!worktree) return;
  try {
    execFileSync('git', ['-C', root, 'worktree', 'remove', '--force', worktree], { stdio: 'ignore' });
  } catch {
    rmSync(worktree, { recursive: true, force: true });
  }
  worktree = null;
};
process.on('exit', removeWorktree);

type Helpers = typeof here;
type Side = 'base' | 'this';
const baseHelpers = (await import(path.join(base, 'test/helpers/gateway.ts'))) as Helpers;
const rev = execFileSync('git', ['-C', base, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
const own = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
const dirty = execFileSync('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== '';
console.log(`compare: this checkout (${own}${dirty ? ' with uncommitted changes' : ''}) against ${rev}, ${PAIRS} pairs a case, in turn`);

const env = { QUEUE_MAX_PENDING: '10000000' };
const gateways = {
  base: await baseHelpers.startTestGateway({ label: 'compare_base', env }),
  this: await here.startTestGateway({ label: 'compare_this', env }),
};
const order = (i: number): Side[] => (i % 2 === 0 ? ['this', 'base'] : ['base', 'this']);
const ratio = (a: number[], b: number[]) => median(a.map((x, i) => x / (b[i] as number)));
let made = 0;

async function acceptance(spread: boolean): Promise<void> {
  // one message every 5 s on one instance (nothing due meanwhile), or every ten minutes on 500
  const pause = spread ? 600_000 : 5_000;
  const settings = { minDelayMs: pause, maxDelayMs: pause, maxPerHour: null, maxPer24h: null, quietHours: null, defaultTtlSeconds: 2_592_000 };
  const keys: Record<Side, string[]> = { base: [], this: [] };
  for (const side of ['base', 'this'] as const) {
    for (let i = 0; i < (spread ? 500 : 1); i++) keys[side].push((await gateways[side].createInstance(`c${made++}`, { settings })).apiKey);
  }
  let round = 0;
  const load = (side: Side, durationMs: number) => runLoad({
    url: `${gateways[side].url}/api/v2/send-message`,
    method: 'POST',
    ...(spread ? { keys: keys[side] } : { headers: { authorization: `Bearer ${keys[side][0]}` } }),
    body: spread ? `{"phone":"4915112345678","message":"hello {{n}}","idempotencyKey":"compare-${++round}-{{n}}"}` : '{"phone":"4915112345678","message":"hello {{n}}"}',
    concurrency: spread ? 50 : 32,
    client: 'raw',
    durationMs,
  });
  for (const side of ['base', 'this'] as const) await load(side, LOAD_MS); // warm-up (JIT, every instance's first message)
  const rps: Record<Side, number[]> = { base: [], this: [] };
  const p99: Record<Side, number[]> = { base: [], this: [] };
  const cpu: Record<Side, number[]> = { base: [], this: [] };
  for (let i = 0; i < PAIRS; i++) {
    for (const side of order(i)) {
      const c0 = process.cpuUsage();
      const r = await load(side, LOAD_MS);
      const c = process.cpuUsage(c0);
      if (r.errors > 0) throw new Error(`${side}: ${r.errors} requests failed ${JSON.stringify(r.failures)}`);
      rps[side].push(r.rps);
      p99[side].push(r.p99);
      cpu[side].push((c.user + c.system) / r.requests);
    }
  }
  const name = spread ? 'acceptance over 500 instances, with keys' : 'acceptance on one instance';
  for (const side of ['base', 'this'] as const) {
    console.log(`${name}, ${side === 'base' ? rev : 'this'}: ${fmt(median(rps[side]), 0)} req/s  p99 ${fmt(median(p99[side]), 1)} ms  CPU ${fmt(median(cpu[side]), 0)} µs a request (medians of ${PAIRS})`);
  }
  console.log(`${name}, this / ${rev} (median of the pairs): rate ${fmt(ratio(rps.this, rps.base), 3)}  p99 ${fmt(ratio(p99.this, p99.base), 3)}  CPU a request ${fmt(ratio(cpu.this, cpu.base), 3)}`);
}

async function bulk(): Promise<void> {
  const once = async (side: Side) => {
    const t = gateways[side];
    const { apiKey } = await t.createInstance(`c${made++}`, { settings: holdSettings() });
    const r = await timed(`${t.url}/api/send-bulk`, apiKey, 'POST', bulkBody(5_000, `c${made}`));
    if (r.status !== 200) throw new Error(`${side}: send-bulk answered ${r.status}`);
    return r.ms;
  };
  for (const side of ['base', 'this'] as const) await once(side); // warm-up
  const ms: Record<Side, number[]> = { base: [], this: [] };
  for (let i = 0; i < PAIRS; i++) for (const side of order(i)) ms[side].push(await once(side));
  console.log(`send-bulk of 5,000: ${rev} median ${fmt(median(ms.base), 0)} ms, this ${fmt(median(ms.this), 0)} ms; this / ${rev} (median of the pairs) ${fmt(ratio(ms.this, ms.base), 3)}`);
}

try {
  for (const c of CASES) {
    if (c === 'bulk') await bulk();
    else await acceptance(c === 'spread');
  }
} finally {
  await gateways.base.stop();
  await gateways.this.stop();
  removeWorktree();
}
