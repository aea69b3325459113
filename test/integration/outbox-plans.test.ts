/**
 * The webhook outbox's statements on a grown table (60,000 finished rows over 7 days across 20 instances, a
 * backlog of pending rows on one): each reads a range of the index made for it, so its cost follows its batch or
 * page, never the whole outbox. The plans checked are the custom plans (parameters known: what each new
 * connection runs first), with the statistics the statement is most likely to be misled by.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, fixtureQuery, type TestDb } from '../helpers/db.js';
import { FETCH_PENDING, fetchPending } from '../../src/webhooks/pending.js';
import { ALL_DELIVERIES, ONE_STATE_DELIVERIES, PRUNE_DELIVERIES, listDeliveries, pruneDeliveries, type DeliveryPage } from '../../src/webhooks/deliveries.js';
import type { Queryable } from '../../src/store/pool.js';

const skip = !process.env.TEST_DATABASE_URL && 'needs PostgreSQL (TEST_DATABASE_URL): the plans are a server\'s';

const instance = (n: number): string => `00000000-0000-0000-0000-${String(n).padStart(12, '0')}`;
const BUSY = instance(1);

let db: TestDb | null = null;
after(async () => {
  await db?.close();
});

/** The indexes (or scan types) a plan reads, in plan order. */
async function scansOf(q: Queryable, sql: string, params: unknown[]): Promise<string[]> {
  const { rows } = await q.query<{ 'QUERY PLAN': [{ Plan: unknown }] }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
  const names: string[] = [];
  const walk = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    const n = node as { 'Index Name'?: string; 'Node Type'?: string; 'Relation Name'?: string; Plans?: unknown[] };
    if (n['Node Type']?.includes('Scan') && (n['Relation Name'] === 'outbox' || n['Index Name']?.startsWith('outbox'))) {
      names.push(n['Index Name'] ?? n['Node Type']);
    }
    for (const p of n.Plans ?? []) walk(p);
  };
  walk(rows[0]?.['QUERY PLAN'][0].Plan);
  return names;
}

before(async () => {
  if (skip) return;
  db = await createTestDb('outbox_plans');
  const q = db.pool;
  await q.query(
    `INSERT INTO instances (id, name, driver)
     SELECT ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, 'i' || g, 'sandbox' FROM generate_series(1, 20) g`,
  );
  await q.query(`INSERT INTO webhooks (instance_id, url, secret) SELECT id, 'http://127.0.0.1:9/hook', 'secret' FROM instances`);
  // 60,000 finished rows over the last 7 days (1 in 50 failed), oldest first, spread over the 20 instances
  await fixtureQuery(
    q,
    `INSERT INTO outbox (event_id, instance_id, event, body, created_at, state, attempts, delivered_at)
     SELECT 'ev_d' || g, ('00000000-0000-0000-0000-' || lpad((1 + g % 20)::text, 12, '0'))::uuid, 'message', '{}', c,
            CASE WHEN g % 50 = 0 THEN 'failed' ELSE 'delivered' END, 1, CASE WHEN g % 50 = 0 THEN NULL ELSE c END
       FROM generate_series(1, 60000) g, LATERAL (SELECT now() - interval '7 days' + g * interval '7 days' / 60000 AS c) t`,
  );
  // a backlog on one instance, the newest rows; statistics taken while it was ten times larger (autovacuum's
  // ANALYZE during a burst), the state in which the planner thought pending rows common and spread evenly
  await fixtureQuery(
    q,
    `INSERT INTO outbox (event_id, instance_id, event, body, state)
     SELECT 'ev_p' || g, $1, 'message', '{}', 'pending' FROM generate_series(1, 20000) g`,
    [BUSY],
  );
  await fixtureQuery(q, 'VACUUM ANALYZE outbox');
  await fixtureQuery(q, `DELETE FROM outbox WHERE state = 'pending' AND id > (SELECT min(id) + 1999 FROM outbox WHERE state = 'pending')`);
});

test('fetchPending reads a range of outbox_pending, not outbox_pkey from the oldest row', { skip }, async () => {
  assert.ok(db);
  const q = db.pool;
  const { rows: head } = await q.query<{ id: string }>(`SELECT id FROM outbox WHERE state = 'pending' ORDER BY id LIMIT 3`);
  const except = head.slice(0, 2).map((r) => Number(r.id));
  for (const [limit, ex] of [[100, []], [20, except]] as const) {
    const scans = await scansOf(q, FETCH_PENDING, [BUSY, limit, ex]);
    // outbox_instance_state (0021) holds the same range, (instance, 'pending', id): either is the batch alone
    assert.ok(['outbox_pending', 'outbox_instance_state'].includes(scans[0] ?? ''), `batch ids from the pending range (limit ${limit}): ${scans.join(', ')}`);
    assert.ok(!scans.includes('Seq Scan'), `no sequential scan: ${scans.join(', ')}`);
    assert.deepEqual(scans.slice(1), ['outbox_pkey'], `then the rows by id: ${scans.join(', ')}`);
  }
  // the results: the oldest pending rows in id order, the ones still being written left out, with the receiver
  const { rows, receiver } = await fetchPending(q, BUSY, 20, except);
  const { rows: expected } = await q.query<{ id: string }>(
    `SELECT id FROM outbox WHERE instance_id = $1 AND state = 'pending' AND id <> ALL ($2::bigint[]) ORDER BY id LIMIT 20`,
    [BUSY, except],
  );
  assert.deepEqual(rows.map((r) => Number(r.id)), expected.map((r) => Number(r.id)));
  assert.deepEqual(receiver, { url: 'http://127.0.0.1:9/hook', secret: 'secret', allowPrivate: false });
  assert.deepEqual((await fetchPending(q, instance(2), 20)).rows, [], 'an instance without a backlog: nothing');
});

test('listDeliveries reads a range of outbox_instance_state (one state) or outbox_instance (every state)', { skip }, async () => {
  assert.ok(db);
  const q = db.pool;
  const top = '9223372036854775807';
  // an instance of 3,000 rows among 82,000, the newest 20,000 another's; a state it has, and one it never has
  for (const [inst, state] of [[instance(3), 'delivered'], [instance(2), 'failed'], [BUSY, 'pending'], [BUSY, 'failed']] as const) {
    const scans = await scansOf(q, ONE_STATE_DELIVERIES, [inst, state, top, 51]);
    assert.ok(['outbox_instance_state', 'outbox_pending'].includes(scans[0] ?? ''), `${state}: ids from the instance's state range: ${scans.join(', ')}`);
    assert.deepEqual(scans.slice(1), ['outbox_pkey'], `${state}: then the rows by id: ${scans.join(', ')}`);
  }
  const all = await scansOf(q, ALL_DELIVERIES, [instance(3), top, 51]);
  assert.deepEqual(all, ['outbox_instance', 'outbox_pkey'], `every state: ${all.join(', ')}`);

  // pages of 7 follow each other, newest first: every row of the instance (of the state) once
  for (const [inst, state] of [[instance(11), 'failed'], [instance(11), null], [BUSY, 'pending']] as const) {
    const { rows } = await q.query<{ event_id: string }>(
      `SELECT event_id FROM outbox WHERE instance_id = $1 AND ($2::text IS NULL OR state = $2) ORDER BY id DESC`,
      [inst, state],
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; ; pages++) {
      assert.ok(pages < 2000);
      const page: DeliveryPage = await listDeliveries(q, inst, { limit: 7, cursor, state });
      seen.push(...page.items.map((d) => d.eventId));
      assert.ok(page.items.every((d) => state === null || d.state === state));
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    assert.deepEqual(seen, rows.map((r) => r.event_id), `pages of ${state ?? 'every state'}`);
  }
});

test('pruneDeliveries reads a range of outbox_finished_age and deletes by outbox_pkey, never scanning the outbox', { skip }, async () => {
  assert.ok(db);
  const q = db.pool;
  for (const days of [3, 8]) {
    const cutoff = new Date(Date.now() - days * 86_400_000);
    const scans = await scansOf(q, PRUNE_DELIVERIES, [cutoff, 5000]);
    assert.deepEqual([...scans].sort(), ['outbox_finished_age', 'outbox_pkey'], `${days} days: ${scans.join(', ')}`);
  }
  // what it deletes: finished rows created before the cutoff, at most a batch a call, until none is left
  const cutoff = new Date(Date.now() - 6 * 86_400_000);
  const count = async (sql: string): Promise<number> => Number((await q.query<{ n: string }>(sql, [cutoff])).rows[0]?.n);
  const old = await count(`SELECT count(*) AS n FROM outbox WHERE state <> 'pending' AND created_at < $1`);
  const kept = await count(`SELECT count(*) AS n FROM outbox WHERE NOT (state <> 'pending' AND created_at < $1)`);
  assert.ok(old > 5000, `more than a batch to prune (${old})`);
  const pendingOld = await q.query<{ id: string }>(
    `UPDATE outbox SET state = 'pending' WHERE id = (SELECT min(id) FROM outbox) RETURNING id`,
  );
  assert.equal(await pruneDeliveries(q, cutoff, 5000), 5000);
  let total = 5000;
  for (let n = -1; n !== 0; total += n) n = await pruneDeliveries(q, cutoff, 5000);
  assert.equal(total, old - 1, 'every old finished row, not the old pending one');
  assert.equal(await count(`SELECT count(*) AS n FROM outbox WHERE state <> 'pending' AND created_at < $1`), 0);
  assert.equal(await count(`SELECT count(*) AS n FROM outbox WHERE $1::timestamptz IS NOT NULL`), kept + 1, 'the rest kept (and the old row made pending)');
  assert.equal((await q.query('SELECT 1 FROM outbox WHERE id = $1', [pendingOld.rows[0]?.id])).rowCount, 1);
});
