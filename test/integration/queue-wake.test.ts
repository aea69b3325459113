/**
 * The webhook sender is woken after a queue commit only when the commit wrote an event (src/queue/core.ts
 * `transaction`): a dispatch on an instance whose webhook wants nothing costs its sender no outbox read; one
 * whose webhook took the event wakes it once the outcome is committed, never before.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { simulatedClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import { newJobId } from '../../src/ids.js';
import { QueueWorker } from '../../src/queue/worker.js';
import { insertJobs } from '../../src/queue/sql/insertJobs.js';
import { EXISTING_INSTANCE_DEFAULTS, type InstanceSettings } from '../../src/queue/settings.js';

let db: TestDb;
const settings: InstanceSettings = { ...EXISTING_INSTANCE_DEFAULTS, enabled: true, quietHours: null, maxPerHour: null, maxPer24h: null, minDelayMs: 1_000, maxDelayMs: 1_000 };

before(async () => {
  db = await createTestDb('queue_wake');
});
after(async () => {
  await db?.close();
});

/** One waiting job on a new instance, dispatched by a queue whose event sink answers `wants`; the wake-ups seen. */
async function dispatchOne(wants: boolean): Promise<{ emitted: string[]; wakes: string[] }> {
  const clock = simulatedClock();
  const id = randomUUID();
  await db.pool.query("INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')", [id, `wake-${id.slice(0, 8)}`]);
  const now = clock.now();
  const [job] = await insertJobs(db.pool, [{
    id: newJobId(), instanceId: id, originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
    payloadHash: 'h', idempotencyKey: null, priority: 5, notBefore: null, queuedAt: now, scheduledAt: null,
    expiresAt: now + 3_600_000, previousJobId: null, callerBoot: null, kind: 'text', payload: { body: 'hi', chatId: '4915112345678@c.us' },
  }]);
  // what happened, in order: an event written (inside the transaction) and a wake-up (after a commit)
  const log: string[] = [];
  const w = new QueueWorker({
    instanceId: id, pool: db.pool, clock, log: silentLogger(), settings: () => settings, maxPending: 100,
    events: {
      emit: async (_q, event) => (log.push(`emit ${event}`), wants),
      emitMany: async () => undefined,
      flushed: () => void log.push('wake'),
    },
    dispatcher: { connected: () => true, send: async () => ({ kind: 'confirmed', messageId: 'true_4915112345678@c.us_X' }) },
    random: (min) => min,
  });
  await w.start();
  for (let i = 0; i < 600; i++) {
    const { rows } = await db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [job?.id]);
    if (rows[0]?.state === 'sent') break;
    clock.increment(100);
    await new Promise((r) => setImmediate(r));
  }
  await w.stop();
  const { rows } = await db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [job?.id]);
  assert.equal(rows[0]?.state, 'sent', 'the job went out');
  return { emitted: log.filter((l) => l.startsWith('emit')), wakes: log };
}

test('a dispatch whose event no webhook wants wakes no sender', async () => {
  const { emitted, wakes } = await dispatchOne(false);
  assert.deepEqual(emitted, ['emit message.sent']);
  assert.deepEqual(wakes.filter((l) => l === 'wake'), [], 'no wake-up: nothing was written');
});

test('a dispatch whose event was written wakes the sender after its commit', async () => {
  const { wakes } = await dispatchOne(true);
  assert.deepEqual(wakes, ['emit message.sent', 'wake'], 'one wake-up, after the event was written');
});
