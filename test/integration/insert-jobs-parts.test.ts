/**
 * insertJobs (src/queue/sql/insertJobs.ts) over more than one statement (1,000 rows each): 2,345 jobs, some
 * with idempotency keys in the middle statement, come back in the batch's order with ascending seqs that
 * match the rows, every field as written; the keys are remembered. Inside one transaction, as the group
 * commit runs it. And every column round-trips whatever its text holds, in every form of the rows (JSON, arrays,
 * arrays with the columns of one value as single parameters) and through both inserts (a transaction's, the
 * group commit's one statement).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { insertJobs, insertUnkeyed, ROWS_PER_STATEMENT } from '../../src/queue/sql/insertJobs.js';
import { insertJobsFenced } from '../../src/queue/sql/insertJobsFenced.js';
import { ARRAY_ROWS, ARRAYS_FROM, JSON_ROWS, insertedState, rowSourceFor } from '../../src/queue/sql/job-rows.js';
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

const TRICKY = ['"', '\\', '\\"', '{a,b}', ' lead and trail ', 'NULL', 'null', '', 'line\nbreak\ttab', '😀 ü ß 中', '{"json":"in text"}', ','];

/** `n` jobs of a new instance whose text columns hold the TRICKY strings in turn (and nulls). */
async function trickyJobs(name: string, n: number): Promise<NewJob[]> {
  const other = randomUUID();
  await db.pool.query('INSERT INTO instances (id, name, driver) VALUES ($1, $2, \'sandbox\')', [other, name]);
  return Array.from({ length: n }, (_, i) => {
    const s = TRICKY[i % TRICKY.length]!;
    return {
      id: newJobId(), instanceId: other, originRoute: `/route ${s}`, chatId: i % 2 === 0 ? `${s}@c.us` : null, phone: i % 3 === 0 ? null : s,
      payloadHash: `h ${s}`, idempotencyKey: i % 4 === 1 ? `key ${s} ${i}` : null, priority: 1 + (i % 9),
      notBefore: i % 2 === 0 ? null : NOW + i, queuedAt: NOW - i, scheduledAt: i % 5 === 0 ? null : NOW + i * 1_001, expiresAt: NOW + 86_400_000 + i,
      previousJobId: i % 2 === 1 ? `wq_prev ${s}` : null, callerBoot: i % 3 === 1 ? `boot ${s}` : null,
      kind: 'text', payload: { body: `${s} "quoted" \\ back\nslash`, chatId: `${s}@c.us` },
    };
  });
}

/** Every column of the jobs as stored, against what was given. */
async function assertStored(jobs: NewJob[], inserted: { id: string; state: string }[]): Promise<void> {
  assert.deepEqual(inserted.map((j) => j.id), jobs.map((j) => j.id));
  const { rows } = await db.pool.query<Record<string, unknown>>(
    `SELECT id, origin_route, chat_id, phone, payload_hash, idempotency_key, priority, not_before, queued_at, scheduled_at,
            expires_at, previous_job_id, caller_boot, kind, payload, state FROM jobs WHERE instance_id = $1 ORDER BY seq`, [jobs[0]!.instanceId]);
  const ms = (v: unknown) => (v instanceof Date ? v.getTime() : v);
  assert.equal(rows.length, jobs.length);
  rows.forEach((r, i) => {
    const j = jobs[i]!;
    assert.deepEqual(
      [r.id, r.origin_route, r.chat_id, r.phone, r.payload_hash, r.idempotency_key, r.priority, ms(r.not_before), ms(r.queued_at),
        ms(r.scheduled_at), ms(r.expires_at), r.previous_job_id, r.caller_boot, r.kind, r.payload, r.state],
      [j.id, j.originRoute, j.chatId, j.phone, j.payloadHash, j.idempotencyKey, j.priority, j.notBefore, j.queuedAt,
        j.scheduledAt, j.expiresAt, j.previousJobId, j.callerBoot, j.kind, j.payload, inserted[i]!.state],
      `job ${i} (${JSON.stringify(TRICKY[i % TRICKY.length])})`,
    );
  });
  const keys = await db.pool.query<{ key: string; job_id: string }>('SELECT key, job_id FROM idempotency_keys WHERE instance_id = $1', [jobs[0]!.instanceId]);
  assert.deepEqual(keys.rows.map((k) => [k.key, k.job_id]).sort(),
    jobs.filter((j) => j.idempotencyKey !== null).map((j) => [j.idempotencyKey, j.id]).sort());
}

// the forms of the rows (src/queue/sql/job-rows.ts): the JSON document below ARRAYS_FROM rows, the arrays from it
// (these jobs share their instance and kind: those two travel as single parameters)
for (const n of [TRICKY.length, ARRAYS_FROM + TRICKY.length]) {
  const form = n < ARRAYS_FROM ? 'JSON' : 'arrays, instance and kind as constants';
  test(`${n} jobs (${form}): every column comes back as written, whatever its text holds: quotes, backslashes, braces, commas, blanks, the word NULL, emoji, nulls`, async () => {
    const jobs = await trickyJobs(`tricky-${n}`, n);
    await assertStored(jobs, await withTransaction(db.pool, (c) => insertJobs(c, jobs)));
  });
  test(`${n} jobs (${form}), as one statement (the group commit's): every column as written`, async () => {
    const jobs = await trickyJobs(`tricky-one-${n}`, n);
    const { jobs: inserted } = await insertJobsFenced(db.pool, jobs, null);
    await assertStored(jobs, inserted.map((j) => {
      if (!j) throw new Error('not inserted');
      return j;
    }));
  });
}

test(`${ARRAYS_FROM + TRICKY.length} jobs, every column an array (the form when no column holds one value): every column as written`, async () => {
  const jobs = (await trickyJobs('tricky-arrays', ARRAYS_FROM + TRICKY.length)).map((j) => ({ ...j, idempotencyKey: null }));
  const { rows } = await db.pool.query<{ id: string }>(insertUnkeyed(ARRAY_ROWS), ARRAY_ROWS.values(jobs, 0, jobs.length));
  await assertStored(jobs, rows.map((r, i) => ({ id: r.id, state: insertedState(jobs[i]!) })));
});

/** A send-bulk's batch: one instance, route, priority, instant and expiry; no key, fingerprint or caller; tricky constants. */
async function bulkLikeJobs(name: string, n: number, constant: string): Promise<NewJob[]> {
  const other = randomUUID();
  await db.pool.query('INSERT INTO instances (id, name, driver) VALUES ($1, $2, \'sandbox\')', [other, name]);
  return Array.from({ length: n }, (_, i) => ({
    id: newJobId(), instanceId: other, originRoute: constant, chatId: `${TRICKY[i % TRICKY.length]}@c.us`, phone: null,
    payloadHash: null, idempotencyKey: null, priority: 5, notBefore: null, queuedAt: NOW, scheduledAt: NOW + i * 1_000,
    expiresAt: NOW + 86_400_000, previousJobId: constant, callerBoot: null, kind: 'text', payload: { body: `${constant} ${i}`, chatId: `${TRICKY[i % TRICKY.length]}@c.us` },
  }));
}

for (const constant of TRICKY) {
  test(`a send-bulk's batch (a constant ${JSON.stringify(constant)}): its columns of one value as single parameters, every column as written by both inserts`, async () => {
    const jobs = await bulkLikeJobs(`bulk-like-${TRICKY.indexOf(constant)}`, ARRAYS_FROM + 3, constant);
    const form = rowSourceFor(jobs, 0, jobs.length);
    // id, chat, payload and the slot vary; the other thirteen columns are one value each
    assert.equal(form.sql.match(/\$\d+::[a-z0-9]+\[\]/g)?.length, 4, form.sql);
    await assertStored(jobs, await withTransaction(db.pool, (c) => insertJobs(c, jobs)));
    const more = await bulkLikeJobs(`bulk-like-one-${TRICKY.indexOf(constant)}`, ARRAYS_FROM + 3, constant);
    const { jobs: inserted } = await insertJobsFenced(db.pool, more, null);
    await assertStored(more, inserted.map((j) => {
      if (!j) throw new Error('not inserted');
      return j;
    }));
  });
}

test('the forms change where they should', async () => {
  const jobs = await bulkLikeJobs('forms', ROWS_PER_STATEMENT, 'route');
  assert.equal(rowSourceFor(jobs, 0, 1), JSON_ROWS);
  assert.equal(rowSourceFor(jobs, 0, ARRAYS_FROM - 1), JSON_ROWS);
  assert.equal(rowSourceFor(jobs, 0, ROWS_PER_STATEMENT), rowSourceFor(jobs, 0, ARRAYS_FROM), 'the same constant columns, the same form');
  const columns = rowSourceFor(jobs, 0, ARRAYS_FROM);
  assert.notEqual(columns, ARRAY_ROWS);
  assert.equal(rowSourceFor(jobs, 0, ARRAYS_FROM), columns, 'one form per set of constant columns, built once');
  // every column but the kind (text in each) differs somewhere: the kind alone travels as one parameter
  const mixed = jobs.map((j, i) => (i === 1 ? { ...j, instanceId: randomUUID(), originRoute: 'other', chatId: null, phone: '4915', payloadHash: 'h', idempotencyKey: 'k', priority: 9, notBefore: NOW, queuedAt: NOW + 1, scheduledAt: null, expiresAt: NOW + 1, previousJobId: null, callerBoot: 'b' } : j));
  const mixedForm = rowSourceFor(mixed, 0, ARRAYS_FROM);
  assert.equal(mixedForm.sql.match(/\$\d+::[a-z0-9]+\[\]/g)?.length, 16, mixedForm.sql);
  assert.match(mixedForm.sql, /\$4::text AS kind/);
});

test('a form chosen for other rows refuses to write them rather than give one row another\'s value', async () => {
  const jobs = await bulkLikeJobs('refuses', ARRAYS_FROM, 'route');
  const columns = rowSourceFor(jobs, 0, jobs.length);
  const changed = jobs.map((j, i) => (i === ARRAYS_FROM - 1 ? { ...j, priority: 9 } : j));
  assert.throws(() => columns.values(changed, 0, changed.length), /column prio is not the same in every row/);
});
