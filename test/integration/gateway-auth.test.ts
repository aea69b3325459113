/**
 * Authentication and isolation over the whole gateway (SPEC.md "Authentication", "Health object"): real HTTP,
 * real PostgreSQL, the in-process sandbox network. The instance of a request comes from its key only, so a key
 * of instance A never reaches instance B's jobs, media, messages or chats.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startTestGateway, type ApiResponse, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway;
let A: { id: string; key: string; phone: string };
let B: { id: string; key: string; phone: string };
/** what B owns: a queue job that was sent, a waiting job, an uploaded file, a network message and its chat */
let bSentJob: string;
let bWaitingJob: string;
let bIdemKey: string;
let bMedia: string;
let bMessageId: string;
const RECIPIENT = '4915112340001';
const FAST = { minDelayMs: 1000, maxDelayMs: 1000, quietHours: null, maxPerHour: null, maxPer24h: null };

before(async () => {
  t = await startTestGateway({ label: 'gw_auth', simulated: true });
  const a = await t.createInstance('alpha', { settings: FAST });
  const b = await t.createInstance('bravo', { settings: FAST });
  A = { id: a.instance.id, key: a.apiKey, phone: a.phone };
  B = { id: b.instance.id, key: b.apiKey, phone: b.phone };

  bIdemKey = 'bravo-order-0001';
  const sent = await t.api(B.key, 'POST', '/api/v2/send-message', { phone: RECIPIENT, message: 'from bravo' }, { 'X-Idempotency-Key': bIdemKey });
  assert.equal(sent.status, 202, sent.text);
  bSentJob = String(sent.body.data?.jobId);
  const done = await t.advanceUntil(async () => {
    const j = await t.api(B.key, 'GET', `/api/v2/messages/${bSentJob}`);
    return j.body.data?.state === 'sent' ? j.body.data : null;
  }, 'bravo job sent', { maxMs: 60_000 });
  bMessageId = String(done.messageId);

  // far in the future, so it stays waiting while the tests run
  const later = new Date(t.clock.now() + 6 * 3_600_000).toISOString();
  const waiting = await t.api(B.key, 'POST', '/api/v2/send-message', { phone: RECIPIENT, message: 'later', notBefore: later });
  assert.equal(waiting.status, 202, waiting.text);
  bWaitingJob = String(waiting.body.data?.jobId);

  const form = new FormData();
  form.append('file', new Blob([Buffer.from('bravo private bytes')], { type: 'text/plain' }), 'bravo.txt');
  const up = await fetch(`${t.url}/api/v2/media`, { method: 'POST', headers: { authorization: `Bearer ${B.key}` }, body: form });
  const upBody = (await up.json()) as { data: { mediaId: string } };
  assert.equal(up.status, 201, JSON.stringify(upBody));
  bMedia = upBody.data.mediaId;
});
after(async () => {
  await t.stop();
});

async function raw(method: string, route: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string; body: Record<string, unknown> }> {
  const res = await fetch(`${t.url}${route}`, { method, headers });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Record<string, unknown> };
}

function assertError(r: ApiResponse | { status: number; text: string; body: Record<string, unknown> }, status: number, code: string): void {
  assert.equal(r.status, status, r.text);
  const b = r.body as Record<string, unknown>;
  assert.equal(b.success, false, r.text);
  assert.equal(b.code, code, r.text);
  assert.equal(typeof b.error, 'string', r.text);
  assert.ok(b.data !== null && typeof b.data === 'object', `an error envelope carries data: ${r.text}`);
}

/** A request with the Authorization header sent once per value, in that order (fetch would join them into one). */
function withAuthorizations(method: string, route: string, values: string[]): Promise<{ status: number; text: string; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${t.url}${route}`, { method, headers: ['host', new URL(t.url).host, ...values.flatMap((v) => ['authorization', v])] }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, body: (text.startsWith('{') ? JSON.parse(text) : {}) as Record<string, unknown> }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('two Authorization headers are malformed (401 UNAUTHORIZED), whichever of them is valid and on every family', async () => {
  // node keeps the first and drops the rest: a proxy in front that reads the last saw other credentials
  const admin = `Bearer ${t.adminToken}`;
  const cases: [string, string, string][] = [['GET', '/api/status', `Bearer ${A.key}`], ['GET', '/admin/v1/instances', admin], ['GET', '/metrics', admin]];
  for (const [method, route, good] of cases) {
    for (const values of [[good, 'Bearer nope'], ['Bearer nope', good], [good, good]]) {
      assertError(await withAuthorizations(method, route, values), 401, 'UNAUTHORIZED');
    }
    const once = await withAuthorizations(method, route, [good]);
    assert.equal(once.status, 200, `${route} with one: ${once.text.slice(0, 200)}`);
  }
});

test('GET /health without auth: the Health object, counts only, no instance id or name', async () => {
  const r = await raw('GET', '/health');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.body).sort(), ['instances', 'queue', 'service', 'success', 'timestamp', 'version']);
  assert.equal(r.body.success, true);
  assert.equal(typeof r.body.service, 'string');
  assert.match(String(r.body.version), /^\d+\.\d+\.\d+/);
  assert.equal(new Date(String(r.body.timestamp)).toISOString(), r.body.timestamp);
  const instances = r.body.instances as Record<string, unknown>;
  assert.deepEqual(Object.keys(instances).sort(), ['degraded', 'offline', 'online', 'quarantined', 'starting', 'total']);
  for (const v of Object.values(instances)) assert.ok(Number.isInteger(v), r.text);
  assert.equal(instances.total, 2);
  assert.equal(instances.online, 2);
  assert.deepEqual(r.body.queue, { degraded: 0 });
  for (const secretOrId of [A.id, B.id, 'alpha', 'bravo', A.phone, B.phone, A.key, B.key, t.adminToken]) {
    assert.ok(!r.text.includes(secretOrId), 'the health body names no instance and carries no secret');
  }
  // an instance key or the admin token changes nothing: the same counts for everyone
  const withKey = await raw('GET', '/health', { authorization: `Bearer ${A.key}` });
  assert.deepEqual(withKey.body.instances, r.body.instances);
});

test('401 UNAUTHORIZED without or with a malformed header; 401 INVALID_API_KEY for an unknown key', async () => {
  assertError(await raw('GET', '/api/status'), 401, 'UNAUTHORIZED');
  for (const header of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer ', A.key, `Bearer ${A.key} extra`, 'bearer:x']) {
    assertError(await raw('GET', '/api/status', { authorization: header }), 401, 'UNAUTHORIZED');
  }
  assertError(await raw('GET', '/api/status', { authorization: 'Bearer wapi_alpha_0000000000000000000000000000' }), 401, 'INVALID_API_KEY');
  // the right shape with one character changed is still unknown
  const flipped = A.key.slice(0, -1) + (A.key.endsWith('A') ? 'B' : 'A');
  assertError(await raw('GET', '/api/status', { authorization: `Bearer ${flipped}` }), 401, 'INVALID_API_KEY');
  // a bearer token that is not an instance key at all (the admin token) is not an API key
  assertError(await raw('GET', '/api/status', { authorization: `Bearer ${t.adminToken}` }), 401, 'INVALID_API_KEY');
  // every instance route sits behind the same check, v1 and v2
  const routes: [string, string][] = [['GET', '/api/qr'], ['POST', '/api/v2/send-message'], ['GET', `/api/v2/messages/${bSentJob}`], ['GET', `/api/v2/media/${bMedia}`], ['GET', '/api/v2/queue']];
  for (const [method, route] of routes) {
    assertError(await raw(method, route), 401, 'UNAUTHORIZED');
    assertError(await raw(method, route, { authorization: 'Bearer wapi_bravo_0000000000000000000000000000' }), 401, 'INVALID_API_KEY');
  }
  // the key is never echoed back
  const r = await raw('GET', '/api/status', { authorization: `Bearer ${flipped}` });
  assert.ok(!r.text.includes(flipped));
});

test("A's key never reaches B's jobs: 404 JOB_NOT_FOUND by id, by idempotency key, on cancel and requeue", async () => {
  // B sees its own
  assert.equal((await t.api(B.key, 'GET', `/api/v2/messages/${bSentJob}`)).status, 200);
  assertError(await t.api(A.key, 'GET', `/api/v2/messages/${bSentJob}`), 404, 'JOB_NOT_FOUND');
  assertError(await t.api(A.key, 'GET', `/api/v2/messages/${bWaitingJob}`), 404, 'JOB_NOT_FOUND');
  assertError(await t.api(A.key, 'GET', `/api/v2/messages?idempotencyKey=${bIdemKey}`), 404, 'JOB_NOT_FOUND');
  assertError(await t.api(A.key, 'DELETE', `/api/v2/messages/${bWaitingJob}`), 404, 'JOB_NOT_FOUND');
  assertError(await t.api(A.key, 'POST', `/api/v2/messages/${bSentJob}/requeue`), 404, 'JOB_NOT_FOUND');
  // the refused cancel changed nothing on B's side
  const still = await t.api(B.key, 'GET', `/api/v2/messages/${bWaitingJob}`);
  assert.equal(still.status, 200, still.text);
  assert.notEqual(still.body.data?.state, 'cancelled');
  // A's lists and counts hold none of B's jobs
  const items = await t.api(A.key, 'GET', '/api/v2/queue/items');
  assert.equal(items.status, 200, items.text);
  assert.deepEqual(items.body.data?.items, []);
  const queue = await t.api(A.key, 'GET', '/api/v2/queue');
  assert.deepEqual(queue.body.data?.counts, { queued: 0, scheduled: 0, sending: 0, sent24h: 0, failed24h: 0, unknown24h: 0 });
  const status = await t.api(A.key, 'GET', '/api/status');
  assert.equal((status.body.data?.queue as Record<string, unknown>).sent24h, 0);
  assert.equal((status.body.data?.messages as Record<string, unknown>).sent, 0);
  // the same idempotency key under A is A's own, a new job (keys are scoped per instance)
  const mine = await t.api(A.key, 'POST', '/api/v2/send-message', { phone: RECIPIENT, message: 'from alpha' }, { 'X-Idempotency-Key': bIdemKey });
  assert.equal(mine.status, 202, mine.text);
  assert.equal(mine.body.data?.idempotentReplay, false);
  assert.notEqual(mine.body.data?.jobId, bSentJob);
  assertError(await t.api(B.key, 'GET', `/api/v2/messages/${String(mine.body.data?.jobId)}`), 404, 'JOB_NOT_FOUND');
  await t.api(A.key, 'DELETE', `/api/v2/messages/${String(mine.body.data?.jobId)}`);
});

test("A's key never reaches B's media: 404 MEDIA_NOT_FOUND on metadata, download, delete and as a send source", async () => {
  assert.equal((await t.api(B.key, 'GET', `/api/v2/media/${bMedia}`)).status, 200);
  assertError(await t.api(A.key, 'GET', `/api/v2/media/${bMedia}`), 404, 'MEDIA_NOT_FOUND');
  const dl = await t.api(A.key, 'GET', `/api/v2/media/${bMedia}?download=1`);
  assertError(dl, 404, 'MEDIA_NOT_FOUND');
  assert.ok(!dl.text.includes('bravo private bytes'));
  assertError(await t.api(A.key, 'DELETE', `/api/v2/media/${bMedia}`), 404, 'MEDIA_NOT_FOUND');
  assertError(await t.api(A.key, 'POST', '/api/v2/send-media', { phone: RECIPIENT, mediaId: bMedia }), 404, 'MEDIA_NOT_FOUND');
  // still there for B
  const own = await t.api(B.key, 'GET', `/api/v2/media/${bMedia}?download=1`);
  assert.equal(own.status, 200);
  assert.equal(own.text, 'bravo private bytes');
});

test("A's key never reaches B's network messages or chats", async () => {
  assert.equal((await t.api(B.key, 'GET', `/api/v2/messages/${encodeURIComponent(bMessageId)}`)).status, 200);
  assertError(await t.api(A.key, 'GET', `/api/v2/messages/${encodeURIComponent(bMessageId)}`), 404, 'MESSAGE_NOT_FOUND');
  const chatId = `${RECIPIENT}@c.us`;
  assert.equal((await t.api(B.key, 'GET', `/api/v2/chats/${chatId}`)).status, 200);
  assertError(await t.api(A.key, 'GET', `/api/v2/chats/${chatId}/messages`), 404, 'CHAT_NOT_FOUND');
  const chats = await t.api(A.key, 'GET', '/api/v2/chats');
  assert.equal(chats.status, 200, chats.text);
  assert.ok(!chats.text.includes('from bravo'));
});

test('there is no way to name B from A: ids in query, headers or body are ignored, the key decides', async () => {
  const naming = { 'X-Instance-Id': B.id, 'X-Instance': 'bravo', 'X-Instance-Name': 'bravo' };
  const s = await t.api(A.key, 'GET', `/api/status?instanceId=${B.id}&instance=bravo`, undefined, naming);
  assert.equal(s.status, 200, s.text);
  assert.equal(s.body.data?.phoneNumber, A.phone);
  const q = await t.api(A.key, 'GET', `/api/qr?instanceId=${B.id}`, undefined, naming);
  assert.equal(q.body.data?.phoneNumber, A.phone);
  const job = await t.api(A.key, 'POST', `/api/v2/send-message?instanceId=${B.id}`, { phone: RECIPIENT, message: 'named', instanceId: B.id }, naming);
  // an unknown body field is either ignored or refused; either way the job is never B's
  if (job.status === 202) {
    const id = String(job.body.data?.jobId);
    assertError(await t.api(B.key, 'GET', `/api/v2/messages/${id}`), 404, 'JOB_NOT_FOUND');
    assert.equal((await t.api(A.key, 'GET', `/api/v2/messages/${id}`)).status, 200);
    await t.api(A.key, 'DELETE', `/api/v2/messages/${id}`);
  } else {
    assertError(job, 400, 'VALIDATION_FAILED');
  }
  // the key's name part is not the instance either: B's name with A's random part is unknown
  // names hold no `_`, so the random part (which may) is everything after `wapi_<name>_`
  const grafted = `wapi_bravo_${A.key.split('_').slice(2).join('_')}`;
  assertError(await raw('GET', '/api/status', { authorization: `Bearer ${grafted}` }), 401, 'INVALID_API_KEY');
});

test('admin and debug routes: 401 without a token, 403 with an instance key', async () => {
  const routes: [string, string][] = [
    ['GET', '/admin/v1/instances'],
    ['GET', `/admin/v1/instances/${B.id}`],
    ['PATCH', `/admin/v1/instances/${A.id}`],
    ['DELETE', `/admin/v1/instances/${B.id}`],
    ['POST', `/admin/v1/instances/${A.id}/keys`],
    ['POST', `/admin/v1/instances/${B.id}/restart`],
    ['POST', `/admin/v1/instances/${B.id}/logout`],
    ['GET', `/admin/v1/instances/${B.id}/webhook`],
    ['GET', '/debug/actors'],
    ['GET', `/sandbox/v1/instances/${B.id}`],
  ];
  for (const [method, route] of routes) {
    assertError(await raw(method, route), 401, 'UNAUTHORIZED');
    assertError(await raw(method, route, { authorization: `Bearer ${A.key}` }), 403, 'FORBIDDEN');
    assertError(await raw(method, route, { authorization: 'Bearer not-the-admin-token-at-all' }), 401, 'UNAUTHORIZED');
  }
  // nothing happened to B through those refused calls
  const b = await t.admin('GET', `/admin/v1/instances/${B.id}`);
  assert.equal(b.status, 200, b.text);
  assert.equal(b.body.data?.status, 'connected');
  assert.equal((await t.api(B.key, 'GET', '/api/status')).status, 200);
});

test('a rotated key stops working at once; the new one works', async () => {
  const before = await t.api(A.key, 'GET', '/api/status');
  assert.equal(before.status, 200);
  const r = await t.admin('POST', `/admin/v1/instances/${A.id}/keys`);
  assert.equal(r.status, 201, r.text);
  assert.equal(r.headers.get('cache-control'), 'no-store', 'an answer carrying a key is kept by no cache');
  const created = await t.admin('POST', '/admin/v1/instances', { name: 'no-store', driver: 'sandbox' });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.headers.get('cache-control'), 'no-store');
  const fresh = String(r.body.data?.apiKey);
  assert.match(fresh, /^wapi_alpha_[A-Za-z0-9_-]{16,}$/);
  assert.notEqual(fresh, A.key);
  // no time passes: the old key's cached resolution must not outlive the rotation
  assertError(await t.api(A.key, 'GET', '/api/status'), 401, 'INVALID_API_KEY');
  assertError(await t.api(A.key, 'POST', '/api/v2/send-message', { phone: RECIPIENT, message: 'old key' }), 401, 'INVALID_API_KEY');
  const now = await t.api(fresh, 'GET', '/api/status');
  assert.equal(now.status, 200, now.text);
  assert.equal(now.body.data?.phoneNumber, A.phone);
  // B is untouched by A's rotation
  assert.equal((await t.api(B.key, 'GET', '/api/status')).status, 200);
  A = { ...A, key: fresh };
});
