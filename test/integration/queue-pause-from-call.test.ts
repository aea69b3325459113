/**
 * The pause between two messages runs from the first one's call, not from its claim (SPEC.md planner rule:
 * "measured against the last actual dispatch"; src/queue/outcome-writer.ts `fromTheCall`). Preparing a message
 * comes between the two (its media read or fetched): a document that took 700 ms to prepare, then a text, with a
 * 1 s pause, reached the network 300 ms apart while their claims were exactly 1 s apart. Real PostgreSQL, the
 * queue worker, a simulated clock; the dispatcher stands in for the session and takes its time on the clock.
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
import { MOVE_WRITE_MS } from '../../src/queue/outcome-writer.js';
import { EXISTING_INSTANCE_DEFAULTS, type InstanceSettings } from '../../src/queue/settings.js';
import type { Job } from '../../src/queue/job.js';

let db: TestDb;
const PAUSE = 1_000;
const settings: InstanceSettings = { ...EXISTING_INSTANCE_DEFAULTS, enabled: true, quietHours: null, maxPerHour: null, maxPer24h: null, minDelayMs: PAUSE, maxDelayMs: PAUSE };
/** what preparing each message takes on the clock: the first is a large document */
const PREPARE: Record<string, number> = { doc: 700, text1: 0, text2: 0 };

before(async () => {
  db = await createTestDb('pause_from_call');
});
after(async () => {
  await db?.close();
});

test('the next message waits a whole pause after the call of one that took long to prepare; a restart measures it from there too', async () => {
  const clock = simulatedClock();
  const id = randomUUID();
  await db.pool.query("INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')", [id, `pause-${id.slice(0, 8)}`]);
  const now = clock.now();
  const jobs = await insertJobs(db.pool, Object.keys(PREPARE).map((body, i) => ({
    id: newJobId(), instanceId: id, originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
    payloadHash: `h${i}`, idempotencyKey: null, priority: 5, notBefore: null, queuedAt: now, scheduledAt: null,
    expiresAt: now + 3_600_000, previousJobId: null, callerBoot: null, kind: 'text' as const, payload: { body, chatId: '4915112345678@c.us' },
  })));
  // the network's side: when each call was made, after its message was prepared
  const calls: { body: string; claimAt: number; callAt: number }[] = [];
  const send = async (job: Job) => {
    const body = (job.payload as { body: string }).body;
    const ready = clock.now() + (PREPARE[body] ?? 0);
    while (clock.now() < ready) await new Promise((r) => setImmediate(r));
    const callAt = clock.now();
    calls.push({ body, claimAt: job.dispatchedAt ?? NaN, callAt });
    return { kind: 'confirmed' as const, messageId: `true_4915112345678@c.us_${body}`, callAt };
  };
  const w = new QueueWorker({
    instanceId: id, pool: db.pool, clock, log: silentLogger(), settings: () => settings, maxPending: 100,
    events: { emit: async () => false, emitMany: async () => undefined, flushed: () => undefined },
    dispatcher: { connected: () => true, send },
    random: (min) => min,
  });
  await w.start();
  // the clock moves 10 ms at a time, each step after a real millisecond for the claims and outcomes to be written
  for (let i = 0; i < 2_000 && calls.length < 3; i++) {
    clock.increment(10);
    await new Promise((r) => setTimeout(r, 1));
  }
  await w.stop();

  assert.deepEqual(calls.map((c) => c.body), ['doc', 'text1', 'text2']);
  assert.ok(calls[0]!.callAt - calls[0]!.claimAt >= 700, 'the document was prepared between its claim and its call');
  for (let i = 1; i < calls.length; i++) {
    const gap = calls[i]!.callAt - calls[i - 1]!.callAt;
    assert.ok(gap >= PAUSE, `call ${i + 1} came ${gap} ms after call ${i} (the pause is ${PAUSE} ms)`);
  }
  // stored: the windows and the job's dispatchedAt keep the claim; the instance's last dispatch is the call
  // (moved by more than MOVE_WRITE_MS), so that a restart measures the pause from there
  const docJob = jobs[0]!;
  assert.ok(calls[0]!.callAt - calls[0]!.claimAt > MOVE_WRITE_MS);
  const row = (await db.pool.query<{ at: Date }>('SELECT dispatched_at AS at FROM jobs WHERE id = $1', [docJob.id])).rows[0];
  assert.equal(row?.at.getTime(), calls[0]!.claimAt, "the job's dispatchedAt is its claim");
  const history = (await db.pool.query<{ at: Date }>('SELECT dispatched_at AS at FROM dispatches WHERE job_id = $1', [docJob.id])).rows[0];
  assert.equal(history?.at.getTime(), calls[0]!.claimAt, 'the windows count it at its claim');
  const last = (await db.pool.query<{ at: Date }>('SELECT last_dispatch_at AS at FROM instances WHERE id = $1', [id])).rows[0];
  const stored = (c: (typeof calls)[number]) => (c.callAt - c.claimAt > MOVE_WRITE_MS ? c.callAt : c.claimAt);
  assert.equal(last?.at.getTime(), Math.max(...calls.map(stored)), 'a restart measures the pause from the last dispatch');
  const states = (await db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE instance_id = $1', [id])).rows.map((r) => r.state);
  assert.deepEqual(states, ['sent', 'sent', 'sent']);
});
