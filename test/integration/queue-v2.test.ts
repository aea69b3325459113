/**
 * The persistent queue end to end: real HTTP, real PostgreSQL, the in-process sandbox network, simulated time.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'queue_v2', simulated: true });
});
after(async () => {
  await t.stop();
});

const FAST = { minDelayMs: 1000, maxDelayMs: 1000, quietHours: null, maxPerHour: null, maxPer24h: null };

async function ledger(instanceId: string) {
  const r = await t.admin('GET', `/sandbox/v1/instances/${instanceId}/ledger`);
  return (r.body.data as { items: { chatId: string; body: string | null; action: string; messageId: string | null }[] }).items;
}

async function job(key: string, jobId: string) {
  const r = await t.api(key, 'GET', `/api/v2/messages/${jobId}`);
  assert.equal(r.status, 200, r.text);
  return r.body.data as Record<string, unknown>;
}

/** Let simulated time run (1 s steps) until the job is in `state`. */
async function untilState(key: string, jobId: string, state: string, maxMs = 3_700_000) {
  return t.advanceUntil(async () => {
    const j = await job(key, jobId);
    return j.state === state ? j : null;
  }, `${jobId} ${state}`, { maxMs });
}

test('send-message: 202 with the accepted-job response, then sent/confirmed at its slot, once', async () => {
  const { instance, apiKey } = await t.createInstance('q1', { settings: FAST });
  const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'hello' });
  assert.equal(r.status, 202, r.text);
  const d = r.body.data as Record<string, unknown>;
  for (const k of ['status', 'queueState', 'jobId', 'messageId', 'idempotencyKey', 'idempotentReplay', 'scheduledAt', 'etaSeconds', 'queuePosition', 'expiresAt', 'statusUrl', 'limits']) {
    assert.ok(k in d, `accepted response has ${k}`);
  }
  assert.equal(d.status, 'queued');
  assert.equal(d.queueState, 'scheduled');
  assert.match(String(d.jobId), /^wq_/);
  assert.equal(d.messageId, null);
  assert.equal(d.idempotentReplay, false);
  assert.equal(d.statusUrl, `/api/v2/messages/${d.jobId}`);
  assert.equal(d.queuePosition, 1);
  assert.equal(Date.parse(String(d.expiresAt)) - t.clock.now(), 86_400_000);
  const limits = d.limits as Record<string, unknown>;
  assert.deepEqual(Object.keys(limits).sort(), ['maxDelayMs', 'maxPer24h', 'maxPerHour', 'minDelayMs', 'quietHours', 'remaining24h', 'remainingHour', 'usedLast24h', 'usedLastHour', 'window'].sort());
  assert.equal(limits.window, 'sliding');

  await t.advance(2_000);
  const done = await untilState(apiKey, String(d.jobId), 'sent');
  assert.equal(done.deliveryConfidence, 'confirmed');
  assert.match(String(done.messageId), /^true_4915112345678@c\.us_/);
  assert.equal(done.attempts, 1);
  assert.equal(done.kind, 'text');
  assert.equal(done.originRoute, '/api/v2/send-message');
  await t.advance(10_000);
  const sent = (await ledger(instance.id)).filter((e) => e.body === 'hello');
  assert.equal(sent.length, 1, 'the network received the message exactly once');
});

test('order: priority descending, then arrival; limits move when, never which', async () => {
  const { instance, apiKey } = await t.createInstance('q2', { settings: FAST });
  const ids: string[] = [];
  for (const [prio, text] of [[5, 'a5'], [9, 'b9'], [5, 'c5'], [7, 'd7']] as const) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: text, priority: prio });
    assert.equal(r.status, 202, r.text);
    ids.push(String((r.body.data as { jobId: string }).jobId));
  }
  await t.advance(10_000);
  for (const id of ids) await untilState(apiKey, id, 'sent');
  const order = (await ledger(instance.id)).map((e) => e.body);
  assert.deepEqual(order, ['b9', 'd7', 'a5', 'c5']);
});

test('sliding hourly window: the third message waits for oldest + 1 h + 1 ms', async () => {
  const { apiKey } = await t.createInstance('q3', { settings: { ...FAST, maxPerHour: 2 } });
  const ids: string[] = [];
  for (const text of ['w1', 'w2', 'w3']) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: text });
    assert.equal(r.status, 202, r.text);
    ids.push(String((r.body.data as { jobId: string }).jobId));
  }
  await t.advance(3_000);
  const first = await untilState(apiKey, ids[0] as string, 'sent');
  await untilState(apiKey, ids[1] as string, 'sent');
  const third = await job(apiKey, ids[2] as string);
  assert.equal(third.state, 'scheduled');
  // oldest in the window + 1 h + 1 ms: planned at acceptance from the first message's slot, or, when a re-plan
  // followed (its claim came a step of the simulated clock after its slot, on a busy machine), from its claim
  const third0 = Date.parse(String(third.scheduledAt));
  assert.ok([first.scheduledAt, first.dispatchedAt].map((x) => Date.parse(String(x)) + 3_600_000 + 1).includes(third0), `${third0}`);
  const q = await t.api(apiKey, 'GET', '/api/v2/queue');
  const limits = (q.body.data as { limits: Record<string, unknown> }).limits;
  assert.equal(limits.usedLastHour, 2);
  assert.equal(limits.remainingHour, 0);
  // and the window holds against the actual dispatch instants (the dispatcher re-checks at the slot)
  const sent3 = await untilState(apiKey, ids[2] as string, 'sent');
  assert.ok(Date.parse(String(sent3.dispatchedAt)) > Date.parse(String(first.dispatchedAt)) + 3_600_000);
});

test('TTL_UNREACHABLE when the earliest slot is after expiry; nothing is created', async () => {
  const { apiKey } = await t.createInstance('q4', { settings: { ...FAST, maxPerHour: 1 } });
  const a = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'fits', ttlSeconds: 60 });
  assert.equal(a.status, 202);
  const b = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'too late', ttlSeconds: 60 });
  assert.equal(b.status, 422, b.text);
  assert.equal(b.body.code, 'TTL_UNREACHABLE');
  assert.equal(Date.parse(String(b.body.data?.expiresAt)), t.clock.now() + 60_000);
  const items = await t.api(apiKey, 'GET', '/api/v2/queue/items');
  assert.equal((items.body.data as { items: unknown[] }).items.length, 1);
});

test('idempotency: the same media bytes are the same payload, however the base64 is wrapped or padded', async () => {
  // found from the outside: without `=` padding the same bytes were 409 IDEMPOTENCY_PAYLOAD_MISMATCH, while a
  // line-wrapped spelling replayed with 200
  const { apiKey } = await t.createInstance('q5b64', { settings: FAST });
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
  const send = (mediaBase64: string) =>
    t.api(apiKey, 'POST', '/api/v2/send-media', { phone: '4915112345678', mediaBase64, mimetype: 'image/png', idempotencyKey: 'media-b64-once' });
  const first = await send(PNG);
  assert.equal(first.status, 202, first.text);
  const jobId = first.body.data?.jobId;
  const wrapped = PNG.replace(/(.{20})/g, '$1\r\n');
  // the last group written with bits the bytes do not have ('Jggg' → 'Jggh') decodes to the same bytes too
  for (const spelling of [PNG.replace(/=+$/, ''), wrapped, wrapped.replace(/=+$/, ''), PNG.replace(/g==$/, 'h==')]) {
    const again = await send(spelling);
    assert.equal(again.status, 200, `${JSON.stringify(spelling.slice(-8))}: ${again.text}`);
    assert.equal(again.body.data?.jobId, jobId);
    assert.equal(again.body.data?.idempotentReplay, true);
  }
  // other bytes are another payload; a wrong padding is still not base64
  const other = await send(PNG.replace('iVBOR', 'iVBOQ'));
  assert.equal(other.status, 409, other.text);
  assert.equal(other.body.code, 'IDEMPOTENCY_PAYLOAD_MISMATCH');
  const badPadding = await send(`${PNG.replace(/=+$/, '')}=`);
  assert.equal(badPadding.status, 400, badPadding.text);
  assert.equal(badPadding.body.data?.field, 'mediaBase64');
});

test('idempotency: replay 200 with the current state, mismatch 409, header/body conflict 400, lookup by key', async () => {
  const { apiKey } = await t.createInstance('q5', { settings: FAST });
  const body = { phone: '4915112345678', message: 'once', idempotencyKey: 'order-4711-confirm' };
  const first = await t.api(apiKey, 'POST', '/api/v2/send-message', body);
  assert.equal(first.status, 202);
  const jobId = String((first.body.data as { jobId: string }).jobId);
  const again = await t.api(apiKey, 'POST', '/api/v2/send-message', body);
  assert.equal(again.status, 200);
  assert.equal(again.body.data?.jobId, jobId);
  assert.equal(again.body.data?.idempotentReplay, true);
  assert.equal(again.body.data?.status, 'queued');
  const viaHeader = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'once' }, { 'x-idempotency-key': 'order-4711-confirm' });
  assert.equal(viaHeader.status, 200, 'the header key is the same key');
  const mismatch = await t.api(apiKey, 'POST', '/api/v2/send-message', { ...body, message: 'different' });
  assert.equal(mismatch.status, 409);
  assert.equal(mismatch.body.code, 'IDEMPOTENCY_PAYLOAD_MISMATCH');
  assert.equal(mismatch.body.data?.jobId, jobId);
  const conflict = await t.api(apiKey, 'POST', '/api/v2/send-message', body, { 'x-idempotency-key': 'another-key-123' });
  assert.equal(conflict.status, 400);
  assert.equal(conflict.body.code, 'IDEMPOTENCY_KEY_CONFLICT');
  const short = await t.api(apiKey, 'POST', '/api/v2/send-message', { ...body, idempotencyKey: 'short' });
  assert.equal(short.status, 400);
  assert.equal(short.body.code, 'VALIDATION_FAILED');
  // an empty header is a key that is not valid, not a send without a key (it used to be accepted unkeyed)
  for (const header of ['', 'order-4711-confirm, order-4711-confirm']) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'no key?' }, { 'x-idempotency-key': header });
    assert.equal(r.status, 400, `header ${JSON.stringify(header)}: ${r.text}`);
    assert.equal(r.body.code, 'VALIDATION_FAILED');
    assert.equal((r.body.data as { field?: string } | undefined)?.field, 'idempotencyKey');
  }

  await t.advance(2_000);
  await untilState(apiKey, jobId, 'sent');
  const replay = await t.api(apiKey, 'POST', '/api/v2/send-message', body);
  assert.equal(replay.status, 200);
  assert.equal(replay.body.data?.status, 'sent');
  assert.match(String(replay.body.data?.messageId), /^true_/);
  // queueState is `queued` exactly when scheduledAt is null (SPEC.md); a sent job keeps the slot it had
  assert.notEqual(replay.body.data?.scheduledAt, null);
  assert.equal(replay.body.data?.queueState, 'scheduled');
  const lookup = await t.api(apiKey, 'GET', '/api/v2/messages?idempotencyKey=order-4711-confirm');
  assert.equal(lookup.status, 200);
  assert.equal(lookup.body.data?.jobId, jobId);
});

test('cancel before sending; a sent job cannot be cancelled; unknown job is 404 JOB_NOT_FOUND', async () => {
  const { apiKey } = await t.createInstance('q6', { settings: { ...FAST, minDelayMs: 60_000, maxDelayMs: 60_000 } });
  const a = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'first' });
  const b = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'second' });
  const bId = String(b.body.data?.jobId);
  const c = await t.api(apiKey, 'DELETE', `/api/v2/messages/${bId}`);
  assert.equal(c.status, 200, c.text);
  assert.equal(c.body.data?.state, 'cancelled');
  assert.ok(c.body.data?.terminalAt);
  await t.advance(2_000);
  const aId = String(a.body.data?.jobId);
  await untilState(apiKey, aId, 'sent');
  const late = await t.api(apiKey, 'DELETE', `/api/v2/messages/${aId}`);
  assert.equal(late.status, 409);
  const missing = await t.api(apiKey, 'GET', '/api/v2/messages/wq_000000000000000000000000');
  assert.equal(missing.status, 404);
  assert.equal(missing.body.code, 'JOB_NOT_FOUND');
});

test('the replay of a cancelled job promises no send: etaSeconds 0, the job\'s status etaSeconds null', async () => {
  const { apiKey } = await t.createInstance('q6-replay', { settings: FAST });
  const body = { phone: '4915112345678', message: 'later, then not', notBefore: new Date(t.clock.now() + 86_400_000).toISOString(), idempotencyKey: 'cancel-then-replay' };
  const first = await t.api(apiKey, 'POST', '/api/v2/send-message', body);
  assert.equal(first.status, 202, first.text);
  assert.ok(Number(first.body.data?.etaSeconds) >= 86_400, first.text);
  const jobId = String(first.body.data?.jobId);
  assert.equal((await t.api(apiKey, 'DELETE', `/api/v2/messages/${jobId}`)).status, 200);
  const replay = await t.api(apiKey, 'POST', '/api/v2/send-message', body);
  assert.equal(replay.status, 200, replay.text);
  assert.equal(replay.body.data?.status, 'cancelled');
  assert.equal(replay.body.data?.etaSeconds, 0, 'no send is ahead of a cancelled job');
  assert.equal((await job(apiKey, jobId)).etaSeconds, null);
});

test('a method the path has with the other kind of id: requeue of a network message id is 404 JOB_NOT_FOUND, an edit of a job id 400 naming msgId', async () => {
  // both answered a "no route for" 404 while OPTIONS on the same path listed the method (found from the outside)
  const { apiKey } = await t.createInstance('q6b', { settings: FAST });
  const rq = await t.api(apiKey, 'POST', '/api/v2/messages/ABCDEF0123/requeue');
  assert.equal(rq.status, 404, rq.text);
  assert.equal(rq.body.code, 'JOB_NOT_FOUND');
  assert.equal((rq.body.data as { jobId?: string }).jobId, 'ABCDEF0123');
  const edit = await t.api(apiKey, 'PATCH', '/api/v2/messages/wq_000000000000000000000000', { message: 'edited' });
  assert.equal(edit.status, 400, edit.text);
  assert.equal(edit.body.code, 'VALIDATION_FAILED');
  assert.equal((edit.body.data as { field?: string }).field, 'msgId');
  // a job's attachment: the same answer, naming the id to use (it was a 404 "no route")
  const media = await t.api(apiKey, 'GET', '/api/v2/messages/wq_000000000000000000000000/media');
  assert.equal(media.status, 400, media.text);
  assert.equal((media.body.data as { field?: string }).field, 'msgId');
  assert.match(String(media.body.error), /data\.messageId of the job/);
});

test('not registered → failed with a result code; requeue makes a new job with previousJobId (and only once)', async () => {
  const { apiKey } = await t.createInstance('q7', { settings: FAST });
  const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112340000', message: 'nobody there' });
  assert.equal(r.status, 202, r.text);
  const id = String(r.body.data?.jobId);
  await t.advance(2_000);
  const failed = await untilState(apiKey, id, 'failed');
  assert.equal(failed.resultCode, 'NOT_REGISTERED');
  assert.equal(typeof failed.errorMessage, 'string');
  const rq = await t.api(apiKey, 'POST', `/api/v2/messages/${id}/requeue`);
  assert.equal(rq.status, 202, rq.text);
  assert.equal(rq.body.data?.previousJobId, id);
  assert.notEqual(rq.body.data?.jobId, id);
  assert.equal(rq.body.data?.idempotencyKey, `requeue:${id}`);
  const rq2 = await t.api(apiKey, 'POST', `/api/v2/messages/${id}/requeue`);
  assert.equal(rq2.status, 200, 'a second requeue of the same job is a replay, not another message');
  assert.equal(rq2.body.data?.jobId, rq.body.data?.jobId);
  assert.equal((await job(apiKey, id)).state, 'failed', 'the old job stays terminal');
  // the derived key finds the new job, and no client's send can take it (found from the outside: a send keyed
  // requeue:<id> made the job impossible to requeue); in the body or the header alike
  const found = await t.api(apiKey, 'GET', `/api/v2/messages?idempotencyKey=requeue:${id}`);
  assert.equal(found.body.data?.jobId, rq.body.data?.jobId, found.text);
  for (const [body, headers] of [[{ idempotencyKey: `requeue:${id}` }, {}], [{}, { 'X-Idempotency-Key': 'requeue:wq_00000000000000000000' }]] as const) {
    const taken = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112340000', message: 'mine', ...body }, headers);
    assert.equal(taken.status, 400, taken.text);
    assert.equal(taken.body.code, 'VALIDATION_FAILED');
    assert.equal(taken.body.data?.field, 'idempotencyKey');
  }
});

test('the payload fingerprint is stored for a keyed job only; a requeue of an unkeyed job fingerprints it, and a repeat with another payload is refused', async () => {
  const { apiKey } = await t.createInstance('q7h', { settings: FAST });
  const plain = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112340000', message: 'no key' });
  const keyed = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'a key', idempotencyKey: 'fingerprint-1' });
  assert.equal(plain.status, 202, plain.text);
  assert.equal(keyed.status, 202, keyed.text);
  const hashOf = async (id: unknown) => (await t.db.pool.query<{ payload_hash: string | null }>('SELECT payload_hash FROM jobs WHERE id = $1', [id])).rows[0]?.payload_hash;
  assert.equal(await hashOf(plain.body.data?.jobId), null, 'nothing ever compares an unkeyed job: no fingerprint');
  assert.match(String(await hashOf(keyed.body.data?.jobId)), /^[0-9a-f]{64}$/);
  // the fingerprint still decides a keyed replay: same payload replays, another one is refused
  const again = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'a key', idempotencyKey: 'fingerprint-1' });
  assert.equal(again.status, 200, again.text);
  const other = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'another', idempotencyKey: 'fingerprint-1' });
  assert.equal(other.status, 409, other.text);
  // the unkeyed job fails (nobody there); its requeue gets a fingerprint for the derived key
  const id = String(plain.body.data?.jobId);
  await t.advance(2_000);
  await untilState(apiKey, id, 'failed');
  const rq = await t.api(apiKey, 'POST', `/api/v2/messages/${id}/requeue`);
  assert.equal(rq.status, 202, rq.text);
  assert.match(String(await hashOf(rq.body.data?.jobId)), /^[0-9a-f]{64}$/);
  const rq2 = await t.api(apiKey, 'POST', `/api/v2/messages/${id}/requeue`);
  assert.equal(rq2.status, 200, rq2.text);
  assert.equal(rq2.body.data?.jobId, rq.body.data?.jobId);
});

test('validation: exactly one of phone/chatId, German 0 → 49, own number refused, options whitelist', async () => {
  const { apiKey, phone } = await t.createInstance('q8', { settings: FAST });
  const both = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', chatId: '4915112345678@c.us', message: 'x' });
  assert.equal(both.status, 400);
  assert.equal(both.body.code, 'VALIDATION_FAILED');
  const none = await t.api(apiKey, 'POST', '/api/v2/send-message', { message: 'x' });
  assert.equal(none.status, 400);
  assert.equal(none.body.data?.field, 'phone');
  const empty = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: '' });
  assert.equal(empty.body.data?.field, 'message');
  const own = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone, message: 'me' });
  assert.equal(own.status, 400);
  assert.equal(own.body.code, 'VALIDATION_FAILED');
  const german = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '015112345678', message: 'x', options: { linkPreview: false, bogus: 1 } });
  assert.equal(german.status, 202, german.text);
  const j = await job(apiKey, String(german.body.data?.jobId));
  assert.equal(j.phone, '4915112345678');
  assert.equal(j.chatId, '4915112345678@c.us');
  const prio = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'x', priority: 10 });
  assert.equal(prio.body.data?.field, 'priority');
  const ttl = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'x', ttlSeconds: 59 });
  assert.equal(ttl.body.data?.field, 'ttlSeconds');
  const poll = await t.api(apiKey, 'POST', '/api/v2/send-poll', { phone: '4915112345678', name: 'q', options: ['only one'] });
  assert.equal(poll.status, 400);
  assert.equal(poll.body.data?.field, 'options');
  const voice = await t.api(apiKey, 'POST', '/api/v2/send-voice', { phone: '4915112345678', mediaBase64: 'AAAA', mimetype: 'video/mp4' });
  assert.equal(voice.body.code, 'VOICE_MIMETYPE_UNSUPPORTED');
  const sticker = await t.api(apiKey, 'POST', '/api/v2/send-sticker', { phone: '4915112345678', mediaBase64: 'AAAA', mimetype: 'video/webm' });
  assert.equal(sticker.body.code, 'STICKER_VIDEO_UNSUPPORTED');
  const doc = await t.api(apiKey, 'POST', '/api/v2/send-document', { phone: '4915112345678', mediaBase64: 'AAAA', mimetype: 'application/pdf' });
  assert.equal(doc.body.data?.field, 'filename');
  const lat = await t.api(apiKey, 'POST', '/api/v2/send-location', { phone: '4915112345678', latitude: 91, longitude: 0 });
  assert.equal(lat.body.data?.field, 'latitude');
});

test('every v2 kind reaches the sandbox recipient with its type', async () => {
  const { instance, apiKey } = await t.createInstance('q9', { settings: FAST });
  const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex').toString('base64');
  const sends: [string, Record<string, unknown>][] = [
    ['/api/v2/send-media', { mediaBase64: png, mimetype: 'image/png', caption: 'pic' }],
    ['/api/v2/send-voice', { mediaBase64: png, mimetype: 'audio/ogg' }],
    ['/api/v2/send-document', { mediaBase64: png, mimetype: 'application/pdf', filename: 'a.pdf' }],
    ['/api/v2/send-location', { latitude: 52.52, longitude: 13.4, name: 'Berlin' }],
    ['/api/v2/send-poll', { name: 'Lunch?', options: ['yes', 'no'] }],
  ];
  const ids: string[] = [];
  for (const [route, body] of sends) {
    const r = await t.api(apiKey, 'POST', route, { phone: '4915112345678', ...body });
    assert.equal(r.status, 202, `${route}: ${r.text}`);
    ids.push(String(r.body.data?.jobId));
  }
  const mp3 = await t.api(apiKey, 'POST', '/api/v2/send-voice', { phone: '4915112345678', mediaBase64: png, mimetype: 'audio/mpeg' });
  assert.deepEqual(mp3.body.data?.warnings, ['non-ogg audio may not render as PTT on all clients']);
  ids.push(String(mp3.body.data?.jobId));
  await t.advance(15_000);
  for (const id of ids) await untilState(apiKey, id, 'sent');
  const types = (await ledger(instance.id)).map((e) => (e as { type?: string }).type);
  assert.deepEqual(types, ['image', 'ptt', 'document', 'location', 'poll_creation', 'ptt']);
});

test('group creation goes through the queue and counts against the limits', async () => {
  const { apiKey } = await t.createInstance('q10', { settings: { ...FAST, maxPerHour: 2 } });
  const bad = await t.api(apiKey, 'POST', '/api/v2/groups', { title: '', participants: ['4915112345678@c.us'] });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.data?.field, 'title');
  const r = await t.api(apiKey, 'POST', '/api/v2/groups', { title: 'Team', participants: ['4915112345678@c.us', '4915187654321@c.us'] });
  assert.equal(r.status, 202, r.text);
  const id = String(r.body.data?.jobId);
  const done = await untilState(apiKey, id, 'sent');
  assert.equal(done.kind, 'group_create');
  assert.equal(done.originRoute, '/api/v2/groups');
  assert.match(String(done.messageId), /@g\.us$/, 'the new group id');
  const chat = await t.api(apiKey, 'GET', `/api/v2/chats/${encodeURIComponent(String(done.messageId))}`);
  assert.equal(chat.status, 200, chat.text);
  assert.equal(chat.body.data?.isGroup, true);
  assert.equal(chat.body.data?.name, 'Team');
  const q = await t.api(apiKey, 'GET', '/api/v2/queue');
  const limits = (q.body.data as { limits: Record<string, unknown> }).limits;
  assert.equal(limits.usedLastHour, 1, 'the creation counts like a message');
  assert.equal(limits.remainingHour, 1);
});

test('one key sent several times at once (one acceptance batch): one job, the others replays of it or, with another payload, 409', async () => {
  const { apiKey } = await t.createInstance('q-batch-key', { settings: FAST });
  const body = { phone: '4915112345678', message: 'at once', idempotencyKey: 'batch-key-0001' };
  const other = { ...body, message: 'something else' };
  // arrival order decides which payload takes the key: the answers are checked whichever it was
  const payloads = [body, body, body, body, body, other, other];
  const answers = await Promise.all(payloads.map((b) => t.api(apiKey, 'POST', '/api/v2/send-message', b)));
  const fresh = answers.filter((a) => a.status === 202);
  assert.equal(fresh.length, 1, `one fresh job: ${answers.map((a) => a.status).join(',')}`);
  const winner = payloads[answers.findIndex((a) => a.status === 202)];
  const jobId = String((fresh[0]?.body.data as { jobId: string }).jobId);
  answers.forEach((a, i) => {
    if (a.status === 202) return;
    if (payloads[i] === winner) {
      assert.equal(a.status, 200, `same payload: a replay (${a.text})`);
      assert.equal(a.body.data?.jobId, jobId);
      assert.equal(a.body.data?.idempotentReplay, true);
    } else {
      assert.equal(a.status, 409, `other payload: a mismatch (${a.text})`);
      assert.equal(a.body.code, 'IDEMPOTENCY_PAYLOAD_MISMATCH');
      assert.equal(a.body.data?.jobId, jobId);
    }
  });
  const list = await t.api(apiKey, 'GET', '/api/v2/queue/items');
  assert.equal((list.body.data as { items: unknown[] }).items.length, 1, 'one job in the queue');
});

test('DELETE /api/v2/messages/:msgId reads its body after the queue\'s cancel passed it on: a delete for everyone reaches the network', async () => {
  // found from the outside: the queue's cancel (DELETE /api/v2/messages/:jobId, job ids only) read the body and
  // passed the request on; the message route read the consumed stream again as `{}`, answered everyone:false, and
  // the message stayed with the recipient, where it could not be deleted for everyone any more
  const { instance, apiKey } = await t.createInstance('q-revoke', { settings: FAST });
  const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112340044', message: 'take it back' });
  assert.equal(r.status, 202, r.text);
  const sent = await untilState(apiKey, String(r.body.data?.jobId), 'sent');
  const msgId = String(sent.messageId);
  const unknownField = await t.api(apiKey, 'DELETE', `/api/v2/messages/${encodeURIComponent(msgId)}`, { everyone: true, evil: 1 });
  assert.equal(unknownField.status, 400, `the body is validated: ${unknownField.text}`);
  const del = await t.api(apiKey, 'DELETE', `/api/v2/messages/${encodeURIComponent(msgId)}`, { everyone: true });
  assert.equal(del.status, 200, del.text);
  assert.deepEqual(del.body.data, { msgId, everyone: true });
  const deletes = (await ledger(instance.id)).filter((e) => e.action === 'delete');
  assert.equal(deletes.length, 1, JSON.stringify(deletes));
  assert.equal((deletes[0] as unknown as { everyone?: boolean }).everyone, true, JSON.stringify(deletes[0]));
  // a contact's message cannot be deleted for everyone: refused, and still there (never silently for us alone)
  const inbound = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/messages`, { from: '4915112340044', type: 'text', body: 'theirs' });
  const theirs = encodeURIComponent(String(inbound.body.data?.messageId));
  const refused = await t.api(apiKey, 'DELETE', `/api/v2/messages/${theirs}`, { everyone: true });
  assert.equal(refused.status, 400, refused.text);
  assert.equal(refused.body.code, 'VALIDATION_FAILED');
  assert.equal((await t.api(apiKey, 'GET', `/api/v2/messages/${theirs}`)).status, 200, 'still there');
});

test('seen: true for a chat the instance has, false for one it does not (as the real network answers)', async () => {
  const { instance, apiKey } = await t.createInstance('q-seen', { settings: FAST });
  const stranger = await t.api(apiKey, 'POST', '/api/v2/chats/4917611111111@c.us/seen');
  assert.deepEqual([stranger.status, stranger.body.data?.seen], [200, false], stranger.text);
  const notMember = await t.api(apiKey, 'POST', '/api/v2/chats/120363000000000000@g.us/seen');
  assert.deepEqual([notMember.status, notMember.body.data?.seen], [200, false], notMember.text);
  const inbound = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/messages`, { from: '4917611111111', type: 'text', body: 'hello' });
  assert.equal(inbound.status, 201, inbound.text);
  const known = await t.api(apiKey, 'POST', '/api/v2/chats/4917611111111@c.us/seen');
  assert.deepEqual([known.status, known.body.data?.seen], [200, true], known.text);
});
