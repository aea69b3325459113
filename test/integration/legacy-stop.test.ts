/**
 * A graceful stop answers every synchronous v1 caller before it hands its instances over (src/http/routes/
 * legacy-waits.ts). Found from the outside: SIGTERM during a v1 send-message's wait closed the connection with
 * no answer at all, and SPEC.md tells a caller without an answer to resend.
 * - without ceilings: the waiting job is cancelled, 503 "the gateway is stopping; nothing was sent", and it is
 *   never sent (it does not outlive its caller);
 * - with ceilings: 504 QUEUE_WAIT_TIMEOUT with the job, which stays queued, released from its caller: it goes
 *   out at its slot after the restart, not expired as an orphan.
 * The gateway runs on the real clock: nothing here sleeps, each step waits for what the previous one caused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, waitFor, type ApiResponse, type TestGateway } from '../helpers/gateway.js';
import type { InstanceSettings } from '../../src/queue/settings.js';

const PHONE = '4915112345678';
// the pause (15 s) ends inside the wait (20 s): the job is created and waits, rather than refused at once
const PAUSED = { minDelayMs: 15_000, maxDelayMs: 15_000, quietHours: null };

/** `second` waits behind `first` (sent at once, then a pause of 15 s); resolves with its answer once the gateway stopped. */
async function stopDuringWait(t: TestGateway, settings: Partial<InstanceSettings>) {
  const { instance, apiKey } = await t.createInstance('waiting', { settings: { ...PAUSED, ...settings } });
  const first = await t.api(apiKey, 'POST', '/api/send-message', { phone: PHONE, message: 'first' });
  assert.equal(first.status, 200, first.text);
  const second: Promise<ApiResponse> = t.api(apiKey, 'POST', '/api/send-message', { phone: PHONE, message: 'second' });
  const job = await waitFor(async () => {
    const { rows } = await t.db.pool.query<{ id: string }>(`SELECT id FROM jobs WHERE instance_id = $1 AND payload->>'body' = 'second'`, [instance.id]);
    return rows[0]?.id ?? null;
  }, 'the second message accepted and waiting');
  const ledger = () => (t.gw.sandbox?.network?.ledger(instance.id) ?? []).map((e) => e.body);
  await t.gw.stop();
  const row = async () =>
    (await t.db.pool.query<{ state: string; caller_boot: string | null }>('SELECT state, caller_boot FROM jobs WHERE id = $1', [job])).rows[0];
  return { answer: await second, job, row, ledger: ledger() };
}

test('without ceilings: the waiting v1 caller is answered 503 at the stop, its job cancelled, never sent', async () => {
  const t = await startTestGateway({ label: 'v1stop_free' });
  try {
    const { answer, row, ledger } = await stopDuringWait(t, { maxPerHour: null, maxPer24h: null });
    assert.equal(answer.status, 503);
    assert.equal(answer.text, JSON.stringify({ success: false, error: 'not sent: the gateway is stopping; nothing was sent' }));
    assert.equal((await row())?.state, 'cancelled');
    assert.deepEqual(ledger, ['first']);
  } finally {
    await t.stop();
  }
});

test('with ceilings: the waiting v1 caller is answered 504 with its job at the stop; the job stays queued for after it', async () => {
  const t = await startTestGateway({ label: 'v1stop_ceil' });
  try {
    const { answer, job, row, ledger } = await stopDuringWait(t, { maxPerHour: 40, maxPer24h: null });
    assert.equal(answer.status, 504, answer.text);
    assert.equal(answer.body.code, 'QUEUE_WAIT_TIMEOUT');
    assert.equal(answer.body.data?.jobId, job);
    const r = await row();
    assert.equal(r?.state, 'scheduled');
    assert.equal(r?.caller_boot, null, 'released: a restart does not expire it as an orphan');
    assert.deepEqual(ledger, ['first']);
  } finally {
    await t.stop();
  }
});
