/**
 * src/ids.ts timeOrderedPart: a new job id sorts after every id of the form before (`wq_` and 24 random hex
 * digits) and after the ids made a moment before it, in PostgreSQL's order of jobs.id: the database's own
 * collation and, where the server has them, the C and the languages' (libc, ICU) collations an operator's
 * database may have been created with. So a new job goes to the right end of jobs' primary key.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { newEventId, newJobId, timeOrderedPart } from '../../src/ids.js';

const dbs: TestDb[] = [];
after(async () => {
  for (const d of dbs) await d.close();
});

test('new job ids sort after the old random ones and in the order they were made, in every collation the server has', async () => {
  const db = await createTestDb('job_ids_order');
  dbs.push(db);
  const { rows: collations } = await db.pool.query<{ name: string }>(
    `SELECT quote_ident(collname) AS name FROM pg_collation
      WHERE collname IN ('default', 'C', 'POSIX', 'en_US', 'en_US.utf8', 'de_DE.utf8', 'en-US-x-icu', 'und-x-icu', 'de-DE-x-icu')
        AND collencoding IN (-1, (SELECT encoding FROM pg_database WHERE datname = current_database()))`,
  );
  assert.ok(collations.length >= 2, `collations found: ${collations.map((c) => c.name).join(', ')}`);
  const old = ['wq_000000000000000000000000', 'wq_9fffffffffffffffffffffff', 'wq_ffffffffffffffffffffffff', 'wq_fa0e13c2b4d5e6f708192a3b'];
  const made = [`wq_${timeOrderedPart(Date.UTC(2026, 0, 1))}`, `wq_${timeOrderedPart(Date.UTC(2026, 0, 1) + 1)}`, `wq_${timeOrderedPart(Date.UTC(2026, 0, 1) + 16)}`, newJobId(), `wq_${timeOrderedPart(Date.now() + 1_000)}`];
  for (const { name } of collations) {
    const { rows } = await db.pool.query<{ id: string }>(`SELECT id FROM unnest($1::text[]) AS u (id) ORDER BY id COLLATE ${name}`, [[...made].reverse().concat(old)]);
    const order = rows.map((r) => r.id);
    assert.deepEqual(order.slice(old.length), made, `collation ${name}: ${order.join(' ')}`);
  }
  assert.match(newEventId(), /^ev_t[0-9a-f]{23}$/);
});
