/**
 * Webhook delivery benchmark: signed events delivered per second to a local keep-alive receiver, and the
 * latency from the enqueueing commit to receipt.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/webhooks.ts
 *   (without TEST_DATABASE_URL: the embedded PostgreSQL)
 *
 * The receiver runs in a worker thread (its CPU is not the sender's) and checks every delivery with the
 * verification snippet of docs/webhooks.md. Phases:
 *   1. throughput, one instance: a backlog of events drained in order by one sender;
 *   2. throughput, several instances: one sender each, in parallel (order is per instance);
 *   3. latency: events committed one transaction each at a steady rate, sender woken after each commit.
 */
import { Worker } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createTestDb, type TestDb } from '../test/helpers/db.js';
import { systemClock } from '../src/clock.js';
import { withTransaction } from '../src/store/pool.js';
import { putWebhook } from '../src/webhooks/config.js';
import { enqueueEvent, enqueueEvents } from '../src/webhooks/outbox.js';
import { WebhookSender } from '../src/webhooks/deliver.js';
import { createWebhookTransport, type WebhookTransport } from '../src/webhooks/transport.js';
import type { EventOf } from '../src/webhooks/events.js';

const SECRET = 'whsec_bench_0123456789abcdef';
const THROUGHPUT_EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const PARALLEL_INSTANCES = Number(process.env.BENCH_INSTANCES ?? 8);
const LATENCY_RATE = Number(process.env.BENCH_RATE ?? 1_000); // events per second
const LATENCY_SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

const wallNow = () => performance.timeOrigin + performance.now();

// The receiver: keep-alive HTTP server in a worker, verifying every request with the documented snippet.
const RECEIVER = `
const http = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
(async () => {
  const { verifyWebhook } = await import(workerData.snippetUrl);
  const receivedAt = new Map();
  let bad = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const t = performance.timeOrigin + performance.now();
      const check = verifyWebhook({ rawBody: Buffer.concat(chunks), headers: req.headers, secret: workerData.secret });
      if (!check.ok) bad++;
      receivedAt.set(req.headers['x-event-id'], t);
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => parentPort.postMessage({ type: 'listening', port: server.address().port }));
  parentPort.on('message', (m) => {
    if (m.type === 'collect') {
      parentPort.postMessage({ type: 'collected', received: [...receivedAt], bad });
      receivedAt.clear();
      bad = 0;
    } else if (m.type === 'close') {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  });
})();
`;

interface Collected {
  received: Array<[string, number]>;
  bad: number;
}

class ReceiverThread {
  private constructor(private readonly worker: Worker, readonly url: string) {}

  static async start(snippetUrl: string): Promise<ReceiverThread> {
    const worker = new Worker(RECEIVER, { eval: true, workerData: { snippetUrl, secret: SECRET } });
    const port = await new Promise<number>((resolve, reject) => {
      worker.once('error', reject);
      worker.once('message', (m: { port: number }) => resolve(m.port));
    });
    return new ReceiverThread(worker, `http://127.0.0.1:${port}/hook`);
  }

  collect(): Promise<Collected> {
    return new Promise((resolve) => {
      this.worker.once('message', (m: Collected) => resolve(m));
      this.worker.postMessage({ type: 'collect' });
    });
  }

  async close(): Promise<void> {
    const exited = new Promise((resolve) => this.worker.once('exit', resolve));
    this.worker.postMessage({ type: 'close' });
    await exited;
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function event(i: number): EventOf {
  return {
    event: 'message.sent',
    data: { jobId: `wq_${i.toString(16).padStart(24, '0')}`, messageId: `true_4917000000${i}@c.us_3EB0${i}`, deliveryConfidence: 'confirmed', dispatchedAt: new Date().toISOString() },
  };
}

async function setupInstances(db: TestDb, n: number, url: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    await db.pool.query(`INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')`, [id, `bench-${id.slice(0, 8)}`]);
    await putWebhook(db.pool, id, { url, secret: SECRET, events: ['*'], allowPrivate: true });
    ids.push(id);
  }
  return ids;
}

async function throughput(db: TestDb, rcv: ReceiverThread, transport: WebhookTransport, instances: number, total: number) {
  const ids = await setupInstances(db, instances, rcv.url);
  const per = Math.ceil(total / instances);
  for (const id of ids) {
    for (let i = 0; i < per; i += 500) {
      const chunk = Array.from({ length: Math.min(500, per - i) }, (_, k) => event(i + k));
      await enqueueEvents(db.pool, id, chunk, Date.now());
    }
  }
  const senders = ids.map((instanceId) => new WebhookSender({ instanceId, db: db.pool, clock: systemClock, transport }));
  const t0 = performance.now();
  for (const s of senders) s.start();
  await Promise.all(senders.map((s) => s.idle()));
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(senders.map((s) => s.stop()));
  const got = await rcv.collect();
  const delivered = senders.reduce((a, s) => a + s.stats.delivered, 0);
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM outbox WHERE instance_id = ANY ($1::uuid[]) AND state = 'delivered'`,
    [ids],
  );
  return { instances, events: per * instances, delivered, received: got.received.length, bad: got.bad, persisted: rows[0]?.n ?? 0, seconds, perSecond: delivered / seconds };
}

async function latency(db: TestDb, rcv: ReceiverThread, transport: WebhookTransport, instances: number) {
  const ids = await setupInstances(db, instances, rcv.url);
  const senders = new Map(ids.map((instanceId) => [instanceId, new WebhookSender({ instanceId, db: db.pool, clock: systemClock, transport })]));
  for (const s of senders.values()) s.start();
  await Promise.all([...senders.values()].map((s) => s.idle()));

  const total = LATENCY_RATE * LATENCY_SECONDS;
  const committedAt = new Map<string, number>();
  const start = wallNow();
  let next = 0;
  // A few producers, each committing one event per transaction, paced to LATENCY_RATE overall.
  const producer = async () => {
    for (;;) {
      const i = next++;
      if (i >= total) return;
      const due = start + (i * 1000) / LATENCY_RATE;
      const wait = due - wallNow();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const instanceId = ids[i % ids.length] as string;
      const res = await withTransaction(db.pool, (c) => enqueueEvent(c, { instanceId, now: Date.now(), ...event(i) }));
      if (!res) throw new Error('event not enqueued');
      committedAt.set(res.eventId, wallNow());
      senders.get(instanceId)?.notify();
    }
  };
  await Promise.all(Array.from({ length: 4 }, producer));
  const produceSeconds = (wallNow() - start) / 1000;
  await Promise.all([...senders.values()].map((s) => s.idle()));
  await Promise.all([...senders.values()].map((s) => s.stop()));
  const got = await rcv.collect();
  const lat = got.received.flatMap(([id, t]) => {
    const c = committedAt.get(id);
    return c === undefined ? [] : [t - c];
  });
  lat.sort((a, b) => a - b);
  return { instances, events: total, received: lat.length, bad: got.bad, rate: total / produceSeconds, p50: percentile(lat, 50), p99: percentile(lat, 99), max: lat[lat.length - 1] ?? NaN };
}

async function main() {
  const doc = await readFile(path.resolve('docs/webhooks.md'), 'utf8');
  const code = /<!-- verify-snippet[^>]*-->\s*```js\n([\s\S]*?)```/.exec(doc)?.[1];
  if (!code) throw new Error('docs/webhooks.md: verify snippet not found');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-bench-'));
  const snippet = path.join(dir, 'verify.mjs');
  await writeFile(snippet, code);

  const db = await createTestDb('bench_webhooks');
  const rcv = await ReceiverThread.start(pathToFileURL(snippet).href);
  const transport = createWebhookTransport();
  try {
    console.log(`webhook delivery benchmark: node ${process.version}, PostgreSQL ${db.url ? 'server' : 'embedded (PGlite)'}`);
    console.log('receiver: keep-alive HTTP on loopback, worker thread, every request verified (documented snippet)');
    console.log(`host: ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} (figures scale with a quiet machine)\n`);

    for (const n of [1, PARALLEL_INSTANCES]) {
      const r = await throughput(db, rcv, transport, n, THROUGHPUT_EVENTS);
      console.log(
        `throughput  ${String(n).padStart(2)} instance(s): ${fmt(r.delivered)} of ${fmt(r.events)} events delivered in ${fmt(r.seconds, 2)} s ` +
          `= ${fmt(r.perSecond)} events/s  (received ${fmt(r.received)}, persisted delivered ${fmt(r.persisted)}, bad signatures ${r.bad})`,
      );
    }
    for (const n of [1, 4]) {
      const r = await latency(db, rcv, transport, n);
      console.log(
        `latency     ${String(n).padStart(2)} instance(s): ${fmt(r.events)} events, one commit each, at ${fmt(r.rate)} events/s: ` +
          `commit → receipt p50 ${fmt(r.p50, 2)} ms, p99 ${fmt(r.p99, 2)} ms, max ${fmt(r.max, 2)} ms  (received ${fmt(r.received)}, bad signatures ${r.bad})`,
      );
    }
  } catch (err) {
    // Printed before cleanup: a cleanup that waits on a wedged connection must not hide the cause.
    console.error('benchmark failed:', err);
    process.exitCode = 1;
  } finally {
    transport.close();
    await rcv.close();
    await db.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
