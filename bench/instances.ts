/**
 * Many sandbox instances in one gateway process. Goals (issue 18): 10,000 at ≤ 256 KiB each and ≤ 2 % of a core
 * idle, created at ≥ 500/s, all connected again ≤ 30 s after a restart.
 *
 * 1. A gateway on a fresh database with the in-process sandbox network; its memory after GC is the baseline.
 * 2. N instances created through the operator API (POST /admin/v1/instances) by a client process with
 *    BENCH_CONCURRENCY requests in flight: instances per second, and the gateway's CPU per creation.
 * 3. Each linked on the sandbox network (a phone scanning its QR), in turns of 50, until all N are connected.
 * 4. Once nothing is in flight: memory after GC minus the baseline, divided by N (RSS and heapUsed).
 * 5. Idle: the process's CPU time over BENCH_IDLE_MS with nothing to do, as % of one core, once V8 has settled:
 *    after a burst of allocation (the creations, the links, step 4's forced collections) V8's memory reducer
 *    runs up to three full collections, once it finds the allocation rate low (20-45 s after the burst here), to
 *    give memory back; at ten thousand instances each costs one to two seconds of CPU on its marking threads, a
 *    one-off after the burst, not idling. The bench waits until the reducer has run and no collection came for
 *    BENCH_SETTLE_MS since (at most two minutes) and prints what that settling cost; a collection inside the idle
 *    window still counts in it.
 * 6. The gateway stops and starts again on the same database and data directory: time from the start until all
 *    N are connected, its CPU, and how an operator read (GET /admin/v1/instances/:id) answers meanwhile.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/instances.ts
 *   BENCH_INSTANCES=10000 BENCH_CONCURRENCY=32 BENCH_IDLE_MS=10000 BENCH_SETTLE_MS=20000
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { PerformanceObserver, constants as perfConstants, type NodeGCPerformanceDetail } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config.js';
import { startGateway, type Gateway } from '../src/gateway.js';
import { silentLogger } from '../src/log.js';
import { listInstances } from '../src/store/instances.js';
import { createTestDb } from '../test/helpers/db.js';
import { ADMIN_TOKEN } from '../test/helpers/gateway.js';
import { postMany } from './lib/post-many.js';
import { fmt, runLoad } from './lib/load.js';
import { untilStoreQuiet } from './lib/quiet.js';
import { exposedGc } from './lib/expose-gc.js';

// memory after GC needs --expose-gc: run again with it (npm run bench starts benchmarks without), and with npm
// start's V8 flags, as every benchmark runs the gateway (it ran without them: its young generation V8's default)
const gc = exposedGc(fileURLToPath(import.meta.url));
if (!process.env.TEST_DATABASE_URL) {
  console.error('bench/instances.ts needs TEST_DATABASE_URL (a PostgreSQL server)');
  process.exit(2);
}
const N = Number(process.env.BENCH_INSTANCES ?? 10_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 10_000);
/** V8 has settled once no collection came for this long (its memory reducer waits 8 s or more between its collections) */
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 20_000);
const SETTLE_LIMIT_MS = 120_000;
const KiB = 1024;
const MiB = 2 ** 20;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cpuMs = (since: NodeJS.CpuUsage) => {
  const c = process.cpuUsage(since);
  return (c.user + c.system) / 1000;
};

function memory(): { rss: number; heap: number } {
  // two full collections (the second takes what the first's finalizers let go); each stops the process for about
  // a second at ten thousand instances, so not more
  for (let i = 0; i < 2; i++) gc();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed };
}

/** Until all N instances are connected (or `limitMs` passed): the time it took since `t0`, or null. */
async function untilConnected(gw: Gateway, t0: number, limitMs: number): Promise<number | null> {
  while (performance.now() - t0 < limitMs) {
    if (gw.actors.health().online >= N) return performance.now() - t0;
    await sleep(50);
  }
  return null;
}

/**
 * The process's CPU time over `ms` of nothing to do, as % of one core, and the collections meanwhile (their
 * count and pause time): a heap of ten thousand instances that V8 shrinks after the work before it shows here.
 */
async function idleCpu(ms: number): Promise<{ pct: number; gcs: number; gcMs: number }> {
  let gcs = 0;
  let gcMs = 0;
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcs += 1;
      gcMs += e.duration;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  await sleep(ms);
  const pct = (cpuMs(cpu0) / (performance.now() - wall0)) * 100;
  observer.disconnect();
  return { pct, gcs, gcMs };
}

/**
 * The collections of V8's memory reducer: it marks the whole heap with `kGCCallbackFlagCollectAllExternalMemory`
 * (node: NODE_PERFORMANCE_GC_FLAGS_ALL_EXTERNAL_MEMORY, seen only on them here, with `--trace-gc` naming each
 * "Mark-Compact (reduce)"), no other collection of an idle gateway does.
 */
const isReducer = (d: NodeGCPerformanceDetail) =>
  d.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR && (d.flags & perfConstants.NODE_PERFORMANCE_GC_FLAGS_ALL_EXTERNAL_MEMORY) !== 0;

/**
 * Until V8 has settled after a burst (or `limitMs` passed): its memory reducer has run (`reducer`) and no
 * collection came for `quietMs` since. The reducer starts when it finds the allocation rate low, which after ten
 * thousand instances came 20-45 s after the burst here, then makes up to three full collections a second or more
 * apart; a quiet spell before it came is not settled (a run that waited only for quiet measured its 3-4 s of CPU
 * as idle: 42.8 % of a core). Answers how long that took, the collections and the process's CPU time meanwhile
 * (the reducer's marking runs on V8's helper threads; their CPU is the process's).
 */
async function untilGcSettled(quietMs: number, limitMs: number, reducer = true): Promise<{ ms: number; gcs: number; reducerGcs: number; cpuMs: number; settled: boolean }> {
  let gcs = 0;
  let reducerGcs = 0;
  let last = performance.now();
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcs += 1;
      if (isReducer((e as typeof e & { detail: NodeGCPerformanceDetail }).detail)) reducerGcs += 1;
    }
    last = performance.now();
  });
  observer.observe({ entryTypes: ['gc'] });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const settled = () => performance.now() - last >= quietMs && (!reducer || reducerGcs > 0);
  while (!settled() && performance.now() - t0 < limitMs) await sleep(250);
  observer.disconnect();
  return { ms: performance.now() - t0, gcs, reducerGcs, cpuMs: cpuMs(cpu0), settled: settled() };
}

/** GET an instance through the operator API every 200 ms until `stop()`: the latencies seen. */
function probe(url: string, id: string): { stop(): Promise<number[]> } {
  const seen: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      const ok = await fetch(`${url}/admin/v1/instances/${id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then((r) => r.ok, () => false);
      if (ok) seen.push(performance.now() - t0);
      await sleep(200);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return seen.sort((a, b) => a - b);
    },
  };
}

async function measure(start: () => Promise<Gateway>, db: Awaited<ReturnType<typeof createTestDb>>): Promise<void> {
  let gw = await start();
  try {
    // ---- 1. baseline
    await sleep(1_000);
    const empty = memory();
    // the empty gateway's reducer (if any) is not waited for: its heap is small, and none came in 20 s here
    await untilGcSettled(SETTLE_MS, SETTLE_LIMIT_MS, false);
    const emptyIdle = await idleCpu(IDLE_MS);

    // ---- 2. creation through the operator API
    const cpuCreate = process.cpuUsage();
    const created = await postMany({
      url: `${gw.url}/admin/v1/instances`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: '{"name":"bench-{{n}}","driver":"sandbox"}',
      total: N,
      concurrency: CONCURRENCY,
    });
    const createCpu = cpuMs(cpuCreate);
    console.log(`created ${created.ok} instances in ${fmt(created.elapsedMs / 1000, 2)} s (${CONCURRENCY} concurrent requests), errors ${created.errors}${created.firstError ? ` (first: ${created.firstError})` : ''}`);
    console.log(`  request latency p50 ${fmt(created.p50, 1)} ms  p99 ${fmt(created.p99, 1)} ms; gateway CPU ${fmt(createCpu / N, 2)} ms per instance`);
    console.log(`creation rate: ${fmt(created.ok / (created.elapsedMs / 1000), 0)} instances/s  (goal ≥ 500)`);

    // ---- 3. link every instance on the sandbox network, in turns of 50 as scans arriving one by one would
    const network = gw.sandbox?.network;
    if (!network) throw new Error('the bench needs the in-process sandbox network');
    const ids = (await listInstances(db.pool)).map((i) => i.id);
    const tLink = performance.now();
    for (let i = 0; i < ids.length; i++) {
      network.link(ids[i] as string, { phoneNumber: `4915${String(i).padStart(8, '0')}` });
      if (i % 50 === 49) await new Promise((r) => setImmediate(r));
    }
    const linked = await untilConnected(gw, tLink, 600_000);
    console.log(`linked and connected ${ids.length} instances in ${linked === null ? 'more than 600 s' : `${fmt(linked / 1000, 2)} s`}`);

    // ---- 4. memory per instance, once what the links set off (events and their writes) is done
    await untilStoreQuiet(gw.pool, 3_000, 120_000, 'go on');
    const full = memory();
    console.log(`memory after GC: empty gateway rss ${fmt(empty.rss / MiB, 0)} MiB heap ${fmt(empty.heap / MiB, 0)} MiB; with ${N} instances rss ${fmt(full.rss / MiB, 0)} MiB heap ${fmt(full.heap / MiB, 0)} MiB`);
    console.log(`memory per instance: rss ${fmt((full.rss - empty.rss) / N / KiB, 1)} KiB  heapUsed ${fmt((full.heap - empty.heap) / N / KiB, 1)} KiB  (goal ≤ 256 KiB)`);

    // ---- 5. idle CPU
    await untilStoreQuiet(gw.pool, 3_000, 60_000, 'go on');
    const settling = await untilGcSettled(SETTLE_MS, SETTLE_LIMIT_MS);
    console.log(`V8 settling after the burst: ${settling.gcs} collections (${settling.reducerGcs} of the memory reducer), ${fmt(settling.cpuMs / 1000, 2)} s of CPU over ${fmt(settling.ms / 1000, 1)} s${settling.settled ? ` (then none for ${SETTLE_MS / 1000} s)` : settling.reducerGcs === 0 ? ` (the memory reducer had not run after ${SETTLE_LIMIT_MS / 1000} s: the idle figure may include it)` : ` (still collecting after ${SETTLE_LIMIT_MS / 1000} s: the idle figure includes it)`}`);
    const idle = await idleCpu(IDLE_MS);
    const still = gw.actors.health().online;
    console.log(`idle CPU with ${N} connected instances: ${fmt(idle.pct, 2)} % of one core over ${IDLE_MS / 1000} s (the empty gateway: ${fmt(emptyIdle.pct, 2)} %; connected at the end: ${still})  (goal ≤ 2 %)`);
    console.log(`  collections meanwhile: ${idle.gcs}, ${fmt(idle.gcMs, 0)} ms of pauses (the empty gateway: ${emptyIdle.gcs}, ${fmt(emptyIdle.gcMs, 0)} ms)`);

    // ---- 5b. GET /health (no authentication: anyone may ask it as often as they like) with every instance there
    const cpuHealth = process.cpuUsage();
    const probed = await runLoad({ url: `${gw.url}/health`, concurrency: 8, durationMs: 3_000, client: 'raw' });
    const healthUs = (cpuMs(cpuHealth) * 1000) / Math.max(1, probed.requests);
    console.log(`GET /health with ${N} instances: ${fmt(probed.rps, 0)} req/s  p99 ${fmt(probed.p99, 2)} ms, gateway CPU ${fmt(healthUs, 0)} µs a request, errors ${probed.errors}`);

    // ---- 6. restart on the same database and data directory
    const tStop = performance.now();
    await gw.stop();
    console.log(`stopped (every instance handed over) in ${fmt((performance.now() - tStop) / 1000, 2)} s`);
    const cpuStart = process.cpuUsage();
    const tStart = performance.now();
    gw = await start();
    const listening = performance.now() - tStart;
    const reads = probe(gw.url, ids[0] as string);
    const ready = await untilConnected(gw, tStart, 300_000);
    const startCpu = cpuMs(cpuStart);
    const lat = await reads.stop();
    const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? 0;
    console.log(`restart: listening after ${fmt(listening / 1000, 2)} s; gateway CPU ${fmt(startCpu / 1000, 1)} s (${fmt(startCpu / N, 2)} ms per instance)`);
    console.log(`  an operator read meanwhile: p50 ${fmt(pct(0.5), 0)} ms  max ${fmt(lat.at(-1) ?? 0, 0)} ms (${lat.length} reads)`);
    console.log(`start-up until all ${N} connected: ${ready === null ? 'more than 300 s' : `${fmt(ready / 1000, 2)} s`}  (goal ≤ 30 s)`);
  } finally {
    await gw.stop();
  }
}

const db = await createTestDb('bench_instances');
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-bench-instances-'));
try {
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN, DEMO_INSTANCE: 'false', LOG_LEVEL: 'fatal' });
  await measure(() => startGateway({ config, database: db.config, log: silentLogger() }), db);
} finally {
  await db.close();
  await rm(dataDir, { recursive: true, force: true });
}
