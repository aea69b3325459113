/**
 * The port of an instance another node owns (src/cluster/remote-port.ts) against real HTTP servers on loopback
 * standing in for the owner's internal route: the reply comes back as the owner gave it, over a connection kept
 * open between asks, and every failure says whether the ask could have been received (`502
 * INSTANCE_UNREACHABLE`: nothing was done, safe to retry) or not (`504 INSTANCE_TIMEOUT`: the owner may have
 * accepted). The last view that came back is kept for the v2 sends of the node's other requests, only while
 * the owner says that it gates a send itself.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { HAND_OVER_POLL_MS, HAND_OVER_WAIT_MS, RemoteInstancePort, RemoteViews } from '../../src/cluster/remote-port.js';
import type { InstancePort, InstanceView } from '../../src/actors/port.js';
import { OwnerNotAnswering } from '../../src/errors.js';
import type { AcceptRequest } from '../../src/queue/types.js';
import { sendOf } from '../../src/queue/payload.js';
import { freePort } from '../helpers/gateway-process.js';

const INSTANCE = '00000000-0000-4000-8000-000000000001';
const SECRET = 'remote-port-secret-0123456789';

interface Owner {
  url: string;
  /** the asks received, with the connection each came on */
  asks: { body: unknown; authorization: string | undefined; socket: Socket }[];
  server: http.Server;
}
const owners: Owner[] = [];
after(async () => {
  for (const o of owners) {
    o.server.closeAllConnections();
    await new Promise((r) => o.server.close(r));
  }
});

/** An owner that answers each ask with `answer` (status and body), or never when it returns null. */
async function owner(answer: (n: number) => { status: number; body: unknown } | null, keepAliveTimeout = 65_000): Promise<Owner> {
  const o: Owner = { url: '', asks: [], server: http.createServer() };
  o.server.keepAliveTimeout = keepAliveTimeout;
  o.server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = o.asks.length;
      o.asks.push({ body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown, authorization: req.headers.authorization, socket: req.socket });
      const a = answer(n);
      if (a) res.writeHead(a.status, { 'content-type': 'application/json' }).end(JSON.stringify(a.body));
    });
  });
  await new Promise<void>((r) => o.server.listen(0, '127.0.0.1', r));
  o.url = `http://127.0.0.1:${(o.server.address() as AddressInfo).port}`;
  owners.push(o);
  return o;
}

/** A port whose owner is at `urls` in turn (the last from then on), on simulated time (a wait passes at once). */
const portTo = (urls: string[], views = new RemoteViews(), nodeId = 'n2') => {
  let lookups = 0;
  let t = 0;
  const port = new RemoteInstancePort(INSTANCE, {
    selfId: 'n1',
    owner: async () => ({ nodeId, url: urls[Math.min(lookups++, urls.length - 1)] as string }),
    secret: SECRET,
    views,
    sleep: async (ms) => {
      t += ms;
    },
    now: () => t,
  });
  return { port, lookups: () => lookups, elapsed: () => t };
};

const view = { status: 'connected', connected: true };
const replied = (value: unknown) => ({ status: 200, body: { success: true, data: { reply: { ok: true, value } } } });

test('the owner\'s reply comes back as it gave it; asks share one kept-open connection; the secret authenticates them', async () => {
  const o = await owner(() => replied(view));
  const { port } = portTo([o.url]);
  assert.deepEqual(await port.ask({ type: 'view' }, 5_000), view);
  assert.deepEqual(await port.ask({ type: 'view' }, 5_000), view);
  assert.equal(o.asks.length, 2);
  assert.deepEqual(o.asks[0]?.body, { ask: { type: 'view' }, deadlineMs: 5_000 });
  assert.equal(o.asks[0]?.authorization, `Bearer ${SECRET}`);
  assert.equal(o.asks[0]?.socket, o.asks[1]?.socket, 'the second ask came on the first one\'s connection');
});

test('a refusal the owner replied is thrown as its DomainError', async () => {
  const o = await owner(() => ({ status: 200, body: { success: true, data: { reply: { ok: false, error: { code: 'QUEUE_FULL', message: 'full', data: { maxPending: 5 } } } } } }));
  await assert.rejects(portTo([o.url]).port.ask({ type: 'view' }, 5_000), { code: 'QUEUE_FULL', message: 'full' });
});

test('a connection the owner closed while it was idle is not used again: the next ask is answered', async () => {
  const o = await owner(() => replied(view), 100);
  const { port } = portTo([o.url]);
  await port.ask({ type: 'view' }, 5_000);
  // the owner closes the idle connection after 100 ms
  for (let i = 0; i < 100 && o.asks[0]?.socket.destroyed !== true; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(o.asks[0]?.socket.destroyed, true);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(await port.ask({ type: 'view' }, 5_000), view);
  assert.notEqual(o.asks[1]?.socket, o.asks[0]?.socket);
});

test('nobody listens at the owner\'s address: its successor, looked up afresh, answers; the same owner again: INSTANCE_UNREACHABLE at once (nothing was accepted)', async () => {
  const closed = `http://127.0.0.1:${await freePort()}`;
  const next = await owner(() => replied(view));
  assert.deepEqual(await portTo([closed, next.url]).port.ask({ type: 'view' }, 5_000), view, 'a node that stopped and left: the new owner answers');
  // the owner looked up afresh refuses again: it died with its lease still running, and no wait would help
  const { port, lookups, elapsed } = portTo([closed]);
  await assert.rejects(port.ask({ type: 'view' }, 5_000), (err: { code?: string; message?: string }) =>
    err.code === 'INSTANCE_UNREACHABLE' && /ECONNREFUSED/.test(err.message ?? ''));
  assert.equal(lookups(), 2);
  assert.equal(elapsed(), 0, 'answered without waiting');
  // refused by one owner, then by another looked up afresh (a hand-over under way): it waits for the next
  const { port: waiting, elapsed: waited } = portTo([closed, `http://127.0.0.1:${await freePort()}`, next.url]);
  assert.deepEqual(await waiting.ask({ type: 'view' }, 5_000), view);
  assert.ok(waited() > 0);
});

test('the owner says it no longer owns the instance: asked again at the owner looked up afresh', async () => {
  const old = await owner(() => ({ status: 409, body: { success: false, code: 'INSTANCE_UNREACHABLE', error: 'not the owner' } }));
  const now = await owner(() => replied(view));
  const { port, lookups } = portTo([old.url, now.url]);
  assert.deepEqual(await port.ask({ type: 'view' }, 5_000), view);
  assert.equal(lookups(), 2, 'the owner looked up afresh');
  assert.equal(old.asks.length, 1);
  assert.equal(now.asks.length, 1);
});

test('the owner received the ask and did not answer in time: INSTANCE_TIMEOUT (it may have been done)', async () => {
  const o = await owner(() => null);
  const t0 = performance.now();
  await assert.rejects(portTo([o.url]).port.ask({ type: 'view' }, 200), { code: 'INSTANCE_TIMEOUT' });
  assert.ok(performance.now() - t0 < 5_000);
  assert.equal(o.asks.length, 1);
});

test('the owner refused before running anything (a 4xx): INSTANCE_UNREACHABLE; failed while running (a 5xx): INSTANCE_TIMEOUT', async () => {
  const refused = await owner(() => ({ status: 401, body: { success: false, code: 'UNAUTHORIZED', error: 'bad secret' } }));
  await assert.rejects(portTo([refused.url]).port.ask({ type: 'view' }, 5_000), (err: { code?: string; message?: string }) =>
    err.code === 'INSTANCE_UNREACHABLE' && /answered 401/.test(err.message ?? ''));
  const failed = await owner(() => ({ status: 500, body: { success: false, code: 'INTERNAL', error: 'boom' } }));
  await assert.rejects(portTo([failed.url]).port.ask({ type: 'view' }, 5_000), { code: 'INSTANCE_TIMEOUT' });
});

test('the answer breaks off after the owner received the ask: INSTANCE_TIMEOUT', async () => {
  const o: Owner = { url: '', asks: [], server: http.createServer() };
  o.server.on('request', (req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"success":true,');
      setTimeout(() => req.socket.destroy(), 20);
    });
  });
  await new Promise<void>((r) => o.server.listen(0, '127.0.0.1', r));
  o.url = `http://127.0.0.1:${(o.server.address() as AddressInfo).port}`;
  owners.push(o);
  await assert.rejects(portTo([o.url]).port.ask({ type: 'view' }, 5_000), { code: 'INSTANCE_TIMEOUT' });
});

test('a failure at the owner names that node and what happened (for the operator), with the code and message an API-key caller got, and no node id in its data', async () => {
  const closed = `http://127.0.0.1:${await freePort()}`;
  const silent = await owner(() => null);
  const refusing = await owner(() => ({ status: 401, body: { success: false, code: 'UNAUTHORIZED', error: 'bad secret' } }));
  const failing = await owner(() => ({ status: 500, body: { success: false, code: 'INTERNAL', error: 'boom' } }));
  const cases: [string, number, { code: string; why: RegExp; message: RegExp }][] = [
    [closed, 5_000, { code: 'INSTANCE_UNREACHABLE', why: /^cannot be reached \(ECONNREFUSED\)$/, message: /cannot be reached \(ECONNREFUSED\); nothing was accepted/ }],
    [silent.url, 200, { code: 'INSTANCE_TIMEOUT', why: /^did not answer within 0\.2 s$/, message: /may have been accepted/ }],
    [refusing.url, 5_000, { code: 'INSTANCE_UNREACHABLE', why: /^refused the ask \(HTTP 401\)$/, message: /answered 401/ }],
    [failing.url, 5_000, { code: 'INSTANCE_TIMEOUT', why: /^failed while answering \(HTTP 500\)$/, message: /may have been accepted/ }],
  ];
  for (const [url, deadline, want] of cases) {
    await assert.rejects(portTo([url], new RemoteViews(), 'node-7').port.ask({ type: 'view' }, deadline), (err: unknown) => {
      assert.ok(err instanceof OwnerNotAnswering, String(err));
      assert.equal(err.code, want.code);
      assert.equal(err.node, 'node-7');
      assert.match(err.why, want.why);
      assert.match(err.message, want.message);
      assert.deepEqual(err.data, {}, 'the envelope carries no node id');
      return true;
    });
  }
  // no live owner at all: not a node's failure (nobody runs the instance)
  let t = 0;
  const none = new RemoteInstancePort(INSTANCE, {
    selfId: 'n1', owner: async () => null, secret: SECRET, views: new RemoteViews(), sleep: async (ms) => void (t += ms), now: () => t,
  });
  await assert.rejects(none.ask({ type: 'view' }, 5_000), (err: unknown) => !(err instanceof OwnerNotAnswering) && (err as { code?: string }).code === 'INSTANCE_UNREACHABLE');
});

const gatedReply = (value: unknown) => ({ status: 200, body: { success: true, data: { reply: { ok: true, value }, gates: true } } });
const fullView: InstanceView = {
  status: 'connected', connected: true, phoneNumber: '4915100000001', browser: { alive: true, failStreak: 0, lastOkAt: 0 }, qrText: null,
  detail: 'ready', paused: false, quarantined: false, lastError: null, queueMode: 'pg',
};
const request: AcceptRequest = {
  originRoute: '/api/v2/send-message', chatId: '4915100000002@c.us', phone: '4915100000002', payloadHash: null, idempotencyKey: null,
  priority: 5, notBefore: null, ttlSeconds: null, ...sendOf('text', { body: 'hi', chatId: '4915100000002@c.us' }),
};

test('the last view is kept, for every port of the node, only while the owner says it gates sends', async () => {
  const views = new RemoteViews();
  const gating = await owner(() => gatedReply(fullView));
  assert.equal(portTo([gating.url], views).port.lastView(), undefined, 'nothing seen yet');
  await portTo([gating.url], views).port.ask({ type: 'view' }, 5_000);
  assert.deepEqual(portTo([gating.url], views).port.lastView(), fullView, 'a new port of the same instance sees it');

  // an owner of an earlier version (no `gates` in its answer): the view is asked first again
  const older = await owner(() => replied(fullView));
  await portTo([older.url], views).port.ask({ type: 'view' }, 5_000);
  assert.equal(portTo([older.url], views).port.lastView(), undefined);
});

test('a gated acceptance answered stale: its view replaces the one the send assumed; one answered by an older owner forgets it', async () => {
  const views = new RemoteViews();
  const relinked = { ...fullView, phoneNumber: '4915100000009' };
  const o = await owner((n) => (n === 0 ? gatedReply(fullView) : gatedReply({ kind: 'stale', view: relinked })));
  const { port } = portTo([o.url], views);
  await port.ask({ type: 'view' }, 5_000);
  const gate = { phoneNumber: fullView.phoneNumber };
  assert.deepEqual(await port.ask({ type: 'queue.accept', request, gate } , 5_000), { kind: 'stale', view: relinked });
  assert.deepEqual(o.asks[1]?.body, { ask: { type: 'queue.accept', request, gate }, deadlineMs: 5_000 }, 'the gate travels with the acceptance');
  assert.deepEqual(port.lastView(), relinked);

  // the same owner answers a gated acceptance without saying that it gates (it was replaced by an earlier
  // version at the same node id and address): the view is forgotten
  o.server.removeAllListeners('request');
  o.server.on('request', (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(replied({ kind: 'accepted', job: {}, queuePosition: 1, limits: {} }).body)));
  await port.ask({ type: 'queue.accept', request, gate: { phoneNumber: relinked.phoneNumber } }, 5_000);
  assert.equal(port.lastView(), undefined, 'the owner did not say it gates: the next send asks the view first');
});

test('a send prepared with the view one owner gave is not handed over to another: the new owner is asked the view, and the send prepared again', async () => {
  const views = new RemoteViews();
  const first = await owner(() => gatedReply(fullView));
  await portTo([first.url], views, 'n2').port.ask({ type: 'view' }, 5_000);
  const gate = { phoneNumber: fullView.phoneNumber };

  // handed over to a node of an earlier version, which would take the gated acceptance as an ungated one
  const older = await owner(() => replied(fullView));
  const toOlder = portTo([older.url], views, 'n3').port;
  assert.deepEqual(await toOlder.ask({ type: 'queue.accept', request, gate }, 5_000), { kind: 'stale', view: fullView });
  assert.deepEqual(older.asks.map((a) => (a.body as { ask: { type: string } }).ask.type), ['view'], 'the acceptance did not reach it');
  assert.equal(toOlder.lastView(), undefined, 'it does not gate: the send is prepared with this view and goes the whole way');

  // handed over to a node that gates: its view is kept, and the next send goes to it in one ask
  const relinked = { ...fullView, phoneNumber: '4915100000009' };
  const gating = await owner((n) => gatedReply(n === 0 ? relinked : { kind: 'accepted', job: {}, queuePosition: 1, limits: {} }));
  const toGating = portTo([gating.url], views, 'n4').port;
  assert.deepEqual(await toGating.ask({ type: 'queue.accept', request, gate }, 5_000), { kind: 'stale', view: relinked });
  assert.deepEqual(toGating.lastView(), relinked);
  await toGating.ask({ type: 'queue.accept', request, gate: { phoneNumber: relinked.phoneNumber } }, 5_000);
  assert.deepEqual(gating.asks.map((a) => (a.body as { ask: { type: string } }).ask.type), ['view', 'queue.accept']);

  // the same node id at another address (restarted elsewhere) is another owner too
  const moved = await owner(() => gatedReply(relinked));
  assert.equal((await portTo([moved.url], views, 'n4').port.ask({ type: 'queue.accept', request, gate: { phoneNumber: relinked.phoneNumber } }, 5_000)).kind, 'stale');
  assert.deepEqual(moved.asks.map((a) => (a.body as { ask: { type: string } }).ask.type), ['view']);
});

const someOwner = { nodeId: 'n2', url: 'http://127.0.0.1:1' };

/**
 * A port whose owner lookups answer `owners` in turn (the last one from then on), on simulated time: each wait
 * between two looks advances it at once. `local`: this node's own port of the instance, once it has one.
 */
function handedOver(owners: ({ nodeId: string; url: string } | null)[], local: () => InstancePort | null = () => null) {
  let t = 0;
  let lookups = 0;
  const slept: number[] = [];
  const port = new RemoteInstancePort(INSTANCE, {
    selfId: 'n1',
    owner: async () => owners[Math.min(lookups++, owners.length - 1)] ?? null,
    secret: SECRET,
    views: new RemoteViews(),
    local,
    sleep: async (ms) => {
      slept.push(ms);
      t += ms;
    },
    now: () => t,
  });
  return { port, lookups: () => lookups, elapsed: () => t, slept };
}

test('an instance without a live owner (a hand-over): the ask waits for its new owner, which answers', async () => {
  const o = await owner(() => replied(view));
  const next = { nodeId: 'n3', url: o.url };
  const { port, lookups, elapsed, slept } = handedOver([null, null, null, null, next]);
  assert.deepEqual(await port.ask({ type: 'view' }, 60_000), view);
  assert.equal(lookups(), 5, 'looked up afresh until an owner was there');
  assert.deepEqual(slept, [HAND_OVER_POLL_MS, HAND_OVER_POLL_MS, HAND_OVER_POLL_MS], 'at once, then every poll interval');
  assert.equal(elapsed(), 3 * HAND_OVER_POLL_MS);
  assert.equal(o.asks.length, 1);
});

test('no owner within the wait: INSTANCE_UNREACHABLE (nothing was accepted), after at most HAND_OVER_WAIT_MS or a third of the deadline', async () => {
  const long = handedOver([null]);
  await assert.rejects(long.port.ask({ type: 'view' }, 60_000), { code: 'INSTANCE_UNREACHABLE' });
  assert.ok(long.elapsed() <= HAND_OVER_WAIT_MS && long.elapsed() > HAND_OVER_WAIT_MS - 2 * HAND_OVER_POLL_MS, `waited ${long.elapsed()} ms`);
  const short = handedOver([null]);
  await assert.rejects(short.port.ask({ type: 'view' }, 900), { code: 'INSTANCE_UNREACHABLE' });
  assert.ok(short.elapsed() <= 300, `waited ${short.elapsed()} ms of a 900 ms deadline`);
});

test('handed over to this very node while the ask waited: this node\'s own port answers it', async () => {
  const asked: string[] = [];
  const own = { ask: async (a: { type: string }) => (asked.push(a.type), view) } as unknown as InstancePort;
  let mine = false;
  const { port } = handedOver([null, { nodeId: 'n1', url: 'http://127.0.0.1:1' }, { nodeId: 'n1', url: 'http://127.0.0.1:1' }], () => (mine ? own : null));
  const answer = port.ask({ type: 'view' }, 60_000);
  mine = true;
  assert.deepEqual(await answer, view);
  assert.deepEqual(asked, ['view']);
});

test('a wait for a job\'s outcome asked again after a hand-over waits only for what is left of it, at another node or at this one', async () => {
  const o = await owner(() => replied(null));
  const { port, elapsed } = handedOver([null, null, null, { nodeId: 'n3', url: o.url }]);
  assert.equal(await port.ask({ type: 'queue.awaitOutcome', jobId: 'wq_1', timeoutMs: 15_000 }, 25_000), null);
  assert.equal(elapsed(), 2 * HAND_OVER_POLL_MS);
  assert.deepEqual((o.asks[0]?.body as { ask: unknown }).ask, { type: 'queue.awaitOutcome', jobId: 'wq_1', timeoutMs: 15_000 - 2 * HAND_OVER_POLL_MS });

  const asked: unknown[] = [];
  const own = { ask: async (a: unknown) => (asked.push(a), null) } as unknown as InstancePort;
  const home = handedOver([null, null, { nodeId: 'n1', url: 'http://127.0.0.1:1' }], () => own);
  assert.equal(await home.port.ask({ type: 'queue.awaitOutcome', jobId: 'wq_2', timeoutMs: 15_000 }, 25_000), null);
  assert.deepEqual(asked, [{ type: 'queue.awaitOutcome', jobId: 'wq_2', timeoutMs: 15_000 - HAND_OVER_POLL_MS }]);
});

test('views are kept for at most as many instances as the node allows, the oldest seen forgotten first', () => {
  const views = new RemoteViews(2);
  views.saw('a', fullView, true, someOwner);
  views.saw('b', fullView, true, someOwner);
  views.saw('a', fullView, true, someOwner);
  views.saw('c', fullView, true, someOwner);
  assert.equal(views.gatedView('b'), undefined);
  assert.ok(views.gatedView('a'));
  assert.ok(views.gatedView('c'));
});

test('a view is kept without its QR (a secret the forwarding node has no use for)', () => {
  const views = new RemoteViews();
  views.saw('a', { ...fullView, status: 'waiting_qr', connected: false, phoneNumber: null, qrText: '2@secret-qr-text' }, true, someOwner);
  assert.equal(views.gatedView('a')?.qrText, null);
  assert.equal(views.gatedView('a')?.status, 'waiting_qr');
});
