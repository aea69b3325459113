/**
 * The cluster's internal route checks the whole ask another node forwards, by its type
 * (src/http/routes/internal-asks.ts), before the owner acts on it: an ask of the wrong shape (a rolling upgrade
 * meeting a node of another version, or a bug) is `400 VALIDATION_FAILED` naming the field, and nothing was
 * done. Found from the outside: only `ask.type` was checked, and a `settings` ask without its `instance` answered
 * 500 INTERNAL_ERROR. A settings ask makes the owner read the record again from the store, whatever record the
 * ask carries. A gateway with a cluster secret over real HTTP, on real PostgreSQL.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { parseAsk } from '../../src/http/routes/internal-asks.js';
import { DomainError } from '../../src/errors.js';

const SECRET = 'internal-asks-secret-0123456789ab';
let t: TestGateway;
let instanceId = '';

before(async () => {
  t = await startTestGateway({ label: 'internal_asks', env: { CLUSTER_SECRET: SECRET } });
  const { instance } = await t.createInstance('asked', { settings: { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null } });
  instanceId = instance.id;
});
after(async () => {
  await t.stop();
});

async function ask(body: unknown, id = instanceId): Promise<{ status: number; body: { success: boolean; data?: { reply?: { ok: boolean; value?: unknown; error?: { code: string } } }; code?: string; error?: string } & Record<string, unknown> }> {
  const res = await fetch(`${t.url}/internal/v1/instances/${id}/ask`, {
    method: 'POST',
    headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as never };
}

const request = (over: Record<string, unknown> = {}) => ({
  kind: 'text', payload: { chatId: '4915112345678@c.us', body: 'over the wire' }, originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
  payloadHash: null, idempotencyKey: null, priority: 5, notBefore: null, ttlSeconds: null, ...over,
});

const jobs = async () => Number((await t.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM jobs WHERE instance_id = $1', [instanceId])).rows[0]?.n);

test('asks of the wrong shape are 400 VALIDATION_FAILED naming the field; nothing is accepted', async () => {
  const cases: [unknown, string][] = [
    [{ type: 'settings' }, 'ask.replan'],
    [{ type: 'no.such.ask' }, 'ask.type'],
    [{}, 'ask.type'],
    ['view', 'ask'],
    [{ type: 'queue.accept' }, 'ask.request'],
    [{ type: 'queue.accept', request: request({ priority: 12 }) }, 'ask.request.priority'],
    [{ type: 'queue.accept', request: request({ priority: '5' }) }, 'ask.request.priority'],
    [{ type: 'queue.accept', request: request({ kind: 'telegram' }) }, 'ask.request.kind'],
    [{ type: 'queue.accept', request: request({ payload: { chatId: '4915112345678@c.us', caption: 'no body' } }) }, 'ask.request.payload'],
    [{ type: 'queue.accept', request: request(), gate: { phoneNumber: 5 } }, 'ask.gate.phoneNumber'],
    [{ type: 'queue.acceptMany', requests: [request(), request({ originRoute: null })] }, 'ask.requests.1.originRoute'],
    [{ type: 'queue.awaitOutcome', jobId: 'wq_x', timeoutMs: -1 }, 'ask.timeoutMs'],
    [{ type: 'queue.cancel' }, 'ask.jobId'],
    [{ type: 'network', op: 'eval', args: [] }, 'ask.op'],
    [{ type: 'network', op: 'getChats', args: 'all' }, 'ask.args'],
    [{ type: 'queue.direct', send: { kind: 'text', payload: { chatId: '4915112345678@c.us', body: 'x' } } }, 'ask.send.chatId'],
    // found by the second probe: each of these was accepted (and failed at dispatch, or went to the request's chat)
    // or answered INTERNAL_ERROR
    [{ type: 'queue.accept', request: request({ idempotencyKey: 'abcdefgh1234' }) }, 'ask.request.payloadHash'],
    [{ type: 'queue.accept', request: request({ idempotencyKey: 'x', payloadHash: 'a'.repeat(64) }) }, 'ask.request.idempotencyKey'],
    [{ type: 'queue.accept', request: request({ kind: 'media', payload: { chatId: '4915112345678@c.us', body: 'not media' } }) }, 'ask.request.payload'],
    [{ type: 'queue.accept', request: request({ payload: { chatId: '4915199999999@c.us', body: 'elsewhere' } }) }, 'ask.request.payload.chatId'],
    [{ type: 'queue.accept', request: request({ chatId: 'x' }) }, 'ask.request.chatId'],
    [{ type: 'queue.accept', request: request({ phone: 'x' }) }, 'ask.request.phone'],
    [{ type: 'queue.accept', request: request({ originRoute: '' }) }, 'ask.request.originRoute'],
    [{ type: 'network', op: 'sendSeen', args: Array.from({ length: 200_000 }, () => 'x') }, 'ask.args'],
  ];
  for (const [given, field] of cases) {
    const r = await ask({ ask: given, deadlineMs: 5_000 });
    assert.equal(r.status, 400, `${JSON.stringify(given)}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.code, 'VALIDATION_FAILED', JSON.stringify(r.body));
    assert.equal((r.body.data as { field?: string } | undefined)?.field, field, `${JSON.stringify(given)}: ${JSON.stringify(r.body)}`);
  }
  assert.equal(await jobs(), 0, 'nothing was accepted');
  // the shape is checked before the owner is looked for: the same 400 on a node that does not run the instance
  const elsewhere = await ask({ ask: { type: 'settings' }, deadlineMs: 5_000 }, '00000000-0000-4000-8000-000000000000');
  assert.equal(elsewhere.status, 400);
});

test('well-formed asks are answered by the owner; fields a newer node adds are ignored', async () => {
  const view = await ask({ ask: { type: 'view', since: 'a newer field' }, deadlineMs: 5_000 });
  assert.equal(view.status, 200, JSON.stringify(view.body));
  assert.equal((view.body.data?.reply?.value as { connected?: boolean }).connected, true);
  const accepted = await ask({ ask: { type: 'queue.accept', request: request() }, deadlineMs: 5_000 });
  assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
  assert.equal((accepted.body.data?.reply?.value as { kind?: string }).kind, 'accepted');
  assert.equal(await jobs(), 1);
});

test('a settings ask makes the owner read the record from the store, not from the ask', async () => {
  await t.db.pool.query('UPDATE instances SET max_per_hour = 7 WHERE id = $1', [instanceId]);
  // an older node still sends the record it had: ignored
  const r = await ask({ ask: { type: 'settings', instance: { id: instanceId, settings: { maxPerHour: 1 } }, replan: true }, deadlineMs: 5_000 });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.data?.reply?.ok, true);
  assert.equal(t.gw.actors.record(instanceId)?.settings.maxPerHour, 7);
});

test('parseAsk: a valid ask of every type passes as it came', () => {
  const valid: unknown[] = [
    { type: 'network', op: 'getChats', args: [] },
    { type: 'network', op: 'sendSeen', args: ['4915112345678@c.us'], label: 'chat.seen', notFound: { code: 'CHAT_NOT_FOUND', message: 'no chat' } },
    { type: 'queue.accept', request: request({ awaitsCaller: true, callerBoot: 'boot-1', previousJobId: null }), gate: { phoneNumber: null, v1: true } },
    { type: 'queue.replay', request: request({ idempotencyKey: 'key-00000001', payloadHash: 'ab'.repeat(32) }) },
    { type: 'queue.accept', request: request({ kind: 'media', payload: { chatId: '4915112345678@c.us', mediaId: 'md_0123456789abcdef01234567' } }) },
    { type: 'queue.accept', request: request({ kind: 'group_create', chatId: null, phone: null, payload: { title: 'a group', participants: ['4915112345678@c.us'] } }) },
    { type: 'queue.acceptMany', requests: [request(), request({ kind: 'location', payload: { chatId: '4915112345678@c.us', location: { latitude: 1, longitude: 2 } } })] },
    { type: 'queue.cancel', jobId: 'wq_t0000', reason: 'cancelled by the client' },
    { type: 'queue.replan', reason: 'api' },
    { type: 'queue.summary' },
    { type: 'queue.awaitOutcome', jobId: 'wq_t0000', timeoutMs: 60_000 },
    { type: 'queue.releaseCaller', jobId: 'wq_t0000' },
    { type: 'queue.callerGone', callerBoot: 'boot-1' },
    { type: 'queue.direct', send: { kind: 'text', payload: { chatId: '4915112345678@c.us', body: 'x' }, chatId: '4915112345678@c.us' } },
    { type: 'view' }, { type: 'restart', reason: 'operator' }, { type: 'logout' }, { type: 'pairingCode', phoneNumber: '4915112345678' },
    { type: 'qr' }, { type: 'settings', replan: false }, { type: 'drain' },
  ];
  for (const a of valid) assert.equal(parseAsk(a), a, JSON.stringify(a));
  assert.throws(() => parseAsk({ type: 'queue.cancel', jobId: 'x\u0000y' }), /ask\.jobId/);
  assert.throws(() => parseAsk({ type: 'queue.direct', send: { kind: 'text', payload: { chatId: '4915112345678@c.us' }, chatId: '4915112345678@c.us' } }), (e: unknown) => e instanceof DomainError && e.code === 'VALIDATION_FAILED');
});
