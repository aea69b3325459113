import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { planAll, planAppend, seededRandomDelay, stableRandomDelay, type PlanInput, type PlanJob, type PlanResult } from '../../src/queue/plan.js';
import { EXISTING_INSTANCE_DEFAULTS, NEW_INSTANCE_DEFAULTS } from '../../src/queue/settings.js';
import { DAY_MS, HOUR_MS } from '../../src/queue/windows.js';

const now = Date.parse('2026-03-27T18:00:00Z'); // a Friday evening before the spring-forward night

/** Jobs in arrival order whose rule-1 order equals their arrival order (each new one goes last). */
function arrivals(n: number, seed: number): PlanJob[] {
  const rnd = seededRandomDelay(seed);
  let priority = 9;
  return Array.from({ length: n }, (_, i) => {
    if (rnd(0, 9, '') === 0 && priority > 1) priority--;
    return {
      id: `wq_${seed}_${i}`,
      priority,
      seq: i + 1,
      notBefore: null,
      // Some TTLs are too short for their slot: unreachable jobs must agree too.
      expiresAt: now + (rnd(0, 7, '') === 0 ? rnd(60_000, 6 * HOUR_MS, '') : 3 * DAY_MS),
    };
  });
}

const merged = (parts: PlanResult[]) => ({
  placements: parts.flatMap((p) => p.placements),
  unreachable: parts.flatMap((p) => p.unreachable),
  unplaced: parts.flatMap((p) => p.unplaced),
});
const strip = (r: PlanResult) => ({ placements: r.placements, unreachable: r.unreachable, unplaced: r.unplaced });

describe('planAppend continues a plan exactly as planAll would have made it', () => {
  const history = Array.from({ length: 400 }, (_, i) => now - DAY_MS + 60_000 + i * 200_000);
  const input = (jobs: PlanJob[], seed: number): PlanInput => ({
    jobs,
    history,
    settings: NEW_INSTANCE_DEFAULTS,
    lastDispatchAt: history[history.length - 1]!,
    now,
    random: seededRandomDelay(seed),
  });

  for (const seed of [1, 2, 3]) {
    test(`one at a time (seed ${seed}): 300 jobs with limits, quiet hours, a DST night and short TTLs`, () => {
      const jobs = arrivals(300, seed);
      const all = planAll(input(jobs, seed));
      let tail = planAll(input([], seed)).tail;
      const parts: PlanResult[] = [];
      for (const j of jobs) {
        const r = planAppend(tail, [j], now);
        assert.ok(r, `append of ${j.id} refused`);
        parts.push(r);
        tail = r.tail;
      }
      assert.deepEqual(merged(parts), strip(all));
      assert.ok(all.unreachable.length > 0 && all.placements.length > 200, 'the scenario exercises both outcomes');
    });
  }

  test('in batches (several acceptances planned together)', () => {
    const jobs = arrivals(300, 9);
    const all = planAll(input(jobs, 9));
    let tail = planAll(input([], 9)).tail;
    const parts: PlanResult[] = [];
    for (let i = 0; i < jobs.length; i += 37) {
      const batch = jobs.slice(i, i + 37).reverse(); // order inside a batch does not matter
      const r = planAppend(tail, batch, now);
      assert.ok(r);
      parts.push(r);
      tail = r.tail;
    }
    assert.deepEqual(merged(parts), strip(all));
  });

  test('jobs with increasing notBefore at the end of the order append consistently', () => {
    const jobs = arrivals(20, 4).map((j, i) => ({ ...j, priority: 5, notBefore: i >= 10 ? now + i * HOUR_MS : null }));
    const all = planAll(input(jobs, 4));
    let tail = planAll(input([], 4)).tail;
    const parts: PlanResult[] = [];
    for (const j of jobs) {
      const r = planAppend(tail, [j], now);
      assert.ok(r);
      parts.push(r);
      tail = r.tail;
    }
    assert.deepEqual(merged(parts), strip(all));
  });

  test('the tail passed in is not changed (a failed transaction can keep the old one)', () => {
    const tail = planAll(input(arrivals(5, 5), 5)).tail;
    const extra = { id: 'x', priority: 1, seq: 1000, notBefore: null, expiresAt: now + DAY_MS };
    const once = planAppend(tail, [extra], now);
    const again = planAppend(tail, [extra], now);
    assert.ok(once && again);
    assert.deepEqual(again.placements, once.placements);
    assert.equal(tail.cursor, planAll(input(arrivals(5, 5), 5)).tail.cursor);
    assert.notEqual(once.tail, tail);
  });
});

describe('planAppend refuses (null) where only a full plan is right', () => {
  const settings = { ...EXISTING_INSTANCE_DEFAULTS, minDelayMs: 1000, maxDelayMs: 1000 };
  const base = { history: [], settings, lastDispatchAt: null, now, random: seededRandomDelay(1) };
  const j = (id: string, priority: number, seq: number, notBefore: number | null = null): PlanJob => ({
    id,
    priority,
    seq,
    notBefore,
    expiresAt: now + DAY_MS,
  });

  test('a new job that outranks a planned one: planAll really moves the others', () => {
    const old = [j('a', 5, 1), j('b', 5, 2)];
    const tail = planAll({ ...base, jobs: old }).tail;
    const urgent = j('u', 9, 3);
    assert.equal(planAppend(tail, [urgent], now), null);
    assert.deepEqual(
      planAll({ ...base, jobs: [...old, urgent] }).placements.map((p) => p.jobId),
      ['u', 'a', 'b'],
    );
  });

  test('a new job that would fill an idle gap before a notBefore job', () => {
    const later = j('later', 5, 1, now + HOUR_MS);
    const tail = planAll({ ...base, jobs: [later] }).tail;
    const fresh = j('fresh', 5, 2);
    assert.equal(planAppend(tail, [fresh], now), null);
    const full = planAll({ ...base, jobs: [later, fresh] });
    assert.deepEqual(full.placements.map((p) => p.jobId), ['fresh', 'later']);
  });

  test('a new job that becomes allowed only after the gap is appended', () => {
    const later = j('later', 5, 1, now + HOUR_MS);
    const tail = planAll({ ...base, jobs: [later] }).tail;
    const r = planAppend(tail, [j('after', 5, 2, now + 2 * HOUR_MS)], now);
    assert.ok(r);
    assert.equal(r.placements[0]!.scheduledAt, now + 2 * HOUR_MS);
  });

  test('the clock went back since the plan, or the plan stopped at the attempt cap: a full plan', () => {
    const tail = planAll({ ...base, jobs: [j('a', 5, 1)] }).tail;
    assert.equal(planAppend(tail, [j('b', 5, 2)], now - 1), null);
    const dense = Array.from({ length: 250 }, (_, i) => now - HOUR_MS + 1 + i * 10_000);
    const capped = planAll({ ...base, history: dense, settings: { ...settings, maxPerHour: 1 }, jobs: [j('c', 5, 1)] });
    assert.deepEqual(capped.unplaced.map((u) => u.jobId), ['c']);
    assert.equal(planAppend(capped.tail, [j('d', 5, 2)], now), null);
  });

  test('a gate that looked past an unreachable job: the next append still counts the whole window', () => {
    // 2 per 24 h, both used: the next slot is the older one + 24 h + 1 ms, past the first job's TTL
    const history = [now - 20 * HOUR_MS, now - HOUR_MS];
    const s2 = { ...base, history, lastDispatchAt: now - HOUR_MS, settings: { ...settings, maxPer24h: 2 } };
    const short = { ...j('short', 5, 1), expiresAt: now + HOUR_MS };
    const first = planAll({ ...s2, jobs: [short] });
    assert.deepEqual(first.unreachable, ['short']);
    const long = j('long', 5, 2);
    const r = planAppend(first.tail, [long], now);
    assert.ok(r);
    assert.deepEqual(r.placements, [{ jobId: 'long', scheduledAt: now + 4 * HOUR_MS + 1 }]);
    assert.deepEqual(r.placements, planAll({ ...s2, jobs: [short, long] }).placements);
  });

  test('time passed since the plan: the cursor is lifted to now', () => {
    const tail = planAll({ ...base, jobs: [j('a', 5, 1)] }).tail;
    const r = planAppend(tail, [j('b', 5, 2)], now + HOUR_MS);
    assert.ok(r);
    assert.equal(r.placements[0]!.scheduledAt, now + HOUR_MS);
  });
});

describe('stableRandomDelay', () => {
  test('re-planning an unchanged queue reproduces every slot; pauses stay within bounds and vary', () => {
    const jobs = arrivals(200, 7);
    const input: PlanInput = { jobs, history: [], settings: NEW_INSTANCE_DEFAULTS, lastDispatchAt: now - 1000, now, random: stableRandomDelay('inst-1') };
    const a = planAll(input);
    const b = planAll({ ...input, jobs: [...jobs].reverse() });
    assert.deepEqual(strip(a), strip(b));
    const gaps = new Set(a.placements.slice(1).map((p, i) => p.scheduledAt - a.placements[i]!.scheduledAt).filter((g) => g <= 12000));
    assert.ok([...gaps].every((g) => g >= 4000));
    assert.ok(gaps.size > 20);
  });
});
