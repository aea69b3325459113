/**
 * A synchronous v1 caller whose instance is deleted while it waits is answered then, not when its wait runs out.
 * Found from the outside: the 503 "deleted while the message waited" came at 20 s, the end of the wait, about 18 s
 * after the delete. Deleting the instance stops its queue, which ends the waits it holds (src/queue/waiters.ts);
 * the route then reads the job's row, gone with its instance (src/http/routes/legacy-queued.ts).
 * The gateway runs on the real clock; the bound asserted is the wait itself (20 s), far above what the answer takes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { startTestGateway, waitFor, type ApiResponse } from '../helpers/gateway.js';

const PHONE = '4915112345678';
const WAIT_MS = 20_000;

for (const [name, settings] of [
  ['with ceilings', { maxPerHour: 1, maxPer24h: null }],
  // the pause (15 s) ends inside the wait (20 s): the job is created and waits, rather than refused at once
  ['without ceilings', { minDelayMs: 15_000, maxDelayMs: 15_000, maxPerHour: null, maxPer24h: null }],
] as const) {
  test(`${name}: a v1 caller waiting when its instance is deleted is answered 503 at once, nothing sent`, async () => {
    const t = await startTestGateway({ label: `v1_delete_wait_${name.startsWith('with ') ? 'ceil' : 'free'}` });
    try {
      const { instance, apiKey } = await t.createInstance('deleted', { settings: { quietHours: null, ...settings } });
      const first = await t.api(apiKey, 'POST', '/api/send-message', { phone: PHONE, message: 'first' });
      assert.equal(first.status, 200, first.text);
      const started = performance.now();
      const second: Promise<ApiResponse> = t.api(apiKey, 'POST', '/api/send-message', { phone: PHONE, message: 'second' });
      await waitFor(async () => {
        const { rows } = await t.db.pool.query<{ id: string }>(`SELECT id FROM jobs WHERE instance_id = $1 AND payload->>'body' = 'second'`, [instance.id]);
        return rows[0]?.id ?? null;
      }, 'the second message accepted and waiting');
      const deleted = await t.admin('DELETE', `/admin/v1/instances/${instance.id}`);
      assert.ok(deleted.status < 300, deleted.text);
      const answer = await second;
      const tookMs = performance.now() - started;
      assert.equal(answer.status, 503, answer.text);
      assert.match(answer.text, /deleted while the message waited; nothing was sent/);
      assert.ok(tookMs < WAIT_MS - 5_000, `answered after ${Math.round(tookMs)} ms: at the end of the wait, not at the delete`);
      assert.deepEqual((t.gw.sandbox?.network?.ledger(instance.id) ?? []).map((e) => e.body), ['first']);
    } finally {
      await t.stop();
    }
  });
}

test('a v1 caller whose message is being sent when its instance is deleted is answered when its wait ends, not seconds after', async () => {
  // a short wait, and a call that hangs past it: the delete waits for the send, the caller for its wait
  const waitMs = 3_000;
  const t = await startTestGateway({ label: 'v1_delete_sending', env: { LEGACY_SYNC_TIMEOUT_MS: String(waitMs), DRIVER_CALL_TIMEOUT_MS: '8000' } });
  try {
    const { instance, apiKey } = await t.createInstance('deleted-sending', { settings: { quietHours: null, minDelayMs: 0, maxDelayMs: 0, maxPerHour: null, maxPer24h: null } });
    t.gw.sandbox?.network?.addNextCallFault(instance.id, { kind: 'hang' });
    const started = performance.now();
    const answer: Promise<ApiResponse> = t.api(apiKey, 'POST', '/api/send-message', { phone: PHONE, message: 'held' });
    await waitFor(async () => {
      const { rows } = await t.db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE instance_id = $1', [instance.id]);
      return rows[0]?.state === 'sending' ? true : null;
    }, 'the message being sent');
    const deleted = t.admin('DELETE', `/admin/v1/instances/${instance.id}`);
    const got = await answer;
    const tookMs = performance.now() - started;
    assert.equal(got.status, 500, got.text);
    assert.match(got.text, /may have been delivered/);
    // the asks made once the wait is over (its reason, the cancellation) do not wait out an owner that is gone
    assert.ok(tookMs < waitMs + 1_500, `answered after ${Math.round(tookMs)} ms for a wait of ${waitMs}`);
    assert.ok((await deleted).status < 300);
  } finally {
    await t.stop();
  }
});

test('a v1 caller whose wait ends while the delete still waits on a send in flight is told not sent, and its message never goes', async () => {
  // found from the outside: the wait ended first, the caller was told 504 "goes out at scheduledAt: poll the job,
  // do not resend", and the job was then deleted unsent. The delete waits for the hung send (DRIVER_CALL_TIMEOUT_MS)
  const waitMs = 3_000;
  const t = await startTestGateway({ label: 'v1_delete_behind_send', env: { LEGACY_SYNC_TIMEOUT_MS: String(waitMs), DRIVER_CALL_TIMEOUT_MS: '7000' } });
  try {
    const { instance, apiKey } = await t.createInstance('deleted-behind', { settings: { quietHours: null, minDelayMs: 0, maxDelayMs: 0, maxPerHour: 100, maxPer24h: null } });
    t.gw.sandbox?.network?.addNextCallFault(instance.id, { kind: 'hang', deliver: true });
    assert.equal((await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: PHONE, message: 'in flight' })).status, 202);
    await waitFor(async () => {
      const { rows } = await t.db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE instance_id = $1', [instance.id]);
      return rows[0]?.state === 'sending' ? true : null;
    }, 'the first message being sent');
    const answer: Promise<ApiResponse> = t.api(apiKey, 'POST', '/api/send-message', { phone: PHONE, message: 'behind it' });
    await waitFor(async () => {
      const { rows } = await t.db.pool.query<{ id: string }>(`SELECT id FROM jobs WHERE instance_id = $1 AND payload->>'body' = 'behind it'`, [instance.id]);
      return rows[0]?.id ?? null;
    }, 'the v1 message accepted and waiting');
    const deleted = t.admin('DELETE', `/admin/v1/instances/${instance.id}`);
    const got = await answer;
    assert.equal(got.status, 503, got.text);
    assert.match(got.text, /not sent: the instance is being deleted; nothing was sent/);
    assert.ok((await deleted).status < 300);
    assert.deepEqual((t.gw.sandbox?.network?.ledger(instance.id) ?? []).map((e) => e.body), ['in flight'], 'the v1 message never went out');
  } finally {
    await t.stop();
  }
});
