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

test("a slot that came due while the event loop was busy goes out on the next request, before node's timer phase", async () => {
  const { apiKey } = await t.createInstance('lane-poll', { settings: SETTINGS });
  const due = await t.api(apiKey, 'POST', '/api/v2/send-message', {
    phone: '4915112345678', message: 'due while busy', notBefore: new Date(t.clock.now() + 5_000).toISOString(),
  });
  assert.equal(due.status, 202, due.text);
  const jobId = String(due.body.data?.jobId);
  const slot = Date.parse(String(due.body.data?.scheduledAt));
  const stateOf = async () => (await t.db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [jobId])).rows[0]?.state;
  // the lane's timer is armed once the acceptance committed; then time passes without the simulated clock's
  // timers firing, as a busy loop's timer phase waits behind its I/O (SimulatedClock fires them in set/increment)
  await t.advanceUntil(() => t.gw.actors.laneTimers.size > 0 || null, 'the lane armed', { maxMs: 0 });
  const sim = t.sim as unknown as { _now: number };
  sim._now = slot + 1;
  assert.equal(await stateOf(), 'scheduled');
  // any request polls the lanes' timers as it arrives: the due slot goes out, with no timer of the clock fired
  const read = await t.api(apiKey, 'GET', '/api/v2/queue');
  assert.equal(read.status, 200, read.text);
  const deadline = Date.now() + 10_000;
  while ((await stateOf()) !== 'sent' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(await stateOf(), 'sent');
  const { rows } = await t.db.pool.query<{ late: number }>('SELECT extract(epoch FROM dispatched_at - scheduled_at) * 1000 AS late FROM jobs WHERE id = $1', [jobId]);
  assert.ok(Number(rows[0]?.late) >= 0 && Number(rows[0]?.late) <= 1, `dispatched at its slot's instant on the clock (late ${rows[0]?.late} ms)`);
});
