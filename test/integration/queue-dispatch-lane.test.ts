/**
 * Issue 18, goal 5: the dispatch lane does not wait behind acceptance. Real HTTP, real PostgreSQL, the sandbox
 * network, simulated time. An acceptance of the same instance is held in its group commit (another session
 * holds the key table); a job that comes due meanwhile is claimed and sent, once, while that acceptance is
 * still waiting — which then commits as usual.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { stalledAcceptance } from '../helpers/stalled-acceptance.js';
import { NEEDS_SERVER } from '../helpers/db.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'queue_dispatch_lane', simulated: true });
});
after(async () => {
  await t.stop();
});

const SETTINGS = { minDelayMs: 1_000, maxDelayMs: 1_000, quietHours: null, maxPerHour: null, maxPer24h: null };

test('a due job is claimed and sent while an acceptance of its instance is stuck in its commit', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('lane', { settings: SETTINGS });
  const due = await t.api(apiKey, 'POST', '/api/v2/send-message', {
    phone: '4915112345678', message: 'due soon', notBefore: new Date(t.clock.now() + 3_000).toISOString(),
  });
  assert.equal(due.status, 202, due.text);
  const jobId = String(due.body.data?.jobId);

  const stuck = await stalledAcceptance(t, apiKey, 'lane-stuck-acceptance');
  let answered = false;
  void stuck.answer.finally(() => (answered = true));
  try {
    const sent = await t.advanceUntil(async () => {
      const { rows } = await t.db.pool.query<{ state: string; attempts: number }>('SELECT state, attempts FROM jobs WHERE id = $1', [jobId]);
      return rows[0]?.state === 'sent' ? rows[0] : null;
    }, 'the due job sent', { maxMs: 6_000, stepMs: 250 });
    assert.equal(sent.attempts, 1);
    assert.equal(answered, false, 'the acceptance is still held while the due job went out');
  } finally {
    await stuck.release();
  }
  const accepted = await stuck.answer;
  assert.equal(accepted.status, 202, accepted.text);
  const { rows: dispatches } = await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM dispatches WHERE instance_id = $1 AND job_id = $2', [instance.id, jobId]);
  assert.equal(dispatches[0]?.n, 1, 'the due job was dispatched once');
});
