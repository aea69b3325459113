/**
 * A start batch reads its instances in groups of at most a row budget (src/queue/sql/loadStarts.ts
 * START_READ_ROWS), from the sizes it counts first (waiting jobs, the last 24 h of dispatches and of ended jobs):
 * a restart of a node whose 200 instances held 5,000 waiting jobs each read a million rows in one statement, past
 * the statement deadline, and no queue of the batch loaded. The grouped reads answer what one statement answers,
 * in planning order; an instance with more rows than the budget is read alone.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { addInstance } from '../helpers/sql-plans.js';
import { groupsWithin, loadStarts } from '../../src/queue/sql/loadStarts.js';
import { insertJobs } from '../../src/queue/sql/insertJobs.js';
import { withTransaction, type Queryable } from '../../src/store/pool.js';
import { newJobId } from '../../src/ids.js';
import type { NewJob } from '../../src/queue/job.js';

const NOW = Date.UTC(2030, 0, 1);
const DAY = 86_400_000;
let db: TestDb;
/** instance ids, and how many waiting jobs each gets */
const waitingOf = new Map<string, number>();
const ids: string[] = [];

/** a job of `instanceId`, waiting with a slot */
const job = (instanceId: string, k: number): NewJob => ({
  id: newJobId(), instanceId, originRoute: '/api/v2/send-message', chatId: null, phone: '4915112345678', payloadHash: `h${k}`,
  idempotencyKey: null, priority: k % 3 === 0 ? 9 : 5, notBefore: null, queuedAt: NOW - 3 * DAY, scheduledAt: NOW + k * 1_000, expiresAt: NOW + DAY,
  previousJobId: null, callerBoot: null, kind: 'text', payload: { body: `m${k}`, chatId: '4915112345678@c.us' },
});

before(async () => {
  db = await createTestDb('start_reads_grouped');
  // waiting jobs, dispatches and ended jobs of the last 24 h (and older ones, not counted) of each instance
  const shapes = [
    { waiting: 5, dispatches: 0, ended: 0 },
    { waiting: 3, dispatches: 0, ended: 0 },
    { waiting: 0, dispatches: 5, ended: 0 },
    { waiting: 1, dispatches: 0, ended: 2 },
    { waiting: 12, dispatches: 1, ended: 1 },
  ];
  for (const [i, shape] of shapes.entries()) {
    const id = await addInstance(db.pool, `grouped${i}`);
    ids.push(id);
    waitingOf.set(id, shape.waiting);
    const jobs = Array.from({ length: shape.waiting + shape.ended + 1 }, (_, k) => job(id, k));
    await withTransaction(db.pool, (c) => insertJobs(c, jobs));
    // the last `ended + 1` jobs end: `ended` of them within the day, one two days ago
    const ended = jobs.slice(shape.waiting);
    for (const [k, j] of ended.entries()) {
      const at = k === 0 ? NOW - 2 * DAY : NOW - k * 60_000;
      await db.pool.query("UPDATE jobs SET state = 'sent', dispatched_at = $2, terminal_at = $2 WHERE id = $1", [j.id, new Date(at)]);
    }
    for (let k = 0; k <= shape.dispatches; k++) {
      const at = k === 0 ? NOW - 2 * DAY : NOW - k * 60_000;
      await db.pool.query('INSERT INTO dispatches (instance_id, dispatched_at) VALUES ($1, $2)', [id, new Date(at)]);
    }
  }
});
after(async () => {
  await db?.close();
});

/** The pool, counting the statements that read waiting jobs. */
function counting(q: Queryable): { q: Queryable; waitingReads: string[][] } {
  const waitingReads: string[][] = [];
  const wrapped = {
    query: (text: string, values?: unknown[]) => {
      if (/SELECT instance_id, id, priority, seq/.test(text)) waitingReads.push([...(values?.[0] as string[])]);
      return q.query(text, values);
    },
  } as Queryable;
  return { q: wrapped, waitingReads };
}

test('a start batch is read in groups of at most the budget, sized by waiting jobs, dispatches and ended jobs of the day, and answers what one statement answers', async () => {
  const whole = counting(db.pool);
  const once = await loadStarts(whole.q, ids, NOW, 'test', { readRows: Infinity });
  assert.equal(whole.waitingReads.length, 1, 'without a budget, one statement');

  const grouped = counting(db.pool);
  const started = await loadStarts(grouped.q, ids, NOW, 'test', { readRows: 7 });
  // sizes 5 | 3 | 5 (dispatches) | 3 (one waiting, two ended) | 14 (alone: more than the budget): without the
  // dispatches the second and third would share a read, without the ended jobs the third and fourth
  assert.deepEqual(grouped.waitingReads, ids.map((id) => [id]));
  for (const id of ids) {
    const s = started.get(id);
    assert.ok(s, `the start state of ${id}`);
    assert.equal(s.waiting.length, waitingOf.get(id), `waiting jobs of ${id}`);
    assert.deepEqual(s, once.get(id), 'the same start state as one statement reads');
    // planning order: priority descending, then arrival
    const order = s.waiting.map((j) => [-j.priority, j.seq]);
    assert.deepEqual(order, [...order].sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!));
  }
  assert.deepEqual(started.get(ids[2]!)?.history.length, 5, 'the day of dispatches (not the older one)');
  assert.deepEqual(started.get(ids[3]!)?.outcomes.recent.length, 2, 'the day of ended jobs (not the older one)');

  // a budget that holds them all: one read, as without one
  const roomy = counting(db.pool);
  const all = await loadStarts(roomy.q, ids, NOW, 'test', { readRows: 1_000 });
  assert.equal(roomy.waitingReads.length, 1);
  assert.deepEqual(all, once);
});

test('groupsWithin: groups in order, each within the limit, an id over it alone', () => {
  const rows = new Map([['a', 4], ['b', 4], ['c', 1], ['d', 9], ['e', 0], ['f', 0]]);
  const of = (id: string) => rows.get(id) ?? 0;
  assert.deepEqual(groupsWithin(['a', 'b', 'c', 'd', 'e', 'f'], of, 8), [['a', 'b'], ['c'], ['d'], ['e', 'f']]);
  assert.deepEqual(groupsWithin(['e', 'f'], of, 8), [['e', 'f']]);
  assert.deepEqual(groupsWithin([], of, 8), []);
  assert.deepEqual(groupsWithin(['d', 'a'], of, 8), [['d'], ['a']]);
});

test('each group is handed over as it is read; a failed group fails its own instances alone, and the next groups are read', async () => {
  // the second group's waiting jobs cannot be read (the connection broke under that statement, say)
  let waitingReads = 0;
  const failing = {
    query: (text: string, values?: unknown[]) => {
      if (/SELECT instance_id, id, priority, seq/.test(text) && ++waitingReads === 2) return Promise.reject(new Error('Connection terminated unexpectedly'));
      return db.pool.query(text, values);
    },
  } as Queryable;
  const handed: Array<[readonly string[], string]> = [];
  const started = await loadStarts(failing, ids, NOW, 'test', {
    readRows: 7,
    onGroup: (group, read) => handed.push([group, read instanceof Error ? read.message : [...read.keys()].join(',')]),
  });
  assert.deepEqual(handed, [
    [[ids[0]], ids[0]],
    [[ids[1]], 'Connection terminated unexpectedly'],
    [[ids[2]], ids[2]],
    [[ids[3]], ids[3]],
    [[ids[4]], ids[4]],
  ]);
  assert.deepEqual([...started.keys()], [ids[0], ids[2], ids[3], ids[4]], 'the states read');
  // without onGroup, the first failure fails the whole read
  waitingReads = 0;
  await assert.rejects(loadStarts(failing, ids, NOW, 'test', { readRows: 7 }), /Connection terminated/);
});
