/**
 * A v2 send through a node that does not own the instance (src/http/routes/queue-gate.ts `gatedAccept`): once
 * the node has seen the instance's view, each send is one ask to the owner, which checks the v2 gate (queue
 * mode, ordered restart, connection) and the number the send assumed as it accepts. The answers are those the
 * owner gives its own clients, whatever the forwarding node last saw: an ordered restart is `503 QUEUE_PAUSED`
 * (before a body's own error too), an instance gone offline `503 INSTANCE_OFFLINE`, and a send to the number the
 * instance was linked to since is refused as a send to its own number. A v1 send is one gated ask and the wait
 * for its outcome, and its answers are the owner's too.
 *
 * Two gateway nodes in this process on one real PostgreSQL (CLUSTER_SECRET), the owner's internal route behind
 * a counting HTTP proxy (its NODE_URL) that tells which asks were forwarded; the owner's in-process sandbox.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/log.js';
import { NEEDS_SERVER } from '../helpers/db.js';
import { ADMIN_TOKEN, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';

const SECRET = 'forwarded-send-secret-0123456789';
const SETTINGS = { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null };
const OWN = '4915550300001';
const RECIPIENT = '4915112345678';

/** The asks that reached the owner's internal route through the proxy, by type, with whether they carried a gate. */
const asks: { type: string; gated: boolean }[] = [];
let proxy: http.Server;
let owner: TestGateway;
let other: Gateway;
let otherDir: string;
let instanceId: string;
let apiKey: string;

/** A proxy in front of the owner that records each forwarded ask and passes it on unchanged. */
async function countingProxy(target: () => string): Promise<http.Server> {
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      try {
        const ask = (JSON.parse(body.toString('utf8')) as { ask: { type: string; gate?: unknown } }).ask;
        asks.push({ type: ask.type, gated: ask.gate !== undefined });
      } catch {
        // not an ask: passed on all the same
      }
      const up = http.request(`${target()}${req.url ?? '/'}`, { method: req.method, headers: req.headers, agent }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

const send = (via: string, body: unknown) =>
  fetch(`${via}/api/v2/send-message`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as { success: boolean; code?: string; data?: Record<string, unknown>; error?: string } }));

/** A v1 send-message: its status and its body as text (v1's answers are frozen byte for byte). */
const sendV1 = (via: string, body: unknown) =>
  fetch(`${via}/api/send-message`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, text: await r.text() }));

/** A v1 answer as the owner gave it and as the other node gave it, with what differs in every send blanked. */
const v1Shape = (r: { status: number; text: string }) => ({ status: r.status, text: r.text.replace(/"(messageId|id)":"[^"]*"/g, '"$1":"…"').replace(/wq_[0-9a-z]+/g, 'wq_…') });

const viewAt = (via: string) =>
  fetch(`${via}/api/status`, { headers: { authorization: `Bearer ${apiKey}` } }).then(async (r) => (await r.json()) as { data?: { status?: string; connected?: boolean } });

const jobsTo = async (phone: string) =>
  (await owner.db.pool.query<{ id: string }>("SELECT id FROM jobs WHERE instance_id = $1 AND chat_id = $2", [instanceId, `${phone}@c.us`])).rows.length;

before(async () => {
  if (NEEDS_SERVER.skip) return;
  proxy = await countingProxy(() => owner.url);
  const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  owner = await startTestGateway({ label: 'forwarded_send', env: { CLUSTER_SECRET: SECRET, NODE_ID: 'owner', NODE_URL: proxied, LEASE_TTL_MS: '10000' } });
  const created = await owner.createInstance('forwarded', { settings: SETTINGS, phone: OWN });
  instanceId = created.instance.id;
  apiKey = created.apiKey;
  // pinned to the owner: the node that joins takes nothing of it; it runs there already, so nothing moves
  const pinned = await owner.admin('POST', `/admin/v1/instances/${instanceId}/move`, { node: 'owner' });
  assert.deepEqual([pinned.status, pinned.body.data?.moving], [200, false], pinned.text);
  otherDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-forwarding-'));
  other = await startGateway({
    config: loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: otherDir, ADMIN_TOKEN, DEMO_INSTANCE: 'false', LOG_LEVEL: 'fatal', CLUSTER_SECRET: SECRET, NODE_ID: 'forwarding', LEASE_TTL_MS: '10000' }),
    database: owner.db.config,
    log: silentLogger(),
  });
  await waitFor(async () => (await viewAt(other.url)).data?.connected === true, 'the instance answered through the other node');
});

after(async () => {
  await other?.stop();
  await owner?.stop();
  await new Promise((r) => (proxy ? proxy.close(r) : r(null)));
  if (otherDir) await rm(otherDir, { recursive: true, force: true });
});

test('after the first, each send through the other node is one gated ask, answered as the owner answers its own clients', NEEDS_SERVER, async () => {
  asks.length = 0;
  const first = await send(other.url, { phone: RECIPIENT, message: 'first' });
  assert.equal(first.status, 202, JSON.stringify(first.body));
  const direct = await send(owner.url, { phone: RECIPIENT, message: 'direct' });
  assert.equal(direct.status, 202);
  assert.deepEqual(Object.keys(first.body.data ?? {}).sort(), Object.keys(direct.body.data ?? {}).sort(), 'the same answer as the owner\'s own');
  asks.length = 0;
  for (let i = 0; i < 3; i++) {
    const r = await send(other.url, { phone: RECIPIENT, message: `gated ${i}` });
    assert.equal(r.status, 202, JSON.stringify(r.body));
  }
  assert.deepEqual(asks, [1, 2, 3].map(() => ({ type: 'queue.accept', gated: true })), 'one ask per send, with its gate');

  // v1, synchronous: one gated acceptance and the wait for its outcome (no view before, none after)
  asks.length = 0;
  const v1 = await sendV1(other.url, { phone: RECIPIENT, message: 'v1 through the other node' });
  assert.equal(v1.status, 200, v1.text);
  assert.deepEqual(asks.map((a) => a.type), ['queue.accept', 'queue.awaitOutcome']);
  assert.equal(asks[0]?.gated, true);
  assert.deepEqual(v1Shape(v1), v1Shape(await sendV1(owner.url, { phone: RECIPIENT, message: 'v1 through the other node' })), 'the owner\'s own answer');

  // the owner's refusals come back as they are: a replay with another body under the same key
  const keyed = { phone: RECIPIENT, message: 'keyed', idempotencyKey: 'forwarded-key-0001' };
  assert.equal((await send(other.url, keyed)).status, 202);
  assert.equal((await send(other.url, keyed)).status, 200, 'the replay');
  assert.equal((await send(other.url, { ...keyed, message: 'changed' })).body.code, 'IDEMPOTENCY_PAYLOAD_MISMATCH');
});

test('a body the other node refuses is answered after the gate, as the owner answers it: 400 while connected', NEEDS_SERVER, async () => {
  const r = await send(other.url, { phone: 'not a number', message: 'x' });
  assert.equal(r.status, 400);
  assert.equal(r.body.code, 'VALIDATION_FAILED');
  const own = await send(other.url, { phone: OWN, message: 'to itself' });
  assert.equal(own.status, 400);
  assert.match(own.body.error ?? '', /own number/);
});

test('the instance relinked to another number: a send to it through the other node is refused, though that node saw the old one', NEEDS_SERVER, async () => {
  const relinked = '4915550300002';
  assert.equal((await owner.admin('POST', `/sandbox/v1/instances/${instanceId}/unlink`)).status, 200);
  await waitFor(async () => (await viewAt(owner.url)).data?.connected === false, 'logged out');
  // the other node sees it offline: what it prepares the next sends with is out of date twice over
  assert.equal((await viewAt(other.url)).data?.connected, false);
  assert.equal((await owner.admin('POST', `/admin/v1/instances/${instanceId}/restart`)).status, 202);
  await waitFor(async () => (await viewAt(owner.url)).data?.status === 'waiting_qr', 'waiting for a scan');
  assert.equal((await owner.admin('POST', `/sandbox/v1/instances/${instanceId}/link`, { phoneNumber: relinked })).status, 200);
  await waitFor(async () => (await send(owner.url, { phone: RECIPIENT, message: 'linked again' })).status === 202, 'sending again');

  asks.length = 0;
  const before = await jobsTo(relinked);
  const r = await send(other.url, { phone: relinked, message: 'to its new number' });
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.match(r.body.error ?? '', /own number/);
  assert.equal(await jobsTo(relinked), before, 'nothing accepted');
  assert.deepEqual(asks, [{ type: 'queue.accept', gated: true }], 'the owner said the send assumed the old number, with its view');

  // v1 alike: the owner's answer to a send to its own number, nothing accepted
  assert.deepEqual(await sendV1(other.url, { phone: relinked, message: 'v1 to its new number' }), await sendV1(owner.url, { phone: relinked, message: 'v1 to its new number' }));
  assert.equal(await jobsTo(relinked), before, 'nothing accepted');

  // the old number is anybody's now: accepted, in one ask again
  asks.length = 0;
  assert.equal((await send(other.url, { phone: OWN, message: 'to the old number' })).status, 202);
  assert.deepEqual(asks, [{ type: 'queue.accept', gated: true }]);
});

test('offline, then paused at the owner: the other node, whose last view said connected, answers as the owner does', NEEDS_SERVER, async () => {
  assert.equal((await send(other.url, { phone: RECIPIENT, message: 'seen connected' })).status, 202);
  assert.equal((await owner.admin('POST', `/sandbox/v1/instances/${instanceId}/unlink`)).status, 200);
  await waitFor(async () => (await viewAt(owner.url)).data?.connected === false, 'offline');
  const r = await send(other.url, { phone: RECIPIENT, message: 'while offline' });
  assert.equal(r.status, 503, JSON.stringify(r.body));
  assert.equal(r.body.code, 'INSTANCE_OFFLINE');
  // v1: the owner's answer (503, not connected), nothing accepted
  const offlineV1 = await sendV1(other.url, { phone: RECIPIENT, message: 'v1 while offline' });
  assert.equal(offlineV1.status, 503, offlineV1.text);
  assert.deepEqual(offlineV1, await sendV1(owner.url, { phone: RECIPIENT, message: 'v1 while offline' }));
  assert.equal((await viewAt(other.url)).data?.connected, false);

  // an ordered restart that cannot come back (no phone linked): paused
  assert.equal((await send(other.url, { phone: RECIPIENT, message: 'seen offline' })).body.code, 'INSTANCE_OFFLINE');
  assert.equal((await owner.admin('POST', `/admin/v1/instances/${instanceId}/restart`)).status, 202);
  const paused = await send(other.url, { phone: RECIPIENT, message: 'while paused' });
  assert.equal(paused.status, 503, JSON.stringify(paused.body));
  assert.equal(paused.body.code, 'QUEUE_PAUSED');
  // before a body's own error too, and a route's own check: exactly as the owner answers
  const forward = (via: string) =>
    fetch(`${via}/api/v2/messages/wq_not-a-network-id/forward`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ toChatId: `${RECIPIENT}@c.us` }),
    }).then(async (res) => ({ status: res.status, code: ((await res.json()) as { code?: string }).code }));
  assert.deepEqual(await forward(other.url), { status: 503, code: 'QUEUE_PAUSED' });
  assert.deepEqual(await forward(other.url), await forward(owner.url));
  for (const body of [{ phone: 'not a number', message: 'x' }, { phone: OWN, message: 'x' }, '{"broken']) {
    const [d, f] = [await send(owner.url, body), await send(other.url, body)];
    assert.deepEqual([f.status, f.body.code], [d.status, d.body.code], JSON.stringify(body));
  }
  assert.equal((await send(other.url, { phone: 'not a number', message: 'x' })).body.code, 'QUEUE_PAUSED');
});

test('back online after the other node last saw it logged out: a v1 send through that node goes the whole way with a view of now, and is sent', NEEDS_SERVER, async () => {
  const relink = async (phoneNumber: string) => {
    await waitFor(async () => (await viewAt(owner.url)).data?.status === 'waiting_qr', 'waiting for a scan');
    assert.equal((await owner.admin('POST', `/sandbox/v1/instances/${instanceId}/link`, { phoneNumber })).status, 200);
    await waitFor(async () => (await send(owner.url, { phone: RECIPIENT, message: 'linked again' })).status === 202, 'sending again');
  };
  // the last test left it paused, waiting for a scan
  await relink(OWN);
  assert.equal((await owner.admin('POST', `/sandbox/v1/instances/${instanceId}/unlink`)).status, 200);
  await waitFor(async () => (await viewAt(other.url)).data?.connected === false, 'the other node sees it logged out');
  assert.equal((await owner.admin('POST', `/admin/v1/instances/${instanceId}/restart`)).status, 202);
  await relink(OWN);

  const r = await sendV1(other.url, { phone: RECIPIENT, message: 'v1 after the other node saw it offline' });
  assert.equal(r.status, 200, r.text);
  assert.equal((await send(other.url, { phone: RECIPIENT, message: 'v2 after the other node saw it offline' })).status, 202);
});
