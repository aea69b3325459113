/**
 * A full queue stays fast (issue 18, goal 2). One gateway, real PostgreSQL, one run:
 *
 * Settings: the new-instance limits (quiet hours now, 4–12 s pauses) with ten times their hourly and daily
 * budget, so that no load of the run exhausts the 30 days of slots a queue can hold (below).
 *
 * 1. v2 acceptance on one instance with an empty queue, then on one that holds 4,999 pending jobs (same
 *    load, same settings, one after the other): req/s and p99, and `ratio full / empty` = how much longer a
 *    request takes on the full queue (empty req/s ÷ full req/s; goal ≤ 2). QUEUE_MAX_PENDING is raised for the
 *    run so that the full queue keeps accepting while it is measured (it starts at 4,999 and grows). The full
 *    queue is what a real one looks like: a bulk at priority 5, one priority-1 job and one reminder (notBefore
 *    in three days) behind it, so that a new priority-5 job does not simply go after every waiting one.
 * 2. A priority-9 acceptance into the full queue (it goes in front of every waiting job, so every slot
 *    moves): its answer time and the waiting rows written by its commit (row versions, xmin).
 * 3. POST /api/v2/queue/replan of the full queue, nothing changed since the last plan: time and rows written;
 *    then after a cancel of the first job, which moves every slot behind it: time and rows written; and the
 *    write of those ~5,000 slots alone (saveSlots in a transaction, the same statements; goal ≤ 50 ms).
 * 4. DELETE /api/v2/messages/:jobId and POST /api/v2/queue/replan at 5,000 pending while acceptance runs
 *    against the same instance: latency percentiles, how many answered 504 (the gateway deadline is 10 s), and
 *    that acceptance's rate as a share of the full queue's alone in step 1 (under 0.1: a stall, as an earlier
 *    build showed with 10–166 req/s where ~500 is usual).
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/full-queue.ts
 *   BENCH_MS=3000 BENCH_CONCURRENCY=16
 */
import { startTestGateway } from '../test/helpers/gateway.js';
import { runLoad, fmt, errorsText, unlessErrors } from './lib/load.js';
import { fill, holdSettings, median, percentile, rowVersions, rowsWritten, timed } from './lib/queue-fixture.js';
import { withTransaction } from '../src/store/pool.js';
import { saveSlots } from '../src/queue/sql/saveSlots.js';

if (!process.env.TEST_DATABASE_URL) {
  console.error('bench/full-queue.ts needs TEST_DATABASE_URL (a PostgreSQL server)');
  process.exit(2);
}
const DURATION = Number(process.env.BENCH_MS ?? 3_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const FULL = 4_999;
const SAMPLES = 5;

const t = await startTestGateway({ label: 'bench_full', env: { QUEUE_MAX_PENDING: '1000000' } });
const pool = t.gw.pool;
// The new-instance limits, with a tenfold hourly and daily budget: a queue holds at most 30 days of slots
// (ttlSeconds ≤ 2,592,000), which at 500 a day is 15,000 jobs. A machine accepting 5,000 req/s filled that in
// 3 s: the empty queue's load measured its refusals (422 TTL_UNREACHABLE), and step 4 ran on a queue with no
// slot left (46 req/s accepted, 6,916 refused), which read as a stall. At 5,000 a day it holds 150,000.
const settings = { ...holdSettings(), maxPerHour: 400, maxPer24h: 5_000 };
const warm = await t.createInstance('warm', { settings });
const empty = await t.createInstance('empty', { settings });
const full = await t.createInstance('full', { settings });
const pendingOf = async (id: string) =>
  (await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM jobs WHERE instance_id = $1 AND state IN ('queued','scheduled')", [id])).rows[0]?.n ?? 0;

const filled = await fill(t.url, full.apiKey, FULL - 2);
const low = await timed(`${t.url}/api/v2/send-message`, full.apiKey, 'POST', JSON.stringify({ phone: '4915112345678', message: 'low', priority: 1 }));
const later = await timed(`${t.url}/api/v2/send-message`, full.apiKey, 'POST',
  JSON.stringify({ phone: '4915112345678', message: 'reminder', notBefore: new Date(Date.now() + 3 * 86_400_000).toISOString() }));
if (filled !== FULL - 2 || low.status !== 202 || later.status !== 202) throw new Error(`the full queue took ${filled} + ${low.status} + ${later.status}`);

const load = (apiKey: string, tag: string, durationMs = DURATION) => runLoad({
  url: `${t.url}/api/v2/send-message`,
  method: 'POST',
  headers: { authorization: `Bearer ${apiKey}` },
  body: `{"phone":"4915112345678","message":"${tag} {{n}}"}`,
  concurrency: CONCURRENCY,
  durationMs,
});

// ---- 2 and 3 first, while the full queue holds exactly 4,999 (nothing else runs)
const p9: number[] = [];
const p9Rows: number[] = [];
for (let i = 0; i < SAMPLES; i++) {
  const before = await rowVersions(pool, full.instance.id);
  const r = await timed(`${t.url}/api/v2/send-message`, full.apiKey, 'POST', JSON.stringify({ phone: '4915112345678', message: `urgent ${i}`, priority: 9 }));
  if (r.status !== 202) throw new Error(`priority-9 send: ${r.status} ${JSON.stringify(r.body)}`);
  p9.push(r.ms);
  // what its acceptance wrote, and (if slots are persisted later) what followed within a second
  await new Promise((res) => setTimeout(res, 1_000));
  p9Rows.push(rowsWritten(before, await rowVersions(pool, full.instance.id)));
  // back to 4,999 for the next sample
  const c = await timed(`${t.url}/api/v2/messages/${String(r.body.data?.jobId)}`, full.apiKey, 'DELETE');
  if (c.status !== 200) throw new Error(`cancel: ${c.status} ${JSON.stringify(c.body)}`);
}
await timed(`${t.url}/api/v2/queue/replan`, full.apiKey, 'POST'); // settle the plan after the samples
const replanIdle: number[] = [];
const replanRows: number[] = [];
for (let i = 0; i < SAMPLES; i++) {
  const before = await rowVersions(pool, full.instance.id);
  const r = await timed(`${t.url}/api/v2/queue/replan`, full.apiKey, 'POST');
  if (r.status !== 200) throw new Error(`replan: ${r.status} ${JSON.stringify(r.body)}`);
  replanIdle.push(r.ms);
  replanRows.push(rowsWritten(before, await rowVersions(pool, full.instance.id)));
}

const replanMoved: number[] = [];
const replanMovedRows: number[] = [];
for (let i = 0; i < 3; i++) {
  const first = (await pool.query<{ id: string }>(
    "SELECT id FROM jobs WHERE instance_id = $1 AND state IN ('queued','scheduled') ORDER BY scheduled_at, seq LIMIT 1", [full.instance.id])).rows[0]?.id;
  const c = await timed(`${t.url}/api/v2/messages/${first}`, full.apiKey, 'DELETE');
  if (c.status !== 200) throw new Error(`cancel: ${c.status} ${JSON.stringify(c.body)}`);
  const before = await rowVersions(pool, full.instance.id);
  const r = await timed(`${t.url}/api/v2/queue/replan`, full.apiKey, 'POST');
  if (r.status !== 200) throw new Error(`replan: ${r.status} ${JSON.stringify(r.body)}`);
  replanMoved.push(r.ms);
  replanMovedRows.push(rowsWritten(before, await rowVersions(pool, full.instance.id)));
  // back to 4,999
  const again = await timed(`${t.url}/api/v2/send-message`, full.apiKey, 'POST', JSON.stringify({ phone: '4915112345678', message: `again ${i}` }));
  if (again.status !== 202) throw new Error(`send: ${again.status} ${JSON.stringify(again.body)}`);
}

// the write alone: the statements of the re-plan above (src/queue/sql/saveSlots.ts) for every waiting row, each
// slot moved by a second and then back (the plan in memory stays what PostgreSQL holds), timed from BEGIN to COMMIT
const slotWrite: number[] = [];
let slotRows = 0;
{
  const { rows } = await pool.query<{ id: string; at: Date; epoch: number }>(
    "SELECT id, scheduled_at AS at, plan_epoch AS epoch FROM jobs WHERE instance_id = $1 AND state = 'scheduled'", [full.instance.id]);
  for (let i = 0; i < 2 * SAMPLES; i++) {
    const shift = i % 2 === 0 ? 1_000 : 0;
    const writes = rows.map((r) => ({ jobId: r.id, scheduledAt: r.at.getTime() + shift }));
    const t0 = performance.now();
    await withTransaction(pool, (c) => saveSlots(c, full.instance.id, writes, rows[0]?.epoch ?? 0));
    slotWrite.push(performance.now() - t0);
  }
  slotRows = rows.length;
}

// ---- 1: acceptance, empty vs full (a warm-up on a third instance first)
await load(warm.apiKey, 'warm', 1_000);
const e0 = await pendingOf(empty.instance.id);
const e = await load(empty.apiKey, 'empty');
const e1 = await pendingOf(empty.instance.id);
const f0 = await pendingOf(full.instance.id);
const f = await load(full.apiKey, 'full');
const f1 = await pendingOf(full.instance.id);

// ---- 4: cancel and replan while acceptance runs on the same (full) instance
const ids = (await pool.query<{ id: string }>(
  "SELECT id FROM jobs WHERE instance_id = $1 AND state IN ('queued','scheduled') ORDER BY seq LIMIT 200", [full.instance.id])).rows.map((r) => r.id);
const busy = load(full.apiKey, 'busy', DURATION + 1_000);
await new Promise((res) => setTimeout(res, 300));
const cancels: number[] = [];
const replans: number[] = [];
let timeouts = 0;
let cancelled = 0;
const end = performance.now() + DURATION;
for (let i = 0; performance.now() < end && i < ids.length; i++) {
  const c = await timed(`${t.url}/api/v2/messages/${ids[i]}`, full.apiKey, 'DELETE');
  cancels.push(c.ms);
  if (c.status === 504) timeouts++;
  if (c.status === 200 && c.body.data?.state === 'cancelled') cancelled++;
  if (i % 4 === 0) {
    const r = await timed(`${t.url}/api/v2/queue/replan`, full.apiKey, 'POST');
    replans.push(r.ms);
    if (r.status === 504) timeouts++;
  }
}
const b = await busy;

const ms = (xs: number[]) => `p50 ${fmt(percentile(xs, 50), 1)} ms  p99 ${fmt(percentile(xs, 99), 1)} ms  max ${fmt(Math.max(...xs), 1)} ms`;
console.log(`full queue: one instance, new-instance limits (hourly and daily budget ×10) with quiet hours now, ${CONCURRENCY} clients, ${DURATION} ms per load`);
console.log(`acceptance, empty queue:          ${fmt(e.rps, 0)} req/s  p50 ${fmt(e.p50, 2)} ms  p99 ${fmt(e.p99, 2)} ms  ${errorsText(e)}  (pending ${e0} → ${e1})`);
console.log(`acceptance, full queue:           ${fmt(f.rps, 0)} req/s  p50 ${fmt(f.p50, 2)} ms  p99 ${fmt(f.p99, 2)} ms  ${errorsText(f)}  (pending ${f0} → ${f1})`);
console.log(`ratio full / empty:               ${unlessErrors([e, f], () => `${fmt(e.rps / f.rps, 2)}  (time per request; p99 ${fmt(f.p99 / e.p99, 2)}; goal ≤ 2)`)}`);
console.log(`priority-9 acceptance, full:      median ${fmt(median(p9), 1)} ms  (${p9.map((x) => fmt(x, 0)).join(', ')} ms)`);
console.log(`  rows written per priority-9:    median ${median(p9Rows)}  (${p9Rows.join(', ')}; within a second of the answer)`);
console.log(`replan, full queue, nothing new:  median ${fmt(median(replanIdle), 1)} ms  rows written median ${median(replanRows)} (${replanRows.join(', ')})`);
console.log(`replan after the first job left:  median ${fmt(median(replanMoved), 1)} ms  rows written median ${median(replanMovedRows)} (${replanMoved.map((x) => fmt(x, 0)).join(', ')} ms)`);
console.log(`  its write alone (${slotRows} rows): median ${fmt(median(slotWrite), 1)} ms  (${slotWrite.map((x) => fmt(x, 0)).join(', ')} ms; goal ≤ 50 ms)`);
console.log(`cancel while accepting:           ${cancels.length} calls  ${ms(cancels)}  (${cancelled} cancelled)`);
console.log(`replan while accepting:           ${replans.length} calls  ${ms(replans)}`);
console.log(`504 INSTANCE_TIMEOUT (cancel + replan): ${timeouts}   (acceptance meanwhile ${fmt(b.rps, 0)} req/s, ${errorsText(b)})`);
// a collapse of acceptance while cancels and re-plans share the instance (a stall: a plan or a write that
// waits far too long) is a figure of its own, not only a slow call among the cancels and re-plans
console.log(`acceptance during cancels and re-plans / full queue alone: ${unlessErrors([b, f], () => `${fmt(b.rps / f.rps, 2)}  (${fmt(b.rps, 0)} / ${fmt(f.rps, 0)} req/s; a stall if under 0.1)`)}`);
await t.stop();
