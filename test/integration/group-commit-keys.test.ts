/**
 * The group commit's one statement for jobs and idempotency keys (src/queue/sql/insertJobs.ts): a key that
 * another node remembered after the lookup makes the statement write fewer keys than jobs, the group rolls
 * back and is tried again unit by unit, so only the unit with the taken key fails (nothing of it written)
 * and the other instance's job and key are committed; a key older than the retention is taken over.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { AcceptanceCommitter, type AcceptUnit, type UnitWrites } from '../../src/queue/group-commit.js';
import { newJobId } from '../../src/ids.js';
import type { NewJob } from '../../src/queue/job.js';

let db: TestDb;
const a = randomUUID();
const b = randomUUID();
const NOW = Date.UTC(2030, 0, 1);
const DAY = 86_400_000;

before(async () => {
  db = await createTestDb('group_commit_keys');
  await db.pool.query("INSERT INTO instances (id, name, driver) VALUES ($1, 'keys-a', 'sandbox'), ($2, 'keys-b', 'sandbox')", [a, b]);
});
after(async () => {
  await db?.close();
});

const job = (instanceId: string, key: string | null): NewJob => ({
  id: newJobId(), instanceId, originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
  payloadHash: `hash-${key ?? 'none'}`, idempotencyKey: key, priority: 5, notBefore: null, queuedAt: NOW, scheduledAt: NOW + 60_000,
  expiresAt: NOW + DAY, previousJobId: null, callerBoot: null, kind: 'text', payload: { body: 'hi', chatId: '4915112345678@c.us' },
});

/** A unit that writes its jobs whatever the lookup found (as if the key were taken after the lookup). */
const unit = (instanceId: string, jobs: NewJob[]): AcceptUnit<UnitWrites> => ({
  instanceId, keys: [], since: NOW - 7 * DAY, size: jobs.length,
  decide: () => ({ jobs, events: () => [] }),
});

test('a key taken meanwhile fails only its own unit; a key past the retention is taken over', async () => {
  await db.pool.query(
    `INSERT INTO idempotency_keys (instance_id, key, job_id, payload_hash, created_at)
     VALUES ($1, 'taken-key-1', 'wq_other', 'h', $3), ($2, 'old-key-01', 'wq_old', 'h', $4)`,
    [a, b, new Date(NOW - 1_000), new Date(NOW - 8 * DAY)],
  );
  const committer = new AcceptanceCommitter({ pool: db.pool, emit: async () => [] });
  const takenJobs = [job(a, 'fresh-key-a'), job(a, 'taken-key-1')];
  const okJobs = [job(b, 'fresh-key-b'), job(b, null), job(b, 'old-key-01')];
  const [taken, ok] = await Promise.allSettled([committer.commit(unit(a, takenJobs)), committer.commit(unit(b, okJobs))]);
  assert.equal(taken.status, 'rejected');
  assert.match(String((taken as PromiseRejectedResult).reason), /taken concurrently/);
  assert.equal(ok.status, 'fulfilled');
  assert.deepEqual((ok as PromiseFulfilledResult<{ jobs: { id: string }[] }>).value.jobs.map((j) => j.id), okJobs.map((j) => j.id));

  const { rows: jobs } = await db.pool.query<{ id: string; instance_id: string }>('SELECT id, instance_id FROM jobs ORDER BY seq');
  assert.deepEqual(jobs.map((j) => j.id), okJobs.map((j) => j.id), 'nothing of the failed unit, the other unit in its order');
  const { rows: keys } = await db.pool.query<{ instance_id: string; key: string; job_id: string; payload_hash: string; created_at: Date }>(
    'SELECT instance_id, key, job_id, payload_hash, created_at FROM idempotency_keys ORDER BY instance_id, key',
  );
  const byKey = new Map(keys.map((k) => [k.key, k]));
  assert.equal(byKey.get('taken-key-1')?.job_id, 'wq_other', 'the key held by another node is untouched');
  assert.equal(byKey.has('fresh-key-a'), false, 'the failed unit remembered nothing');
  assert.equal(byKey.get('fresh-key-b')?.job_id, okJobs[0]?.id);
  assert.equal(byKey.get('fresh-key-b')?.created_at.getTime(), NOW, 'remembered at the job\'s queued_at');
  assert.equal(byKey.get('old-key-01')?.job_id, okJobs[2]?.id, 'a key past the retention is taken over');
  assert.equal(byKey.get('old-key-01')?.payload_hash, 'hash-old-key-01');
  assert.equal(keys.length, 3, 'the two held before and the one new key');
});

test('a unit is evented only when one of its events reached the outbox (its webhook sender is woken only then)', async () => {
  // the emitter writes the events of instance b only, as the outbox does for the one instance with a webhook
  const committer = new AcceptanceCommitter({
    pool: db.pool,
    emit: async (_q, items) => items.map((it) => (it.instanceId === b ? { eventId: `ev_${it.event}` } : null)),
  });
  const withEvents = (instanceId: string): AcceptUnit<UnitWrites> => ({
    instanceId, keys: [], since: NOW - 7 * DAY,
    decide: () => ({ jobs: [job(instanceId, null)], events: (jobs) => jobs.map((j) => ({ event: 'message.queued', data: { jobId: j.id } })) }),
  });
  const [ra, rb] = await Promise.all([committer.commit(withEvents(a)), committer.commit(withEvents(b))]);
  assert.equal(ra.evented, false);
  assert.equal(rb.evented, true);
  // an emitter that answers nothing: every unit with events counts as evented
  const silent = new AcceptanceCommitter({ pool: db.pool, emit: async () => undefined });
  assert.equal((await silent.commit(withEvents(a))).evented, true);
  assert.equal((await silent.commit(unit(a, [job(a, null)]))).evented, false, 'no events, nothing to wake for');
});
