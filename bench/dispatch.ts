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
 *   BENCH_JOBS=250 BENCH_LOAD_INSTANCES=50 BENCH_CONCURRENCY=50 BENCH_PAUSE_MIN_MS=40 BENCH_PAUSE_MAX_MS=80 (the pauses
 *   are the instance's minDelayMs/maxDelayMs: 40–80 ms is far shorter than any real pacing, and there outcome writes
 *   can hold the lane; 300–500 ms with BENCH_JOBS=120 measures what a paced instance sees)
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startTestGateway } from '../test/helpers/gateway.js';
import { fmt, runLoad, type LoadResult, errorsText } from './lib/load.js';
import { laneTrace, type LaneTiming } from '../src/queue/lane-trace.js';
import { quietWithin, untilStoreQuiet } from './lib/quiet.js';

const JOBS = Number(process.env.BENCH_JOBS ?? 250);
const LOAD_INSTANCES = Number(process.env.BENCH_LOAD_INSTANCES ?? 50);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const MIN = Number(process.env.BENCH_PAUSE_MIN_MS ?? 40);
const MAX = Number(process.env.BENCH_PAUSE_MAX_MS ?? 80);
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
  // where each pass of this instance's dispatch lane spent its time
  const passes: LaneTiming[] = [];
  laneTrace.sink = (p) => {
    if (p.instanceId === instance.id) passes.push(p);
  };
  // the load starts first, so the jobs are accepted and dispatched while it runs
  const loading = load?.();
  // when each acceptance was answered, by its slot: a slot that came before its answer was late from the start
  const answered = new Map<number, number>();
  for (let i = 0; i < JOBS; i += 25) {
    await Promise.all(Array.from({ length: Math.min(25, JOBS - i) }, async (_, k) => {
      const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `lateness ${i + k}` });
      const slot = r.body.data?.scheduledAt;
      if (typeof slot === 'string') answered.set(Date.parse(slot), Date.now());
    }));
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
  laneTrace.sink = null;
  const { rows: jobs } = await t.db.pool.query<{ s: Date; d: Date; q: Date }>(
    `SELECT scheduled_at AS s, dispatched_at AS d, queued_at AS q FROM jobs WHERE instance_id = $1 AND dispatched_at IS NOT NULL ORDER BY dispatched_at`,
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
    console.log(`acceptance on ${LOAD_INSTANCES} other instances meanwhile: ${fmt(loaded.rps, 0)} req/s  p99 ${fmt(loaded.p99, 1)} ms  ${errorsText(loaded)}`);
  }
  console.log(`dispatched ${late.length} of ${JOBS} (maxPerHour ${PER_HOUR}, pauses ${MIN}–${MAX} ms)`);
  console.log(`lateness vs scheduledAt (${label}): p50 ${fmt(pct(0.5), 0)} ms  p99 ${fmt(pct(0.99), 0)} ms  max ${fmt(late[late.length - 1] ?? 0, 0)} ms  (goal p99 ≤ 50 ms)`);
  console.log(`worst five (dispatch index: ms): ${lateInOrder.map((v, i) => [i, v] as const).sort((a, b) => b[1] - a[1]).slice(0, 5).map(([i, v]) => `#${i}: ${v}`).join(', ')}`);
  console.log(`limit violations (${label}): spacing ${spacing}, hourly ${hourly}  (goal 0)`);
  const loopMs = (p: number) => fmt(loop.percentile(p) / 1e6, 0);
  printBreakdown(passes, new Map(jobs.map((j) => [j.s.getTime(), j.d.getTime() - j.s.getTime()])), new Map(jobs.map((j) => [j.s.getTime(), j.q.getTime()])), answered);
  console.log(`gateway event-loop delay meanwhile: p50 ${loopMs(50)} ms  p99 ${loopMs(99)} ms  max ${fmt(loop.max / 1e6, 0)} ms`);
}

await measure('idle', null);

// The other instances never dispatch during the run (one minute between sends), so their only work is
// acceptance: each has had its first message (which is due at once) before, sent and read (the sandbox's
// recipients read 5 s after delivery), its receipts written.
const settings = { minDelayMs: 60_000, maxDelayMs: 60_000, maxPerHour: null, maxPer24h: null, quietHours: null, defaultTtlSeconds: 2_592_000 };
const keys: string[] = [];
for (let i = 0; i < LOAD_INSTANCES; i++) keys.push((await t.createInstance(`load${i}`, { settings })).apiKey);
await Promise.all(keys.map((key, i) => t.api(key, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `first ${i}` })));
if (!quietWithin(await untilStoreQuiet(t.gw.pool, 6_000, 60_000, 'go on'))) {
  console.log("the load instances' first messages: the store was never quiet for 6 s within a minute; the run below may hold their tail");
}
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

/**
 * The lane's passes: lateness is the timer's delay (its callback after the slot: the event loop) plus the time
 * the step spent before its claim (the serial executor: a write-back, a re-plan); a lane still busy with the
 * previous pass (its claim, its call, the outcome before it) when the next slot came shows as `busyAt`.
 */
function printBreakdown(passes: LaneTiming[], lateBySlot: Map<number, number>, queuedBySlot: Map<number, number>, answeredBySlot: Map<number, number>): void {
  const claimed = passes.filter((p) => p.claimed);
  const q = (xs: number[], p: number) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
  };
  const row = (name: string, xs: number[]) =>
    console.log(`  ${name.padEnd(34)} p50 ${fmt(q(xs, 0.5), 1)}  p99 ${fmt(q(xs, 0.99), 1)}  max ${fmt(q(xs, 1), 1)} ms`);
  const d = (a: number | null, b: number | null) => (a === null || b === null ? 0 : b - a);
  const answeredLate = claimed.filter((p) => (answeredBySlot.get(p.dueAt) ?? 0) > p.dueAt);
  console.log(`slot already past when its acceptance was answered: ${answeredLate.length} jobs (by p50 ${fmt(q(answeredLate.map((p) => (answeredBySlot.get(p.dueAt) ?? 0) - p.dueAt), 0.5), 0)}, max ${fmt(q(answeredLate.map((p) => (answeredBySlot.get(p.dueAt) ?? 0) - p.dueAt), 1), 0)} ms)`);
  console.log(`lane passes: ${passes.length} (${claimed.length} claimed); lane busy when the slot came: ${claimed.filter((p) => p.busyAt !== null).length}; claim queued for a pool connection: ${claimed.filter((p) => (p.pool?.waiting ?? 0) > 0 || (p.pool?.idle ?? 0) === 0).length}`);
  row('timer callback after the slot', claimed.map((p) => p.firedAt - p.dueAt));
  const armedLate = claimed.filter((p) => p.armedAt > p.dueAt);
  console.log(`  slot already due when the lane was armed for it: ${armedLate.length} (by p50 ${fmt(q(armedLate.map((p) => p.armedAt - p.dueAt), 0.5), 0)}, max ${fmt(q(armedLate.map((p) => p.armedAt - p.dueAt), 1), 0)} ms)`);
  // the lane was free at the slot and learned of it later: the job (or its slot) entered the plan after its slot
  // (an acceptance's group commit, planned at the batch's start, committed later)
  const enteredLate = armedLate.filter((p) => p.laneFreeAt <= p.dueAt && p.busyAt === null);
  console.log(`  of them with the lane free at the slot (the job entered the plan after its slot): ${enteredLate.length} (by p50 ${fmt(q(enteredLate.map((p) => p.armedAt - p.dueAt), 0.5), 0)}, max ${fmt(q(enteredLate.map((p) => p.armedAt - p.dueAt), 1), 0)} ms)`);
  row('lane busy at the slot (until fired)', claimed.filter((p) => p.busyAt !== null).map((p) => p.firedAt - (p.busyAt as number)));
  row('serial executor before the claim', claimed.map((p) => p.serialMs));
  const replans = passes.filter((p) => p.replanned);
  console.log(`  re-check failed (a late dispatch before it), re-planned: ${replans.length}; the re-plan took p50 ${fmt(q(replans.map((p) => p.serialMs), 0.5), 0)}, max ${fmt(q(replans.map((p) => p.serialMs), 1), 0)} ms`);
  row('claim round trip (pool wait + SQL)', claimed.map((p) => d(p.claimSent, p.claimAnswered)));
  row('claim answered → driver send', claimed.map((p) => d(p.claimAnswered, p.sendStarted)));
  row('driver send → answer', claimed.map((p) => d(p.sendStarted, p.sendAnswered)));
  row('wait for earlier outcomes', claimed.map((p) => d(p.sendAnswered, p.previousOutcomeWritten)));
  row('outcome write', claimed.map((p) => d(p.previousOutcomeWritten, p.outcomeWritten)));
  row('lane occupied (step → lane free)', claimed.map((p) => d(p.step, p.previousOutcomeWritten)));
  // BENCH_DISPATCH_TRACE=1: every pass of the first ones, in order (ms relative to the first slot)
  if (process.env.BENCH_DISPATCH_TRACE === '1') {
    const t0 = passes[0]?.dueAt ?? 0;
    for (const p of passes.slice(0, 60)) {
      console.log(`    due ${p.dueAt - t0} fired +${p.firedAt - p.dueAt} freeAt ${p.laneFreeAt - t0} ${p.replanned ? 'REPLAN' : ''} serial ${fmt(p.serialMs, 0)} claim ${fmt(d(p.claimSent, p.claimAnswered), 0)} send ${fmt(d(p.sendStarted, p.sendAnswered), 0)} wait ${fmt(d(p.sendAnswered, p.previousOutcomeWritten), 0)} step→free ${fmt(d(p.step, p.previousOutcomeWritten), 0)} late ${lateBySlot.get(p.dueAt) ?? '-'}`);
    }
  }
  const worst = [...claimed].sort((a, b) => (lateBySlot.get(b.dueAt) ?? 0) - (lateBySlot.get(a.dueAt) ?? 0)).slice(0, 5);
  for (const p of worst) {
    const queued = queuedBySlot.get(p.dueAt);
    const answer = answeredBySlot.get(p.dueAt);
    // an instant relative to the slot: "slot+15", "slot-65"
    const at = (t: number) => `slot${t >= p.dueAt ? '+' : ''}${t - p.dueAt}`;
    // laneFreeAt 0: the lane had not finished a pass yet (this instance's first dispatch)
    const free = p.laneFreeAt === 0 ? 'lane not used before' : `lane free at ${at(p.laneFreeAt)}`;
    console.log(`  late ${lateBySlot.get(p.dueAt) ?? '?'} ms: ${queued === undefined ? '' : `slot = queuedAt+${p.dueAt - queued}, `}${answer === undefined ? '' : `answered at ${at(answer)}, `}armed at ${at(p.armedAt)}, timer +${p.firedAt - p.dueAt}${p.busyAt !== null ? ` (lane busy from ${at(p.busyAt)})` : ''}, ${free}, serial ${fmt(p.serialMs, 0)}, claim ${fmt(d(p.claimSent, p.claimAnswered), 0)} (pool waiting ${p.pool?.waiting}, idle ${p.pool?.idle}/${p.pool?.total}), send ${fmt(d(p.sendStarted, p.sendAnswered), 0)}, prev outcome ${fmt(d(p.sendAnswered, p.previousOutcomeWritten), 0)}`);
  }
}
