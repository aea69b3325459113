/**
 * Each instance's outcome totals (sql/0018_outcome_totals.sql) are what counting its jobs says: filled from the jobs
 * a database already holds when the migration runs (a job of an instance deleted before 0012 stays out), then kept
 * by the trigger through every change of a job's state into, out of and between outcomes, whoever writes it; a
 * start reads them (src/queue/sql/loadStarts.ts, loadOutcomes.ts) instead of counting every job ever sent, and
 * deleting the instance deletes them.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { addInstance, migrateBelow } from '../helpers/sql-plans.js';
import { migrate } from '../../src/store/migrate.js';
import { loadStarts } from '../../src/queue/sql/loadStarts.js';
import { loadOutcomes } from '../../src/queue/sql/loadOutcomes.js';
import type { Queryable } from '../../src/store/pool.js';

const dbs: TestDb[] = [];
after(async () => {
  for (const d of dbs) await d.close();
});

const OUTCOMES = ['sent', 'failed', 'unknown'] as const;
type Totals = Record<(typeof OUTCOMES)[number], number>;

/** What counting an instance's jobs says (the truth the totals must equal). */
async function counted(q: Queryable, instanceId: string): Promise<Totals> {
  const { rows } = await q.query<{ state: keyof Totals; n: number }>(
    "SELECT state, count(*)::int AS n FROM jobs WHERE instance_id = $1 AND state IN ('sent','failed','unknown') GROUP BY state",
    [instanceId],
  );
  const out: Totals = { sent: 0, failed: 0, unknown: 0 };
  for (const r of rows) out[r.state] = r.n;
  return out;
}

/** The totals as a start reads them, both ways (one instance; many at once). */
async function read(q: Queryable, instanceId: string): Promise<Totals> {
  const alone = (await loadOutcomes(q, instanceId, Date.now())).totals;
  const started = (await loadStarts(q, [instanceId], Date.now(), 'test')).get(instanceId)?.outcomes.totals;
  assert.deepEqual(started, alone, 'loadStarts and loadOutcomes read the same totals');
  return alone;
}


let n = 0;
async function addJob(q: Queryable, instanceId: string, state: string): Promise<string> {
  const id = `wq_${String(++n).padStart(24, '0')}`;
  await q.query(
    `INSERT INTO jobs (id, instance_id, state, kind, origin_route, phone, payload, payload_hash, priority, queued_at, terminal_at, expires_at)
     VALUES ($1, $2, $3, 'text', '/api/v2/send-message', '4915112345678', '{}', '', 5, now(),
             CASE WHEN $3 IN ('sent','failed','unknown','cancelled','expired') THEN now() END, now() + interval '1 day')`,
    [id, instanceId, state],
  );
  return id;
}

test('the migration fills the totals from the jobs already there, leaving out jobs of instances that are gone', async () => {
  const db = await createTestDb('outcome_totals_fill', { migrate: false });
  dbs.push(db);
  await migrateBelow(db.pool, 18); // the schema as it was before 0018
  const a = await addInstance(db.pool, 'a');
  const b = await addInstance(db.pool, 'b');
  for (const s of ['sent', 'sent', 'sent', 'failed', 'failed', 'unknown', 'queued', 'scheduled', 'cancelled', 'expired', 'sending']) await addJob(db.pool, a, s);
  await addJob(db.pool, b, 'failed');
  // a job an instance's delete left behind (a node of a version before 0012 did that)
  await addJob(db.pool, randomUUID(), 'sent');

  const applied = await migrate(db.pool);
  assert.equal(applied[0], '0018_outcome_totals', applied.join(', '));
  assert.deepEqual(await read(db.pool, a), { sent: 3, failed: 2, unknown: 1 });
  assert.deepEqual(await read(db.pool, a), await counted(db.pool, a));
  assert.deepEqual(await read(db.pool, b), { sent: 0, failed: 1, unknown: 0 });
  // (0020, applied after it, adds rows for cancelled and expired: test/integration/terminal-totals.test.ts)
  const { rows } = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM job_outcome_totals WHERE state IN ('sent','failed','unknown')");
  assert.equal(rows[0]?.n, 4, 'a row per instance and outcome it has: none for the jobs of a deleted instance');
});

test('the trigger keeps the totals equal to counting the jobs through every change of state, and an instance delete takes them', async () => {
  const db = await createTestDb('outcome_totals_kept');
  dbs.push(db);
  const q = db.pool;
  const a = await addInstance(q, 'a');
  const other = await addInstance(q, 'other');
  const jobs = [];
  for (let i = 0; i < 6; i++) jobs.push(await addJob(q, a, 'queued'));
  await addJob(q, other, 'queued');
  const set = async (state: string, ids: string[]) => {
    await q.query('UPDATE jobs SET state = $1 WHERE id = ANY($2::text[])', [state, ids]);
    assert.deepEqual(await read(q, a), await counted(q, a), `after ${ids.length} to ${state}`);
  };
  assert.deepEqual(await read(q, a), { sent: 0, failed: 0, unknown: 0 });
  const [j0, j1, j2, j3, j4, j5] = jobs as [string, string, string, string, string, string];
  await set('scheduled', [j0, j1, j2, j3, j4, j5]); // a re-plan: no outcome
  await set('sending', [j0, j1, j2, j3, j4]);
  await set('sent', [j0, j1, j2]); // three in one statement
  await set('failed', [j3]);
  await set('unknown', [j4]);
  await set('sent', [j4]); // out of one outcome into another
  await set('unknown', [j1]);
  await set('cancelled', [j5]); // ends, but not an outcome
  // a state written again unchanged counts nothing twice
  await q.query("UPDATE jobs SET state = 'sent', terminal_at = now() WHERE id = $1", [j0]);
  assert.deepEqual(await read(q, a), { sent: 3, failed: 1, unknown: 1 });
  assert.deepEqual(await read(q, other), { sent: 0, failed: 0, unknown: 0 }, 'another instance untouched');

  await q.query('DELETE FROM instances WHERE id = $1', [a]);
  const { rows } = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM job_outcome_totals WHERE instance_id = $1', [a]);
  assert.equal(rows[0]?.n, 0, 'the deleted instance keeps no totals');
  assert.deepEqual(await counted(q, a), { sent: 0, failed: 0, unknown: 0 }, 'nor jobs (0012)');
});
