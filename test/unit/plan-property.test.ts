/**
 * Property: the append path gives exactly the result of a full plan (issue 13, finding 4).
 *
 * Thousands of random queues (seeded, reproducible): priorities, notBefore, limits, quiet hours (with a DST
 * night), pauses, short TTLs and dispatch history. Jobs arrive in groups; each group is appended to the tail of
 * the plan so far. Whenever `planAppend` answers (non-null), old placements followed by the appended ones must
 * equal `planAll` over every job: the same slots in the same order, the same unreachable and unplaced sets. When
 * it answers null the caller falls back to `planAll`, as the worker's planner does.
 *
 * Time may pass between groups. A full plan at a later `now` may move jobs already planned (their slots keep
 * theirs in the worker), so the comparison is made whenever a full plan at the later `now` would leave the
 * earlier jobs exactly where they are: then the appended jobs must land where the full plan puts them.
 *
 * The fast path must stay fast: where the plan never idled (no notBefore among earlier jobs), every new job ranks
 * after the earlier ones and the plan did not stop at the attempt cap, the append must not refuse.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planAll, planAppend, stableRandomDelay, type PlanJob, type PlanSettings } from '../../src/queue/plan.js';
import { DAY_MS, HOUR_MS } from '../../src/queue/windows.js';
import { BASE, genCase, inputOf } from '../helpers/plan-cases.js';

interface Outcome {
  placements: { jobId: string; scheduledAt: number }[];
  unreachable: string[];
  unplaced: { jobId: string; retryAt: number }[];
}
const norm = (r: Outcome): Outcome => ({
  placements: r.placements,
  unreachable: [...r.unreachable].sort(),
  unplaced: [...r.unplaced].sort((a, b) => (a.jobId < b.jobId ? -1 : 1)),
});
const join = (a: Outcome, b: Outcome): Outcome => ({
  placements: [...a.placements, ...b.placements],
  unreachable: [...a.unreachable, ...b.unreachable],
  unplaced: [...a.unplaced, ...b.unplaced],
});

const CASES = 6000;

test(`planAppend equals planAll over ${CASES} random queues, or refuses`, () => {
  let compared = 0;
  let comparedAfterTime = 0;
  let appended = 0;
  let refused = 0;
  let withNotBefore = 0;
  let capped = 0;
  for (let seed = 1; seed <= CASES; seed++) {
    const c = genCase(seed);
    let jobs = [...c.groups[0]!];
    const first = planAll(inputOf(c, jobs, c.nows[0]!));
    let sofar: Outcome = first;
    let tail = first.tail;
    let sofarNow = c.nows[0]!;
    for (let g = 1; g < c.groups.length; g++) {
      const fresh = c.groups[g]!;
      const now = c.nows[g]!;
      const all = [...jobs, ...fresh];
      const r = planAppend(tail, fresh, now);
      const full = planAll(inputOf(c, all, now));
      const where = `seed ${seed}, group ${g}`;
      if (full.unplaced.length > 0) capped++;
      if (r === null) {
        refused++;
        const idleFree = jobs.every((j) => j.notBefore === null);
        const ranksAfter = fresh.every((f) => jobs.every((o) => o.priority > f.priority || (o.priority === f.priority && o.seq < f.seq)));
        const capped = tail.exhaustedAt !== null;
        assert.ok(!(idleFree && ranksAfter && !capped), `${where}: append refused where it can continue the plan`);
        sofar = full;
        tail = full.tail;
      } else {
        appended++;
        // the earlier jobs would stay where they are under a full plan now: the append must agree with it
        const stay = JSON.stringify(norm(planAll(inputOf(c, jobs, now)))) === JSON.stringify(norm(sofar));
        if (stay) {
          compared++;
          if (sofarNow !== now) comparedAfterTime++;
          if (all.some((j) => j.notBefore !== null)) withNotBefore++;
          assert.deepEqual(norm(join(sofar, r)), norm(full), where);
        }
        sofar = join(sofar, r);
        tail = r.tail;
      }
      jobs = all;
      sofarNow = now;
    }
  }
  // the generator exercises every branch
  assert.ok(compared > 3000, `compared ${compared}`);
  assert.ok(comparedAfterTime > 300, `compared after time passed ${comparedAfterTime}`);
  assert.ok(withNotBefore > 1000, `compared with notBefore ${withNotBefore}`);
  assert.ok(capped > 50, `plans past the attempt cap ${capped}`);
  assert.ok(refused > 500 && appended > 3000, `refused ${refused}, appended ${appended}`);
});

test('the finding: a notBefore job in the tail does not hold back a plain job accepted a moment later', () => {
  const settings: PlanSettings = { minDelayMs: 0, maxDelayMs: 0, maxPerHour: null, maxPer24h: null, quietHours: null };
  const now = BASE;
  const reminder: PlanJob = { id: 'reminder', priority: 5, seq: 1, notBefore: now + HOUR_MS, expiresAt: now + DAY_MS };
  const plain: PlanJob = { id: 'plain', priority: 5, seq: 2, notBefore: null, expiresAt: now + 1 + DAY_MS };
  const base = { history: [], settings, lastDispatchAt: null, random: stableRandomDelay('x') };
  const first = planAll({ ...base, jobs: [reminder], now });
  assert.deepEqual(first.placements, [{ jobId: 'reminder', scheduledAt: now + HOUR_MS }]);
  for (const later of [0, 1, 1000, HOUR_MS - 1]) {
    const full = planAll({ ...base, jobs: [reminder, plain], now: now + later });
    assert.deepEqual(full.placements, [
      { jobId: 'plain', scheduledAt: now + later },
      { jobId: 'reminder', scheduledAt: now + HOUR_MS },
    ]);
    const r = planAppend(first.tail, [plain], now + later);
    if (r !== null) assert.deepEqual(r.placements, [{ jobId: 'plain', scheduledAt: now + later }], `${later} ms later`);
  }
});
