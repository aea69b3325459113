/**
 * Dispatch lateness (dispatchedAt − scheduledAt) on the real clock, with an independent checker that counts
 * limit violations from the dispatch history in PostgreSQL: every pause ≥ minDelayMs since the previous
 * dispatch, never more than maxPerHour in any sliding hour. Goal: p99 lateness ≤ 50 ms, zero violations —
 * measured twice in one run: on an otherwise idle gateway, and while v2 acceptance runs at full speed on other
 * instances (BENCH_LOAD_INSTANCES of them, BENCH_CONCURRENCY clients), where the dispatch lane must not wait
 * behind acceptance batches. Also printed: the gateway's event-loop delay meanwhile (it runs in this process):
 * every round trip of a claim waits for the loop, so a saturated loop (or a CPU-starved machine: see `uptime`)
 * shows up here before it shows up as lateness.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/dispatch.ts
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startTestGateway } from '../test/helpers/gateway.js';
import { fmt, runLoad, type LoadResult } from './lib/load.js';

const JOBS = Number(process.env.BENCH_JOBS ?? 250);
const LOAD_INSTANCES = Number(process.env.BENCH_LOAD_INSTANCES ?? 50);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const MIN = 40;
const MAX = 80;
const PER_HOUR = 200;

const t = await startTestGateway({ label: 'bench_dispatch', env: { QUEUE_MAX_PENDING: '10000000' } });

/** Queue JOBS on a fresh instance, let them go out (optionally under load), and check lateness and limits. */
async function measure(label: string, load: (() => Promise<LoadResult>) | null): Promise<void> {
  // an instance name is a slug (no spaces): the label's words joined by '-'
  const { instance, apiKey } = await t.createInstance(`lateness-${label.replace(/[^A-Za-z0-9]+/g, '-')}`, {
    settings: { minDelayMs: MIN, maxDelayMs: MAX, maxPerHour: PER_HOUR, maxPer24h: null, quietHours: null },
  });
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  // the load starts first, so the jobs are accepted and dispatched while it runs
  const loading = load?.();
  for (let i = 0; i < JOBS; i += 25) {
    await Promise.all(Array.from({ length: Math.min(25, JOBS - i) }, (_, k) =>
      t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `lateness ${i + k}` })));
  }
  // everything that fits the hour goes out; the rest waits for the window
  const expected = Math.min(JOBS, PER_HOUR);
  const started = Date.now();
  for (;;) {
    const { rows } = await t.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE instance_id = $1 AND state = 'sent'`, [instance.id]);
    if ((rows[0]?.n ?? 0) >= expected) break;
    if (Date.now() - started > 120_000) throw new Error('dispatch did not finish in time');
    await new Promise((r) => setTimeout(r, 100));
  }
  loop.disable();
  const loaded = await loading;
  const { rows: jobs } = await t.db.pool.query<{ s: Date; d: Date }>(
    `SELECT scheduled_at AS s, dispatched_at AS d FROM jobs WHERE instance_id = $1 AND dispatched_at IS NOT NULL ORDER BY dispatched_at`,
    [instance.id],
  );
  const lateInOrder = jobs.map((j) => j.d.getTime() - j.s.getTime());
  const late = [...lateInOrder].sort((a, b) => a - b);
  const pct = (p: number) => late[Math.min(late.length - 1, Math.floor(p * late.length))] ?? 0;

  // independent checker over the persisted history
  const { rows: hist } = await t.db.pool.query<{ at: Date }>('SELECT dispatched_at AS at FROM dispatches WHERE instance_id = $1 ORDER BY dispatched_at', [instance.id]);
  const at = hist.map((h) => h.at.getTime());
  let spacing = 0;
  let hourly = 0;
  for (let i = 0; i < at.length; i++) {
    if (i > 0 && (at[i] as number) - (at[i - 1] as number) < MIN) spacing++;
    const inHour = at.filter((x) => x > (at[i] as number) - 3_600_000 && x <= (at[i] as number)).length;
    if (inHour > PER_HOUR) hourly++;
  }
  console.log(`--- ${label}`);
  if (loaded) {
    console.log(`acceptance on ${LOAD_INSTANCES} other instances meanwhile: ${fmt(loaded.rps, 0)} req/s  p99 ${fmt(loaded.p99, 1)} ms  errors ${loaded.errors}`);
  }
  console.log(`dispatched ${late.length} of ${JOBS} (maxPerHour ${PER_HOUR}, pauses ${MIN}–${MAX} ms)`);
  console.log(`lateness vs scheduledAt (${label}): p50 ${fmt(pct(0.5), 0)} ms  p99 ${fmt(pct(0.99), 0)} ms  max ${fmt(late[late.length - 1] ?? 0, 0)} ms  (goal p99 ≤ 50 ms)`);
  console.log(`worst five (dispatch index: ms): ${lateInOrder.map((v, i) => [i, v] as const).sort((a, b) => b[1] - a[1]).slice(0, 5).map(([i, v]) => `#${i}: ${v}`).join(', ')}`);
  console.log(`limit violations (${label}): spacing ${spacing}, hourly ${hourly}  (goal 0)`);
  const loopMs = (p: number) => fmt(loop.percentile(p) / 1e6, 0);
  console.log(`gateway event-loop delay meanwhile: p50 ${loopMs(50)} ms  p99 ${loopMs(99)} ms  max ${fmt(loop.max / 1e6, 0)} ms`);
}

await measure('idle', null);

// the other instances never dispatch during the run (one minute between sends), so their only work is acceptance
const settings = { minDelayMs: 60_000, maxDelayMs: 60_000, maxPerHour: null, maxPer24h: null, quietHours: null, defaultTtlSeconds: 2_592_000 };
const keys: string[] = [];
for (let i = 0; i < LOAD_INSTANCES; i++) keys.push((await t.createInstance(`load${i}`, { settings })).apiKey);
// JOBS dispatches at 40–80 ms pauses take about JOBS × 60 ms; the load covers them with a margin
const loadMs = JOBS * MAX + 5_000;
await measure('under acceptance load', () => runLoad({
  url: `${t.url}/api/v2/send-message`,
  method: 'POST',
  keys,
  body: '{"phone":"4915112345678","message":"load {{n}}","idempotencyKey":"load-key-{{n}}"}',
  concurrency: CONCURRENCY,
  durationMs: loadMs,
}));
await t.stop();
