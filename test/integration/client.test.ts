/**
 * The TypeScript client (clients/typescript) against a real gateway (sandbox network, real PostgreSQL, real
 * sockets): sends and their outcomes, a dropped answer retried with the same key (the ledger shows the message
 * once), every error code the client can provoke as its typed GatewayError, and the webhook verifier on a real
 * delivery. Answers a real gateway does not give on demand (504, 503 QUEUE_PAUSED, 502) come from a stub
 * server; waits between retries go through an injected sleep that records them instead of sleeping.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { GatewayClient, GatewayError, isGatewayError, verifyWebhook, parseWebhook, WebhookVerificationError, type ErrorCode, type GatewayClientOptions, type RetryInfo } from '../../clients/typescript/src/index.js';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { startSwallowProxy } from '../helpers/swallow-proxy.js';
import { startStubServer, type StubAnswer } from '../helpers/stub-http.js';

const FAST = { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null };
const RECIPIENT = '4915112340077';

let t: TestGateway;
let instanceId: string;
let apiKey: string;
let offlineKey: string;

/** Waits the client asked for, without waiting. */
function recordingSleep(): { sleep: (ms: number) => Promise<void>; waits: number[] } {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

function client(o: Partial<GatewayClientOptions> = {}): GatewayClient {
  return new GatewayClient({ baseUrl: t.url, apiKey, random: () => 0.5, sleep: async () => {}, ...o });
}

/** The GatewayError `fn` rejects with, checked for its code and status. */
async function failsWith<C extends ErrorCode>(fn: () => Promise<unknown>, code: C, status: number): Promise<GatewayError<C>> {
  try {
    await fn();
  } catch (err) {
    assert.ok(isGatewayError(err), `a GatewayError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    assert.equal(err.status, status);
    assert.ok(err.is(code));
    return err as GatewayError<C>;
  }
  assert.fail(`expected ${code}`);
}

async function ledgerBodies(): Promise<(string | null)[]> {
  const r = await t.admin('GET', `/sandbox/v1/instances/${instanceId}/ledger`);
  return ((r.body.data as { items: { body: string | null }[] }).items).map((i) => i.body);
}

before(async () => {
  t = await startTestGateway({ label: 'client', env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  const a = await t.createInstance('client', { settings: FAST });
  instanceId = a.instance.id;
  apiKey = a.apiKey;
  offlineKey = (await t.createInstance('clientoff', { settings: FAST, link: false })).apiKey;
});
after(async () => {
  await t.stop();
});

describe('client against a real gateway', () => {
  test('send with a generated key, then waitForOutcome → sent; status, queue and job by key', async () => {
    const c = client({ sleep: undefined });
    const accepted = await c.sendMessage({ phone: RECIPIENT, message: 'client hello' });
    assert.equal(accepted.status, 'queued');
    assert.match(accepted.jobId, /^wq_/);
    assert.match(accepted.idempotencyKey ?? '', /^mgw:[0-9a-f-]{36}$/);
    assert.equal(accepted.idempotentReplay, false);

    const done = await c.waitForOutcome(accepted.jobId, { timeoutMs: 20_000, pollMs: 50 });
    assert.equal(done.state, 'sent');
    assert.equal(done.deliveryConfidence, 'confirmed');
    assert.ok(done.messageId);

    assert.equal((await c.jobByKey(accepted.idempotencyKey ?? '')).jobId, accepted.jobId);
    assert.equal((await c.status()).connected, true);
    assert.equal((await c.queueSummary()).mode, 'pg');
    assert.ok((await c.queueItems({ state: 'sent' })).items.some((j) => j.jobId === accepted.jobId));
    assert.deepEqual(await ledgerBodies(), ['client hello']);
  });

  test('a dropped answer is retried with the same key: one job, the message once in the ledger', async () => {
    const u = new URL(t.url);
    const proxy = await startSwallowProxy({ host: u.hostname, port: Number(u.port) }, { swallow: 1 });
    const retries: RetryInfo[] = [];
    try {
      const c = client({ baseUrl: proxy.url, onRetry: (i) => retries.push(i) });
      const accepted = await c.sendMessage({ phone: RECIPIENT, message: 'once only' });
      assert.equal(proxy.swallowed, 1, 'the first answer was swallowed');
      assert.equal(retries.length, 1);
      assert.equal(retries[0]?.code, 'NO_RESPONSE');
      assert.equal(retries[0]?.idempotencyKey, accepted.idempotencyKey);
      assert.equal(accepted.idempotentReplay, true, 'the retry found the job the first request made');
      const done = await c.waitForOutcome(accepted.jobId, { timeoutMs: 20_000, pollMs: 50 });
      assert.equal(done.state, 'sent');
      assert.equal((await ledgerBodies()).filter((b) => b === 'once only').length, 1);
    } finally {
      await proxy.close();
    }
  });

  test('without a key a dropped answer is not retried: NO_RESPONSE after one attempt', async () => {
    const u = new URL(t.url);
    const proxy = await startSwallowProxy({ host: u.hostname, port: Number(u.port) }, { swallow: 1 });
    try {
      const c = client({ baseUrl: proxy.url });
      const err = await failsWith(() => c.sendMessage({ phone: RECIPIENT, message: 'keyless', idempotencyKey: null }), 'NO_RESPONSE', 0);
      assert.equal(err.attempts, 1);
      assert.equal(proxy.connections, 1);
      // the gateway did accept it: exactly why a keyless send must not be repeated
      await waitFor(async () => (await ledgerBodies()).includes('keyless'), 'the keyless send in the ledger');
      assert.equal((await ledgerBodies()).filter((b) => b === 'keyless').length, 1);
    } finally {
      await proxy.close();
    }
  });

  test('every error code the client can provoke surfaces as its typed GatewayError', async () => {
    const c = client();
    const v = await failsWith(() => c.sendMessage({ phone: RECIPIENT, message: '' }), 'VALIDATION_FAILED', 400);
    assert.equal(v.data.field, 'message');
    await failsWith(() => c.sendMessage({ phone: RECIPIENT, message: 'x', idempotencyKey: 'short' }), 'VALIDATION_FAILED', 400);
    await failsWith(() => client({ apiKey: 'wapi_nobody_0123456789abcdef' }).status(), 'INVALID_API_KEY', 401);
    await failsWith(() => client({ apiKey: 'x' }).status(), 'UNAUTHORIZED', 401);
    await failsWith(() => c.getJob('wq_doesnotexist'), 'JOB_NOT_FOUND', 404);
    await failsWith(() => c.jobByKey('no-such-key-0001'), 'JOB_NOT_FOUND', 404);

    const key = `mismatch-${Date.now()}`;
    const first = await c.sendMessage({ phone: RECIPIENT, message: 'first', idempotencyKey: key });
    const replay = await c.sendMessage({ phone: RECIPIENT, message: 'first', idempotencyKey: key });
    assert.equal(replay.jobId, first.jobId);
    assert.equal(replay.idempotentReplay, true);
    const m = await failsWith(() => c.sendMessage({ phone: RECIPIENT, message: 'second', idempotencyKey: key }), 'IDEMPOTENCY_PAYLOAD_MISMATCH', 409);
    assert.equal(m.data.jobId, first.jobId);

    const ttl = await failsWith(
      () => c.sendMessage({ phone: RECIPIENT, message: 'too late', notBefore: new Date(Date.now() + 2 * 3600_000), ttlSeconds: 3600 }),
      'TTL_UNREACHABLE',
      422,
    );
    assert.equal(typeof ttl.data.expiresAt, 'string');

    const off = await failsWith(() => client({ apiKey: offlineKey }).sendMessage({ phone: RECIPIENT, message: 'offline' }), 'INSTANCE_OFFLINE', 503);
    assert.equal(typeof off.data.instance.status, 'string');

    const done = await c.waitForOutcome(first.jobId, { timeoutMs: 20_000, pollMs: 50 });
    assert.equal((await failsWith(() => c.cancelJob(done.jobId), 'JOB_NOT_CANCELLABLE', 409)).data.state, 'sent');
    assert.equal((await failsWith(() => c.requeueJob(done.jobId), 'JOB_NOT_REQUEUEABLE', 409)).data.state, 'sent');
    await failsWith(() => c.getMedia('md_doesnotexist'), 'MEDIA_NOT_FOUND', 404);
    assert.equal((await failsWith(() => c.inviteCode('4915112340077@c.us'), 'NOT_A_GROUP', 400)).data.groupId, '4915112340077@c.us');
    await failsWith(() => c.sendVoice({ phone: RECIPIENT, mediaBase64: 'AAAA', mimetype: 'video/mp4' }), 'VOICE_MIMETYPE_UNSUPPORTED', 400);
  });

  test('other kinds of send, media upload, cancel and requeue go through', async () => {
    const c = client();
    const stored = await c.uploadMedia({ data: new Uint8Array([137, 80, 78, 71, 1, 2, 3]), filename: 'a.png', mimetype: 'image/png' });
    assert.match(stored.mediaId, /^md_/);
    assert.equal((await c.getMedia(stored.mediaId)).size, 7);
    const dl = await c.downloadMedia(stored.mediaId);
    assert.deepEqual([...dl.bytes], [137, 80, 78, 71, 1, 2, 3]);
    const media = await c.sendMedia({ phone: RECIPIENT, mediaId: stored.mediaId, caption: 'pic' });
    const loc = await c.sendLocation({ phone: RECIPIENT, latitude: 52.52, longitude: 13.4, name: 'Berlin' });
    const poll = await c.sendPoll({ phone: RECIPIENT, name: 'Lunch?', options: ['yes', 'no'] });
    for (const j of [media, loc, poll]) assert.equal((await c.waitForOutcome(j.jobId, { timeoutMs: 20_000, pollMs: 50 })).state, 'sent');

    const later = await c.sendMessage({ phone: RECIPIENT, message: 'later', notBefore: new Date(Date.now() + 3600_000) });
    assert.equal((await c.cancelJob(later.jobId)).state, 'cancelled');
    const again = await c.requeueJob(later.jobId);
    assert.equal(again.previousJobId, later.jobId);
    assert.equal((await c.waitForOutcome(again.jobId, { timeoutMs: 20_000, pollMs: 50 })).state, 'sent');
    assert.deepEqual(await c.deleteMedia(stored.mediaId), { mediaId: stored.mediaId, deleted: true });
  });

  test('waitForOutcome gives up with OUTCOME_TIMEOUT; the job goes on', async () => {
    let now = 0;
    const c = client({ now: () => now, sleep: async (ms) => void (now += ms) });
    const later = await c.sendMessage({ phone: RECIPIENT, message: 'not yet', notBefore: new Date(Date.now() + 3600_000) });
    const err = await failsWith(() => c.waitForOutcome(later.jobId, { timeoutMs: 5_000, pollMs: 1_000 }), 'OUTCOME_TIMEOUT', 0);
    assert.deepEqual(err.data, { jobId: later.jobId, state: 'scheduled' });
    await c.cancelJob(later.jobId);
  });

  test('the webhook verifier accepts a real delivery and rejects a tampered or stale one', async () => {
    const got: { raw: Buffer; headers: http.IncomingHttpHeaders }[] = [];
    const receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got.push({ raw: Buffer.concat(chunks), headers: req.headers });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const secret = 'client-test-webhook-secret-0123';
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const put = await t.admin('PUT', `/admin/v1/instances/${instanceId}/webhook`, { url, secret, events: ['test'], allowPrivate: true });
      assert.equal(put.status, 200, put.text);
      assert.equal((await t.admin('POST', `/admin/v1/instances/${instanceId}/webhook/test`, {})).status < 300, true);
      const d = await waitFor(() => got[0], 'the test delivery');

      const ok = verifyWebhook({ rawBody: d.raw, headers: d.headers, secret });
      assert.equal(ok.ok, true);
      const event = parseWebhook({ rawBody: d.raw, headers: d.headers, secret });
      assert.equal(event.event, 'test');
      assert.equal(event.instanceId, instanceId);
      // a fetch-style Headers works as well
      const h = new Headers();
      for (const [k, v] of Object.entries(d.headers)) if (typeof v === 'string') h.set(k, v);
      assert.equal(verifyWebhook({ rawBody: d.raw.toString('utf8'), headers: h, secret }).ok, true);

      const tampered = Buffer.from(d.raw.toString('utf8').replace('"test"', '"tset"'));
      assert.deepEqual(verifyWebhook({ rawBody: tampered, headers: d.headers, secret }), { ok: false, reason: 'bad_signature' });
      assert.deepEqual(verifyWebhook({ rawBody: d.raw, headers: d.headers, secret: 'another-secret-0123456' }), { ok: false, reason: 'bad_signature' });
      const v2 = String(d.headers['x-webhook-signature-v2']);
      const t0 = Number(/t=(\d+)/.exec(v2)?.[1]);
      const forged = { ...d.headers, 'x-webhook-signature-v2': v2.replace(/t=\d+/, `t=${t0 + 1}`) };
      assert.deepEqual(verifyWebhook({ rawBody: d.raw, headers: forged, secret, now: t0 }), { ok: false, reason: 'bad_signature_v2' });
      const noV2 = { ...d.headers, 'x-webhook-signature-v2': undefined };
      assert.deepEqual(verifyWebhook({ rawBody: d.raw, headers: noV2, secret }), { ok: false, reason: 'malformed_signature_v2' });
      assert.deepEqual(verifyWebhook({ rawBody: d.raw, headers: d.headers, secret, now: t0 + 5 * 60_000 + 1 }), { ok: false, reason: 'stale' });
      assert.equal(verifyWebhook({ rawBody: d.raw, headers: d.headers, secret, now: t0 + 5 * 60_000 }).ok, true);
      assert.throws(() => parseWebhook({ rawBody: d.raw, headers: d.headers, secret, now: t0 + 3_600_000 }), (e: unknown) => e instanceof WebhookVerificationError && e.reason === 'stale');
    } finally {
      await t.admin('DELETE', `/admin/v1/instances/${instanceId}/webhook`);
      receiver.closeAllConnections();
      await new Promise<void>((r) => receiver.close(() => r()));
    }
  });
});

describe('client retry policy against a stub server', () => {
  const envelope = (status: number, code: string, data: Record<string, unknown> = {}): StubAnswer => ({ status, body: { success: false, error: code.toLowerCase(), code, data } });
  const accepted: StubAnswer = { status: 202, body: { success: true, data: { status: 'queued', jobId: 'wq_stub', idempotentReplay: false } } };

  test('504 INSTANCE_TIMEOUT without a key is never retried', async () => {
    const stub = await startStubServer(() => envelope(504, 'INSTANCE_TIMEOUT'));
    try {
      const { sleep, waits } = recordingSleep();
      const c = client({ baseUrl: stub.url, sleep });
      const err = await failsWith(() => c.sendMessage({ phone: RECIPIENT, message: 'x', idempotencyKey: null }), 'INSTANCE_TIMEOUT', 504);
      assert.equal(err.attempts, 1);
      assert.equal(stub.requests.length, 1);
      assert.equal(stub.requests[0]?.headers['x-idempotency-key'], undefined);
      assert.deepEqual(waits, []);
    } finally {
      await stub.close();
    }
  });

  test('504 INSTANCE_TIMEOUT with a key is retried (a replay), with the same key, bounded by maxAttempts', async () => {
    const stub = await startStubServer(() => envelope(504, 'INSTANCE_TIMEOUT'));
    try {
      const { sleep, waits } = recordingSleep();
      const c = client({ baseUrl: stub.url, sleep, retry: { maxAttempts: 3, baseDelayMs: 100 } });
      const err = await failsWith(() => c.sendMessage({ phone: RECIPIENT, message: 'x' }), 'INSTANCE_TIMEOUT', 504);
      assert.equal(err.attempts, 3);
      assert.equal(stub.requests.length, 3);
      const keys = new Set(stub.requests.map((r) => r.headers['x-idempotency-key']));
      assert.equal(keys.size, 1);
      assert.equal([...keys][0], err.idempotencyKey);
      assert.deepEqual(new Set(stub.requests.map((r) => r.body)).size, 1, 'the same body every time');
      // exponential backoff with jitter (random() = 0.5): ceilings 100, 200 → waits in [c/2, c]
      assert.deepEqual(waits, [75, 150]);
    } finally {
      await stub.close();
    }
  });

  test('503 QUEUE_PAUSED is retried after data.retryAfterSeconds; 502 INSTANCE_UNREACHABLE at once with backoff', async () => {
    const script = [envelope(503, 'QUEUE_PAUSED', { retryAfterSeconds: 60 }), envelope(502, 'INSTANCE_UNREACHABLE'), accepted];
    const stub = await startStubServer((n) => script[n] ?? accepted);
    try {
      const { sleep, waits } = recordingSleep();
      const c = client({ baseUrl: stub.url, sleep, random: () => 0, retry: { baseDelayMs: 100 } });
      const a = await c.sendMessage({ phone: RECIPIENT, message: 'x', idempotencyKey: null });
      assert.equal(a.jobId, 'wq_stub');
      assert.equal(stub.requests.length, 3);
      assert.deepEqual(waits, [60_000, 100]);
    } finally {
      await stub.close();
    }
  });

  test('final answers are not retried: 503 INSTANCE_OFFLINE, 422 QUEUE_FULL, 500 WA_CALL_FAILED; a read is retried on 504', async () => {
    for (const [status, code] of [[503, 'INSTANCE_OFFLINE'], [422, 'QUEUE_FULL'], [500, 'WA_CALL_FAILED'], [503, 'QUEUE_STORE_UNAVAILABLE']] as const) {
      const stub = await startStubServer(() => envelope(status, code, code === 'QUEUE_FULL' ? { maxPending: 5000 } : {}));
      try {
        await failsWith(() => client({ baseUrl: stub.url }).sendMessage({ phone: RECIPIENT, message: 'x' }), code, status);
        assert.equal(stub.requests.length, 1, code);
      } finally {
        await stub.close();
      }
    }
    const stub = await startStubServer((n) => (n === 0 ? envelope(504, 'INSTANCE_TIMEOUT') : { status: 200, body: { success: true, data: { id: 'c', name: 'n' } } }));
    try {
      assert.equal((await client({ baseUrl: stub.url }).getChat('4915112340077@c.us')).id, 'c');
      assert.equal(stub.requests.length, 2);
      assert.equal(stub.requests[0]?.url, '/api/v2/chats/4915112340077@c.us');
    } finally {
      await stub.close();
    }
  });

  test('a refused connection is retried even without a key (nothing was sent); answers without the envelope are INVALID_RESPONSE', async () => {
    const stub = await startStubServer(() => accepted);
    const url = stub.url;
    await stub.close(); // nothing listens there now
    const retries: RetryInfo[] = [];
    const err = await failsWith(() => client({ baseUrl: url, onRetry: (i) => retries.push(i), retry: { maxAttempts: 2 } }).sendMessage({ phone: RECIPIENT, message: 'x', idempotencyKey: null }), 'NO_RESPONSE', 0);
    assert.equal(err.attempts, 2);
    assert.equal(retries.length, 1);
    assert.ok(!err.message.includes('127.0.0.1'), 'the error text names no address');

    const html = await startStubServer(() => ({ status: 413, body: '<html>too large</html>' }));
    try {
      await failsWith(() => client({ baseUrl: html.url }).sendMessage({ phone: RECIPIENT, message: 'x' }), 'INVALID_RESPONSE', 413);
      assert.equal(html.requests.length, 1);
    } finally {
      await html.close();
    }
  });
});
