/**
 * The crash checker's verdict rules on hand-made ledgers and job tables: each rule catches what it is for,
 * and a v1 resend of a message in flight at a kill is told apart from a duplicate the gateway could avoid.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verify, violated, type JobRow, type LedgerRow } from '../helpers/crash-verify.js';
import type { RequestRecord } from '../helpers/crash-load.js';

// gateway #1 runs from t=0, #2 from t=100
const incarnation = (t: number) => (t >= 100 ? 2 : 1);

function job(id: string, state: string, body: string, over: Partial<JobRow> = {}): JobRow {
  return { id, state, body, messageId: state === 'sent' ? `m_${id}` : null, originRoute: '/api/v2/send-message', resultCode: null, errorMessage: null, queuedAt: 10, dispatchedAt: 20, ...over };
}
function entry(seq: number, body: string, messageId: string | null = null): LedgerRow {
  return { seq, body, messageId };
}
function v2(body: string, jobId: string | null): RequestRecord {
  return { api: 'v2', body, idempotencyKey: `k-${body}`, attempts: 1, lostAnswers: 0, status: 202, code: null, accepted: jobId !== null, jobId, messageId: null };
}
const V1 = '/api/send-message';

test('a clean run has no violation', () => {
  const v = verify([v2('a', 'wq_a'), v2('b', 'wq_b')], 2, [job('wq_a', 'sent', 'a'), job('wq_b', 'unknown', 'b')], [entry(1, 'a', 'm_wq_a'), entry(2, 'b')], incarnation);
  assert.equal(violated(v), false, v.violations.join('\n'));
  assert.equal(v.accepted, 2);
});

test('each rule catches its violation', () => {
  const dup = verify([v2('a', 'wq_a')], 1, [job('wq_a', 'sent', 'a')], [entry(1, 'a', 'm_wq_a'), entry(2, 'a')], incarnation);
  assert.equal(dup.duplicates, 1);
  const lost = verify([v2('a', 'wq_a')], 1, [], [], incarnation);
  assert.equal(lost.lost, 1);
  const sending = verify([], 0, [job('wq_a', 'sending', 'a')], [], incarnation);
  assert.equal(sending.leftSending, 1);
  const missing = verify([], 0, [job('wq_a', 'sent', 'a')], [], incarnation);
  assert.equal(missing.sentNotInLedger, 1);
  const failedButOut = verify([], 0, [job('wq_a', 'failed', 'a')], [entry(1, 'a')], incarnation);
  assert.equal(failedButOut.strayLedgerEntries, 1);
  assert.equal(failedButOut.notSentButDelivered, 1);
  for (const v of [dup, lost, sending, missing, failedButOut]) assert.equal(violated(v), true);
});

test('a v1 resend after a kill during the send is the v1 contract; an orphan sent by the next gateway is not', () => {
  // first copy went out from the gateway that held the caller (unknown at restart), the resend from the next one
  const inFlight = verify([], 0, [
    job('wq_1', 'unknown', 'x', { originRoute: V1, queuedAt: 10, dispatchedAt: 20 }),
    job('wq_2', 'sent', 'x', { originRoute: V1, queuedAt: 110, dispatchedAt: 120 }),
  ], [entry(1, 'x'), entry(2, 'x', 'm_wq_2')], incarnation);
  assert.equal(inFlight.duplicates, 0);
  assert.equal(inFlight.v1InFlightResends, 1);
  assert.equal(violated(inFlight), false, inFlight.violations.join('\n'));

  // the first job waited through the kill and went out from gateway #2, after its caller had been cut off
  const orphan = verify([], 0, [
    job('wq_1', 'sent', 'y', { originRoute: V1, queuedAt: 10, dispatchedAt: 105 }),
    job('wq_2', 'sent', 'y', { originRoute: V1, queuedAt: 110, dispatchedAt: 120 }),
  ], [entry(1, 'y', 'm_wq_1'), entry(2, 'y', 'm_wq_2')], incarnation);
  assert.equal(orphan.orphanSends, 1);
  assert.equal(orphan.duplicates, 1);
  assert.match(orphan.violations.join('\n'), /accepted by gateway #1, dispatched by gateway #2/);
});
