/**
 * Jobs taken out of the plan without going out (a cancel, an expiry, a claim another path won) free their
 * slots (src/queue/planning.ts `remove`). Found from the outside: after two reminders at one instant in front
 * of a later one, cancelling the first left the second marked as following it without a gap, so a plain send
 * allowed now was placed at the reminders' instant (or refused with 422 TTL_UNREACHABLE, the queue empty in
 * front of it); and a new send was appended behind the slots of every job cancelled before it, in an empty
 * queue too. The Planner driven as the queue worker drives it (tryAdd + commit, remove).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FREED_REPLAN_MS } from '../../src/queue/freed-slots.js';
import { Planner, type PlanJob } from '../../src/queue/planning.js';
import { planAll, seededRandomDelay, stableRandomDelay } from '../../src/queue/plan.js';
import { EXISTING_INSTANCE_DEFAULTS, type InstanceSettings } from '../../src/queue/settings.js';
import { DAY_MS, HOUR_MS } from '../../src/queue/windows.js';

const T0 = Date.parse('2026-01-05T10:00:00Z');
const UNLIMITED: InstanceSettings = { ...EXISTING_INSTANCE_DEFAULTS, enabled: true, minDelayMs: 0, maxDelayMs: 0, maxPerHour: null, maxPer24h: null, quietHours: null };
const PACED: InstanceSettings = { ...UNLIMITED, minDelayMs: 5_000, maxDelayMs: 5_000 };

function planner(): Planner {
  const p = new Planner({ salt: 'freed' });
  p.load({ history: [], lastDispatchAt: null, waiting: [] });
  return p;
}

let n = 0;
const job = (now: number, notBefore: number | null = null, ttl = DAY_MS): Omit<PlanJob, 'seq'> =>
  ({ id: `wq_${++n}`, priority: 5, notBefore, expiresAt: Math.max(now, notBefore ?? now) + ttl });

/** One acceptance of one job, committed: its slot (undefined: refused, TTL_UNREACHABLE). */
function accept(p: Planner, now: number, s: InstanceSettings, notBefore: number | null = null, ttl = DAY_MS): { id: string; slot: number | null | undefined } {
  const j = job(now, notBefore, ttl);
  const prop = p.tryAdd([j], now, s);
  prop.commit?.();
  return { id: j.id, slot: prop.slots.get(j.id) };
}

/** Two reminders at one instant (the first after a gap, the second right after it) in front of a later one. */
function pairInFront(p: Planner): { first: string; second: string; far: string } {
  const far = accept(p, T0, UNLIMITED, T0 + 48 * HOUR_MS, 30 * DAY_MS).id;
  const first = accept(p, T0, UNLIMITED, T0 + 25 * HOUR_MS, 30 * DAY_MS).id;
  const second = accept(p, T0, UNLIMITED, T0 + 25 * HOUR_MS, 30 * DAY_MS).id;
  return { first, second, far };
}

test('the first of two reminders at one instant cancelled: a send allowed now is placed now, the reminders keep their instants', () => {
  const p = planner();
  const { first, second, far } = pairInFront(p);
  p.remove(first);
  const plain = accept(p, T0 + 1_000, UNLIMITED);
  assert.equal(plain.slot, T0 + 1_000, 'not at the reminders\' instant (nor TTL_UNREACHABLE: its validity ends before it)');
  assert.equal(p.position(plain.id), 1);
  assert.equal(p.slotOf(second), T0 + 25 * HOUR_MS);
  assert.equal(p.slotOf(far), T0 + 48 * HOUR_MS);
});

test('with pauses: every job cancelled, the next send goes now, not behind their slots', () => {
  const p = planner();
  const ids = Array.from({ length: 100 }, () => accept(p, T0, PACED).id);
  for (const id of ids) p.remove(id);
  assert.equal(accept(p, T0 + 1_000, PACED).slot, T0 + 1_000, 'not 100 pauses later in an empty queue');
});

test('with pauses, jobs cancelled in the middle: the later jobs keep their slots while the freed time is under a minute, past it the next acceptance plans as a full plan', () => {
  const fullPlan = (ids: string[], now: number) =>
    planAll({
      jobs: ids.map((id, i) => ({ id, seq: i + 1, priority: 5, notBefore: null, expiresAt: T0 + DAY_MS })),
      history: [], settings: PACED, lastDispatchAt: null, now, random: stableRandomDelay('freed'),
    }).placements;
  // 6 cancelled: 30 s freed, nothing rewritten; the next send goes after the last job
  const p = planner();
  const ids = Array.from({ length: 10 }, () => accept(p, T0, PACED).id);
  const slots = new Map(ids.map((id) => [id, p.slotOf(id)]));
  for (const id of ids.slice(2, 8)) p.remove(id);
  const plain = job(T0);
  const prop = p.tryAdd([plain], T0, PACED);
  prop.commit?.();
  assert.deepEqual(prop.moved, [], 'nothing rewritten');
  for (const id of [...ids.slice(0, 2), ...ids.slice(8)]) assert.equal(p.slotOf(id), slots.get(id));
  assert.equal(prop.slots.get(plain.id), (slots.get(ids[9] as string) as number) + 5_000, 'after the last job, 30 s later than a full plan would place it');
  // 13 cancelled of 20: 65 s freed, past the minute: the acceptance plans as a full plan does
  const q = planner();
  const many = Array.from({ length: 20 }, () => accept(q, T0, PACED).id);
  for (const id of many.slice(2, 15)) q.remove(id);
  const next = job(T0);
  const prop2 = q.tryAdd([next], T0, PACED);
  prop2.commit?.();
  const kept = [...many.slice(0, 2), ...many.slice(15)];
  const full = fullPlan([...kept, next.id], T0);
  assert.deepEqual(full.map((pl) => pl.scheduledAt), full.map((_, k) => T0 + k * 5_000));
  for (const pl of full) assert.equal(pl.jobId === next.id ? prop2.slots.get(next.id) : q.slotOf(pl.jobId), pl.scheduledAt, pl.jobId);
  assert.deepEqual(prop2.moved.map((m) => m.jobId).sort(), many.slice(15).sort(), 'the jobs after the cancelled ones moved up (their rows are written)');
});

test('with pauses, the freed time a plan still counts never costs a new job its slot: a send whose validity ends before it is planned in full instead of refused', () => {
  const p = planner();
  const ids = Array.from({ length: 10 }, () => accept(p, T0, PACED).id);
  for (const id of ids.slice(1, 9)) p.remove(id); // 40 s freed: under the minute
  // valid for 20 s: behind the kept slots (the last at +45 s, then a pause) it would have none
  const short = accept(p, T0, PACED, null, 20_000);
  assert.equal(short.slot, T0 + 10_000, 'placed where a full plan puts it, after the two jobs left');
});

test('a dispatch used its slot: the plan after it stays as it is', () => {
  const p = planner();
  const ids = Array.from({ length: 5 }, () => accept(p, T0, PACED).id);
  const slots = ids.map((id) => p.slotOf(id));
  assert.equal(p.due(T0), ids[0]);
  p.remove(ids[0] as string, false);
  p.recordDispatch(T0);
  const plain = accept(p, T0 + 1_000, PACED);
  assert.deepEqual(ids.slice(1).map((id) => p.slotOf(id)), slots.slice(1), 'nothing moved');
  assert.equal(plain.slot, (slots.at(-1) as number) + 5_000, 'appended after the last one');
});

test('a cancel while an acceptance is being committed (it does not wait for the queue): the next acceptance does not go behind the cancelled slot', () => {
  const p = planner();
  const { first } = pairInFront(p);
  const pending = p.tryAdd([job(T0, T0 + 30 * HOUR_MS, 30 * DAY_MS)], T0, UNLIMITED); // planned with `first` there
  p.remove(first);
  pending.commit?.();
  assert.equal(accept(p, T0 + 1_000, UNLIMITED).slot, T0 + 1_000);
});

/** Random acceptances, dispatches and cancels under `settings`: each acceptance of a job allowed now is held to a full plan of the same jobs. */
function randomAgainstFull(settings: InstanceSettings, seed: number): number {
  // the random test of plan-planner.test.ts runs at 0 ms pauses, where a cancelled slot frees no time: it never
  // saw the finding (before the fix this fails: a job 2,710 s late where a full plan places it 10 s out). Here
  // every acceptance of a job allowed now is held to a full plan of the same jobs.
  const rnd = seededRandomDelay(seed);
  const r = (min: number, max: number) => rnd(min, max, '');
  let checked = 0;
  for (let run = 0; run < 30; run++) {
    const p = planner();
    const waiting = new Map<string, { priority: number; notBefore: number | null; expiresAt: number; seq: number }>();
    let seq = 0;
    let last: number | null = null;
    const history: number[] = [];
    let now = T0;
    for (let step = 0; step < 150; step++) {
      const what = r(0, 9);
      if (what <= 4) {
        const nb = r(0, 3) === 0 ? now + r(1, 8) * 15 * 60_000 : null;
        const j = { id: `wq_${++n}`, priority: r(0, 2) === 0 ? r(1, 9) : 5, notBefore: nb, expiresAt: Math.max(now, nb ?? now) + DAY_MS };
        const prop = p.tryAdd([j], now, settings);
        prop.commit?.();
        waiting.set(j.id, { ...j, seq: ++seq });
        if (nb !== null) continue;
        const full = planAll({
          jobs: [...waiting].map(([id, w]) => ({ id, ...w })), history, settings: settings, lastDispatchAt: last, now, random: stableRandomDelay('freed'),
        });
        const want = full.placements.find((pl) => pl.jobId === j.id)?.scheduledAt;
        const got = prop.slots.get(j.id);
        if (want === undefined || got === undefined || got === null) return assert.fail(`run ${run} step ${step}: ${j.id} placed by both`);
        assert.ok(got - want < FREED_REPLAN_MS, `run ${run} step ${step}: ${j.id} at +${(got - now) / 1000} s, a full plan +${(want - now) / 1000} s`);
        checked++;
      } else if (what <= 6) {
        now += r(0, 3) === 0 ? r(0, 20 * 60_000) : r(0, 20_000);
        for (let due = p.due(now); due !== null; due = p.due(now)) {
          if (!p.recheck(now, settings).ok) break;
          p.remove(due, false);
          p.recordDispatch(now);
          history.push(now);
          last = now;
          waiting.delete(due);
        }
      } else if (waiting.size > 0) {
        const id = [...waiting.keys()][r(0, waiting.size - 1)] as string;
        p.remove(id);
        waiting.delete(id);
      }
    }
  }
  return checked;
}

test('random acceptances, dispatches and cancels at 5 s pauses: a new job allowed now is never later than a full plan places it by FREED_REPLAN_MS or more', () => {
  const checked = randomAgainstFull(PACED, 29);
  assert.ok(checked > 500, `${checked} acceptances checked`);
});

test('the same under an hourly and a daily ceiling (a cancelled slot also frees its place in the windows)', () => {
  const checked = randomAgainstFull({ ...PACED, maxPerHour: 12, maxPer24h: 100 }, 31);
  assert.ok(checked > 500, `${checked} acceptances checked`);
});

test('under an hourly ceiling a job cancelled in the middle gives its place in the hour back: the next send is not an hour late', () => {
  // found from the outside: maxPerHour 2, four sends (two now, two an hour on), the third cancelled while the
  // fourth waits: the fifth was planned an hour after the cancelled slot, as if it still counted
  const HOURLY: InstanceSettings = { ...UNLIMITED, minDelayMs: 1_000, maxDelayMs: 1_000, maxPerHour: 2 };
  const p = planner();
  const slots = Array.from({ length: 4 }, () => accept(p, T0, HOURLY));
  assert.deepEqual(slots.map((x) => (x.slot ?? 0) - T0), [0, 1_000, HOUR_MS + 1, HOUR_MS + 1_001]);
  p.remove((slots[2] as { id: string }).id);
  const fifth = accept(p, T0 + 10, HOURLY);
  const full = planAll({
    jobs: [slots[0], slots[1], slots[3]].map((x, i) => ({ id: (x as { id: string }).id, priority: 5, notBefore: null, expiresAt: T0 + DAY_MS, seq: i + 1 }))
      .concat([{ id: fifth.id, priority: 5, notBefore: null, expiresAt: T0 + 10 + DAY_MS, seq: 5 }]),
    history: [], settings: HOURLY, lastDispatchAt: null, now: T0 + 10, random: stableRandomDelay('freed'),
  });
  const want = full.placements.find((pl) => pl.jobId === fifth.id)?.scheduledAt as number;
  assert.ok((fifth.slot ?? Infinity) - want < FREED_REPLAN_MS, `the fifth at +${((fifth.slot ?? 0) - T0) / 1000} s, a full plan +${(want - T0) / 1000} s`);
});
