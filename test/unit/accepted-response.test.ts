/** The v2 answer of an acceptance (src/wire/job.ts acceptedResponse): a job without a slot says so. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acceptedResponse, NO_SLOT_YET } from '../../src/wire/job.js';
import type { Job } from '../../src/queue/job.js';

const NOW = Date.UTC(2026, 0, 5, 10, 0, 0);
const job = (over: Partial<Job>): Job => ({
  id: 'wq_test', seq: 1, instanceId: '00000000-0000-4000-8000-000000000001', state: 'queued', originRoute: '/api/v2/send-message',
  chatId: '4915112345678@c.us', phone: '4915112345678', payloadHash: null, idempotencyKey: null, priority: 5, notBefore: null,
  queuedAt: NOW, scheduledAt: null, dispatchedAt: null, terminalAt: null, expiresAt: NOW + 86_400_000, attempts: 0,
  deliveryConfidence: null, messageId: null, resultCode: null, errorMessage: null, unknownReason: null, previousJobId: null,
  kind: 'text', payload: { body: 'hi', chatId: '4915112345678@c.us' },
  ...over,
} as Job);
const answer = (j: Job, warnings: string[] = [], replay = false) => acceptedResponse({ job: j, replay, queuePosition: 1, limits: {}, warnings }, NOW);

test('no slot yet: queueState queued, etaSeconds 0 (an integer), and a warning that 0 is no send time', () => {
  const a = answer(job({}), ['an earlier note']);
  assert.deepEqual([a.queueState, a.scheduledAt, a.etaSeconds], ['queued', null, 0]);
  assert.deepEqual(a.warnings, ['an earlier note', NO_SLOT_YET]);
});

test('with a slot, or a replay of a job that went out: no such warning', () => {
  const planned = answer(job({ state: 'scheduled', scheduledAt: NOW + 5_000 }));
  assert.deepEqual([planned.queueState, planned.etaSeconds, planned.warnings], ['scheduled', 5, undefined]);
  const sent = answer(job({ state: 'sent', scheduledAt: null, dispatchedAt: NOW }), [], true);
  assert.equal(sent.warnings, undefined);
});
