/**
 * Webhook delivery end to end: real PostgreSQL outbox, the per-instance sender, real HTTP to a receiver on
 * loopback. Time is a SimulatedClock: retries and timeouts happen when the test moves the clock.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Writable } from 'node:stream';
import type { QueryConfig } from 'pg';
import { createActor } from 'xstate';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { waitFor } from '../helpers/gateway.js';
import { simulatedClock } from '../../src/clock.js';
import { createLogger } from '../../src/log.js';
import { withTransaction } from '../../src/store/pool.js';
import { deleteWebhook, putWebhook } from '../../src/webhooks/config.js';
import { settleForChange } from '../../src/webhooks/pending.js';
import { enqueueEvent, enqueueEvents } from '../../src/webhooks/outbox.js';
import { listDeliveries } from '../../src/webhooks/deliveries.js';
import { WebhookSender, type WebhookSenderOptions } from '../../src/webhooks/deliver.js';
import { createWebhookTransport, DRAIN_MS, type WebhookTransport } from '../../src/webhooks/transport.js';
import { verifyWebhook, type VerifyInput, type VerifyResult } from '../../src/webhooks/sign.js';
import { createWebhookSenders } from '../../src/actors/webhook-sender.js';
import type { EventOf, Subscription } from '../../src/webhooks/events.js';

// ---- a receiver on loopback --------------------------------------------------------------------------

type Action = number | 'reset' | 'hang' | 'stall' | 'flood';
interface Receipt {
  eventId: string;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  answered: Action;
}
interface Receiver {
  url: string;
  receipts: Receipt[];
  respond: (r: { eventId: string; n: number; seen: number }) => Action;
  /** resolves at the next request that arrives */
  nextRequest(): Promise<void>;
  /** connections the receiver holds open now */
  openSockets(): number;
  delivered(): string[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const receipts: Receipt[] = [];
  let waiters: Array<() => void> = [];
  const r: Receiver = {
    url: '',
    receipts,
    respond: () => 200,
    nextRequest: () => new Promise((resolve) => waiters.push(resolve)),
    openSockets: () => open.size,
    delivered: () => receipts.filter((x) => typeof x.answered === 'number' && x.answered < 300).map((x) => x.eventId),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const eventId = String(req.headers['x-event-id']);
      const action = r.respond({ eventId, n: receipts.length + 1, seen: receipts.filter((x) => x.eventId === eventId).length });
      receipts.push({ eventId, headers: req.headers, raw: Buffer.concat(chunks), answered: action });
      const w = waiters;
      waiters = [];
      for (const f of w) f();
      if (action === 'reset') req.socket.destroy();
      // 200 and a body that never ends
      else if (action === 'stall') res.writeHead(200, { 'content-length': '1000000' }).write('x');
      // 200 and a body without end, as fast as the connection takes it
      else if (action === 'flood') {
        res.writeHead(200);
        const chunk = Buffer.alloc(16 * 1024, 0x78);
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
          if (!res.destroyed) res.once('drain', pump);
        };
        pump();
      } else if (action !== 'hang') res.writeHead(action).end('ok');
    });
  });
  const open = new Set<import('node:net').Socket>();
  server.on('connection', (socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return r;
}

// ---- fixtures ----------------------------------------------------------------------------------------

const SECRET = 'whsec_integration_0123456789';
let db: TestDb;
let transport: WebhookTransport;
let docSnippet: (input: VerifyInput) => VerifyResult;
let snippetDir = '';
const receivers: Receiver[] = [];

before(async () => {
  db = await createTestDb('webhook_delivery');
  transport = createWebhookTransport();
  const doc = await readFile(path.resolve('docs/webhooks.md'), 'utf8');
  const code = /<!-- verify-snippet[^>]*-->\s*```js\n([\s\S]*?)```/.exec(doc)?.[1];
  assert.ok(code, 'docs/webhooks.md carries the verify snippet');
  snippetDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-snippet-'));
  const file = path.join(snippetDir, 'verify.mjs');
  await writeFile(file, code);
  docSnippet = ((await import(pathToFileURL(file).href)) as { verifyWebhook: typeof docSnippet }).verifyWebhook;
});

after(async () => {
  transport.close();
  await Promise.all(receivers.map((r) => r.close()));
  await db.close();
  await rm(snippetDir, { recursive: true, force: true });
});

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

async function instance(url: string | null, events: Subscription[] = ['*'], opts: { allowPrivate?: boolean; secret?: string } = {}): Promise<string> {
  const id = randomUUID();
  await db.pool.query(`INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')`, [id, `wh-${id.slice(0, 8)}`]);
  if (url) {
    await putWebhook(db.pool, id, {
      url,
      secret: opts.secret ?? SECRET,
      events,
      allowPrivate: opts.allowPrivate ?? true,
    });
  }
  return id;
}

function sender(instanceId: string, clock: ReturnType<typeof simulatedClock>, extra: Partial<WebhookSenderOptions> = {}): WebhookSender {
  return new WebhookSender({ instanceId, db: db.pool, clock, transport, ...extra });
}

const enqueue = (instanceId: string, clock: { now(): number }, ev: EventOf) =>
  enqueueEvent(db.pool, { instanceId, now: clock.now(), ...ev });

async function row(eventId: string) {
  const { rows } = await db.pool.query<{ state: string; attempts: number; last_status: number | null; last_error: string | null; body: string }>(
    'SELECT state, attempts, last_status, last_error, body FROM outbox WHERE event_id = $1',
    [eventId],
  );
  assert.ok(rows[0], `outbox row ${eventId}`);
  return rows[0];
}

// ---- tests -------------------------------------------------------------------------------------------

describe('webhook delivery', () => {
  test('a delivery carries the stored body byte for byte, the seven headers, and both signatures verify with the documented snippet', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    const id = await instance(rcv.url);
    const events: EventOf[] = [
      { event: 'test', data: { message: 'héllo ✓ "quoted"' } },
      { event: 'qr', data: { qr: '2@abc,def==' } },
      { event: 'message.sent', data: { jobId: 'wq_1', messageId: 'm1', deliveryConfidence: 'confirmed', dispatchedAt: '2026-01-05T10:00:00.000Z' } },
    ];
    const ids: string[] = [];
    for (const e of events) ids.push((await enqueue(id, clock, e))!.eventId);
    clock.increment(250); // the attempts are signed later than the events happened
    const s = sender(id, clock);
    s.start();
    await s.idle();
    await s.stop();

    assert.deepEqual(rcv.delivered(), ids);
    for (const [i, rec] of rcv.receipts.entries()) {
      const stored = await row(ids[i]!);
      assert.equal(stored.state, 'delivered');
      assert.ok(rec.raw.equals(Buffer.from(stored.body, 'utf8')), 'the exact stored bytes were sent');
      const env = JSON.parse(rec.raw.toString('utf8')) as Record<string, unknown>;
      assert.deepEqual(Object.keys(env), ['v', 'eventId', 'event', 'instanceId', 'timestamp', 'data']);
      assert.deepEqual(env.data, events[i]!.data);
      const h = rec.headers;
      assert.equal(h['content-type'], 'application/json');
      assert.equal(h['x-instance-id'], id);
      assert.equal(h['x-event-type'], events[i]!.event);
      assert.equal(h['x-event-id'], ids[i]);
      assert.equal(env.eventId, ids[i]);
      assert.equal(h['x-event-version'], '2');
      assert.equal(h['x-webhook-timestamp'], String(env.timestamp));
      assert.equal(env.timestamp, clock.now() - 250);
      assert.match(String(h['x-webhook-signature']), /^sha256=[0-9a-f]{64}$/);
      assert.equal(String(h['x-webhook-signature-v2']), `t=${clock.now()},v1=${/v1=([0-9a-f]{64})$/.exec(String(h['x-webhook-signature-v2']))?.[1]}`);

      const input = { rawBody: rec.raw, headers: h, secret: SECRET, now: clock.now() };
      assert.deepEqual(docSnippet(input), { ok: true, timestamp: clock.now() });
      assert.deepEqual(verifyWebhook(input), { ok: true, timestamp: clock.now() });
      assert.deepEqual(docSnippet({ ...input, secret: 'not-the-secret-000' }), { ok: false, reason: 'bad X-Webhook-Signature' });
      const tampered = Buffer.from(rec.raw.toString('utf8').replace(ids[i]!, 'ev_forged'));
      assert.equal(docSnippet({ ...input, rawBody: tampered }).ok, false);
    }
  });

  test('a receiver down for two attempts gets the third, after 1 s and 5 s, with the same eventId and body', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    rcv.respond = ({ seen }) => (seen === 0 ? 'reset' : seen === 1 ? 503 : 200);
    const id = await instance(rcv.url);
    const { eventId } = (await enqueue(id, clock, { event: 'message', data: { id: 'm1', body: 'hi' } }))!;
    const t0 = clock.now();
    const s = sender(id, clock);
    s.start();
    await s.idle();
    assert.equal(rcv.receipts.length, 1);
    assert.equal((await row(eventId)).state, 'pending');

    clock.increment(999);
    await s.idle();
    assert.equal(rcv.receipts.length, 1, 'no retry before 1 s');
    clock.increment(1);
    await s.idle();
    assert.equal(rcv.receipts.length, 2);

    clock.increment(4_999);
    await s.idle();
    assert.equal(rcv.receipts.length, 2, 'no third attempt before 5 s more');
    clock.increment(1);
    await s.idle();
    await s.stop();

    assert.deepEqual(rcv.receipts.map((r) => r.eventId), [eventId, eventId, eventId]);
    assert.ok(rcv.receipts.every((r) => r.raw.equals(rcv.receipts[0]!.raw)), 'same bytes every attempt');
    const final = await row(eventId);
    assert.deepEqual([final.state, final.attempts, final.last_status, final.last_error], ['delivered', 3, 200, null]);

    const [item] = (await listDeliveries(db.pool, id, { limit: 10 })).items;
    assert.ok(item);
    assert.deepEqual(item.attemptLog.map((a) => [a.attempt, Date.parse(a.at) - t0, a.status]), [
      [1, 0, null],
      [2, 1_000, 503],
      [3, 6_000, 200],
    ]);
    assert.match(item.attemptLog[0]!.error ?? '', /ECONNRESET|socket hang up/);
    assert.equal(item.attemptLog[1]!.error, 'HTTP 503');
    assert.equal(item.deliveredAt, new Date(t0 + 6_000).toISOString());
  });

  test('a normal event that fails three times is failed, and the events behind it then go out', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    rcv.respond = ({ eventId }) => (eventId === first ? 500 : 200);
    const id = await instance(rcv.url);
    const first = (await enqueue(id, clock, { event: 'test', data: { message: '1' } }))!.eventId;
    const second = (await enqueue(id, clock, { event: 'test', data: { message: '2' } }))!.eventId;
    const s = sender(id, clock);
    s.start();
    await s.idle();
    clock.increment(1_000);
    await s.idle();
    assert.deepEqual(rcv.receipts.map((r) => r.eventId), [first, first], 'the second waits behind the first');
    clock.increment(5_000);
    await s.idle();
    await s.stop();
    assert.deepEqual(rcv.receipts.map((r) => r.eventId), [first, first, first, second]);
    assert.deepEqual([(await row(first)).state, (await row(first)).attempts, (await row(first)).last_error], ['failed', 3, 'HTTP 500']);
    assert.equal((await row(second)).state, 'delivered');
  });

  test('a high-frequency event is tried once', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    rcv.respond = ({ eventId }) => (eventId === ack ? 500 : 200);
    const id = await instance(rcv.url);
    const ack = (await enqueue(id, clock, { event: 'message_ack', data: { id: 'm1', chatId: 'c', ack: 3, ackName: 'READ' } }))!.eventId;
    const next = (await enqueue(id, clock, { event: 'message', data: { id: 'm2' } }))!.eventId;
    const s = sender(id, clock);
    s.start();
    await s.idle();
    clock.increment(60_000);
    await s.idle();
    await s.stop();
    assert.deepEqual(rcv.receipts.map((r) => r.eventId), [ack, next]);
    const a = await row(ack);
    assert.deepEqual([a.state, a.attempts, a.last_status], ['failed', 1, 500]);
  });

  test('a restart with pending deliveries delivers each of them exactly once, in order', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    let receiverUp = false;
    rcv.respond = () => (receiverUp ? 200 : 502);
    const id = await instance(rcv.url);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await enqueue(id, clock, { event: 'test', data: { message: `m${i}` } }))!.eventId);

    const a = sender(id, clock);
    a.start();
    await a.idle();
    await a.stop(); // the gateway stops: ids[0] has had one attempt and waits for its retry; the rest never went out
    assert.deepEqual(rcv.receipts.map((r) => r.eventId), [ids[0]]);
    clock.increment(10_000);
    await a.idle();
    assert.equal(rcv.receipts.length, 1, 'a stopped sender sends nothing');

    receiverUp = true;
    const b = sender(id, clock, { transport: createWebhookTransport() }); // a new process: new connections
    b.start();
    await b.idle();
    clock.increment(10_000);
    await b.idle();
    await b.stop();

    assert.deepEqual(rcv.delivered(), ids, 'each delivered once, in order');
    for (const e of ids) assert.equal((await row(e)).state, 'delivered');
    assert.equal((await row(ids[0]!)).attempts, 2, 'the retry count survived the restart');
  });

  test('order is kept per instance across batches and retries; instances do not wait for each other', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    let failOnce: string | null = null;
    rcv.respond = ({ eventId, seen }) => (eventId === failOnce && seen === 0 ? 500 : 200);
    const x = await instance(rcv.url);
    const y = await instance(rcv.url);
    const xs: string[] = [];
    const ys: string[] = [];
    // One statement for a batch of events keeps their order too.
    const batch = await enqueueEvents(db.pool, x, Array.from({ length: 20 }, (_, i): EventOf => ({ event: 'test', data: { message: `x${i}` } })), clock.now());
    xs.push(...batch.map((b) => b!.eventId));
    for (let i = 0; i < 10; i++) ys.push((await enqueue(y, clock, { event: 'test', data: { message: `y${i}` } }))!.eventId);
    for (let i = 20; i < 30; i++) xs.push((await enqueue(x, clock, { event: 'test', data: { message: `x${i}` } }))!.eventId);
    failOnce = xs[12]!;

    const sx = sender(x, clock, { batchSize: 7 });
    const sy = sender(y, clock, { batchSize: 7 });
    sx.start();
    sy.start();
    await Promise.all([sx.idle(), sy.idle()]);
    const forX = () => rcv.delivered().filter((e) => xs.includes(e));
    assert.deepEqual(forX(), xs.slice(0, 12), 'x stops at the failed event');
    assert.deepEqual(rcv.delivered().filter((e) => ys.includes(e)), ys, 'y is not held up by x');
    clock.increment(1_000);
    await sx.idle();
    await Promise.all([sx.stop(), sy.stop()]);
    assert.deepEqual(forX(), xs);
    const bodies = rcv.receipts.filter((r) => xs.includes(r.eventId) && r.answered === 200).map((r) => (JSON.parse(r.raw.toString()) as { data: { message: string } }).data.message);
    assert.deepEqual(bodies, xs.map((_, i) => `x${i}`));
  });

  test('an event committed with its state change is delivered; one rolled back never exists', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    const id = await instance(rcv.url);
    await assert.rejects(
      withTransaction(db.pool, async (c) => {
        await enqueueEvent(c, { instanceId: id, now: clock.now(), event: 'message.failed', data: { jobId: 'wq_x', resultCode: 'X', errorMessage: 'e' } });
        throw new Error('the job transition failed');
      }),
    );
    const kept = await withTransaction(db.pool, (c) =>
      enqueueEvent(c, { instanceId: id, now: clock.now(), event: 'message.cancelled', data: { jobId: 'wq_y', reason: 'operator' } }),
    );
    const s = sender(id, clock);
    s.start();
    await s.idle();
    await s.stop();
    assert.deepEqual(rcv.delivered(), [kept!.eventId]);
    const { rows } = await db.pool.query('SELECT event FROM outbox WHERE instance_id = $1', [id]);
    assert.deepEqual(rows.map((r: { event: string }) => r.event), ['message.cancelled']);
  });

  test('a receiver that does not answer in 10 s is a failed attempt', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    rcv.respond = ({ seen }) => (seen === 0 ? 'hang' : 200);
    const id = await instance(rcv.url);
    const { eventId } = (await enqueue(id, clock, { event: 'ready', data: { phoneNumber: '491700000000' } }))!;
    const s = sender(id, clock);
    const arrived = rcv.nextRequest();
    s.start();
    await arrived;
    clock.increment(9_999);
    assert.equal((await row(eventId)).attempts, 0);
    clock.increment(1);
    await s.idle();
    const r1 = await row(eventId);
    assert.deepEqual([r1.state, r1.attempts, r1.last_error], ['pending', 1, 'ETIMEDOUT: no response within 10000 ms']);
    clock.increment(1_000);
    await s.idle();
    await s.stop();
    assert.equal((await row(eventId)).state, 'delivered');
  });

  test('a 2xx whose body stalls or never ends is delivered, and its connection is closed rather than held for ever', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    rcv.respond = ({ n }) => (n === 1 ? 'stall' : 'flood');
    const id = await instance(rcv.url);
    const first = (await enqueue(id, clock, { event: 'ready', data: { phoneNumber: '491700000000' } }))!;
    const second = (await enqueue(id, clock, { event: 'ready', data: { phoneNumber: '491700000001' } }))!;
    const s = sender(id, clock);
    s.start();
    await s.idle();
    // both delivered on the status alone
    assert.deepEqual([(await row(first.eventId)).state, (await row(second.eventId)).state], ['delivered', 'delivered']);
    // the flood was cut once DRAIN_MAX_BYTES had passed; the stalled body is cut at DRAIN_MS on the clock
    await waitFor(() => rcv.openSockets() === 1, 'the endless body closed its connection');
    clock.increment(DRAIN_MS - 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(rcv.openSockets(), 1, 'a stalled body is waited for until DRAIN_MS');
    clock.increment(1);
    await waitFor(() => rcv.openSockets() === 0, 'the stalled body closed its connection');
    await s.stop();
  });

  test('SSRF: a loopback receiver is refused unless the webhook or the gateway allows private targets', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    const id = await instance(rcv.url, ['*'], { allowPrivate: false });
    const { eventId } = (await enqueue(id, clock, { event: 'message_ack', data: { id: 'm', chatId: 'c', ack: 1, ackName: 'SERVER' } }))!;
    const s = sender(id, clock);
    s.start();
    await s.idle();
    await s.stop();
    assert.equal(rcv.receipts.length, 0, 'nothing reached the private address');
    const r = await row(eventId);
    assert.equal(r.state, 'failed');
    assert.match(r.last_error ?? '', /url must point to a public address \(target is loopback\)/);

    const global = createWebhookTransport({ allowPrivate: true }); // WEBHOOK_ALLOW_PRIVATE=true
    const again = (await enqueue(id, clock, { event: 'test', data: { message: 'x' } }))!.eventId;
    const s2 = sender(id, clock, { transport: global });
    s2.start();
    await s2.idle();
    await s2.stop();
    global.close();
    assert.deepEqual(rcv.delivered(), [again]);
  });

  test('removing the webhook fails what was pending; no webhook means nothing is stored', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    const id = await instance(rcv.url);
    const { eventId } = (await enqueue(id, clock, { event: 'test', data: { message: 'x' } }))!;
    await db.pool.query('DELETE FROM webhooks WHERE instance_id = $1', [id]); // as another node would
    assert.equal(await enqueue(id, clock, { event: 'test', data: { message: 'y' } }), null);
    const s = sender(id, clock);
    s.start();
    await s.idle();
    await s.stop();
    assert.equal(rcv.receipts.length, 0);
    const r = await row(eventId);
    assert.deepEqual([r.state, r.last_error], ['failed', 'webhook removed or disabled']);
  });

  /**
   * A receiver that holds its first request until `release()` (released at once when not `holding`), then answers
   * 200 at once: what it got, with the secret each delivery verifies with.
   */
  async function heldReceiver(holding = true) {
    const got: { eventId: string; headers: http.IncomingHttpHeaders; raw: Buffer }[] = [];
    let release = () => undefined as void;
    const released = new Promise<void>((r) => (release = r));
    let arrived = () => undefined as void;
    const first = new Promise<void>((r) => (arrived = r));
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got.push({ eventId: String(req.headers['x-event-id']), headers: req.headers, raw: Buffer.concat(chunks) });
        if (got.length === 1) {
          arrived();
          void released.then(() => res.writeHead(200).end('ok'));
        } else res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    receivers.push({ close: async () => (server.closeAllConnections(), await new Promise((r) => server.close(r))) } as unknown as Receiver);
    if (!holding) release();
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got, first, release };
  }

  /**
   * The instance's pending rows delivered by a sender of their own, `change` made while `held` holds the first
   * attempt; answers once every result is persisted (the sender stopped).
   */
  async function changeDuringFirstAttempt(
    id: string,
    clock: ReturnType<typeof simulatedClock>,
    held: Awaited<ReturnType<typeof heldReceiver>>,
    change: (s: WebhookSender) => Promise<unknown> | void,
    extra: Partial<WebhookSenderOptions> = {},
  ): Promise<void> {
    const s = sender(id, clock, extra);
    s.start();
    await held.first;
    await change(s);
    held.release();
    await s.idle();
    await s.stop();
  }

  for (const how of ['through this node', 'through another node (read again after receiverFreshMs)'] as const) {
    test(`a webhook moved to another URL and secret while a batch is delivered ${how}: the next attempt goes to the new one`, async () => {
      // found from the outside: a batch went on to the receiver it was read with (73 events, 36 s after the PUT,
      // signed with the old secret)
      const clock = simulatedClock();
      const old = await heldReceiver();
      const moved = await heldReceiver(false);
      const id = await instance(old.url);
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push((await enqueue(id, clock, { event: 'test', data: { message: `m${i}` } }))!.eventId);
      const NEW_SECRET = 'whsec_rotated_after_a_leak_0123';
      // through another node: read again before every attempt after the first of a reading (0 ms of freshness)
      await changeDuringFirstAttempt(id, clock, old, async (s) => {
        await putWebhook(db.pool, id, { url: moved.url, secret: NEW_SECRET, events: ['*'], allowPrivate: true });
        if (how === 'through this node') s.receiverChanged();
      }, how === 'through this node' ? {} : { receiverFreshMs: 0 });
      assert.deepEqual(old.got.map((g) => g.eventId), ids.slice(0, 1), 'the old receiver gets the attempt in flight only');
      assert.deepEqual(moved.got.map((g) => g.eventId), ids.slice(1));
      for (const g of moved.got) assert.equal(verifyWebhook({ rawBody: g.raw, headers: g.headers as Record<string, string>, secret: NEW_SECRET, now: clock.now() }).ok, true);
      for (const e of ids) assert.equal((await row(e)).state, 'delivered');
    });
  }

  test('a webhook removed while a batch is delivered: what is left fails at once, nothing more reaches the receiver', async () => {
    const clock = simulatedClock();
    const old = await heldReceiver();
    const id = await instance(old.url);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await enqueue(id, clock, { event: 'test', data: { message: `r${i}` } }))!.eventId);
    await changeDuringFirstAttempt(id, clock, old, async (s) => {
      await db.pool.query('DELETE FROM webhooks WHERE instance_id = $1', [id]);
      s.receiverChanged();
    });
    assert.equal(old.got.length, 1);
    assert.equal((await row(ids[0] as string)).state, 'delivered');
    for (const e of ids.slice(1)) assert.deepEqual([(await row(e)).state, (await row(e)).last_error], ['failed', 'webhook removed or disabled']);
  });

  test('a DELETE then a PUT while an attempt is in flight: what was raised before the DELETE fails at once and never reaches the new receiver; the attempt in flight ends as it ends', async () => {
    // found from the outside: left to the sender, which sees a change at its next attempt, the new receiver got
    // the backlog raised before the DELETE (13 of 15 events)
    const clock = simulatedClock();
    const old = await heldReceiver();
    const next = await heldReceiver(false);
    const id = await instance(old.url);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await enqueue(id, clock, { event: 'test', data: { message: `d${i}` } }))!.eventId);
    // as the routes do: the change, then what it means for the rows still pending, in the request
    await changeDuringFirstAttempt(id, clock, old, async (s) => {
      await deleteWebhook(db.pool, id);
      await settleForChange(db.pool, id, clock.now(), null);
      await putWebhook(db.pool, id, { url: next.url, secret: 'whsec_the_next_receiver_0123', events: ['*'], allowPrivate: true });
      await settleForChange(db.pool, id, clock.now(), ['*']);
      s.receiverChanged();
    });
    assert.equal(next.got.length, 0, 'nothing raised before the DELETE reaches the next receiver');
    assert.equal((await row(ids[0] as string)).state, 'delivered', 'the attempt in flight reached the old receiver, and the listing says so');
    for (const e of ids.slice(1)) assert.deepEqual([(await row(e)).state, (await row(e)).last_error], ['failed', 'webhook removed or disabled']);
  });

  test('a PUT that no longer subscribes to what is pending: those rows fail at once, the others go to the new receiver', async () => {
    const clock = simulatedClock();
    const old = await heldReceiver();
    const next = await heldReceiver(false);
    const id = await instance(old.url);
    const first = (await enqueue(id, clock, { event: 'test', data: { message: 'first' } }))!.eventId;
    const qr = (await enqueue(id, clock, { event: 'qr', data: { qr: '2@login,secret==' } }))!.eventId;
    const later = (await enqueue(id, clock, { event: 'test', data: { message: 'later' } }))!.eventId;
    await changeDuringFirstAttempt(id, clock, old, async (s) => {
      await putWebhook(db.pool, id, { url: next.url, secret: 'whsec_the_next_receiver_0123', events: ['test'], allowPrivate: true });
      await settleForChange(db.pool, id, clock.now(), ['test']);
      s.receiverChanged();
    });
    assert.deepEqual(next.got.map((g) => g.eventId), [later], 'the login QR is not sent to a receiver that did not ask for it');
    assert.equal((await row(first)).state, 'delivered');
    assert.deepEqual([(await row(qr)).state, (await row(qr)).last_error], ['failed', 'not subscribed by the webhook any more']);
  });

  test('no secret reaches the delivery log or a log line; qr and code reach the receiver only', async () => {
    const clock = simulatedClock();
    const lines: string[] = [];
    const log = createLogger({ level: 'trace', stream: new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }) });
    const rcv = await receiver();
    rcv.respond = ({ eventId, seen }) => (eventId === qrEvent && seen === 0 ? 500 : 200);
    const secret = 'whsec_TOPSECRET_9f8e7d6c5b4a';
    const url = `http://hookuser:URLPASSWORD42@127.0.0.1:${new URL(rcv.url).port}/hook?token=URLTOKEN77`;
    const id = await instance(url, ['*'], { secret });
    const qrEvent = (await enqueue(id, clock, { event: 'qr', data: { qr: 'QRLOGINSECRET@1,2,3' } }))!.eventId;
    const codeEvent = (await enqueue(id, clock, { event: 'code', data: { code: 'PAIR-CODE-5X7Q' } }))!.eventId;
    const s = sender(id, clock, { log });
    s.start();
    await s.idle();
    clock.increment(6_000);
    await s.idle();
    await s.stop();

    assert.deepEqual(rcv.delivered(), [qrEvent, codeEvent]);
    assert.ok(rcv.receipts.some((r) => r.raw.toString().includes('QRLOGINSECRET@1,2,3')), 'the receiver gets the qr');
    assert.ok(rcv.receipts[0]!.headers.authorization?.startsWith('Basic '), 'URL credentials are used as such');
    const listing = JSON.stringify(await listDeliveries(db.pool, id, { limit: 50 }));
    const logText = lines.join('');
    assert.ok(logText.includes('webhook attempt failed'), 'the failed attempts were logged');
    for (const needle of [secret, 'URLPASSWORD42', 'URLTOKEN77', 'QRLOGINSECRET', 'PAIR-CODE-5X7Q']) {
      assert.equal(listing.includes(needle), false, `listing holds ${needle}`);
      assert.equal(logText.includes(needle), false, `logs hold ${needle}`);
    }
  });

  test('the XState actor: spawned per instance, woken by webhook.notify, stopped with its results persisted', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    const id = await instance(rcv.url);
    const senders = createWebhookSenders({ db: db.pool, clock });
    const actor = createActor(senders.logic, { input: { instanceId: id } });
    actor.start();
    await senders.get(id)!.idle();
    const { eventId } = (await enqueue(id, clock, { event: 'test', data: { message: 'wake' } }))!;
    actor.send({ type: 'webhook.notify' });
    await senders.get(id)!.idle();
    assert.deepEqual(rcv.delivered(), [eventId]);
    const other = (await enqueue(id, clock, { event: 'test', data: { message: 'by id' } }))!.eventId;
    assert.equal(senders.notify(id), true);
    await senders.get(id)!.idle();
    assert.deepEqual(rcv.delivered(), [eventId, other]);
    // Nobody wakes it for this one: the shared poll finds it.
    const unnotified = (await enqueue(id, clock, { event: 'test', data: { message: 'polled' } }))!.eventId;
    const arrived = rcv.nextRequest();
    clock.increment(2_000);
    await arrived;
    await senders.get(id)!.idle();
    assert.deepEqual(rcv.delivered(), [eventId, other, unnotified]);
    actor.stop();
    assert.equal(senders.notify(id), false);
    await senders.close();
    assert.equal((await row(unnotified)).state, 'delivered');
  });

  test('a wake-up that arrives while a pass is ending is not lost (no poll to fall back on)', async () => {
    // The pass ends in a few microtask turns after its last read; a notify() in any of them must still lead to
    // another pass. Each round notifies once, `hops` turns after the read answered, and counts the reads.
    const clock = simulatedClock();
    const id = await instance('http://127.0.0.1:9/never');
    let reads = 0;
    let hops = -1;
    const hop = async (n: number) => { for (let i = 0; i < n; i++) await Promise.resolve(); };
    let s: WebhookSender | null = null;
    const observed = {
      // a statement comes as its text and values, or as a config (a prepared one, with its name)
      query: async (q: string | QueryConfig, values?: unknown[]) => {
        const r = typeof q === 'string' ? await db.pool.query(q, values) : await db.pool.query(q);
        if ((typeof q === 'string' ? q : q.text).includes('LEFT JOIN webhooks')) {
          reads += 1;
          if (hops >= 0) {
            const n = hops;
            hops = -1;
            void hop(n).then(() => s?.notify());
          }
        }
        return r;
      },
    } as unknown as typeof db.pool;
    s = sender(id, clock, { db: observed, pollMs: null });
    for (let n = 0; n <= 40; n++) {
      await s.idle();
      const before = reads;
      hops = n;
      s.notify();
      await s.idle();
      await hop(60);
      await s.idle();
      assert.equal(reads - before, 2, `a notify ${n} turns after the read gets its own pass`);
    }
    await s.stop();
  });

  test('an event committed while the last result is being written goes out without waiting for that write', async () => {
    // A pass that ends idle leaves its last write running: the next event must not wait for that commit.
    const clock = simulatedClock();
    const rcv = await receiver();
    const id = await instance(rcv.url);
    let held = 0;
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const gated = {
      query: async (q: string | QueryConfig, values?: unknown[]) => {
        if (typeof q !== 'string' && q.name === 'record_webhook_results' && held++ === 0) await gate;
        return typeof q === 'string' ? db.pool.query(q, values) : db.pool.query(q);
      },
    } as unknown as typeof db.pool;
    const s = sender(id, clock, { db: gated, pollMs: null });
    const first = (await enqueue(id, clock, { event: 'test', data: { message: 'first' } }))!.eventId;
    s.start();
    await waitFor(() => held === 1, 'the first result write');
    const second = (await enqueue(id, clock, { event: 'test', data: { message: 'second' } }))!.eventId;
    s.notify();
    await waitFor(() => rcv.receipts.length === 2, 'the second event while the first result is held');
    assert.equal(held, 1, 'the first write is still held; the second result waits behind it');
    assert.equal((await row(first)).state, 'pending');
    release();
    await s.idle();
    await s.stop();
    assert.deepEqual(rcv.delivered(), [first, second], 'each once, in order');
    assert.equal((await row(first)).state, 'delivered');
    assert.equal((await row(second)).state, 'delivered');
  });

  test('a slow store holds the sender once a batch\'s results wait for their write: at most two batches go out unrecorded', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    const id = await instance(rcv.url);
    const events = Array.from({ length: 25 }, (_, i): EventOf => ({ event: 'test', data: { message: `n${i}` } }));
    await enqueueEvents(db.pool, id, events, clock.now());
    let held = 0;
    let reads = 0;
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const gated = {
      query: async (q: string | QueryConfig, values?: unknown[]) => {
        if ((typeof q === 'string' ? q : q.text).includes('LEFT JOIN webhooks')) reads += 1;
        if (typeof q !== 'string' && q.name === 'record_webhook_results' && held++ === 0) await gate;
        return typeof q === 'string' ? db.pool.query(q, values) : db.pool.query(q);
      },
    } as unknown as typeof db.pool;
    const s = sender(id, clock, { db: gated, pollMs: null, batchSize: 10 });
    s.start();
    await waitFor(() => s.stats.delivered === 20, 'two batches');
    // what follows the twentieth answer is a few turns of promises: the third read would be asked for in them
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    assert.equal(reads, 2, 'no third read while the first batch\'s write is held');
    assert.equal(rcv.receipts.length, 20);
    release();
    await s.idle();
    await s.stop();
    assert.equal(rcv.delivered().length, 25);
    assert.equal(new Set(rcv.delivered()).size, 25, 'each once');
    const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox WHERE instance_id = $1 AND state = 'delivered'`, [id]);
    assert.equal(rows[0]!.n, 25);
  });

  test('a result write that fails is written with the next ones, told once, and nothing is sent twice', async () => {
    const clock = simulatedClock();
    const lines: string[] = [];
    const log = createLogger({ level: 'trace', stream: new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }) });
    const rcv = await receiver();
    const id = await instance(rcv.url);
    let failing = true;
    let writes = 0;
    const flaky = {
      query: async (q: string | QueryConfig, values?: unknown[]) => {
        if (typeof q !== 'string' && q.name === 'record_webhook_results') {
          writes += 1;
          if (failing) throw new Error('Connection terminated unexpectedly');
        }
        return typeof q === 'string' ? db.pool.query(q, values) : db.pool.query(q);
      },
    } as unknown as typeof db.pool;
    const s = sender(id, clock, { db: flaky, log, pollMs: null });
    const first = (await enqueue(id, clock, { event: 'test', data: { message: 'first' } }))!.eventId;
    s.start();
    await s.idle();
    assert.ok(writes >= 1, 'the result was tried');
    assert.equal((await row(first)).state, 'pending', 'its result is not written');
    assert.equal(lines.filter((l) => l.includes('webhook results not persisted yet')).length, 1, 'told once');
    failing = false;
    const second = (await enqueue(id, clock, { event: 'test', data: { message: 'second' } }))!.eventId;
    s.notify();
    await s.idle();
    await s.stop();
    assert.deepEqual(rcv.delivered(), [first, second], 'the first is not sent again');
    assert.equal((await row(first)).state, 'delivered');
    assert.equal((await row(second)).state, 'delivered');
    const { rows } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_attempts a JOIN outbox o ON o.id = a.outbox_id WHERE o.event_id = $1',
      [first],
    );
    assert.equal(rows[0]!.n, 1, 'one attempt recorded for the first');
  });

  test('without a wake-up, a standalone sender finds new events by its poll', async () => {
    const clock = simulatedClock();
    const rcv = await receiver();
    const id = await instance(rcv.url);
    const s = sender(id, clock, { pollMs: 2_000 });
    s.start();
    await s.idle();
    const { eventId } = (await enqueue(id, clock, { event: 'test', data: { message: 'no notify' } }))!;
    clock.increment(1_999);
    await s.idle();
    assert.equal(rcv.receipts.length, 0);
    clock.increment(1);
    await s.idle();
    await s.stop();
    assert.deepEqual(rcv.delivered(), [eventId]);
  });
});
