/**
 * Queue capacity, expiry and re-planning (simulated time, real HTTP and PostgreSQL).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'queue_limits', simulated: true });
});
after(async () => {
  await t.stop();
});

const SLOW = { minDelayMs: 60_000, maxDelayMs: 60_000, quietHours: null, maxPerHour: null, maxPer24h: null };

test('QUEUE_FULL: 5000 pending are accepted, the 5001st is refused with 422 and nothing is created', async () => {
  const { instance, apiKey } = await t.createInstance('full', { settings: { ...SLOW, minDelayMs: 1, maxDelayMs: 1, defaultTtlSeconds: 2_592_000 } });
  let accepted = 0;
  const CONCURRENCY = 50;
  for (let i = 0; i < 5000; i += CONCURRENCY) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, 5000 - i) }, (_, k) =>
        t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `m${i + k}` })),
    );
    for (const r of batch) {
      assert.equal(r.status, 202, r.text);
      accepted++;
    }
  }
  assert.equal(accepted, 5000);
  const over = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'one too many' });
  assert.equal(over.status, 422);
  assert.equal(over.body.code, 'QUEUE_FULL');
  const q = await t.api(apiKey, 'GET', '/api/v2/queue');
  const counts = (q.body.data as { counts: { queued: number; scheduled: number } }).counts;
  assert.equal(counts.queued + counts.scheduled, 5000);
  // positions are distinct and dense
  const items = await t.api(apiKey, 'GET', '/api/v2/queue/items?limit=200');
  const page = items.body.data as { items: { state: string }[]; nextCursor: string | null };
  assert.equal(page.items.length, 200);
  assert.ok(page.nextCursor);
  // its 5,000 would go out a millisecond apart while the next tests move the simulated clock: minutes of real work
  // in each of them (found: the next test took 110–147 s instead of under one)
  const deleted = await t.admin('DELETE', `/admin/v1/instances/${instance.id}`);
  assert.equal(deleted.status, 200, deleted.text);
});

test('TTL elapsed while the instance is unlinked → expired; the rest goes out after a new link', async () => {
  const { instance, apiKey } = await t.createInstance('ttl', { settings: { ...SLOW, minDelayMs: 1000, maxDelayMs: 1000 } });
  // take the session down, then queue: accepted only while connected, so queue first, then disconnect
  const first = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'short-lived', ttlSeconds: 60, notBefore: new Date(t.clock.now() + 30_000).toISOString() });
  assert.equal(first.status, 202, first.text);
  const keep = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'long-lived', notBefore: new Date(t.clock.now() + 30_000).toISOString() });
  assert.equal(keep.status, 202, keep.text);
  // the phone unlinks the session: the instance cannot send until it is linked again
  const unlink = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/unlink`);
  assert.equal(unlink.status, 200, unlink.text);
  await t.advanceUntil(() => !t.gw.actors.view(instance.id).connected, 'disconnected', { maxMs: 10_000 });
  const expired = await t.advanceUntil(async () => {
    const r = await t.api(apiKey, 'GET', `/api/v2/messages/${String(first.body.data?.jobId)}`);
    return r.body.data?.state === 'expired' ? r.body.data : null;
  }, 'expiry', { maxMs: 120_000 });
  assert.ok(expired.terminalAt);
  assert.equal((await t.api(apiKey, 'GET', `/api/v2/messages/${String(keep.body.data?.jobId)}`)).body.data?.state, 'scheduled');
  // the operator restarts the unlinked instance, it is linked again, and the backlog goes out
  const restart = await t.admin('POST', `/admin/v1/instances/${instance.id}/restart`);
  assert.equal(restart.status, 202, restart.text);
  await t.advanceUntil(() => t.gw.actors.view(instance.id).status === 'waiting_qr', 'waiting for a new link', { maxMs: 600_000 });
  const link = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/link`, { phoneNumber: '4915100000777' });
  assert.equal(link.status, 200, link.text);
  const sent = await t.advanceUntil(async () => {
    const r = await t.api(apiKey, 'GET', `/api/v2/messages/${String(keep.body.data?.jobId)}`);
    return r.body.data?.state === 'sent' ? r.body.data : null;
  }, 'the long-lived message after reconnect', { maxMs: 600_000 });
  assert.equal(sent.deliveryConfidence, 'confirmed');
});

test('linked again to the number a waiting message is addressed to: failed before the network, the session stays up; the rest goes out', async () => {
  const relinked = '4915100000888';
  const { instance, apiKey } = await t.createInstance('relinked', { settings: { ...SLOW, minDelayMs: 1000, maxDelayMs: 1000 } });
  const later = new Date(t.clock.now() + 30_000).toISOString();
  const keyed = { phone: relinked, message: 'to the number linked later', notBefore: later, idempotencyKey: 'relink-1' };
  const toNew = await t.api(apiKey, 'POST', '/api/v2/send-message', keyed);
  assert.equal(toNew.status, 202, toNew.text);
  const group = { title: 'with the number linked later', participants: [`${relinked}@c.us`, '4915112345678@c.us'], notBefore: later, idempotencyKey: 'relink-group' };
  const groupJob = await t.api(apiKey, 'POST', '/api/v2/groups', group);
  assert.equal(groupJob.status, 202, groupJob.text);
  const other = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'to someone else', notBefore: later });
  assert.equal(other.status, 202, other.text);
  // one to the same number cancelled and requeued before the new link: its requeue waits
  const cancelled = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: relinked, message: 'requeued before', notBefore: later });
  const cancelledId = String(cancelled.body.data?.jobId);
  assert.equal((await t.api(apiKey, 'DELETE', `/api/v2/messages/${cancelledId}`)).status, 200);
  const requeued = await t.api(apiKey, 'POST', `/api/v2/messages/${cancelledId}/requeue`);
  assert.equal(requeued.status, 202, requeued.text);

  assert.equal((await t.admin('POST', `/sandbox/v1/instances/${instance.id}/unlink`)).status, 200);
  await t.advanceUntil(() => !t.gw.actors.view(instance.id).connected, 'disconnected', { maxMs: 10_000 });
  assert.equal((await t.admin('POST', `/admin/v1/instances/${instance.id}/restart`)).status, 202);
  await t.advanceUntil(() => t.gw.actors.view(instance.id).status === 'waiting_qr', 'waiting for a new link', { maxMs: 600_000 });
  assert.equal((await t.admin('POST', `/sandbox/v1/instances/${instance.id}/link`, { phoneNumber: relinked })).status, 200);
  await t.advanceUntil(() => t.gw.actors.view(instance.id).connected, 'linked again', { maxMs: 60_000 });

  // a new send to it is refused; the retry of one accepted before is its replay (found from the outside: 400
  // "nothing accepted" while the job waited), another payload under that key rule 2's 409
  const fresh = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: relinked, message: 'new' });
  assert.deepEqual([fresh.status, fresh.body.code, fresh.body.data], [400, 'VALIDATION_FAILED', { field: 'phone' }], fresh.text);
  const retry = await t.api(apiKey, 'POST', '/api/v2/send-message', keyed);
  assert.deepEqual([retry.status, retry.body.data?.jobId, retry.body.data?.idempotentReplay], [200, toNew.body.data?.jobId, true], retry.text);
  const mismatch = await t.api(apiKey, 'POST', '/api/v2/send-message', { ...keyed, message: 'another' });
  assert.equal(mismatch.status, 409, mismatch.text);
  const groupRetry = await t.api(apiKey, 'POST', '/api/v2/groups', group);
  assert.deepEqual([groupRetry.status, groupRetry.body.data?.jobId], [200, groupJob.body.data?.jobId], groupRetry.text);
  const requeuedAgain = await t.api(apiKey, 'POST', `/api/v2/messages/${cancelledId}/requeue`);
  assert.deepEqual([requeuedAgain.status, requeuedAgain.body.data?.jobId], [200, requeued.body.data?.jobId], requeuedAgain.text);
  // the forward route names its own field
  const forward = await t.api(apiKey, 'POST', '/api/v2/messages/true_4915112345678@c.us_3EB0AAAA/forward', { toChatId: `${relinked}@c.us` });
  assert.deepEqual([forward.status, forward.body.data], [400, { field: 'toChatId' }], forward.text);

  const stateOf = async (id: unknown) => (await t.api(apiKey, 'GET', `/api/v2/messages/${String(id)}`)).body.data;
  for (const [id, text] of [[toNew.body.data?.jobId, /^not sent: the recipient is the number the instance is linked to now; nothing was sent$/], [requeued.body.data?.jobId, /^not sent/], [groupJob.body.data?.jobId, /^not created: a participant is the number/]] as const) {
    const failed = await t.advanceUntil(async () => {
      const d = await stateOf(id);
      return d?.state === 'failed' ? d : null;
    }, `job ${String(id)} at its slot`, { maxMs: 600_000 });
    assert.equal(failed.resultCode, 'INVALID_INPUT');
    assert.match(String(failed.errorMessage), text);
  }
  const sent = await t.advanceUntil(async () => {
    const d = await stateOf(other.body.data?.jobId);
    return d?.state === 'sent' ? d : null;
  }, 'the message to someone else', { maxMs: 600_000 });
  assert.equal(sent.deliveryConfidence, 'confirmed');
  // the session was never taken down: it stayed connected through all of them
  const view = t.gw.actors.view(instance.id);
  assert.deepEqual([view.connected, view.status], [true, 'connected']);

  // a requeue of the failed one is refused as a send of it is, on the key's route and the operator's (found from the
  // outside: 202, and it failed again at the call)
  const again = await t.api(apiKey, 'POST', `/api/v2/messages/${String(toNew.body.data?.jobId)}/requeue`);
  assert.deepEqual([again.status, again.body.code, again.body.data], [400, 'VALIDATION_FAILED', { field: 'phone' }], again.text);
  const byOperator = await t.admin('POST', `/admin/v1/instances/${instance.id}/messages/${String(groupJob.body.data?.jobId)}/requeue`);
  assert.deepEqual([byOperator.status, byOperator.body.code, byOperator.body.data], [400, 'VALIDATION_FAILED', { field: 'participants' }], byOperator.text);
});

test('a limit change re-plans (queue.replanned) and POST /queue/replan really re-plans', async () => {
  const { instance, apiKey } = await t.createInstance('replan', { settings: SLOW });
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `r${i}` });
    ids.push(String(r.body.data?.jobId));
  }
  const before3 = Date.parse(String((await t.api(apiKey, 'GET', `/api/v2/messages/${ids[2]}`)).body.data?.scheduledAt));
  const patch = await t.admin('PATCH', `/admin/v1/instances/${instance.id}`, { settings: { minDelayMs: 1000, maxDelayMs: 1000 } });
  assert.equal(patch.status, 200, patch.text);
  const after3 = Date.parse(String((await t.api(apiKey, 'GET', `/api/v2/messages/${ids[2]}`)).body.data?.scheduledAt));
  assert.ok(after3 < before3, 'shorter pauses moved the third message earlier');
  const { rows } = await t.db.pool.query<{ event: string; body: string }>(`SELECT event, body FROM outbox WHERE instance_id = $1 AND event = 'queue.replanned'`, [instance.id]);
  assert.equal(rows.length, 0, 'no webhook configured: nothing written to the outbox (opt-in)');
  const r = await t.api(apiKey, 'POST', '/api/v2/queue/replan');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data?.replanned, true);
  assert.equal(typeof r.body.data?.affected, 'number');
  assert.equal(typeof r.body.data?.epoch, 'number');
  const again = await t.api(apiKey, 'POST', '/api/v2/queue/replan');
  assert.equal(again.body.data?.epoch, Number(r.body.data?.epoch) + 1);
});

test('queue disabled: v2 sends and a re-plan answer 503 QUEUE_STORE_UNAVAILABLE with queueMode disabled', async () => {
  const { instance, apiKey } = await t.createInstance('off', { settings: SLOW });
  const patch = await t.admin('PATCH', `/admin/v1/instances/${instance.id}`, { settings: { enabled: false } });
  assert.equal(patch.status, 200);
  const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'x' });
  assert.equal(r.status, 503);
  assert.equal(r.body.code, 'QUEUE_STORE_UNAVAILABLE');
  assert.equal(r.body.data?.queueMode, 'disabled');
  const q = await t.api(apiKey, 'GET', '/api/v2/queue');
  assert.equal(q.body.data?.mode, 'disabled');
  assert.equal(q.body.data?.limitsEnforced, false);
  // a re-plan too: there is no persistent plan to make
  const replan = await t.api(apiKey, 'POST', '/api/v2/queue/replan');
  assert.equal(replan.status, 503, replan.text);
  assert.equal(replan.body.code, 'QUEUE_STORE_UNAVAILABLE');
  assert.equal(replan.body.data?.queueMode, 'disabled');
});

test('the pause holds after the queue is enabled again: a v1 send while it was disabled is the last dispatch', async () => {
  // found from the outside: enabled false, a v1 send (straight out), enabled true, then a v2 send went out 82 ms
  // after it with a 15 s pause (SPEC.md: measured against the last actual dispatch, which is persisted)
  const { instance, apiKey } = await t.createInstance('reenabled', { settings: { ...SLOW, minDelayMs: 15_000, maxDelayMs: 15_000 } });
  const off = await t.admin('PATCH', `/admin/v1/instances/${instance.id}`, { settings: { enabled: false } });
  assert.equal(off.status, 200, off.text);
  let v1: { status: number; text: string } | null = null;
  void t.api(apiKey, 'POST', '/api/send-message', { phone: '4915112345678', message: 'while disabled' }).then((r) => (v1 = r));
  const direct = await t.advanceUntil(() => v1, 'the v1 send while disabled');
  assert.equal(direct.status, 200, direct.text);
  const persisted = await t.gw.pool.query<{ at: Date | null }>('SELECT last_dispatch_at AS at FROM instances WHERE id = $1', [instance.id]);
  const sentAt = persisted.rows[0]?.at?.getTime();
  assert.ok(sentAt !== undefined && sentAt <= t.clock.now(), 'the direct send is persisted as the last dispatch');
  assert.equal((await t.admin('PATCH', `/admin/v1/instances/${instance.id}`, { settings: { enabled: true } })).status, 200);
  const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'after enabling' });
  assert.equal(r.status, 202, r.text);
  const slot = Date.parse(String(r.body.data?.scheduledAt));
  assert.equal(slot - sentAt, 15_000, 'the v2 send waits out the pause after the direct one');
  await t.api(apiKey, 'DELETE', `/api/v2/messages/${String(r.body.data?.jobId)}`);
});

test('idempotency keys are remembered 7 days, then free again; housekeeping bounds the tables', async () => {
  const { instance, apiKey } = await t.createInstance('keys7d', { settings: { ...SLOW, minDelayMs: 1000, maxDelayMs: 1000 } });
  const first = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'week one', idempotencyKey: 'weekly-report-key' });
  assert.equal(first.status, 202, first.text);
  t.sim?.increment(6 * 86_400_000);
  const within = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'week two', idempotencyKey: 'weekly-report-key' });
  assert.equal(within.status, 409, 'still remembered after 6 days');
  t.sim?.increment(86_400_000 + 60_000);
  const after7 = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'week two', idempotencyKey: 'weekly-report-key' });
  assert.equal(after7.status, 202, after7.text);
  assert.notEqual(after7.body.data?.jobId, first.body.data?.jobId);
  const lookup = await t.api(apiKey, 'GET', '/api/v2/messages?idempotencyKey=weekly-report-key');
  assert.equal(lookup.body.data?.jobId, after7.body.data?.jobId);

  const { housekeep } = await import('../../src/store/housekeeping.js');
  await t.db.pool.query(`INSERT INTO dispatches (instance_id, job_id, dispatched_at) VALUES ($1, NULL, $2)`, [instance.id, new Date(t.clock.now() - 3 * 86_400_000)]);
  await housekeep(t.db.pool, t.clock.now());
  // read the table, not the report: the gateway's own housekeeping (its timer fired as the clock moved days on)
  // may still be running beside this call and delete the row first, which the report would count as 0
  const old = await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM dispatches WHERE instance_id = $1 AND dispatched_at < $2', [instance.id, new Date(t.clock.now() - 86_400_000)]);
  assert.equal(old.rows[0]?.n, 0, 'dispatch history outside the window is removed');
  const { rows } = await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM idempotency_keys WHERE instance_id = $1', [instance.id]);
  assert.equal(rows[0]?.n, 1, 'the live key stays');
});
