/**
 * The outbox write: opt-in, subscription filtering (default, explicit, `*`), attempts per event, the
 * envelope as stored, and the config cache's invalidation rules. Real PostgreSQL.
 */
import type { QueryConfig } from 'pg';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { deleteWebhook, putWebhook, invalidateWebhookConfig } from '../../src/webhooks/config.js';
import { enqueueEvent, enqueueEvents } from '../../src/webhooks/outbox.js';
import { EVENT_NAMES, type EventName, type EventOf } from '../../src/webhooks/events.js';

let db: TestDb;
before(async () => {
  db = await createTestDb('webhook_outbox');
});
after(async () => {
  await db.close();
});

const NOW = Date.UTC(2026, 0, 5, 10, 0, 0);
const SECRET = 'whsec_outbox_0123456789';

async function instance(): Promise<string> {
  const id = randomUUID();
  await db.pool.query(`INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')`, [id, `ob-${id.slice(0, 8)}`]);
  return id;
}

/** Enqueue one event of every name; return the names that were written. */
async function writtenNames(id: string): Promise<EventName[]> {
  const written: EventName[] = [];
  for (const event of EVENT_NAMES) {
    const r = await enqueueEvent(db.pool, { instanceId: id, now: NOW, event, data: {} } as EventOf & { instanceId: string; now: number });
    if (r) written.push(event);
  }
  const { rows } = await db.pool.query<{ event: string }>('SELECT event FROM outbox WHERE instance_id = $1 ORDER BY id', [id]);
  assert.deepEqual(rows.map((r) => r.event), written, 'what enqueueEvent reports is what is stored');
  return written;
}

test('an instance without a webhook stores nothing', async () => {
  const id = await instance();
  assert.deepEqual(await writtenNames(id), []);
});

test('default subscription: message, ready, disconnected, instance_restarting, test', async () => {
  const id = await instance();
  await putWebhook(db.pool, id, { url: 'https://hooks.example.com/a', secret: SECRET });
  assert.deepEqual(await writtenNames(id), ['message', 'ready', 'disconnected', 'instance_restarting', 'test']);
});

test('explicit events, `*`, and a disabled webhook', async () => {
  const a = await instance();
  await putWebhook(db.pool, a, { url: 'https://hooks.example.com/a', secret: SECRET, events: ['message.sent', 'qr', 'message.sent'] });
  assert.deepEqual(await writtenNames(a), ['qr', 'message.sent']);

  const b = await instance();
  await putWebhook(db.pool, b, { url: 'https://hooks.example.com/b', secret: SECRET, events: ['*'] });
  assert.deepEqual(await writtenNames(b), [...EVENT_NAMES]);

  const c = await instance();
  await putWebhook(db.pool, c, { url: 'https://hooks.example.com/c', secret: SECRET, events: ['*'], enabled: false });
  assert.deepEqual(await writtenNames(c), []);
});

test('stored row: envelope, 1 attempt for high-frequency events, 3 otherwise, due at the event time', async () => {
  const id = await instance();
  await putWebhook(db.pool, id, { url: 'https://hooks.example.com/a', secret: SECRET, events: ['*'] });
  const ack = await enqueueEvent(db.pool, { instanceId: id, now: NOW + 0.7, event: 'message_ack', data: { id: 'm', chatId: 'c', ack: 2, ackName: 'DEVICE' } });
  const sent = await enqueueEvent(db.pool, { instanceId: id, now: NOW, event: 'message.sent', data: { jobId: 'wq_1', messageId: 'm', deliveryConfidence: 'confirmed', dispatchedAt: 'x' } });
  const { rows } = await db.pool.query<{ event_id: string; body: string; max_attempts: number; state: string; attempts: number; next_attempt_at: Date; created_at: Date }>(
    'SELECT event_id, body, max_attempts, state, attempts, next_attempt_at, created_at FROM outbox WHERE instance_id = $1 ORDER BY id',
    [id],
  );
  assert.deepEqual(rows.map((r) => [r.event_id, r.max_attempts, r.state, r.attempts]), [
    [ack!.eventId, 1, 'pending', 0],
    [sent!.eventId, 3, 'pending', 0],
  ]);
  assert.equal(
    rows[0]!.body,
    `{"v":2,"eventId":"${ack!.eventId}","event":"message_ack","instanceId":"${id}","timestamp":${NOW},"data":{"id":"m","chatId":"c","ack":2,"ackName":"DEVICE"}}`,
  );
  assert.equal(rows[0]!.next_attempt_at.getTime(), NOW);
  assert.equal(rows[0]!.created_at.getTime(), NOW);
});

test('the cache never hides a change: put/delete invalidate here, a removal elsewhere is seen at once', async () => {
  const id = await instance();
  const probe = () => enqueueEvent(db.pool, { instanceId: id, now: NOW, event: 'test', data: { message: 'x' } });
  assert.equal(await probe(), null); // caches "no webhook"
  await putWebhook(db.pool, id, { url: 'https://hooks.example.com/a', secret: SECRET });
  assert.ok(await probe(), 'putWebhook invalidated the cached "no webhook"');
  await db.pool.query('DELETE FROM webhooks WHERE instance_id = $1', [id]); // another node, no invalidation here
  assert.equal(await probe(), null, 'the conditional insert re-reads the table');
  await putWebhook(db.pool, id, { url: 'https://hooks.example.com/a', secret: SECRET, events: ['ready'] });
  assert.equal(await probe(), null);
  assert.equal(await deleteWebhook(db.pool, id), true);
  assert.equal(await deleteWebhook(db.pool, id), false);
  await db.pool.query(`INSERT INTO webhooks (instance_id, url, secret) VALUES ($1, 'https://h.example/', $2)`, [id, SECRET]);
  invalidateWebhookConfig(id); // what the node that wrote it does
  assert.ok(await probe());
});

test('enqueueEvents: one statement, input order, unsubscribed entries null', async () => {
  const id = await instance();
  await putWebhook(db.pool, id, { url: 'https://hooks.example.com/a', secret: SECRET, events: ['message.queued', 'queue.replanned'] });
  const items: EventOf[] = [
    { event: 'message.queued', data: { jobId: 'wq_1', idempotencyKey: null, chatId: 'c', scheduledAt: null, etaSeconds: null, queuePosition: 1 } },
    { event: 'message.sent', data: { jobId: 'wq_0', messageId: null, deliveryConfidence: 'assumed', dispatchedAt: 'x' } },
    { event: 'message.queued', data: { jobId: 'wq_2', idempotencyKey: 'k', chatId: 'c', scheduledAt: null, etaSeconds: 5, queuePosition: 2 } },
    { event: 'queue.replanned', data: { affected: 2, epoch: 7, reason: 'settings' } },
  ];
  const res = await enqueueEvents(db.pool, id, items, NOW);
  assert.equal(res[1], null);
  const { rows } = await db.pool.query<{ event_id: string; body: string }>('SELECT event_id, body FROM outbox WHERE instance_id = $1 ORDER BY id', [id]);
  assert.deepEqual(rows.map((r) => r.event_id), [res[0]!.eventId, res[2]!.eventId, res[3]!.eventId]);
  assert.deepEqual(rows.map((r) => (JSON.parse(r.body) as { data: { jobId?: string } }).data.jobId), ['wq_1', 'wq_2', undefined]);
  const none = await instance();
  assert.deepEqual(await enqueueEvents(db.pool, none, items, NOW), [null, null, null, null]);
});

test('the subscription cache: a miss reads again the entries past half their lifetime, so they expire together', async () => {
  const { subscribedEventsOf, CACHE_TTL_MS } = await import('../../src/webhooks/config.js');
  invalidateWebhookConfig();
  const [a, b, c] = [await instance(), await instance(), await instance()];
  await putWebhook(db.pool, b, { url: 'https://example.com/hook', secret: SECRET, events: ['message'] });
  const reads: string[][] = [];
  const counting = { query: (text: string, values: unknown[]) => (reads.push((values[0] as string[]).slice().sort()), db.pool.query(text, values)) } as unknown as typeof db.pool;
  const t0 = 1_000_000_000_000;
  await subscribedEventsOf(counting, [a], t0);
  await subscribedEventsOf(counting, [b], t0 + CACHE_TTL_MS / 2 - 1);
  assert.deepEqual(reads, [[a], [b]], 'a, not half way through its lifetime yet, is not read again with b');
  // a expired: its read takes b along (half its lifetime gone), not c (never asked for)
  const seen = await subscribedEventsOf(counting, [a], t0 + CACHE_TTL_MS);
  assert.deepEqual(reads[2], [a, b].sort());
  assert.deepEqual([...seen.entries()], [[a, null]], 'only what was asked for is answered');
  // b is fresh again: no query for it, then both expire together
  const both = await subscribedEventsOf(counting, [a, b], t0 + CACHE_TTL_MS + CACHE_TTL_MS / 2);
  assert.equal(reads.length, 3, 'both answered from the cache');
  assert.deepEqual(both.get(b), ['message']);
  await subscribedEventsOf(counting, [c, a, b], t0 + 2 * CACHE_TTL_MS);
  assert.equal(reads.length, 4, 'one query for all three');
});

test('the subscription cache: a read that began before an invalidation fills nothing in', async () => {
  const { subscribedEventsOf } = await import('../../src/webhooks/config.js');
  invalidateWebhookConfig();
  const id = await instance();
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  // the query runs at once; its answer arrives after the gate opens
  const slow = {
    query: async (q: string | QueryConfig, values?: unknown[]) => {
      const r = typeof q === 'string' ? await db.pool.query(q, values) : await db.pool.query(q);
      await gate;
      return r;
    },
  } as unknown as typeof db.pool;
  const t0 = Date.now();
  const pending = subscribedEventsOf(slow, [id], t0);
  // meanwhile the webhook is added on this node (which invalidates)
  await putWebhook(db.pool, id, { url: 'https://example.com/hook', secret: SECRET, events: ['message'] });
  release();
  assert.equal((await pending).get(id), null, 'the read saw the table before the webhook');
  const fresh = await subscribedEventsOf(db.pool, [id], t0 + 1);
  assert.deepEqual(fresh.get(id), ['message'], 'the stale answer was not cached');
});
