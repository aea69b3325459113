/**
 * insertJobs (src/queue/sql/insertJobs.ts) over more than one statement (1,000 rows each): 2,345 jobs, some
 * with idempotency keys in the middle statement, come back in the batch's order with ascending seqs that
 * match the rows, every field as written; the keys are remembered. Inside one transaction, as the group
 * commit runs it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { insertJobs, ROWS_PER_STATEMENT } from '../../src/queue/sql/insertJobs.js';
import { withTransaction } from '../../src/store/pool.js';
import { newJobId } from '../../src/ids.js';
import type { NewJob } from '../../src/queue/job.js';

let db: TestDb;
const inst = randomUUID();
const NOW = Date.UTC(2030, 0, 1);

before(async () => {
  db = await createTestDb('insert_jobs_parts');
  await db.pool.query("INSERT INTO instances (id, name, driver) VALUES ($1, 'parts', 'sandbox')", [inst]);
});
after(async () => {
  await db?.close();
});

test('2,345 jobs in three statements: batch order, ascending seqs as stored, keys remembered', async () => {
  const n = 2 * ROWS_PER_STATEMENT + 345;
  const jobs: NewJob[] = Array.from({ length: n }, (_, i) => ({
    id: newJobId(), instanceId: inst, originRoute: '/api/send-bulk', chatId: `49151${String(i).padStart(8, '0')}@c.us`, phone: `49151${String(i).padStart(8, '0')}`,
    payloadHash: `hash-${i}`, idempotencyKey: i % 500 === 7 && i > ROWS_PER_STATEMENT && i < 2 * ROWS_PER_STATEMENT ? `key-${i}-parts` : null,
    priority: 5, notBefore: null, queuedAt: NOW, scheduledAt: i % 3 === 0 ? null : NOW + i * 1000, expiresAt: NOW + 86_400_000, previousJobId: null,
    callerBoot: null, kind: 'text', payload: { body: `body "${i}" \\ ü`, chatId: `49151${String(i).padStart(8, '0')}@c.us` },
  }));
  const inserted = await withTransaction(db.pool, (c) => insertJobs(c, jobs));
  assert.equal(inserted.length, n);
  assert.deepEqual(inserted.map((j) => j.id), jobs.map((j) => j.id));
  for (let i = 1; i < n; i++) assert.ok(inserted[i]!.seq > inserted[i - 1]!.seq, `seq ascending at ${i}`);
  const { rows } = await db.pool.query<{ id: string; seq: string; state: string; scheduled_at: Date | null; payload: unknown }>(
    'SELECT id, seq, state, scheduled_at, payload FROM jobs WHERE instance_id = $1 ORDER BY seq', [inst]);
  assert.deepEqual(rows.map((r) => r.id), jobs.map((j) => j.id));
  rows.forEach((r, i) => {
    const j = inserted[i]!;
    assert.equal(Number(r.seq), j.seq);
    assert.equal(r.state, j.state);
    assert.equal(r.scheduled_at?.getTime() ?? null, jobs[i]!.scheduledAt);
    assert.deepEqual(r.payload, jobs[i]!.payload);
  });
  const keys = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM idempotency_keys WHERE instance_id = $1', [inst]);
  assert.equal(Number(keys.rows[0]!.n), jobs.filter((j) => j.idempotencyKey !== null).length);
});
