/**
 * A cancel and the dispatch lane's claim of the same job, now that the claim is off the serial executor
 * (234fcc4): both are conditional UPDATEs of the job row, so exactly one wins, whichever gets the row first.
 * Real HTTP, real PostgreSQL, the sandbox network, simulated time. Another session holds the job's row; the
 * two queue behind it in a chosen order; then it lets go. The winner's story is the whole story: a cancel
 * answered 200 means no dispatch and no send, a claim that won means the cancel is refused (409) and the job
 * is sent once; the lane goes on with the next job either way.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { NEEDS_SERVER } from '../helpers/db.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'queue_cancel_claim', simulated: true });
});
after(async () => {
  await t.stop();
});

const SETTINGS = { minDelayMs: 1_000, maxDelayMs: 1_000, quietHours: null, maxPerHour: null, maxPer24h: null };

/** Sessions of this test's database waiting for a lock. */
async function lockWaiters(): Promise<number> {
  const { rows } = await t.db.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
  return rows[0]?.n ?? 0;
}

async function jobRow(id: string): Promise<{ state: string; dispatches: number }> {
  const { rows } = await t.db.pool.query<{ state: string; dispatches: number }>(
    'SELECT state, (SELECT count(*)::int FROM dispatches d WHERE d.job_id = j.id) AS dispatches FROM jobs j WHERE id = $1', [id]);
  if (!rows[0]) throw new Error(`no job ${id}`);
  return rows[0];
}

for (const first of ['claim', 'cancel'] as const) {
  test(`the ${first} reaches the job row first: it alone wins, and the other side says so`, NEEDS_SERVER, async () => {
    const { apiKey } = await t.createInstance(`race-${first}`, { settings: SETTINGS });
    const send = async (message: string, inMs: number) => {
      const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message, notBefore: new Date(t.clock.now() + inMs).toISOString() });
      assert.equal(r.status, 202, r.text);
      return String(r.body.data?.jobId);
    };
    const raced = await send(`raced ${first}`, 3_000);
    const next = await send(`after ${first}`, 30_000);

    const holder = new pg.Client(t.db.config);
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE', [raced]);
    let cancel: Promise<Awaited<ReturnType<TestGateway['api']>>> | null = null;
    try {
      const startCancel = async () => {
        const waiting = await lockWaiters();
        cancel = t.api(apiKey, 'DELETE', `/api/v2/messages/${raced}`);
        await waitFor(async () => (await lockWaiters()) > waiting, 'the cancel waiting for the row');
      };
      if (first === 'cancel') await startCancel();
      const before = await lockWaiters();
      await t.advanceUntil(async () => (await lockWaiters()) > before, 'the claim waiting for the row', { maxMs: 6_000, stepMs: 250 });
      if (first === 'claim') await startCancel();
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    const answer = await (cancel as unknown as Promise<Awaited<ReturnType<TestGateway['api']>>>);
    const settled = await t.advanceUntil(async () => {
      const row = await jobRow(raced);
      return row.state === 'sending' ? null : row;
    }, 'the raced job settled', { maxMs: 2_000, stepMs: 250 });
    if (first === 'cancel') {
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(settled, { state: 'cancelled', dispatches: 0 });
    } else {
      assert.equal(answer.status, 409, answer.text);
      assert.deepEqual(settled, { state: 'sent', dispatches: 1 });
    }
    // the lane is not stuck, and counted the raced job only if it went out
    const after = await t.advanceUntil(async () => {
      const row = await jobRow(next);
      return row.state === 'sent' ? row : null;
    }, 'the next job sent', { maxMs: 40_000, stepMs: 1_000 });
    assert.equal(after.dispatches, 1);
  });
}
