/**
 * src/queue/sql/listJobs.ts on a grown table: an instance's pages, with and without a state, walk the instance's own
 * jobs by index (jobs_instance_seq, jobs_instance_state), never the jobs of every instance in arrival order (what
 * PostgreSQL did with one statement for both: a page of a small instance beside a large one read the large one's
 * jobs too), and the pages follow each other in arrival order with nothing skipped or repeated.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, fixtureQuery, type TestDb } from '../helpers/db.js';
import { addInstance, scansOf } from '../helpers/sql-plans.js';
import { ALL_STATES, ONE_STATE, listJobs } from '../../src/queue/sql/listJobs.js';
import type { Pool } from '../../src/store/pool.js';

const dbs: TestDb[] = [];
after(async () => {
  for (const d of dbs) await d.close();
});

const skip = !process.env.TEST_DATABASE_URL && 'needs PostgreSQL (TEST_DATABASE_URL): the plans are a server\'s';

async function fill(q: Pool, instanceId: string, n: number, states: string[]): Promise<void> {
  await fixtureQuery(
    q,
    `INSERT INTO jobs (id, instance_id, state, kind, origin_route, phone, payload, payload_hash, priority, queued_at, expires_at)
     SELECT 'wq_t' || lpad(to_hex(nextval('jobs_seq_seq')), 23, '0'), $1, ($3::text[])[1 + g % array_length($3::text[], 1)], 'text',
            '/api/v2/send-message', '4915112345678', '{"body":"x","chatId":"4915112345678@c.us"}', '', 5, now(), now() + interval '1 day'
       FROM generate_series(1, $2::int) AS g`,
    [instanceId, n, states],
  );
}


test('a page of a small instance beside a large one reads only its own jobs, in arrival order, with or without a state', { skip }, async () => {
  const db = await createTestDb('list_jobs');
  dbs.push(db);
  const q = db.pool;
  const small = await addInstance(q, 'small');
  const large = await addInstance(q, 'large');
  await fill(q, large, 100_000, ['sent']);
  await fill(q, small, 300, ['sent', 'failed', 'scheduled', 'queued', 'cancelled']);
  await fill(q, large, 100_000, ['sent', 'failed']);
  await fixtureQuery(q, 'ANALYZE jobs');

  // (the large instance, nearly every job of the table, may walk the table's order: its page is there at once)
  assert.deepEqual((await scansOf(q, ALL_STATES, [small, 0, 50])).map((s) => s.via), ['jobs_instance_seq'], 'all states: the instance\'s own range');
  assert.deepEqual((await scansOf(q, ONE_STATE, [small, 'scheduled', 0, 50])).map((s) => s.via), ['jobs_instance_state'], 'one state: its range');

  // pages of 7 follow each other: every job of the instance once, in arrival order
  const { rows } = await q.query<{ id: string; state: string }>('SELECT id, state FROM jobs WHERE instance_id = $1 ORDER BY seq', [small]);
  for (const state of [undefined, 'failed'] as const) {
    const seen: string[] = [];
    let afterSeq = 0;
    for (;;) {
      const page = await listJobs(q, small, { limit: 7, afterSeq, ...(state ? { state } : {}) });
      if (page.length === 0) break;
      seen.push(...page.map((j) => j.id));
      afterSeq = Number(page.at(-1)?.seq);
    }
    assert.deepEqual(seen, rows.filter((r) => !state || r.state === state).map((r) => r.id), `pages of ${state ?? 'every state'}`);
  }
});
