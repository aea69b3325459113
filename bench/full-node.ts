/**
 * A node whose instances hold full queues, restarted (issue 18: a start-up ready in ≤ 30 s, here with a million
 * waiting jobs rather than none). BENCH_FULL_INSTANCES instances (200) of BENCH_FULL_WAITING waiting jobs each
 * (5,000, the default QUEUE_MAX_PENDING) are written straight into PostgreSQL (`queued`, no slot: as a
 * send-bulk leaves them before its plan is written), then the gateway is started twice on that database:
 *
 * 1. the first start plans every job and writes every slot;
 * 2. a restart reads every queue again (src/queue/sql/loadStarts.ts: groups of at most START_READ_ROWS rows).
 *
 * Each start is timed until every instance's GET /api/v2/queue has answered 200 (the summary waits for its queue
 * to load). Printed too: the heap per waiting job (the queue keeps its plan in memory: id, priority, arrival,
 * instants, its place in the dispatch order) and how many waiting jobs V8's heap limit leaves room for.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/full-node.ts
 *   BENCH_FULL_INSTANCES=200 BENCH_FULL_WAITING=5000
 */
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { startTestGateway } from '../test/helpers/gateway.js';
import { startGateway, type Gateway } from '../src/gateway.js';
import { loadConfig } from '../src/config.js';
import { silentLogger } from '../src/log.js';
import { fmt } from './lib/load.js';
import { exposedGc } from './lib/expose-gc.js';

const gc = exposedGc(fileURLToPath(import.meta.url));
if (!process.env.TEST_DATABASE_URL) {
  console.error('bench/full-node.ts needs TEST_DATABASE_URL (a PostgreSQL server)');
  process.exit(2);
}
const N = Number(process.env.BENCH_FULL_INSTANCES ?? 200);
const P = Number(process.env.BENCH_FULL_WAITING ?? 5_000);
const MiB = 2 ** 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const heapUsed = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const env = { QUEUE_MAX_PENDING: String(P + 10) };
const t = await startTestGateway({ label: 'bench_full_node', env });
// one message every 10 s: 5,000 of them reach 14 h ahead, inside their 30 days
const settings = { minDelayMs: 10_000, maxDelayMs: 10_000, maxPerHour: null, maxPer24h: null, quietHours: null, defaultTtlSeconds: 2_592_000 };
const ids: string[] = [];
const apiKeys: string[] = [];
for (let i = 0; i < N; i++) {
  const created = await t.createInstance(`full${i}`, { settings });
  ids.push(created.instance.id);
  apiKeys.push(created.apiKey);
}
// each instance's first message through the API, the rest copied from it (as a bulk would write them)
for (const key of apiKeys) await t.accept(key, { phone: '4915112345678', message: 'first' });
const base = heapUsed();
const fill0 = performance.now();
for (const id of ids) {
  await t.db.pool.query(
    `INSERT INTO jobs (id, instance_id, state, kind, origin_route, chat_id, phone, payload, payload_hash, idempotency_key, priority,
                       not_before, queued_at, scheduled_at, expires_at, previous_job_id, caller_boot)
     SELECT 'wq_t' || lpad(to_hex((extract(epoch FROM j.queued_at) * 1000)::bigint), 11, '0') || lpad(to_hex(g), 6, '0') || substr(md5(random()::text), 1, 6),
            j.instance_id, 'queued', j.kind, j.origin_route, j.chat_id, j.phone, jsonb_set(j.payload, '{body}', to_jsonb('message ' || g)),
            j.payload_hash, NULL, 5, NULL, j.queued_at, NULL, j.expires_at, NULL, NULL
       FROM jobs j CROSS JOIN generate_series(1, $2) AS g
      WHERE j.instance_id = $1`,
    [id, P - 1],
  );
}
const waitingNow = async () =>
  Number((await t.db.pool.query<{ n: string }>("SELECT count(*) AS n FROM jobs WHERE state IN ('queued','scheduled')")).rows[0]?.n ?? 0);
console.log(`filled: ${N} instances × ${P} waiting jobs (${await waitingNow()} in all) in ${fmt((performance.now() - fill0) / 1000, 1)} s`);

const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: t.dataDir, ADMIN_TOKEN: t.adminToken, DEMO_INSTANCE: 'false', LOG_LEVEL: 'fatal', ...env });
let gw: Gateway = t.gw;

/**
 * Until every instance's queue summary answers 200 (each waits up to 2 s for its queue to load, then answers 503
 * queue_loading); `notYet` tells the answers before that by status and reason.
 */
async function untilLoaded(url: string, t0: number): Promise<{ ms: number; notYet: string }> {
  const early = new Map<string, number>();
  await Promise.all(apiKeys.map(async (key) => {
    for (;;) {
      const r = await fetch(`${url}/api/v2/queue`, { headers: { authorization: `Bearer ${key}` } });
      const body = await r.text();
      if (r.status === 200) return;
      const reason = (JSON.parse(body) as { data?: { reason?: unknown } }).data?.reason;
      const what = `${r.status}${typeof reason === 'string' ? ` ${reason}` : ''}`;
      early.set(what, (early.get(what) ?? 0) + 1);
      if (performance.now() - t0 > 600_000) throw new Error(`a queue had not loaded 600 s after the start (${r.status})`);
      await sleep(100);
    }
  }));
  const notYet = [...early].map(([what, n]) => `${n} × ${what}`).join(', ') || 'none';
  return { ms: performance.now() - t0, notYet };
}

async function restart(): Promise<{ listening: number; loaded: number; cpuMs: number; notYet: string }> {
  await gw.stop();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  gw = await startGateway({ config, database: t.db.config, log: silentLogger() });
  const listening = performance.now() - t0;
  const { ms, notYet } = await untilLoaded(gw.url, t0);
  const cpu = process.cpuUsage(cpu0);
  return { listening, loaded: ms, cpuMs: (cpu.user + cpu.system) / 1000, notYet };
}

try {
  const first = await restart();
  console.log(`first start (every job planned, every slot written): every queue loaded ${fmt(first.loaded / 1000, 2)} s after the start (listening after ${fmt(first.listening / 1000, 2)} s; summaries answered before their queue had loaded: ${first.notYet}); gateway CPU ${fmt(first.cpuMs / 1000, 1)} s`);
  const again = await restart();
  const waiting = await waitingNow();
  // what the start left in flight (slot writes, their arrays) settles before the heap is read
  await sleep(3_000);
  const full = heapUsed();
  console.log(`restart with ${waiting} waiting jobs: every queue loaded ${fmt(again.loaded / 1000, 2)} s after the start (listening after ${fmt(again.listening / 1000, 2)} s; summaries answered before their queue had loaded: ${again.notYet}); gateway CPU ${fmt(again.cpuMs / 1000, 1)} s (${fmt((again.cpuMs * 1000) / waiting, 1)} µs a waiting job)  (goal ≤ 30 s)`);
  const perJob = (full - base) / waiting;
  const limit = v8.getHeapStatistics().heap_size_limit;
  console.log(`heap per waiting job: ${fmt(perJob, 0)} B (after a full collection; ${fmt((full - base) / MiB, 0)} MiB for ${waiting})`);
  console.log(`  V8's heap limit here: ${fmt(limit / MiB, 0)} MiB, room for about ${fmt(limit / perJob / 1e6, 1)} million waiting jobs on one node (node's --max-old-space-size raises it)`);
} finally {
  await gw.stop();
  await t.db.close();
  await rm(t.dataDir, { recursive: true, force: true });
}
process.exit(0);
