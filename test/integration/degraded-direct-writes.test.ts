/**
 * Sends outside the queue (v1 in memory-degraded mode) are always written to `dispatches` (found from the outside:
 * around store outages some went out and were never written, so the windows PostgreSQL holds missed them):
 * - a send the route made by a view that still said "store away" while the queue had recovered is written at once;
 * - a recovery that a newer outage overtook (setDegraded(true) while its write-back ran) leaves the queue
 *   degraded, so the sends of the new outage are kept and written by its own recovery.
 * - the gate of such a send reads memory only: it does not wait behind a statement of the queue hung on the store.
 * Real PostgreSQL, a queue worker on a simulated clock; the outages are told to the queue as the store's health
 * monitor tells them.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { simulatedClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import { QueueWorker } from '../../src/queue/worker.js';
import { EXISTING_INSTANCE_DEFAULTS, type InstanceSettings } from '../../src/queue/settings.js';
import type { DirectSend } from '../../src/queue/types.js';

let db: TestDb;
const clock = simulatedClock();
const settings: InstanceSettings = { ...EXISTING_INSTANCE_DEFAULTS, enabled: true, quietHours: null, maxPerHour: null, maxPer24h: null, minDelayMs: 0, maxDelayMs: 0 };

before(async () => {
  db = await createTestDb('degraded_direct_writes');
});
after(async () => {
  await db?.close();
});

async function startedWorker(): Promise<{ w: QueueWorker; written: () => Promise<number> }> {
  const instanceId = randomUUID();
  await db.pool.query("INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')", [instanceId, `direct-${instanceId.slice(0, 8)}`]);
  const w = new QueueWorker({
    instanceId, pool: db.pool, clock, log: silentLogger(), settings: () => settings, maxPending: 100,
    events: { emit: async () => false, emitMany: async () => undefined, flushed: () => undefined },
    dispatcher: { connected: () => true, send: async () => ({ kind: 'assumed', messageId: null }) },
    random: (min) => min,
  }, { fresh: true });
  await w.start();
  const written = async () => (await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM dispatches WHERE instance_id = $1', [instanceId])).rows[0]?.n ?? -1;
  return { w, written };
}

const send = (body: string): DirectSend => ({ chatId: '4915112345678@c.us', kind: 'text', payload: { body, chatId: '4915112345678@c.us' } });

test('a direct send made while the queue is not degraded (the route\'s view was older) is written at once', async () => {
  const { w, written } = await startedWorker();
  try {
    const o = await w.directSend(send('stale view'), true);
    assert.equal(o.kind, 'assumed');
    assert.equal(await written(), 1);
  } finally {
    await w.stop();
  }
});

test('a recovery overtaken by a newer outage leaves the queue degraded: the next sends are kept, then written by its recovery', async () => {
  const { w, written } = await startedWorker();
  const locker = await db.pool.connect();
  try {
    await w.setDegraded(true, clock.now());
    assert.equal((await w.directSend(send('first outage'), true)).kind, 'assumed');
    assert.equal(await written(), 0, 'kept while the store is away');

    // the recovery's write waits behind a lock; meanwhile the store goes away again
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE dispatches IN ACCESS EXCLUSIVE MODE');
    const recovery = w.setDegraded(false, clock.now());
    await new Promise((r) => setTimeout(r, 50));
    await w.setDegraded(true, clock.now());
    const during = w.directSend(send('second outage'), true);
    await locker.query('COMMIT');
    await recovery;
    assert.equal((await during).kind, 'assumed');
    assert.equal(await written(), 1, 'the first outage\'s send is written; the second\'s is kept (the queue stayed degraded)');

    await w.setDegraded(false, clock.now());
    assert.equal(await written(), 2, 'the second outage\'s recovery writes its send');
  } finally {
    await locker.query('ROLLBACK').catch(() => undefined);
    locker.release();
    await w.stop();
  }
});

test('a direct send in degraded mode does not wait behind the queue\'s statement hung on the store', async () => {
  const { w, written } = await startedWorker();
  const locker = await db.pool.connect();
  let replan: Promise<unknown> = Promise.resolve();
  try {
    await w.setDegraded(true, clock.now());
    // a re-plan holds the queue's serial executor, its write stuck behind a lock
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE instances IN ACCESS EXCLUSIVE MODE');
    replan = w.replan('api').catch(() => undefined);
    await new Promise((r) => setTimeout(r, 50));
    const sent = await Promise.race([
      w.directSend(send('while the executor waits'), true),
      new Promise<'stuck'>((r) => setTimeout(() => r('stuck'), 3_000)),
    ]);
    assert.notEqual(sent, 'stuck', 'the send waited for the hung statement');
    assert.equal(typeof sent === 'object' ? sent.kind : sent, 'assumed');
  } finally {
    await locker.query('COMMIT').catch(() => undefined);
    locker.release();
    await replan;
  }
  await w.setDegraded(false, clock.now());
  assert.equal(await written(), 1);
  await w.stop();
});

test('a queue that reads itself again from the store during an outage still counts the sends kept for write-back', async () => {
  const { w, written } = await startedWorker();
  try {
    await w.setDegraded(true, clock.now());
    assert.equal((await w.directSend(send('kept'), true)).kind, 'assumed');
    assert.equal(w.limits().usedLastHour, 1);
    // the re-read after a commit of unknown outcome (src/queue/acceptance.ts `reconcile`) replaces the history
    // with the store's, which does not have the kept send yet
    await (w as unknown as { core: { reload(now: number): Promise<void> } }).core.reload(clock.now());
    assert.equal(w.limits().usedLastHour, 1, 'the kept send still counts');
    await w.setDegraded(false, clock.now());
    assert.equal(await written(), 1);
    await (w as unknown as { core: { reload(now: number): Promise<void> } }).core.reload(clock.now());
    assert.equal(w.limits().usedLastHour, 1, 'counted once once written');
  } finally {
    await w.stop();
  }
});
