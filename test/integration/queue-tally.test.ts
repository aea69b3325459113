/**
 * The counts GET /api/v2/queue and GET /api/status answer are kept by the queue as it changes them (no query
 * per request; src/queue/tally.ts): after a mix of outcomes — sent, failed (not registered), cancelled,
 * expired, still waiting — they equal what PostgreSQL says, again after a restart of the instance's session (its
 * planner and tally keep running through it: what a start reads is checked by status-at-start.test.ts), and the
 * 24 h window slides as time passes.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { queueCounts } from '../../src/queue/sql/queueCounts.js';
import type { QueueCounts } from '../../src/queue/job.js';
import { DEADLINES } from '../../src/actors/port.js';

let t: TestGateway;
const FAST = { minDelayMs: 1000, maxDelayMs: 1000, quietHours: null, maxPerHour: null, maxPer24h: null };

before(async () => {
  t = await startTestGateway({ label: 'queue_tally', simulated: true });
});
after(async () => {
  await t?.stop();
});

const skip = !process.env.TEST_DATABASE_URL && 'needs PostgreSQL (TEST_DATABASE_URL)';

/** The counts of both routes and of PostgreSQL, read while nothing moved in between (a dispatch may be under way). */
async function compare(apiKey: string, instanceId: string, what: string): Promise<QueueCounts> {
  for (let attempt = 0; ; attempt++) {
    const truth = await queueCounts(t.db.pool, instanceId, t.clock.now());
    const q = await t.api(apiKey, 'GET', '/api/v2/queue');
    const s = await t.api(apiKey, 'GET', '/api/status');
    const again = await queueCounts(t.db.pool, instanceId, t.clock.now());
    if (JSON.stringify(truth) !== JSON.stringify(again) && attempt < 50) {
      await new Promise((r) => setTimeout(r, 20));
      continue;
    }
    assert.equal(q.status, 200, q.text);
    assert.equal(s.status, 200, s.text);
    const c = q.body.data?.counts as Record<string, number>;
    assert.deepEqual(
      c,
      { queued: truth.queued, scheduled: truth.scheduled, sending: truth.sending, sent24h: truth.sent24h, failed24h: truth.failed24h, unknown24h: truth.unknown24h },
      `GET /api/v2/queue counts ${what}`,
    );
    const sq = s.body.data?.queue as Record<string, unknown>;
    for (const k of ['sent', 'failed', 'unknown', 'queued', 'scheduled', 'sending', 'sent24h', 'failed24h', 'unknown24h'] as const) {
      assert.equal(sq[k], truth[k], `GET /api/status queue.${k} ${what}`);
    }
    return truth;
  }
}

test('counts kept by the queue equal PostgreSQL after sent, failed, cancelled, expired and waiting jobs', { skip }, async () => {
  const { instance, apiKey } = await t.createInstance('tally', { settings: FAST });
  const send = (body: Record<string, unknown>) => t.accept(apiKey, body);
  for (let i = 0; i < 4; i++) await send({ phone: '4915112345678', message: `ok ${i}` });
  await send({ phone: '4915112340000', message: 'nobody there' }); // NOT_REGISTERED → failed
  const later = await send({ phone: '4915112345678', message: 'cancel me', notBefore: new Date(t.clock.now() + 3_600_000).toISOString() });
  await send({ phone: '4915112345678', message: 'expire me', notBefore: new Date(t.clock.now() + 1_800_000).toISOString(), ttlSeconds: 600 }).catch(() => null);
  await send({ phone: '4915112345678', message: 'wait for tomorrow', notBefore: new Date(t.clock.now() + 20 * 3_600_000).toISOString(), ttlSeconds: 86_400 });
  await compare(apiKey, instance.id, 'right after acceptance');

  const c = await t.api(apiKey, 'DELETE', `/api/v2/messages/${later}`);
  assert.equal(c.status, 200, c.text);
  await t.advanceUntil(async () => {
    const truth = await queueCounts(t.db.pool, instance.id, t.clock.now());
    return truth.sent === 4 && truth.failed === 1 ? true : null;
  }, 'four sent and one failed', { maxMs: 600_000 });
  await compare(apiKey, instance.id, 'after sends, a failure and a cancel');

  // the expiring job's validity ends before its notBefore: it expires; the last one keeps waiting
  await t.advance(40 * 60_000, 60_000);
  await compare(apiKey, instance.id, 'after an expiry');

  // the instance's session restarts (the planner, and the tally with it, go on: nothing is read again)
  const restart = await t.admin('POST', `/admin/v1/instances/${instance.id}/restart`);
  assert.equal(restart.status, 202, restart.text);
  await t.advanceUntil(async () => ((await t.api(apiKey, 'GET', '/api/status')).body.data?.connected === true ? true : null), 'connected again', { maxMs: 600_000 });
  await compare(apiKey, instance.id, 'after a restart');

  // a day later the 24 h window has slid past the first outcomes (the job waiting for tomorrow went out since)
  await t.advance(25 * 3_600_000, 600_000);
  const end = await compare(apiKey, instance.id, 'a day later');
  assert.ok(end.sent24h < end.sent, `the window slid: ${end.sent24h} of ${end.sent} sent in the last 24 h`);
  assert.equal(end.failed24h, 0, 'the failure of yesterday is out of the window');
});

test('local asks are served by the running planner without an ask event (a summary read at once); a deleted instance is refused as before', { skip }, async () => {
  const { instance, apiKey } = await t.createInstance('summary-read', { settings: FAST });
  const asked: string[] = [];
  const stop = t.gw.actors.subscribe((ev) => {
    if (ev.type !== '@xstate.event') return;
    const e = (ev as { event: { type: string; ask?: { type: string } } }).event;
    if (e.type === 'ASK' && e.ask) asked.push(e.ask.type);
  });
  try {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'counted', notBefore: new Date(t.clock.now() + 3_600_000).toISOString() });
    assert.equal(r.status, 202, r.text);
    assert.deepEqual(asked, [], 'the acceptance is served without an ask event');
    const truth = await compare(apiKey, instance.id, 'read from the planner');
    assert.equal(truth.scheduled + truth.queued, 1);
    assert.deepEqual(asked, [], 'both routes read the summary without an ask event');

    // the queue turned off (settings.enabled false): the planner still runs and answers the mode
    const off = await t.admin('PATCH', `/admin/v1/instances/${instance.id}`, { settings: { enabled: false } });
    assert.equal(off.status, 200, off.text);
    const q = await t.api(apiKey, 'GET', '/api/v2/queue');
    assert.equal(q.status, 200, q.text);
    assert.equal(q.body.data?.mode, 'disabled', q.text);
  } finally {
    stop();
  }
  // the instance deleted: its port is gone and the route answers as before
  const gone = await t.admin('DELETE', `/admin/v1/instances/${instance.id}`);
  assert.ok([200, 202, 204].includes(gone.status), gone.text);
  const after = await t.api(apiKey, 'GET', '/api/status');
  assert.equal(after.status, 401, after.text);
});

test('a local ask the planner does not answer in time is 504 INSTANCE_TIMEOUT at the route deadline, on the gateway clock', { skip }, async () => {
  const { apiKey } = await t.createInstance('deadline', { settings: FAST });
  const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'held', notBefore: new Date(t.clock.now() + 3_600_000).toISOString() });
  assert.equal(r.status, 202, r.text);
  const jobId = String(r.body.data?.jobId);
  // another session holds the job's row: the cancel's write waits for it
  const holder = await t.db.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE', [jobId]);
    const waitingAsks = () => Number(t.gw.actors.describeActors().find((a) => a.id === 'supervisor')?.context.waitingAsks);
    const idle = waitingAsks();
    const cancel = t.api(apiKey, 'DELETE', `/api/v2/messages/${jobId}`);
    // the held cancel counts among the asks waiting (/debug/actors): waited for, not slept on
    await waitFor(() => (waitingAsks() === idle + 1 ? true : null), 'the held cancel among the asks waiting');
    await t.advance(DEADLINES.queueStatus + 1_000, 500);
    const answered = await cancel;
    assert.equal(answered.status, 504, answered.text);
    assert.equal(answered.body.code, 'INSTANCE_TIMEOUT', answered.text);
    assert.equal(waitingAsks(), idle, 'no longer once the deadline answered it');
  } finally {
    await holder.query('ROLLBACK');
    holder.release();
  }
  // the cancel went on once the row was free: the job is cancelled, as the 504's "may still happen" says
  await t.advanceUntil(async () => {
    const m = await t.api(apiKey, 'GET', `/api/v2/messages/${jobId}`);
    return m.body.data?.state === 'cancelled' ? true : null;
  }, 'the cancel done after the row was free', { maxMs: 60_000 });
});
