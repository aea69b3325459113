/**
 * A graceful stop while a synchronous v1 caller's message is being sent (src/http/routes/legacy-waits.ts,
 * legacy-queued.ts): the call to the network hangs past the stop's window for answers (the network took the
 * message: a `hang` fault delivers it and never answers). The caller must get an answer that says the message
 * may have gone out (SPEC.md: a v1 500 "the message may still have been delivered. Do not resend
 * automatically"), never no answer at all (SPEC.md tells a caller without one to resend: a second message) and
 * never "nothing was sent". The gateway runs on the real clock: the hang lasts until the driver's call timeout.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, waitFor, type ApiResponse } from '../helpers/gateway.js';

const PHONE = '4915112345678';

test('a v1 caller whose message is being sent when the gateway stops is told it may have been delivered', async () => {
  const t = await startTestGateway({ label: 'v1stop_sending', env: { DRIVER_CALL_TIMEOUT_MS: '6000' } });
  let stopped = false;
  try {
    const { instance, apiKey } = await t.createInstance('sending', { settings: { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null } });
    t.gw.sandbox?.network?.addNextCallFault(instance.id, { kind: 'hang' });
    const answer: Promise<ApiResponse | Error> = t.api(apiKey, 'POST', '/api/send-message', { phone: PHONE, message: 'held' }).catch((e: unknown) => e as Error);
    await waitFor(async () => {
      const { rows } = await t.db.pool.query<{ state: string }>(`SELECT state FROM jobs WHERE instance_id = $1`, [instance.id]);
      return rows[0]?.state === 'sending' ? true : null;
    }, 'the message being sent');
    await t.gw.stop();
    stopped = true;
    const got = await answer;
    assert.ok(!(got instanceof Error), `the caller got no answer at all: ${String(got)}`);
    // the call timed out after the network took the message: unknown, which v1 answers 500 "do not resend"
    assert.equal(got.status, 500, got.text);
    assert.match(got.text, /may have been delivered: do not resend/);
    assert.ok(!/nothing was sent/.test(got.text), got.text);
    assert.equal((t.gw.sandbox?.network?.ledger(instance.id) ?? []).length, 1, 'the network took it once');
  } finally {
    if (!stopped) await t.gw.stop();
    await t.stop();
  }
});
