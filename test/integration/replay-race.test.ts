/**
 * An idempotent retry that races its first send: the first send passed its gate while the instance was
 * connected and its batch is still being committed (another session holds the key table for writes) when the
 * instance goes offline and the retry comes. The retry is refused at its gate; its key's lookup
 * (src/queue/acceptance.ts `replayOf`) waits for the first send's outcome and answers its replay, never
 * 503 INSTANCE_OFFLINE "no job has the key" while that job is being accepted (found from the outside).
 * Real HTTP, real PostgreSQL, the sandbox network.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestGateway, unlinkUntilOffline, waitFor, type TestGateway } from '../helpers/gateway.js';
import { NEEDS_SERVER } from '../helpers/db.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'replay_race' });
});
after(async () => {
  await t.stop();
});

const SETTINGS = { minDelayMs: 1_000, maxDelayMs: 1_000, quietHours: null, maxPerHour: null, maxPer24h: null };

test('a retry racing its first send while the instance went offline is that send\'s 200 replay, not 503 INSTANCE_OFFLINE', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('racer', { settings: SETTINGS });
  const body = { phone: '4915112345678', message: 'raced', idempotencyKey: 'race-retry-01', notBefore: new Date(Date.now() + 3_600_000).toISOString() };

  // the key table held for writes: the first send's batch waits in its commit (reads of the table go on)
  const holder = new pg.Client(t.db.config);
  await holder.connect();
  let held = true;
  const release = async () => {
    if (!held) return;
    held = false;
    await holder.query('ROLLBACK');
    await holder.end();
  };
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE idempotency_keys IN EXCLUSIVE MODE');
    const first = t.api(apiKey, 'POST', '/api/v2/send-message', body);
    await waitFor(async () => {
      const { rows } = await t.db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'idempotency_keys'::regclass");
      return (rows[0]?.n ?? 0) > 0;
    }, 'the first send waiting in its commit');

    await unlinkUntilOffline(t, instance.id, apiKey);

    const retry = t.api(apiKey, 'POST', '/api/v2/send-message', body);
    // the retry is answered before the first send commits where its lookup does not wait for it
    await new Promise((r) => setTimeout(r, 300));
    await release();
    const [a, b] = await Promise.all([first, retry]);
    assert.equal(a.status, 202, a.text);
    assert.equal(b.status, 200, b.text);
    assert.equal(b.body.data?.idempotentReplay, true, b.text);
    assert.equal(b.body.data?.jobId, a.body.data?.jobId, b.text);
  } finally {
    await release();
  }
  const jobs = await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs WHERE instance_id = $1', [instance.id]);
  assert.equal(jobs.rows[0]?.n, 1, 'one job');
});
