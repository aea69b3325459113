import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_ATTEMPTS, planAll, seededRandomDelay, type PlanInput, type PlanJob, type PlanResult, type RandomDelay } from '../../src/queue/plan.js';
import { isQuiet } from '../../src/queue/quiet-hours.js';
import { EXISTING_INSTANCE_DEFAULTS, NEW_INSTANCE_DEFAULTS, type QuietHours } from '../../src/queue/settings.js';
import { DAY_MS, HOUR_MS, countInWindow } from '../../src/queue/windows.js';

const MIN = 60_000;
const now = Date.UTC(2026, 0, 5, 10, 0, 0); // 11:00 in Berlin, a Monday
const open = { ...EXISTING_INSTANCE_DEFAULTS, minDelayMs: 1000, maxDelayMs: 1000 };
/** A random source that always returns `min` (fixed pause) and records what it was asked. */
const fixed = (calls: Array<[number, number, string]> = []): RandomDelay => (min, max, key) => {
  calls.push([min, max, key]);
  return min;
};

let seq = 0;
function job(id: string, over: Partial<PlanJob> = {}): PlanJob {
  return { id, priority: 5, seq: ++seq, notBefore: null, expiresAt: Date.UTC(2030, 0, 1), ...over };
}
const base = (over: Partial<PlanInput>): PlanInput => ({
  jobs: [],
  history: [],
  settings: open,
  lastDispatchAt: null,
  now,
  random: fixed(),
  ...over,
});
const at = (r: PlanResult) => Object.fromEntries(r.placements.map((p) => [p.jobId, p.scheduledAt]));
const ids = (r: PlanResult) => r.placements.map((p) => p.jobId);

/** Every rule a finished plan must satisfy, checked independently of how the planner got there. */
function assertValidPlan(input: PlanInput, r: PlanResult): void {
  const s = input.settings;
  const byId = new Map(input.jobs.map((j) => [j.id, j]));
  const placed: number[] = [];
  let prev = input.lastDispatchAt;
  for (const [i, p] of r.placements.entries()) {
    const j = byId.get(p.jobId)!;
    const t = p.scheduledAt;
    assert.ok(t >= input.now, 'not in the past');
    assert.ok(t >= (j.notBefore ?? t), 'not before notBefore');
    assert.ok(t <= j.expiresAt, 'not after expiry');
    assert.ok(!isQuiet(t, s.quietHours), 'not in quiet hours');
    if (prev !== null) assert.ok(t - prev >= s.minDelayMs, `spacing ${t - prev} >= ${s.minDelayMs}`);
    prev = t;
    placed.push(t);
    const all = [...input.history, ...placed];
    if (s.maxPerHour !== null) assert.ok(countInWindow(all, t, HOUR_MS) <= s.maxPerHour, 'hourly limit');
    if (s.maxPer24h !== null) assert.ok(countInWindow(all, t, DAY_MS) <= s.maxPer24h, 'daily limit');
    // Rule 1 among eligible jobs: whoever went earlier either ranks higher or the other was not yet allowed.
    for (const q of r.placements.slice(0, i)) {
      const e = byId.get(q.jobId)!;
      const ranksHigher = j.priority > e.priority || (j.priority === e.priority && j.seq < e.seq);
      if (ranksHigher) assert.ok((j.notBefore ?? -Infinity) > q.scheduledAt, `${j.id} should go before ${e.id}`);
    }
  }
  const accounted = [...r.placements.map((p) => p.jobId), ...r.unreachable, ...r.unplaced.map((u) => u.jobId)];
  assert.deepEqual([...accounted].sort(), input.jobs.map((j) => j.id).sort(), 'every job accounted for once');
}

describe('planner rule 1: order by priority, then arrival', () => {
  test('mixed priorities come out 9 first, arrival order within a priority', () => {
    const jobs = [job('a', { priority: 5 }), job('b', { priority: 9 }), job('c', { priority: 1 }), job('d', { priority: 9 }), job('e', { priority: 5 })];
    const input = base({ jobs: [jobs[4]!, jobs[2]!, jobs[0]!, jobs[3]!, jobs[1]!] });
    const r = planAll(input);
    assert.deepEqual(ids(r), ['b', 'd', 'a', 'e', 'c']);
    assertValidPlan(input, r);
  });

  test('a limit moves when, never which: the same order with and without tight limits', () => {
    const jobs = Array.from({ length: 30 }, (_, i) => job(`j${i}`, { priority: 1 + ((i * 7) % 9) }));
    const free = planAll(base({ jobs }));
    const tightInput = base({
      jobs,
      settings: { ...open, maxPerHour: 4, maxPer24h: 20, quietHours: { start: '22:00', end: '07:00', tz: 'Europe/Berlin' } },
      history: [now - 50 * MIN, now - 3 * HOUR_MS],
    });
    const tight = planAll(tightInput);
    assert.deepEqual(ids(tight), ids(free));
    assertValidPlan(tightInput, tight);
    assert.ok(tight.placements[29]!.scheduledAt > now + DAY_MS, 'the limits really did spread them out');
  });
});

describe('planner rules 2 and 4: start and spacing', () => {
  test('no last dispatch: the first job goes now', () => {
    assert.equal(planAll(base({ jobs: [job('a')] })).placements[0]!.scheduledAt, now);
  });

  test('a recent last dispatch: the first job waits last + random(min, max), drawn with key "start"', () => {
    const calls: Array<[number, number, string]> = [];
    const r = planAll(base({ jobs: [job('a')], settings: { ...open, minDelayMs: 4000, maxDelayMs: 12000 }, lastDispatchAt: now - 1000, random: fixed(calls) }));
    assert.equal(r.placements[0]!.scheduledAt, now - 1000 + 4000);
    assert.deepEqual(calls[0], [4000, 12000, 'start']);
  });

  test('an old last dispatch: the first job goes now', () => {
    assert.equal(planAll(base({ jobs: [job('a')], lastDispatchAt: now - HOUR_MS })).placements[0]!.scheduledAt, now);
  });

  test('the cursor advances by random(min, max) after each job; gaps stay within [min, max]', () => {
    const jobs = Array.from({ length: 200 }, (_, i) => job(`j${i}`));
    const input = base({ jobs, settings: { ...open, minDelayMs: 4000, maxDelayMs: 12000 }, random: seededRandomDelay(1) });
    const r = planAll(input);
    const gaps = r.placements.slice(1).map((p, i) => p.scheduledAt - r.placements[i]!.scheduledAt);
    assert.ok(gaps.every((g) => g >= 4000 && g <= 12000));
    assert.ok(new Set(gaps).size > 50, 'the pauses really vary');
    assertValidPlan(input, r);
  });
});

describe('planner rule 3: quiet hours', () => {
  const berlinNight: QuietHours = { start: '22:00', end: '07:00', tz: 'Europe/Berlin' };
  const twoMinutes = { ...open, minDelayMs: 2 * MIN, maxDelayMs: 2 * MIN, quietHours: berlinNight };

  test('a job that would fall into quiet hours moves to their end', () => {
    const t0 = Date.parse('2026-01-05T20:59:00Z'); // 21:59 CET
    const r = planAll(base({ jobs: [job('a'), job('b')], settings: twoMinutes, now: t0 }));
    assert.deepEqual(at(r), { a: t0, b: Date.parse('2026-01-06T06:00:00Z') });
  });

  test('across the spring-forward night (28→29 March 2026) the morning slot is 07:00 CEST = 05:00Z', () => {
    const t0 = Date.parse('2026-03-28T20:59:00Z');
    const r = planAll(base({ jobs: [job('a'), job('b')], settings: twoMinutes, now: t0 }));
    assert.deepEqual(at(r), { a: t0, b: Date.parse('2026-03-29T05:00:00Z') });
  });

  test('across the fall-back night (24→25 October 2026) the morning slot is 07:00 CET = 06:00Z', () => {
    const t0 = Date.parse('2026-10-24T19:59:00Z'); // 21:59 CEST
    const r = planAll(base({ jobs: [job('a'), job('b')], settings: twoMinutes, now: t0 }));
    assert.deepEqual(at(r), { a: t0, b: Date.parse('2026-10-25T06:00:00Z') });
  });

  test('a higher-priority job that became allowed during the night goes first in the morning', () => {
    const t0 = Date.parse('2026-01-05T21:30:00Z'); // 22:30, quiet
    const low = job('low', { priority: 1 });
    const high = job('high', { priority: 9, notBefore: Date.parse('2026-01-05T22:00:00Z') });
    const r = planAll(base({ jobs: [low, high], settings: twoMinutes, now: t0 }));
    assert.deepEqual(ids(r), ['high', 'low']);
    assert.equal(r.placements[0]!.scheduledAt, Date.parse('2026-01-06T06:00:00Z'));
  });
});

describe('planner rule 3: sliding windows', () => {
  test('hourly limit reached: the slot is the oldest in the last hour + 1 h + 1 ms, exactly', () => {
    const history = [now - 50 * MIN, now - 40 * MIN, now - 30 * MIN];
    const input = base({ jobs: [job('a'), job('b')], history, settings: { ...open, maxPerHour: 3 } });
    const r = planAll(input);
    assert.deepEqual(at(r), { a: now - 50 * MIN + HOUR_MS + 1, b: now - 40 * MIN + HOUR_MS + 1 });
    assertValidPlan(input, r);
  });

  test('daily limit reached: the oldest in the last 24 h + 24 h + 1 ms, exactly', () => {
    const history = [now - 23 * HOUR_MS, now - HOUR_MS];
    const input = base({ jobs: [job('a'), job('b')], history, settings: { ...open, maxPer24h: 2 } });
    const r = planAll(input);
    assert.deepEqual(at(r), { a: now + HOUR_MS + 1, b: now + 23 * HOUR_MS + 1 });
  });

  test('history older than the window does not count', () => {
    const hourly = planAll(base({ jobs: [job('a')], history: [now - HOUR_MS], settings: { ...open, maxPerHour: 1 } }));
    assert.equal(hourly.placements[0]!.scheduledAt, now);
    const daily = planAll(base({ jobs: [job('a')], history: [now - DAY_MS], settings: { ...open, maxPer24h: 1 } }));
    assert.equal(daily.placements[0]!.scheduledAt, now);
  });

  test("the plan's own placements count against the windows", () => {
    const input = base({ jobs: ['a', 'b', 'c', 'd'].map((id) => job(id)), settings: { ...open, maxPerHour: 2 } });
    const r = planAll(input);
    assert.deepEqual(at(r), { a: now, b: now + 1000, c: now + HOUR_MS + 1, d: now + 1000 + HOUR_MS + 1 });
    assertValidPlan(input, r);
  });

  test('hourly, daily and quiet hours together over 1,000 jobs and a busy history', () => {
    const rnd = seededRandomDelay(11);
    const history = Array.from({ length: 480 }, (_, i) => now - DAY_MS + 1 + i * 180_000);
    const jobs = Array.from({ length: 1000 }, (_, i) => job(`j${i}`, { priority: rnd(1, 9, ''), notBefore: i % 50 === 0 ? now + rnd(0, 3 * DAY_MS, '') : null }));
    const input = base({ jobs, history, lastDispatchAt: history[479]!, settings: NEW_INSTANCE_DEFAULTS, random: seededRandomDelay(5) });
    const r = planAll(input);
    assert.equal(r.placements.length, 1000);
    assertValidPlan(input, r);
  });
});

describe('notBefore', () => {
  test('a job waits for its notBefore', () => {
    const r = planAll(base({ jobs: [job('a', { notBefore: now + 5 * MIN })] }));
    assert.equal(r.placements[0]!.scheduledAt, now + 5 * MIN);
  });

  test('a future notBefore does not hold back the jobs behind it; it goes next once allowed', () => {
    const s = { ...open, minDelayMs: 10_000, maxDelayMs: 10_000 };
    const jobs = [job('p9', { priority: 9, notBefore: now + 25_000 }), ...['a', 'b', 'c', 'd', 'e'].map((id) => job(id))];
    const input = base({ jobs, settings: s });
    const r = planAll(input);
    assert.deepEqual(ids(r), ['a', 'b', 'c', 'p9', 'd', 'e']);
    assert.deepEqual(r.placements.map((p) => p.scheduledAt - now), [0, 10_000, 20_000, 30_000, 40_000, 50_000]);
    assertValidPlan(input, r);
  });

  test('when nobody is allowed yet the plan idles to the next notBefore, then applies the constraints there', () => {
    const s = { ...open, quietHours: { start: '22:00', end: '07:00', tz: 'Europe/Berlin' } };
    const r = planAll(base({ jobs: [job('a', { notBefore: Date.parse('2026-01-05T23:00:00Z') })], settings: s }));
    assert.equal(r.placements[0]!.scheduledAt, Date.parse('2026-01-06T06:00:00Z'));
  });
});

describe('planner rule 5: TTL unreachable', () => {
  test('a job whose slot is after its expiresAt is unreachable and takes no slot', () => {
    const history = [now - 50 * MIN];
    const input = base({
      jobs: [job('short', { priority: 9, expiresAt: now + 5 * MIN }), job('long')],
      history,
      settings: { ...open, maxPerHour: 1 },
    });
    const r = planAll(input);
    assert.deepEqual(r.unreachable, ['short']);
    assert.deepEqual(at(r), { long: now + 10 * MIN + 1 }, 'the next job gets the slot the unreachable one would have had');
  });

  test('a slot exactly at expiresAt is still reachable', () => {
    const r = planAll(base({ jobs: [job('a', { expiresAt: now })] }));
    assert.deepEqual(at(r), { a: now });
  });

  test('a limit of 0 never has a slot', () => {
    const r = planAll(base({ jobs: [job('a'), job('b')], settings: { ...open, maxPer24h: 0 } }));
    assert.deepEqual(r.placements, []);
    assert.deepEqual(r.unreachable, ['a', 'b']);
  });
});

describe(`the ${MAX_ATTEMPTS}-attempt cap`, () => {
  // Each hourly move passes exactly one old dispatch, so n dispatches over a limit of 1 need n moves.
  const crowded = (n: number) => Array.from({ length: n }, (_, i) => now - 59 * MIN + i * 1000);

  test('199 moves (200 evaluations) still find the slot', () => {
    const history = crowded(199);
    const r = planAll(base({ jobs: [job('a')], history, settings: { ...open, maxPerHour: 1 } }));
    assert.deepEqual(at(r), { a: history[198]! + HOUR_MS + 1 });
  });

  test('one more and the job is unplaced with a retry instant, and so is every job behind it', () => {
    const history = crowded(200);
    const r = planAll(base({ jobs: [job('a'), job('b'), job('c', { expiresAt: now + MIN })], history, settings: { ...open, maxPerHour: 1 } }));
    assert.deepEqual(r.placements, []);
    const retryAt = history[199]! + HOUR_MS + 1;
    assert.deepEqual(r.unplaced, [
      { jobId: 'a', retryAt },
      { jobId: 'b', retryAt },
    ]);
    assert.deepEqual(r.unreachable, ['c'], 'expires before the retry instant: certainly unreachable');
  });

  test('planning again at the retry instant continues (a lowered limit drains over several plans)', () => {
    const history = crowded(300);
    const settings = { ...open, maxPerHour: 1 };
    const first = planAll(base({ jobs: [job('a')], history, settings }));
    const retryAt = first.unplaced[0]!.retryAt;
    const second = planAll(base({ jobs: [job('a')], history, settings, now: retryAt }));
    assert.deepEqual(at(second), { a: history[299]! + HOUR_MS + 1 });
  });
});
