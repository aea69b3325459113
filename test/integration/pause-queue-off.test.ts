/**
 * During an ordered restart every /api/v2/* route answers 503 QUEUE_PAUSED (SPEC.md, docs/api.md "the v2 send
 * routes, group creation and requeue answer 503 QUEUE_PAUSED"), the sends too when the instance's queue is
 * off: they answered 503 QUEUE_STORE_UNAVAILABLE while the instance's other v2 routes answered QUEUE_PAUSED
 * (found from the outside). Real HTTP, real PostgreSQL, the sandbox network, simulated time.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'pause_queue_off', simulated: true, env: { ORDERED_RESTART_HARD_MS: '30000' } });
});
after(async () => {
  await t.stop();
});

/** Unlinked, then restarted: the ordered restart's pause lasts while the new session waits for its QR. */
async function pausedWaitingForScan(instanceId: string, apiKey: string): Promise<void> {
  assert.equal((await t.admin('POST', `/sandbox/v1/instances/${instanceId}/unlink`)).status, 200);
  assert.equal((await t.admin('POST', `/admin/v1/instances/${instanceId}/restart`)).status, 202);
  await t.advanceUntil(async () => {
    const r = await t.api(apiKey, 'GET', '/api/status');
    return (r.body.data as { status?: string } | undefined)?.status === 'waiting_qr' ? true : null;
  }, 'waiting_qr', { maxMs: 5_000 });
}

test('a v2 send during an ordered restart is 503 QUEUE_PAUSED with the queue disabled, as every other v2 route', async () => {
  const settings = { minDelayMs: 1000, maxDelayMs: 1000, quietHours: null, maxPerHour: null, maxPer24h: null, enabled: false };
  const { instance, apiKey } = await t.createInstance('queue-off', { settings });
  const body = { phone: '4915112340009', message: 'hello' };
  const off = await t.api(apiKey, 'POST', '/api/v2/send-message', body);
  assert.deepEqual([off.status, off.body.code, off.body.data?.queueMode], [503, 'QUEUE_STORE_UNAVAILABLE', 'disabled'], off.text);

  await pausedWaitingForScan(instance.id, apiKey);
  for (const r of [
    await t.api(apiKey, 'GET', '/api/v2/queue'),
    await t.api(apiKey, 'POST', '/api/v2/send-message', body),
    await t.api(apiKey, 'POST', '/api/v2/send-location', { phone: '4915112340009', latitude: 1, longitude: 2 }),
    await t.api(apiKey, 'POST', '/api/v2/send-message', { ...body, idempotencyKey: 'paused-queue-off-1' }),
  ]) {
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.code, 'QUEUE_PAUSED', r.text);
  }
});

test('a requeue repeated during an ordered restart is the 200 replay of the first; a first requeue then is 503 QUEUE_PAUSED (found from the outside: 503 for the repeat too, the replay on the operator\'s route)', async () => {
  const settings = { minDelayMs: 600_000, maxDelayMs: 600_000, quietHours: null, maxPerHour: null, maxPer24h: null };
  const { instance, apiKey } = await t.createInstance('requeue-paused', { settings });
  const ids: string[] = [];
  for (const message of ['first', 'second', 'third']) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112340009', message });
    assert.equal(r.status, 202, r.text);
    ids.push(String(r.body.data?.jobId));
  }
  const [, twice, once] = ids as [string, string, string];
  for (const id of [twice, once]) assert.equal((await t.api(apiKey, 'DELETE', `/api/v2/messages/${id}`)).status, 200);
  const requeued = await t.api(apiKey, 'POST', `/api/v2/messages/${twice}/requeue`);
  assert.equal(requeued.status, 202, requeued.text);

  await pausedWaitingForScan(instance.id, apiKey);
  const again = await t.api(apiKey, 'POST', `/api/v2/messages/${twice}/requeue`);
  assert.deepEqual([again.status, again.body.data?.jobId, again.body.data?.idempotentReplay], [200, requeued.body.data?.jobId, true], again.text);
  const first = await t.api(apiKey, 'POST', `/api/v2/messages/${once}/requeue`);
  assert.deepEqual([first.status, first.body.code], [503, 'QUEUE_PAUSED'], first.text);
  // an unknown job is answered after the pause too, as every other v2 route's own refusal
  const unknown = await t.api(apiKey, 'POST', '/api/v2/messages/wq_00000000000000000000000000/requeue');
  assert.deepEqual([unknown.status, unknown.body.code], [503, 'QUEUE_PAUSED'], unknown.text);
});
