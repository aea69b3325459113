/**
 * Outcomes are written beside the dispatch lane, one at a time in call order (src/queue/outcome-writer.ts
 * OUTCOMES_BESIDE_LANE): an outcome write that cannot go on does not hold the next claim back, and no more
 * than two outcomes are left unwritten while the lane claims the next job. Real HTTP, real PostgreSQL, the
 * sandbox network, simulated time. The instance's webhook wants `message.sent`, and another session holds the
 * outbox table, which every outcome's event statement writes and a claim does not: outcome writes wait,
 * claims do not.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { NEEDS_SERVER } from '../helpers/db.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'queue_dispatch_outcomes', simulated: true });
});
after(async () => {
  await t.stop();
});

const SETTINGS = { minDelayMs: 1_000, maxDelayMs: 1_000, quietHours: null, maxPerHour: null, maxPer24h: null };

async function rows(ids: string[]): Promise<{ id: string; state: string; dispatches: number; dispatchedAt: Date | null }[]> {
  const { rows: found } = await t.db.pool.query<{ id: string; state: string; dispatches: number; dispatchedAt: Date | null }>(
    `SELECT id, state, dispatched_at AS "dispatchedAt", (SELECT count(*)::int FROM dispatches d WHERE d.job_id = j.id) AS dispatches
       FROM jobs j WHERE id = ANY($1::text[])`, [ids]);
  return ids.map((id) => {
    const r = found.find((f) => f.id === id);
    if (!r) throw new Error(`no job ${id}`);
    return r;
  });
}

test('the lane claims and sends while up to two outcomes are unwritten, then waits for the oldest', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('outcomes-beside', { settings: SETTINGS });
  const hook = await t.admin('PUT', `/admin/v1/instances/${instance.id}/webhook`, {
    url: 'http://127.0.0.1:9/hook', secret: 'outcomes-beside-secret-0123456789', events: ['message.sent'], allowPrivate: true,
  });
  assert.equal(hook.status, 200, hook.text);
  const notBefore = new Date(t.clock.now() + 3_000).toISOString();
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `beside ${i}`, notBefore });
    assert.equal(r.status, 202, r.text);
    ids.push(String(r.body.data?.jobId));
  }

  const holder = new pg.Client(t.db.config);
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE');
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await holder.query('ROLLBACK');
    await holder.end();
  };
  try {
    // the first three are claimed and called although the first outcome cannot be written
    const three = await t.advanceUntil(async () => {
      const r = await rows(ids);
      return r.slice(0, 3).every((j) => j.state === 'sending') ? r : null;
    }, 'three jobs claimed with their outcomes unwritten', { maxMs: 8_000, stepMs: 250 });
    assert.deepEqual(three.map((j) => j.dispatches), [1, 1, 1, 0]);
    // the fourth is due one pause later: the lane waits for the oldest outcome first
    await t.advance(3_000, 250);
    const held = await rows(ids);
    assert.deepEqual(held.map((j) => j.state), ['sending', 'sending', 'sending', 'scheduled']);
  } finally {
    await release();
  }
  const done = await t.advanceUntil(async () => {
    const r = await rows(ids);
    return r.every((j) => j.state === 'sent') ? r : null;
  }, 'all four sent', { maxMs: 10_000, stepMs: 250 });
  assert.deepEqual(done.map((j) => j.dispatches), [1, 1, 1, 1], 'each sent once');
  const at = done.map((j) => (j.dispatchedAt as Date).getTime());
  for (let i = 1; i < at.length; i++) assert.ok((at[i] as number) - (at[i - 1] as number) >= SETTINGS.minDelayMs, `pause ${i} ≥ minDelayMs`);
});
