/**
 * An idempotent retry is the 200 replay of its job (SPEC.md idempotency rule 1) also where a first send would now
 * be refused for reasons that do not touch the job (found from the outside):
 * - a media send whose stored media is gone (deleted, or expired: media lives 72 h, keys 7 days) was answered
 *   404 MEDIA_NOT_FOUND, which says there is no such target, while its job had been sent;
 * - the instance's queue switched off by the operator (`enabled` false) was answered 503 QUEUE_STORE_UNAVAILABLE,
 *   which the API notes say means no job was created, so a client would send the message again.
 * A new key is refused as before in both cases. Real HTTP, real PostgreSQL, the sandbox network.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestGateway, unlinkUntilOffline, type TestGateway } from '../helpers/gateway.js';
import { NEEDS_SERVER } from '../helpers/db.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'replay_despite' });
});
after(async () => {
  await t.stop();
});

const SETTINGS = { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null };

type Answer = Awaited<ReturnType<TestGateway['api']>>;

/** The 200 replay of the job `first` accepted. */
function isReplayOf(r: Answer, first: Answer): void {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data?.idempotentReplay, true);
  assert.equal(r.body.data?.jobId, first.body.data?.jobId);
}

/** Rule 2's 409: the key names the job `first` accepted, of another payload. */
function isMismatchOf(r: Answer, first: Answer): void {
  assert.equal(r.status, 409, r.text);
  assert.equal(r.body.code, 'IDEMPOTENCY_PAYLOAD_MISMATCH');
  assert.equal((r.body.data as { jobId?: string }).jobId, first.body.data?.jobId);
}

test('a keyed send-media whose stored media was deleted since: its retry is the 200 replay, another caption 409, a new key still 404', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('media-gone', { settings: SETTINGS });
  const form = new FormData();
  form.append('file', new Blob([Buffer.from('hello, a file')], { type: 'text/plain' }), 'note.txt');
  const up = await fetch(`${t.url}/api/v2/media`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form });
  const uploaded = (await up.json()) as { data: { mediaId: string } };
  assert.equal(up.status, 201, JSON.stringify(uploaded));
  const mediaId = uploaded.data.mediaId;
  const body = { phone: '4915112345678', mediaId, caption: 'the file', idempotencyKey: 'media-gone-0001' };
  const first = await t.api(apiKey, 'POST', '/api/v2/send-media', body);
  assert.equal(first.status, 202, first.text);
  const gone = await t.api(apiKey, 'DELETE', `/api/v2/media/${mediaId}`);
  assert.equal(gone.status, 200, gone.text);

  isReplayOf(await t.api(apiKey, 'POST', '/api/v2/send-media', body), first);
  isMismatchOf(await t.api(apiKey, 'POST', '/api/v2/send-media', { ...body, caption: 'another caption' }), first);
  const fresh = await t.api(apiKey, 'POST', '/api/v2/send-media', { ...body, idempotencyKey: 'media-gone-0002' });
  assert.equal(fresh.status, 404, fresh.text);
  assert.equal(fresh.body.code, 'MEDIA_NOT_FOUND');
  const unkeyed = await t.api(apiKey, 'POST', '/api/v2/send-media', { phone: body.phone, mediaId });
  assert.equal(unkeyed.status, 404, unkeyed.text);

  // the key table held by another session past the store's deadline: the retry cannot be looked up, and is not
  // told 404 (no job has the key) but that the store did not answer (found by the probe of the fix)
  const holder = new pg.Client(t.db.config);
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE idempotency_keys IN ACCESS EXCLUSIVE MODE');
    const blind = await t.api(apiKey, 'POST', '/api/v2/send-media', body);
    assert.ok(['QUEUE_STORE_UNAVAILABLE', 'INSTANCE_TIMEOUT'].includes(String(blind.body.code)), blind.text);
  } finally {
    await holder.query('ROLLBACK');
    await holder.end();
  }

  // offline: the replay, and rule 2's 409 for another payload (found by the probe of the fix: 503 INSTANCE_OFFLINE,
  // which says no job has the key)
  await unlinkUntilOffline(t, instance.id, apiKey);
  isReplayOf(await t.api(apiKey, 'POST', '/api/v2/send-media', body), first);
  isMismatchOf(await t.api(apiKey, 'POST', '/api/v2/send-media', { ...body, caption: 'another caption' }), first);
});

test('a keyed send retried after the queue was switched off: the 200 replay; a new key 503 QUEUE_STORE_UNAVAILABLE as before', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('queue-off', { settings: SETTINGS });
  const body = { phone: '4915112345678', message: 'before the switch', idempotencyKey: 'queue-off-0001' };
  const first = await t.api(apiKey, 'POST', '/api/v2/send-message', body);
  assert.equal(first.status, 202, first.text);
  const off = await t.admin('PATCH', `/admin/v1/instances/${instance.id}`, { settings: { enabled: false } });
  assert.equal(off.status, 200, off.text);

  isReplayOf(await t.api(apiKey, 'POST', '/api/v2/send-message', body), first);
  isMismatchOf(await t.api(apiKey, 'POST', '/api/v2/send-message', { ...body, message: 'changed' }), first);
  const fresh = await t.api(apiKey, 'POST', '/api/v2/send-message', { ...body, idempotencyKey: 'queue-off-0002' });
  assert.equal(fresh.status, 503, fresh.text);
  assert.equal(fresh.body.code, 'QUEUE_STORE_UNAVAILABLE');
  assert.equal(fresh.body.data?.queueMode, 'disabled');
});

test('a requeue repeated after the queue was switched off is the 200 replay of the first (found by the probe of the fix: 503)', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('requeue-off', { settings: { ...SETTINGS, minDelayMs: 600_000, maxDelayMs: 600_000 } });
  const first = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'to requeue' });
  const second = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'waits' });
  assert.equal(second.status, 202, second.text);
  // the second waits ten minutes behind the first: cancelled, it can be requeued
  const jobId = String(second.body.data?.jobId);
  assert.equal((await t.api(apiKey, 'DELETE', `/api/v2/messages/${jobId}`)).status, 200);
  const requeued = await t.api(apiKey, 'POST', `/api/v2/messages/${jobId}/requeue`);
  assert.equal(requeued.status, 202, requeued.text);
  assert.equal((await t.admin('PATCH', `/admin/v1/instances/${instance.id}`, { settings: { enabled: false } })).status, 200);
  const again = await t.api(apiKey, 'POST', `/api/v2/messages/${jobId}/requeue`);
  isReplayOf(again, requeued);
  assert.equal(again.body.data?.previousJobId, jobId);
  assert.ok(first.status === 202);
});

test('a requeue of a media job whose stored media was deleted is refused as a send of it is (404), nothing created; a repeated requeue is the 200 replay; the admin route too', NEEDS_SERVER, async () => {
  // found from the outside: the requeue answered 202 and its new job failed at dispatch ("media not found")
  const { instance, apiKey } = await t.createInstance('requeue-media', { settings: { ...SETTINGS, minDelayMs: 600_000, maxDelayMs: 600_000 } });
  const upload = async () => {
    const form = new FormData();
    form.append('file', new Blob([Buffer.from('a file to requeue')], { type: 'text/plain' }), 'note.txt');
    const up = await fetch(`${t.url}/api/v2/media`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form });
    assert.equal(up.status, 201);
    return ((await up.json()) as { data: { mediaId: string } }).data.mediaId;
  };
  // a first send holds the lane for ten minutes: the media jobs behind it wait, and can be cancelled
  assert.equal((await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'first' })).status, 202);
  const cancelledWith = async (mediaId: string) => {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-media', { phone: '4915112345678', mediaId, caption: 'to requeue' });
    assert.equal(r.status, 202, r.text);
    const jobId = String(r.body.data?.jobId);
    assert.equal((await t.api(apiKey, 'DELETE', `/api/v2/messages/${jobId}`)).status, 200);
    return jobId;
  };
  const pending = async () => {
    const counts = (await t.api(apiKey, 'GET', '/api/v2/queue')).body.data?.counts as { scheduled: number; queued: number };
    return counts.scheduled + counts.queued;
  };

  // the media deleted before the requeue: refused, nothing queued (the key route and the operator's alike)
  const gone = await upload();
  const jobA = await cancelledWith(gone);
  assert.equal((await t.api(apiKey, 'DELETE', `/api/v2/media/${gone}`)).status, 200);
  const before = await pending();
  const refused = await t.api(apiKey, 'POST', `/api/v2/messages/${jobA}/requeue`);
  assert.equal(refused.status, 404, refused.text);
  assert.equal(refused.body.code, 'MEDIA_NOT_FOUND');
  const byOperator = await t.admin('POST', `/admin/v1/instances/${instance.id}/messages/${jobA}/requeue`);
  assert.equal(byOperator.status, 404, byOperator.text);
  assert.equal(byOperator.body.code, 'MEDIA_NOT_FOUND');
  assert.equal(await pending(), before, 'nothing was queued');

  // requeued while the media was there, then the media deleted: the repeated requeue is the first one's replay
  const kept = await upload();
  const jobB = await cancelledWith(kept);
  const requeued = await t.api(apiKey, 'POST', `/api/v2/messages/${jobB}/requeue`);
  assert.equal(requeued.status, 202, requeued.text);
  assert.equal((await t.api(apiKey, 'DELETE', `/api/v2/media/${kept}`)).status, 200);
  const again = await t.api(apiKey, 'POST', `/api/v2/messages/${jobB}/requeue`);
  isReplayOf(again, requeued);
  assert.equal(again.body.data?.previousJobId, jobB);
});
