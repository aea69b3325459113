/**
 * mgw_jobs (GET /metrics, jobs by state of every instance) is what counting the jobs says, read without counting
 * every job ever kept: the jobs that ended from the totals kept by a trigger (sql/0018_outcome_totals.sql, and
 * 0020_terminal_totals.sql for cancelled and expired, filled from the jobs already there), the waiting and sending
 * ones by a range of jobs_instance_state per instance. A queue's start still reads only its outcomes.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, fixtureQuery, type TestDb } from '../helpers/db.js';
import { addInstance, migrateBelow, scansOf } from '../helpers/sql-plans.js';
import { migrate } from '../../src/store/migrate.js';
import { JOBS_BY_STATE, readJobsByState } from '../../src/metrics/registry.js';
import { loadOutcomes } from '../../src/queue/sql/loadOutcomes.js';
import { loadStarts } from '../../src/queue/sql/loadStarts.js';
import type { Queryable } from '../../src/store/pool.js';

const dbs: TestDb[] = [];
after(async () => {
  for (const d of dbs) await d.close();
});

const skip = !process.env.TEST_DATABASE_URL && 'needs PostgreSQL (TEST_DATABASE_URL): the plans are a server\'s';

/** What counting every job of an instance that exists says. */
async function counted(q: Queryable): Promise<Map<string, number>> {
  const { rows } = await q.query<{ state: string; n: number }>(
    'SELECT j.state, count(*)::int AS n FROM jobs j JOIN instances i ON i.id = j.instance_id GROUP BY j.state',
  );
  return new Map(rows.map((r) => [r.state, r.n]));
}

/** Both as sorted entries without zeros (a state whose total went back to 0 keeps its row). */
const entries = (m: Map<string, number>) => [...m].filter(([, n]) => n !== 0).sort(([a], [b]) => a.localeCompare(b));


let n = 0;
/** A job accepted (queued, as the gateway inserts them) and then moved to `state`, as the gateway moves them. */
async function addJob(q: Queryable, instanceId: string, state: string): Promise<string> {
  const id = `wq_${String(++n).padStart(24, '0')}`;
  await q.query(
    `INSERT INTO jobs (id, instance_id, state, kind, origin_route, phone, payload, payload_hash, priority, queued_at, expires_at)
     VALUES ($1, $2, 'queued', 'text', '/api/v2/send-message', '4915112345678', '{}', '', 5, now(), now() + interval '1 day')`,
    [id, instanceId],
  );
  if (state !== 'queued') await q.query('UPDATE jobs SET state = $2 WHERE id = $1', [id, state]);
  return id;
}

test('0020 fills cancelled and expired from the jobs there; mgw_jobs then equals counting the jobs through every change', async () => {
  const db = await createTestDb('terminal_totals', { migrate: false });
  dbs.push(db);
  const q = db.pool;
  await migrateBelow(q, 20); // the schema as it was before 0020
  const a = await addInstance(q, 'a');
  const b = await addInstance(q, 'b');
  for (const s of ['sent', 'sent', 'failed', 'unknown', 'cancelled', 'cancelled', 'expired', 'queued', 'scheduled', 'sending']) await addJob(q, a, s);
  await addJob(q, b, 'expired');
  // the outcomes counted by 0018's trigger; cancelled and expired by no trigger yet (0020 fills them)

  const applied = await migrate(q);
  assert.equal(applied[0], '0020_terminal_totals');
  assert.deepEqual(entries(await readJobsByState(q)), entries(await counted(q)), 'after the fill');

  const waiting = [];
  for (let i = 0; i < 5; i++) waiting.push(await addJob(q, b, 'queued'));
  const [w0, w1, w2, w3, w4] = waiting as [string, string, string, string, string];
  const set = async (state: string, ids: string[]) => {
    await q.query('UPDATE jobs SET state = $1 WHERE id = ANY($2::text[])', [state, ids]);
    assert.deepEqual(entries(await readJobsByState(q)), entries(await counted(q)), `after ${ids.length} to ${state}`);
  };
  await set('scheduled', [w0, w1, w2, w3]);
  await set('cancelled', [w0, w1]);
  await set('expired', [w2]);
  await set('sending', [w3]);
  await set('sent', [w3]);
  await set('expired', [w4]);
  assert.deepEqual(await readJobsByState(q), new Map([
    ['queued', 1], ['scheduled', 1], ['sending', 1], ['sent', 3], ['failed', 1], ['unknown', 1], ['cancelled', 4], ['expired', 4],
  ]));

  // a start and GET /api/status read only the outcomes
  const outcomes = (await loadOutcomes(q, b, Date.now())).totals;
  assert.deepEqual(outcomes, { sent: 1, failed: 0, unknown: 0 });
  assert.deepEqual((await loadStarts(q, [a, b], Date.now(), 'test')).get(b)?.outcomes.totals, outcomes);
  assert.equal((await loadStarts(q, [a, b], Date.now(), 'test')).get(a)?.pending, 3, 'queued, scheduled, sending');

  await q.query('DELETE FROM instances WHERE id = $1', [b]);
  assert.deepEqual(entries(await readJobsByState(q)), entries(await counted(q)), 'after an instance\'s delete');
});


test('mgw_jobs reads the jobs of a grown table only through ranges of jobs_instance_state, never every job', { skip }, async () => {
  const db = await createTestDb('terminal_totals_plan');
  dbs.push(db);
  const q = db.pool;
  const large = await addInstance(q, 'large');
  for (let i = 0; i < 20; i++) await addInstance(q, `small-${i}`);
  await fixtureQuery(
    q,
    `INSERT INTO jobs (id, instance_id, state, kind, origin_route, phone, payload, payload_hash, priority, queued_at, expires_at)
     SELECT 'wq_t' || lpad(to_hex(g), 23, '0'), $1, CASE WHEN g % 50 = 0 THEN 'failed' WHEN g > 199000 THEN 'queued' ELSE 'sent' END,
            'text', '/api/v2/send-message', '4915112345678', '{}', '', 5, now(), now() + interval '1 day'
       FROM generate_series(1, 200000) AS g`,
    [large],
  );
  await fixtureQuery(q, 'ANALYZE');
  const jobScans = (await scansOf(q, JOBS_BY_STATE, [])).filter((s) => s.relation === 'jobs').map((s) => `jobs:${s.via}`);
  assert.ok(jobScans.length > 0, 'the jobs in flight are read from jobs');
  assert.deepEqual([...new Set(jobScans)], ['jobs:jobs_instance_state'], 'only ranges of an instance\'s state');
  // (the ended jobs were written in their state here, past the trigger: only the waiting ones are compared)
  assert.equal((await readJobsByState(q)).get('queued'), (await counted(q)).get('queued'));
});
