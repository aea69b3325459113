/**
 * Redelivery (`POST /admin/v1/instances/:id/webhook/deliveries/:eventId/redeliver`) against a whole gateway on a
 * simulated clock and a real local HTTP receiver: the receiver answers 500 until the delivery is `failed`, then
 * 204; after the redelivery it gets the same event id again, and the listing shows the attempts of both rounds
 * numbered on (1–3 failed, 4 delivered) with a fresh budget. Refusals: still pending (409), no enabled webhook
 * (409), an unknown event or another instance's (404).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';

const SECRET = 'redeliver-webhook-secret-0123456789';

interface Hit {
  eventId: string;
  status: number;
}
let t: TestGateway;
let receiver: http.Server;
let receiverUrl = '';
let answer = 500;
const hits: Hit[] = [];

before(async () => {
  t = await startTestGateway({ label: 'webhook_redeliver', simulated: true });
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits.push({ eventId: String(req.headers['x-event-id']), status: answer });
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
after(async () => {
  await t.stop();
  await new Promise((r) => receiver.close(r));
});

interface Attempt {
  attempt: number;
  status: number | null;
  error: string | null;
}
interface Delivery {
  eventId: string;
  state: string;
  attempts: number;
  maxAttempts: number;
  deliveredAt: string | null;
  nextAttemptAt: string | null;
  attemptLog: Attempt[];
}

async function delivery(id: string, eventId: string): Promise<Delivery | undefined> {
  const r = await t.admin('GET', `/admin/v1/instances/${id}/webhook/deliveries?limit=200`);
  assert.equal(r.status, 200, r.text);
  return (r.body.data?.items as Delivery[]).find((d) => d.eventId === eventId);
}

const redeliverPath = (id: string, eventId: string) => `/admin/v1/instances/${id}/webhook/deliveries/${eventId}/redeliver`;
const setHook = (id: string, enabled = true) =>
  t.admin('PUT', `/admin/v1/instances/${id}/webhook`, { url: receiverUrl, secret: SECRET, events: ['test'], allowPrivate: true, enabled });

test('a failed delivery is redelivered: same event id, attempts of both rounds, fresh budget; refusals', async () => {
  const { instance } = await t.createInstance('redeliver', { link: false });
  const { instance: other } = await t.createInstance('redeliver-other', { link: false });
  const id = instance.id;
  assert.equal((await setHook(id)).status, 200);

  const sent = await t.admin('POST', `/admin/v1/instances/${id}/webhook/test`, { message: 'redeliver me' });
  assert.equal(sent.status, 202, sent.text);
  const eventId = String(sent.body.data?.eventId);

  // after the first failed attempt it waits for its retry (on the simulated clock): still pending → 409
  await waitFor(async () => (await delivery(id, eventId))?.attempts === 1, 'the first attempt recorded');
  const early = await t.admin('POST', redeliverPath(id, eventId));
  assert.equal(early.status, 409, early.text);
  assert.equal(early.body.code, 'CONFLICT');
  assert.match(String(early.body.error), /still pending/);

  const failed = await t.advanceUntil(async () => {
    const d = await delivery(id, eventId);
    return d?.state === 'failed' ? d : null;
  }, 'the delivery failed', { stepMs: 1_000, maxMs: 60_000 });
  assert.equal(failed.attempts, 3);
  assert.equal(failed.maxAttempts, 3);
  assert.deepEqual(failed.attemptLog.map((a) => [a.attempt, a.status]), [[1, 500], [2, 500], [3, 500]]);

  // not this instance's event, or no such event: 404; a malformed id too
  for (const path of [redeliverPath(other.id, eventId), redeliverPath(id, 'ev_000000000000000000000000'), redeliverPath(id, 'nope')]) {
    const r = await t.admin('POST', path);
    assert.equal(r.status, 404, `${path}: ${r.text}`);
    assert.equal(r.body.code, 'NOT_FOUND');
  }
  const missing = await t.admin('POST', redeliverPath('00000000-0000-4000-8000-000000000000', eventId));
  assert.equal(missing.body.code, 'INSTANCE_NOT_FOUND');

  // a disabled webhook: 409 with a message that says so, and the row stays failed
  assert.equal((await setHook(id, false)).status, 200);
  const disabled = await t.admin('POST', redeliverPath(id, eventId));
  assert.equal(disabled.status, 409, disabled.text);
  assert.equal(disabled.body.code, 'CONFLICT');
  assert.match(String(disabled.body.error), /no enabled webhook/);
  assert.equal((await delivery(id, eventId))?.state, 'failed');
  assert.equal((await t.admin('DELETE', `/admin/v1/instances/${id}/webhook`)).status, 200);
  assert.equal((await t.admin('POST', redeliverPath(id, eventId))).body.code, 'CONFLICT', 'no webhook at all');

  // the receiver is fixed; the webhook set again: redeliver → 202, delivered as attempt 4 of a fresh budget
  answer = 204;
  assert.equal((await setHook(id)).status, 200);
  const hitsBefore = hits.length;
  const again = await t.admin('POST', redeliverPath(id, eventId));
  assert.equal(again.status, 202, again.text);
  assert.deepEqual(again.body.data, { eventId, state: 'pending' });
  const delivered = await t.advanceUntil(async () => {
    const d = await delivery(id, eventId);
    return d?.state === 'delivered' ? d : null;
  }, 'the redelivery delivered', { stepMs: 1_000, maxMs: 60_000 });
  assert.equal(delivered.attempts, 4);
  assert.equal(delivered.maxAttempts, 6, 'the attempts made plus the configured maximum of event test (3)');
  assert.ok(delivered.deliveredAt);
  assert.deepEqual(delivered.attemptLog.map((a) => [a.attempt, a.status, a.error]), [[1, 500, 'HTTP 500'], [2, 500, 'HTTP 500'], [3, 500, 'HTTP 500'], [4, 204, null]]);
  assert.deepEqual(hits.slice(hitsBefore), [{ eventId, status: 204 }], 'the receiver got the same event id once more');
  assert.deepEqual(new Set(hits.map((h) => h.eventId)), new Set([eventId]));

  // a delivered event can be sent again too (a receiver that lost it): attempt 5
  const twice = await t.admin('POST', redeliverPath(id, eventId));
  assert.equal(twice.status, 202, twice.text);
  const redone = await t.advanceUntil(async () => {
    const d = await delivery(id, eventId);
    return d?.state === 'delivered' && d.attempts === 5 ? d : null;
  }, 'delivered again', { stepMs: 1_000, maxMs: 60_000 });
  assert.equal(redone.maxAttempts, 7);
  assert.equal(hits.length, hitsBefore + 2);
});
