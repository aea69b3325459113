/**
 * An instance's events are stamped when they came, not when their turn in the instance's chain came (found
 * from the outside: a session's `ready` was stamped after the first message it sent, so a receiver ordering by
 * `timestamp`, as docs/webhooks.md tells it to, saw a send before its session was ready). The events actor on a
 * simulated clock, an incoming attachment whose download holds the chain, real PostgreSQL.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createActor } from 'xstate';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { createIncomingEvents, lifecycleCommand, networkCommand } from '../../src/actors/network-events.js';
import { createEventBus } from '../../src/actors/events.js';
import { createInstance } from '../../src/store/instances.js';
import { putWebhook } from '../../src/webhooks/config.js';
import { withTransaction } from '../../src/store/pool.js';
import { simulatedClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import type { WireMessage } from '../../src/drivers/contract.js';

let db: TestDb;
before(async () => {
  db = await createTestDb('incoming_events_time');
});
after(async () => {
  await db?.close();
});

test('an event waiting behind an attachment\'s download keeps the time it came', async () => {
  const clock = simulatedClock();
  const { instance } = await withTransaction(db.pool, (c) => createInstance(c, { name: 'timed', driver: 'sandbox', settings: {} }));
  await putWebhook(db.pool, instance.id, { url: 'http://127.0.0.1:9/e', secret: 'incoming-events-secret-0123456789', events: ['*'], enabled: true });
  let downloaded: (() => void) | null = null;
  const incoming = createIncomingEvents({
    pool: db.pool, clock, log: silentLogger(), events: createEventBus({ pool: db.pool, clock, wake: () => {} }), downloadTimeoutMs: 60_000,
    // the attachment's handling takes its time (a download): the instance's later events wait behind it
    media: { describe: () => new Promise((resolve) => (downloaded = () => resolve(null))) },
  });
  const events = createActor(incoming.logic).start();
  const m: WireMessage = {
    id: { fromMe: false, remote: '4917600000042@c.us', id: 'IN1', _serialized: 'false_4917600000042@c.us_IN1' },
    from: '4917600000042@c.us', to: '4915100000077@c.us', author: null, body: '', type: 'image', timestamp: 1767607200, fromMe: false,
    hasMedia: true, hasQuotedMsg: false, ack: 1, isForwarded: false, deviceType: 'android', location: null, vCards: [],
  };
  const t0 = clock.now();
  events.send(networkCommand(instance, 'message', [m], () => Promise.resolve(null)));
  clock.increment(1_000);
  events.send(lifecycleCommand(instance, { event: 'disconnected', data: { reason: 'NAVIGATION' } }));
  clock.increment(4_000);
  for (let i = 0; i < 500 && downloaded === null; i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(downloaded, 'the attachment is being handled');
  (downloaded as () => void)();
  await incoming.settled();
  const { rows } = await db.pool.query<{ event: string; body: string }>('SELECT event, body FROM outbox WHERE instance_id = $1 ORDER BY id', [instance.id]);
  const stamps = rows.map((r) => [r.event, (JSON.parse(r.body) as { timestamp: number }).timestamp - t0]);
  assert.deepEqual(stamps, [['message', 0], ['disconnected', 1_000]]);
  events.stop();
});
