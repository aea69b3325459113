/**
 * The planner's memory knows which slots PostgreSQL holds (src/queue/planning.ts): a re-plan writes only the
 * jobs whose slot differs from it, an acceptance's priority jump leaves the moved jobs to the slot writer,
 * and a slot written back is no longer pending.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Planner } from '../../src/queue/planning.js';
import { EXISTING_INSTANCE_DEFAULTS, type InstanceSettings } from '../../src/queue/settings.js';
import { DAY_MS, HOUR_MS } from '../../src/queue/windows.js';

const T0 = Date.parse('2026-01-05T10:00:00Z');
const S: InstanceSettings = { ...EXISTING_INSTANCE_DEFAULTS, enabled: true, minDelayMs: 60_000, maxDelayMs: 60_000 };

function loaded(): Planner {
  const p = new Planner({ salt: 'x' });
  p.load({
    history: [],
    lastDispatchAt: null,
    waiting: [
      ...['a', 'b', 'c'].map((id, i) => ({ id, priority: 5, seq: i + 1, notBefore: null, expiresAt: T0 + DAY_MS, scheduledAt: T0 + i * 60_000 })),
      { id: 'r', priority: 5, seq: 4, notBefore: T0 + 5 * HOUR_MS, expiresAt: T0 + DAY_MS, scheduledAt: T0 + 5 * HOUR_MS },
    ],
  });
  return p;
}

test('a re-plan that reproduces the stored slots writes nothing; one that moves k jobs writes k', () => {
  const p = loaded();
  const same = p.replan(T0, S);
  assert.deepEqual(same.writes(), []);
  same.commit([]);
  assert.equal(p.unwrittenCount(), 0);

  const faster = p.replan(T0, { ...S, minDelayMs: 30_000, maxDelayMs: 30_000 });
  const writes = faster.writes();
  assert.deepEqual(writes, [{ jobId: 'b', scheduledAt: T0 + 30_000 }, { jobId: 'c', scheduledAt: T0 + 60_000 }]);
  faster.commit(writes);
  assert.equal(p.unwrittenCount(), 0);
});

test('a priority jump moves the waiting jobs in memory only; the slot writer writes them back', () => {
  const p = loaded();
  const add = p.tryAdd([{ id: 'u', priority: 9, notBefore: null, expiresAt: T0 + DAY_MS }], T0, S);
  assert.equal(add.slots.get('u'), T0);
  assert.deepEqual(add.moved.map((m) => m.jobId), ['a', 'b', 'c']);
  add.commit?.();
  assert.equal(p.position('u'), 1);
  assert.ok(p.isPersisted('u'), 'a new job is inserted with its slot');
  assert.ok(!p.isPersisted('a') && !p.isPersisted('c') && p.isPersisted('r'));
  const pending = p.unpersisted();
  assert.deepEqual(pending.map((w) => [w.jobId, w.scheduledAt]), [['a', T0 + 60_000], ['b', T0 + 120_000], ['c', T0 + 180_000]]);
  assert.deepEqual(p.unpersisted(['b', 'r']).map((w) => w.jobId), ['b'], 'only the asked ones, only if unwritten');

  // a re-plan before the writer ran: its writes are against what PostgreSQL holds, not against memory
  const again = p.replan(T0, S);
  assert.deepEqual(again.writes().map((w) => w.jobId).sort(), ['a', 'b', 'c']);

  p.persistedAs(pending);
  assert.equal(p.unwrittenCount(), 0);
  p.remove('a');
  assert.ok(p.isPersisted('a'), 'a job that left the plan has nothing to write');
});
