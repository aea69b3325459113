/**
 * How a queue starts (src/queue/worker.ts `start`): queues started together read their state with one
 * statement per kind for all of them (src/queue/starts.ts) and end up exactly as a queue that reads alone
 * (QueueCore.reload); one with a job left `sending` still recovers it as `unknown` first; a brand-new one starts
 * empty without a read; a start that fails is tried again after a pause.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { simulatedClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import { newJobId } from '../../src/ids.js';
import { QueueWorker, START_RETRY_MS, type StartOptions } from '../../src/queue/worker.js';
import { QueueStarts, type StartState } from '../../src/queue/starts.js';
import { insertJobs } from '../../src/queue/sql/insertJobs.js';
import { insertDispatches } from '../../src/queue/sql/insertDispatches.js';
import { EXISTING_INSTANCE_DEFAULTS, type InstanceSettings } from '../../src/queue/settings.js';
import type { NewJob } from '../../src/queue/job.js';

let db: TestDb;
const clock = simulatedClock();
const HOUR = 3_600_000;
const settings: InstanceSettings = { ...EXISTING_INSTANCE_DEFAULTS, enabled: true, quietHours: null, maxPerHour: 20, maxPer24h: null };

before(async () => {
  db = await createTestDb('queue_start');
});
after(async () => {
  await db?.close();
});

async function newInstance(): Promise<string> {
  const id = randomUUID();
  await db.pool.query("INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')", [id, `start-${id.slice(0, 8)}`]);
  return id;
}

const job = (instanceId: string, i: number): NewJob => {
  const now = clock.now();
  return {
    id: newJobId(), instanceId, originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
    payloadHash: `hash-${i}`, idempotencyKey: null, priority: 5, notBefore: null, queuedAt: now - HOUR, scheduledAt: null,
    expiresAt: now + 24 * HOUR, previousJobId: null, callerBoot: null, kind: 'text', payload: { body: `m${i}`, chatId: '4915112345678@c.us' },
  };
};

/** An instance with waiting jobs, outcomes of the last day and before, dispatches, a plan epoch; `sending`: one job left sending. */
async function seeded(sending: boolean): Promise<string> {
  const id = await newInstance();
  const jobs = await insertJobs(db.pool, Array.from({ length: 8 }, (_, i) => job(id, i)));
  const at = (ms: number) => new Date(clock.now() - ms);
  const set = (j: { id: string } | undefined, state: string, ago: number) =>
    db.pool.query('UPDATE jobs SET state = $2, terminal_at = $3 WHERE id = $1', [j?.id, state, at(ago)]);
  await set(jobs[0], 'sent', 2 * HOUR);
  await set(jobs[1], 'sent', 30 * HOUR);
  await set(jobs[2], 'failed', HOUR);
  await set(jobs[3], 'unknown', 3 * HOUR);
  if (sending) await db.pool.query("UPDATE jobs SET state = 'sending', dispatched_at = $2 WHERE id = $1", [jobs[4]?.id, at(60_000)]);
  await insertDispatches(db.pool, id, [{ jobId: null, at: clock.now() - 2 * HOUR }, { jobId: null, at: clock.now() - 20 * 60_000 }]);
  await db.pool.query('UPDATE instances SET plan_epoch = 4, last_dispatch_at = $2 WHERE id = $1', [id, at(20 * 60_000)]);
  return id;
}

function worker(instanceId: string, how: StartOptions = {}): QueueWorker {
  return new QueueWorker({
    instanceId, pool: db.pool, clock, log: silentLogger(), settings: () => settings, maxPending: 100,
    events: { emit: async () => false, emitMany: async () => undefined, flushed: () => undefined },
    dispatcher: { connected: () => false, send: async () => ({ kind: 'unknown', unknownReason: 'not in this test' }) },
    random: (min) => min,
  }, how);
}

/** What a started queue shows: counts, waiting jobs, limits, epoch. */
function view(w: QueueWorker): unknown {
  return { counts: w.counts(), waiting: w.waitingCount(), limits: w.limits(), epoch: w.epoch, nextAt: w.nextAt() };
}

test('queues started together end up as queues that read alone; a job left sending is recovered as unknown', async () => {
  const ids = [await seeded(false), await seeded(false), await seeded(true), await newInstance()];
  // the reference: each alone (QueueCore.reload), each on a copy of the same rows read before anything moved
  const alone: unknown[] = [];
  for (const id of ids) {
    const w = worker(id);
    await w.start();
    alone.push(view(w));
    await w.stop();
  }
  assert.deepEqual(alone[0], { ...(alone[0] as object), waiting: 4, epoch: 5 });
  // reading alone moved the `sending` job and planned the waiting ones (epoch + 1): a second instance each
  // to start together, seeded the same way
  const again = [await seeded(false), await seeded(false), await seeded(true), await newInstance()];
  const starts = new QueueStarts(db.pool, clock);
  const together = again.map((id) => worker(id, { starts }));
  await Promise.all(together.map((w) => w.start()));
  assert.deepEqual(together.map(view), alone);
  const { rows } = await db.pool.query<{ state: string }>("SELECT state FROM jobs WHERE instance_id = $1 AND state IN ('sending', 'unknown')", [again[2]]);
  assert.deepEqual(rows.map((r) => r.state), ['unknown', 'unknown'], 'the job left sending is unknown, never sent again');
  await Promise.all(together.map((w) => w.stop()));
});

test('the batched read gives each instance its own state', async () => {
  const [a, b] = [await seeded(false), await newInstance()];
  const starts = new QueueStarts(db.pool, clock);
  const [sa, sb] = await Promise.all([starts.load(a), starts.load(b)]) as [StartState, StartState];
  assert.equal(sa.waiting.length, 4);
  assert.equal(sa.pending, 4);
  assert.deepEqual(sa.outcomes.totals, { sent: 2, failed: 1, unknown: 1 });
  assert.equal(sa.outcomes.recent.length, 3, 'the sent one of 30 h ago is not of the last day');
  assert.equal(sa.history.length, 2);
  assert.equal(sa.epoch, 4);
  assert.equal(sa.needsRecovery, false);
  assert.deepEqual({ ...sb, outcomes: sb.outcomes.totals }, {
    epoch: 0, lastDispatchAt: null, history: [], waiting: [], pending: 0, outcomes: { sent: 0, failed: 0, unknown: 0 }, needsRecovery: false,
  });
});

test('a brand-new queue starts empty without a read', async () => {
  const id = await newInstance();
  const reads: string[] = [];
  const w = worker(id, { fresh: true, starts: { load: (i: string) => (reads.push(i), Promise.reject(new Error('no read expected'))) } as unknown as QueueStarts });
  await w.start();
  assert.deepEqual(reads, []);
  assert.deepEqual(view(w), { ...(view(w) as object), waiting: 0, epoch: 0 });
  await w.stop();
});

test('a start that fails is tried again: INSTANCE_UNREACHABLE meanwhile, then the queue runs', async () => {
  const id = await seeded(false);
  const real = new QueueStarts(db.pool, clock);
  let failures = 1;
  const starts = { load: (i: string) => (failures-- > 0 ? Promise.reject(new Error('timeout exceeded when trying to connect')) : real.load(i)) } as unknown as QueueStarts;
  const w = worker(id, { starts });
  await assert.rejects(w.start(), /timeout exceeded/);
  assert.equal(w.waitingCount(), 0, 'nothing loaded yet');
  // the retry is on the queue's clock: its timer starts the second attempt, which start() then answers
  clock.increment(START_RETRY_MS);
  await w.start();
  assert.equal(w.waitingCount(), 4, 'started on the second try');
  await w.stop();
});
