/**
 * A session torn down under a due job (issue 13, finding 13). The sandbox session crashes in the same turn as
 * the job's slot timer fires, before the instance machine has heard of it: the dispatcher must not claim the
 * job for a driver that is gone (it failed NOT_CONNECTED, "the driver is not initialized"): a claim made in that
 * turn never reaches the network (the session answers the call `not_sent`, the job goes back to `scheduled`), the
 * job waits, and after the reconnect it goes out once, within its TTL.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { settle, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway;

before(async () => {
  t = await startTestGateway({ label: 'teardown', simulated: true });
});
after(async () => {
  await t.stop();
});

test('a session torn down under a due job: the job waits for the reconnect and goes out once', {
  skip: !process.env.TEST_DATABASE_URL && 'needs PostgreSQL (TEST_DATABASE_URL)',
}, async () => {
  const { instance, apiKey } = await t.createInstance('td', { settings: { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null } });
  const network = t.gw.sandbox?.network;
  assert.ok(network, 'the in-process sandbox network');
  const ledger = () => network.ledger(instance.id);

  const a = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'due at the teardown', ttlSeconds: 3600 });
  assert.equal(a.status, 202, a.text);
  const jobId = String((a.body.data as { jobId: string }).jobId);
  assert.equal(ledger().length, 0);

  // the crash and the slot in one synchronous turn: the machine learns of the crash only afterwards
  network.session(instance.id).crash('torn down under a due job');
  t.sim?.increment(1);

  const state = async () => {
    const r = await t.api(apiKey, 'GET', `/api/v2/messages/${jobId}`);
    return (r.body.data as { state: string; resultCode: string | null }) ?? null;
  };
  // the clock stands still: let the crash reach the machine, then the job must still be waiting, not failed
  await waitFor(() => !t.gw.actors.view(instance.id).connected, 'the instance sees the teardown');
  await settle(20);
  // a claim made in that turn is answered by the session without a network call (real I/O only; the clock
  // stands still): the job leaves `sending` for `scheduled`, never for failed or unknown
  let waiting = await state();
  for (let i = 0; i < 200 && waiting?.state === 'sending'; i++) {
    await settle(5);
    waiting = await state();
  }
  assert.equal(waiting?.state, 'scheduled', `job while the session is gone: ${JSON.stringify(waiting)}`);
  assert.equal(ledger().length, 0);

  // the session comes back by itself (backoff, new session, ready): small steps, so that a slow start under
  // load is not overtaken by its own start timeout; then the job goes out
  await t.advanceUntil(() => t.gw.actors.view(instance.id).connected, 'reconnected', { maxMs: 600_000, stepMs: 250 });
  await t.advanceUntil(async () => ['sent', 'failed', 'unknown', 'expired'].includes((await state())?.state ?? ''), 'the job settled', { maxMs: 60_000, stepMs: 250 });
  const end = await state();
  assert.equal(end?.state, 'sent', `job ended ${JSON.stringify(end)}`);
  assert.equal(ledger().length, 1, 'one message on the network');
  assert.ok(t.gw.actors.view(instance.id).connected, 'reconnected');
});
