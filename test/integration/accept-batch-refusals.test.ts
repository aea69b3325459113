/**
 * Refusals inside one acceptance batch (src/queue/acceptance.ts `decide`): a request refused TTL_UNREACHABLE
 * takes no room of the queue, so a request after it in the same batch is not refused QUEUE_FULL while the
 * queue has room; a request that repeats the key (and payload) of one refused in the same batch gets the same
 * refusal, not an error. Real PostgreSQL, a queue worker on a simulated clock.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { simulatedClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import { QueueWorker } from '../../src/queue/worker.js';
import { EXISTING_INSTANCE_DEFAULTS, type InstanceSettings } from '../../src/queue/settings.js';
import type { AcceptRequest } from '../../src/queue/types.js';

let db: TestDb;
const clock = simulatedClock();
const MAX_PENDING = 3;
const settings: InstanceSettings = {
  ...EXISTING_INSTANCE_DEFAULTS, enabled: true, quietHours: null, maxPerHour: null, maxPer24h: null, minDelayMs: 60_000, maxDelayMs: 60_000,
};

before(async () => {
  db = await createTestDb('accept_batch_refusals');
});
after(async () => {
  await db?.close();
});

async function startedWorker(): Promise<QueueWorker> {
  const instanceId = randomUUID();
  await db.pool.query("INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')", [instanceId, `refusals-${instanceId.slice(0, 8)}`]);
  const w = new QueueWorker({
    instanceId, pool: db.pool, clock, log: silentLogger(), settings: () => settings, maxPending: MAX_PENDING,
    events: { emit: async () => false, emitMany: async () => undefined, flushed: () => undefined },
    dispatcher: { connected: () => false, send: async () => ({ kind: 'unknown', unknownReason: 'not in this test' }) },
    random: (min) => min,
  }, { fresh: true });
  await w.start();
  return w;
}

/** A text send; `unreachable`: it may not go before ten minutes and expires after one, so no slot fits. */
function request(body: string, opts: { unreachable?: boolean; key?: string } = {}): AcceptRequest {
  const now = clock.now();
  return {
    originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
    payloadHash: opts.key ? `hash-${body}` : null, idempotencyKey: opts.key ?? null, priority: 5,
    notBefore: opts.unreachable ? now + 600_000 : null, ttlSeconds: opts.unreachable ? 60 : null,
    kind: 'text', payload: { body, chatId: '4915112345678@c.us' },
  };
}

test('requests refused TTL_UNREACHABLE leave their room to the requests after them in the batch', async () => {
  const w = await startedWorker();
  try {
    const outcomes = await w.offerMany([
      request('late 1', { unreachable: true }),
      request('late 2', { unreachable: true }),
      request('a'), request('b'), request('c'), request('d'),
    ]);
    assert.deepEqual(outcomes.map((o) => o.kind === 'refused' ? o.code : o.kind), [
      'TTL_UNREACHABLE', 'TTL_UNREACHABLE', 'accepted', 'accepted', 'accepted', 'QUEUE_FULL',
    ]);
    const { rows } = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM jobs WHERE instance_id = $1 AND state IN ('queued', 'scheduled')", [w.instanceId]);
    assert.equal(rows[0]?.n, MAX_PENDING, 'the queue holds exactly its maximum');
  } finally {
    await w.stop();
  }
});

test('a key repeated in the batch after a request refused TTL_UNREACHABLE gets the same refusal', async () => {
  const w = await startedWorker();
  try {
    const outcomes = await w.offerMany([
      request('late', { unreachable: true, key: 'k-late' }),
      request('late', { unreachable: true, key: 'k-late' }),
      request('fine', { key: 'k-fine' }),
      request('fine', { key: 'k-fine' }),
    ]);
    assert.deepEqual(outcomes.map((o) => o.kind === 'refused' ? o.code : o.kind), ['TTL_UNREACHABLE', 'TTL_UNREACHABLE', 'accepted', 'replay']);
    const [first, second] = outcomes;
    assert.ok(first?.kind === 'refused' && second?.kind === 'refused' && first.code === 'TTL_UNREACHABLE' && second.code === 'TTL_UNREACHABLE');
    assert.equal(second.expiresAt, first.expiresAt);
    const { rows } = await db.pool.query<{ key: string }>('SELECT key FROM idempotency_keys WHERE instance_id = $1', [w.instanceId]);
    assert.deepEqual(rows.map((r) => r.key), ['k-fine'], 'a refused key names no job');
  } finally {
    await w.stop();
  }
});

test('many requests refused TTL_UNREACHABLE in one batch before one that fits: it is accepted (no bound on how many)', async () => {
  const w = await startedWorker();
  try {
    assert.equal((await w.offerMany([request('first')]))[0]?.kind, 'accepted');
    assert.equal((await w.offerMany([request('second')]))[0]?.kind, 'accepted');
    // one place left: forty requests that can never have a slot, then one that can, then one more
    const outcomes = await w.offerMany([
      ...Array.from({ length: 40 }, (_, i) => request(`late ${i}`, { unreachable: true })),
      request('fits'), request('one too many'),
    ]);
    const codes = outcomes.map((o) => o.kind === 'refused' ? o.code : o.kind);
    assert.deepEqual(codes.slice(0, 40), Array.from({ length: 40 }, () => 'TTL_UNREACHABLE'));
    assert.deepEqual(codes.slice(40), ['accepted', 'QUEUE_FULL']);
  } finally {
    await w.stop();
  }
});
