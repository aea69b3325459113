/**
 * The group commit's one statement for jobs and idempotency keys (src/queue/sql/insertJobs.ts in a
 * transaction, src/queue/sql/insertJobsFenced.ts as its own): a key that another node remembered after the
 * lookup makes the statement write fewer keys than jobs, the group is undone whole and is tried again unit by
 * unit, so only the unit with the taken key fails (nothing of it written) and the other instance's job and key
 * are committed; a key older than the retention is taken over.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { AcceptanceCommitter, type AcceptUnit, type UnitWrites } from '../../src/queue/group-commit.js';
import { newJobId } from '../../src/ids.js';
import type { NewJob } from '../../src/queue/job.js';

let db: TestDb;
let a = '';
let b = '';
const NOW = Date.UTC(2030, 0, 1);
const DAY = 86_400_000;

before(async () => {
  db = await createTestDb('group_commit_keys');
  [a, b] = await twoInstances('keys');
});
after(async () => {
  await db?.close();
});

const job = (instanceId: string, key: string | null): NewJob => ({
  id: newJobId(), instanceId, originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
  payloadHash: `hash-${key ?? 'none'}`, idempotencyKey: key, priority: 5, notBefore: null, queuedAt: NOW, scheduledAt: NOW + 60_000,
  expiresAt: NOW + DAY, previousJobId: null, callerBoot: null, kind: 'text', payload: { body: 'hi', chatId: '4915112345678@c.us' },
});

/**
 * A unit that writes its jobs whatever the lookup found (as if the key were taken after the lookup); with
 * `events`, a `message.queued` per job.
 */
const unit = (instanceId: string, jobs: NewJob[], events = false): AcceptUnit<UnitWrites> => ({
  instanceId, keys: [], since: NOW - 7 * DAY, size: jobs.length,
  decide: () => ({ jobs, events: (inserted) => (events ? inserted.map((j) => ({ event: 'message.queued', data: { jobId: j.id } })) : []) }),
});

/** Two fresh instances (each case its own, so that the cases read only their own rows). */
async function twoInstances(label: string): Promise<[string, string]> {
  const ids: [string, string] = [randomUUID(), randomUUID()];
  await db.pool.query('INSERT INTO instances (id, name, driver) VALUES ($1, $3, \'sandbox\'), ($2, $4, \'sandbox\')', [...ids, `${label}-a`, `${label}-b`]);
  return ids;
}

// The same behaviour whichever way the group is written: a transaction (BEGIN, insert with keys, COMMIT), or
// one statement that is its own transaction (`quiet`: no webhook wants the events; src/queue/sql/insertJobsFenced.ts).
for (const path of ['transaction', 'one statement'] as const) {
  test(`${path}: a key taken meanwhile fails only its own unit; a key past the retention is taken over`, async () => {
    const [ka, kb] = await twoInstances(path === 'transaction' ? 'keys-tx' : 'keys-one');
    await db.pool.query(
      `INSERT INTO idempotency_keys (instance_id, key, job_id, payload_hash, created_at)
       VALUES ($1, 'taken-key-1', 'wq_other', 'h', $3), ($2, 'old-key-01', 'wq_old', 'h', $4)`,
      [ka, kb, new Date(NOW - 1_000), new Date(NOW - 8 * DAY)],
    );
    const emitted: string[] = [];
    const committer = new AcceptanceCommitter({
      pool: db.pool,
      emit: async (_q, items) => (emitted.push(...items.map((it) => it.instanceId)), []),
      ...(path === 'one statement' ? { quiet: async () => true } : {}),
    });
    const takenJobs = [job(ka, 'fresh-key-a'), job(ka, 'taken-key-1')];
    const okJobs = [job(kb, 'fresh-key-b'), job(kb, null), job(kb, 'old-key-01')];
    const [taken, ok] = await Promise.allSettled([committer.commit(unit(ka, takenJobs, true)), committer.commit(unit(kb, okJobs, true))]);
    assert.equal(taken.status, 'rejected');
    assert.match(String((taken as PromiseRejectedResult).reason), /taken concurrently/);
    assert.equal(ok.status, 'fulfilled');
    assert.deepEqual((ok as PromiseFulfilledResult<{ jobs: { id: string }[] }>).value.jobs.map((j) => j.id), okJobs.map((j) => j.id));

    const { rows: jobs } = await db.pool.query<{ id: string }>('SELECT id FROM jobs WHERE instance_id = ANY ($1::uuid[]) ORDER BY seq', [[ka, kb]]);
    assert.deepEqual(jobs.map((j) => j.id), okJobs.map((j) => j.id), 'nothing of the failed unit, the other unit in its order');
    const { rows: keys } = await db.pool.query<{ instance_id: string; key: string; job_id: string; payload_hash: string; created_at: Date }>(
      'SELECT instance_id, key, job_id, payload_hash, created_at FROM idempotency_keys WHERE instance_id = ANY ($1::uuid[]) ORDER BY instance_id, key',
      [[ka, kb]],
    );
    const byKey = new Map(keys.map((k) => [k.key, k]));
    assert.equal(byKey.get('taken-key-1')?.job_id, 'wq_other', 'the key held by another node is untouched');
    assert.equal(byKey.has('fresh-key-a'), false, 'the failed unit remembered nothing');
    assert.equal(byKey.get('fresh-key-b')?.job_id, okJobs[0]?.id);
    assert.equal(byKey.get('fresh-key-b')?.created_at.getTime(), NOW, 'remembered at the job\'s queued_at');
    assert.equal(byKey.get('old-key-01')?.job_id, okJobs[2]?.id, 'a key past the retention is taken over');
    assert.equal(byKey.get('old-key-01')?.payload_hash, 'hash-old-key-01');
    assert.equal(keys.length, 3, 'the two held before and the one new key');
    // the transaction writes the events of what it commits; the one statement is chosen because nobody wants them
    assert.deepEqual(emitted, path === 'transaction' ? [kb, kb, kb] : [], 'the path taken');
  });
}

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
