/**
 * saveSlots (src/queue/sql/saveSlots.ts) over more than one statement: 5,003 waiting jobs get new slots (the
 * last three none: back to waiting without one) in one transaction, and every row holds what was written, with
 * the epoch; a job that left the waiting states meanwhile is not touched.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { insertJobs } from '../../src/queue/sql/insertJobs.js';
import { saveSlots } from '../../src/queue/sql/saveSlots.js';
import { withTransaction } from '../../src/store/pool.js';
import { newJobId } from '../../src/ids.js';
import type { NewJob } from '../../src/queue/job.js';

let db: TestDb;
const inst = randomUUID();
const NOW = Date.UTC(2030, 0, 1);

before(async () => {
  db = await createTestDb('save_slots');
  await db.pool.query("INSERT INTO instances (id, name, driver) VALUES ($1, 'slots', 'sandbox')", [inst]);
});
after(async () => {
  await db?.close();
});

test('5,003 moved slots in more than one statement: every row as written, with the epoch; a job no longer waiting untouched', async () => {
  const n = 5_003;
  const jobs: NewJob[] = Array.from({ length: n }, (_, i) => ({
    id: newJobId(), instanceId: inst, originRoute: '/api/v2/send-message', chatId: null, phone: '4915112345678', payloadHash: `h${i}`,
    idempotencyKey: null, priority: 5, notBefore: null, queuedAt: NOW, scheduledAt: NOW + i * 1_000, expiresAt: NOW + 30 * 86_400_000,
    previousJobId: null, callerBoot: null, kind: 'text', payload: { body: `m${i}`, chatId: '4915112345678@c.us' },
  }));
  await withTransaction(db.pool, (c) => insertJobs(c, jobs));
  const gone = jobs[17]!.id;
  await db.pool.query("UPDATE jobs SET state = 'cancelled', terminal_at = now() WHERE id = $1", [gone]);
  const writes = jobs.map((j, i) => ({ jobId: j.id, scheduledAt: i >= n - 3 ? null : NOW + 7 * 1_000 + i * 2_000 }));
  const written = await withTransaction(db.pool, (c) => saveSlots(c, inst, writes, 42));
  assert.equal(written, n - 1);
  const { rows } = await db.pool.query<{ id: string; state: string; scheduled_at: Date | null; plan_epoch: string }>(
    'SELECT id, state, scheduled_at, plan_epoch FROM jobs WHERE instance_id = $1 ORDER BY seq', [inst]);
  assert.equal(rows.length, n);
  rows.forEach((r, i) => {
    if (r.id === gone) {
      assert.deepEqual([r.state, r.scheduled_at?.getTime(), Number(r.plan_epoch)], ['cancelled', NOW + 17 * 1_000, 0]);
      return;
    }
    const at = writes[i]!.scheduledAt;
    assert.deepEqual([r.state, r.scheduled_at?.getTime() ?? null, Number(r.plan_epoch)], [at === null ? 'queued' : 'scheduled', at, 42], `job ${i}`);
  });
});

test('one write alone, of no slot and then of a slot: each reaches its row (a list of one travels as one element, never as none)', async () => {
  const job: NewJob = {
    id: newJobId(), instanceId: inst, originRoute: '/api/v2/send-message', chatId: null, phone: '4915112345678', payloadHash: 'one',
    idempotencyKey: null, priority: 5, notBefore: null, queuedAt: NOW, scheduledAt: NOW, expiresAt: NOW + 86_400_000,
    previousJobId: null, callerBoot: null, kind: 'text', payload: { body: 'one', chatId: '4915112345678@c.us' },
  };
  await withTransaction(db.pool, (c) => insertJobs(c, [job]));
  const row = async () => (await db.pool.query<{ state: string; at: Date | null }>('SELECT state, scheduled_at AS at FROM jobs WHERE id = $1', [job.id])).rows[0];
  assert.equal(await withTransaction(db.pool, (c) => saveSlots(c, inst, [{ jobId: job.id, scheduledAt: null }], 43)), 1);
  assert.deepEqual(await row(), { state: 'queued', at: null });
  const at = NOW + 1_234_567;
  assert.equal(await withTransaction(db.pool, (c) => saveSlots(c, inst, [{ jobId: job.id, scheduledAt: at }], 44)), 1);
  assert.deepEqual(await row(), { state: 'scheduled', at: new Date(at) });
});
