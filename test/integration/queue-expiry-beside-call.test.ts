/**
 * A send that hangs (the network holds the call until DRIVER_CALL_TIMEOUT_MS) does not hold back the expiry of the
 * jobs waiting behind it (found from the outside: a job read `scheduled` seconds past its expiresAt and expired
 * only once the hang ended): they expire on time beside the call, and the lane goes on once it returns. Real
 * PostgreSQL, a queue worker on a simulated clock, a dispatcher whose first call hangs until released.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { simulatedClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import { QueueWorker } from '../../src/queue/worker.js';
import { EXISTING_INSTANCE_DEFAULTS, type InstanceSettings } from '../../src/queue/settings.js';
import type { AcceptRequest, DispatchOutcome } from '../../src/queue/types.js';

let db: TestDb;
const settings: InstanceSettings = { ...EXISTING_INSTANCE_DEFAULTS, enabled: true, quietHours: null, maxPerHour: null, maxPer24h: null, minDelayMs: 10_000, maxDelayMs: 10_000 };

before(async () => {
  db = await createTestDb('queue_expiry_beside_call');
});
after(async () => {
  await db?.close();
});

const request = (body: string, ttlSeconds: number | null): AcceptRequest => ({
  originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678', payloadHash: null, idempotencyKey: null,
  priority: 5, notBefore: null, ttlSeconds, kind: 'text', payload: { body, chatId: '4915112345678@c.us' },
});

test('a job whose validity ends while the call before it hangs expires on time; the hung call\'s job is sent once it returns', async () => {
  const clock = simulatedClock();
  const instanceId = randomUUID();
  await db.pool.query("INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')", [instanceId, `expiry-${instanceId.slice(0, 8)}`]);
  let release: (o: DispatchOutcome) => void = () => undefined;
  let calls = 0;
  const w = new QueueWorker({
    instanceId, pool: db.pool, clock, log: silentLogger(), settings: () => settings, maxPending: 100,
    events: { emit: async () => false, emitMany: async () => undefined, flushed: () => undefined },
    dispatcher: {
      connected: () => true,
      send: () => {
        calls++;
        return calls === 1 ? new Promise<DispatchOutcome>((r) => (release = r)) : Promise.resolve({ kind: 'confirmed', messageId: `true_4915112345678@c.us_${calls}` });
      },
    },
    random: (min) => min,
  }, { fresh: true });
  await w.start();
  const state = async (id: string) => (await db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [id])).rows[0]?.state;
  const step = async (ms: number) => {
    clock.increment(ms);
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  };
  try {
    const [hung, shortLived] = await w.offerMany([request('hangs', null), request('short-lived', 15)]);
    assert.ok(hung?.kind === 'accepted' && shortLived?.kind === 'accepted');
    for (let i = 0; i < 100 && (await state(hung.job.id)) !== 'sending'; i++) await step(0);
    assert.equal(await state(hung.job.id), 'sending', 'the first call is made and hangs');

    // the second job's slot (+10 s) and its expiry (+15 s) pass while the call hangs
    for (let t = 0; t < 20_000; t += 500) await step(500);
    for (let i = 0; i < 100 && (await state(shortLived.job.id)) !== 'expired'; i++) await step(0);
    assert.equal(await state(shortLived.job.id), 'expired', 'expired beside the hung call');
    assert.equal(await state(hung.job.id), 'sending', 'the call still hangs');
    assert.equal(calls, 1);

    release({ kind: 'confirmed', messageId: 'true_4915112345678@c.us_1' });
    for (let i = 0; i < 100 && (await state(hung.job.id)) !== 'sent'; i++) await step(100);
    assert.equal(await state(hung.job.id), 'sent');
    assert.equal(calls, 1, 'the expired job is never sent');
  } finally {
    release({ kind: 'confirmed', messageId: 'true_4915112345678@c.us_1' });
    await w.stop();
  }
});
