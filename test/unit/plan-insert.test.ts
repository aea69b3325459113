/**
 * Property: new jobs planned into the inside of an existing plan (src/queue/plan-insert.ts) land exactly where
 * a full plan puts them, and the kept prefix is where the full plan has it. Random queues as for planAppend
 * (test/helpers/plan-cases.ts); the comparison is made whenever a full plan at the later `now` would leave the
 * earlier jobs where they are (the same proviso as planAppend's), and the plan continues from the insert.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planAll, stableRandomDelay, type PlanJob, type PlanResult } from '../../src/queue/plan.js';
import { Planner } from '../../src/queue/planning.js';
import { EXISTING_INSTANCE_DEFAULTS } from '../../src/queue/settings.js';
import { planInsert, type Planned } from '../../src/queue/plan-insert.js';
import { HOUR_MS } from '../../src/queue/windows.js';
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

/** What the worker's planner holds after a plan: the placed jobs in walk order, the others, the outcome. */
interface State {
  placed: Planned[];
  unslotted: PlanJob[];
  outcome: Outcome;
}

function stateOf(prefix: Planned[], r: PlanResult, jobs: readonly PlanJob[]): State {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const placed = [...prefix, ...r.placements.map((p, i) => ({ ...(byId.get(p.jobId) as PlanJob), scheduledAt: p.scheduledAt, after: r.after[i] as number, idled: r.idled[i] as boolean }))];
  const slotted = new Set(placed.map((p) => p.id));
  return {
    placed,
    unslotted: jobs.filter((j) => !slotted.has(j.id)),
    outcome: {
      placements: placed.map((p) => ({ jobId: p.id, scheduledAt: p.scheduledAt as number })),
      unreachable: r.unreachable,
      unplaced: r.unplaced,
    },
  };
}

const CASES = 5000;

test(`planInsert equals planAll over ${CASES} random queues, or refuses`, () => {
  let compared = 0;
  let keptSome = 0;
  let movedAfter = 0;
  let refused = 0;
  for (let seed = 1; seed <= CASES; seed++) {
    const c = genCase(seed);
    let jobs = [...c.groups[0]!];
    let state = stateOf([], planAll(inputOf(c, jobs, c.nows[0]!)), jobs);
    for (let g = 1; g < c.groups.length; g++) {
      const fresh = c.groups[g]!;
      const now = c.nows[g]!;
      const all = [...jobs, ...fresh];
      const full = planAll(inputOf(c, all, now));
      const ins = planInsert({ placed: state.placed, unslotted: state.unslotted, fresh, history: c.history, settings: c.settings, random: c.random, now });
      if (ins === null) {
        refused++;
        state = stateOf([], full, all);
      } else {
        const next = stateOf(state.placed.slice(0, ins.kept), ins.result, all);
        const stay = JSON.stringify(norm(planAll(inputOf(c, jobs, now)))) === JSON.stringify(norm(state.outcome));
        if (stay) {
          compared++;
          if (ins.kept > 0) keptSome++;
          if (ins.kept < state.placed.length) movedAfter++;
          assert.deepEqual(norm(next.outcome), norm(full), `seed ${seed}, group ${g}`);
        }
        state = next;
      }
      jobs = all;
    }
  }
  // the generator exercises both outcomes (5,000 cases here: about 1,400 inserts compared, half moving placed jobs)
  assert.ok(compared > 1000, `compared ${compared}`);
  assert.ok(keptSome === compared && movedAfter > 500, `kept a prefix ${keptSome}, planned placed jobs again ${movedAfter}`);
  assert.ok(refused > 500, `refused ${refused}`);
});

test('a plain job in front of a reminder and a low priority: the plan before them is kept, they move on', () => {
  const settings = { minDelayMs: 60_000, maxDelayMs: 60_000, maxPerHour: null, maxPer24h: null, quietHours: null };
  const now = BASE;
  const job = (id: string, seq: number, o: Partial<PlanJob> = {}): PlanJob => ({ id, priority: 5, seq, notBefore: null, expiresAt: now + 3 * HOUR_MS, ...o });
  const chain = [1, 2, 3].map((i) => job(`c${i}`, i));
  const reminder = job('reminder', 4, { notBefore: now + HOUR_MS });
  const low = job('low', 5, { priority: 1 });
  const base = { history: [], settings, lastDispatchAt: null, now, random: () => 60_000 };
  const jobs = [...chain, reminder, low];
  const first = planAll({ ...base, jobs });
  assert.deepEqual(first.placements.map((p) => p.jobId), ['c1', 'c2', 'c3', 'low', 'reminder']);
  const state = stateOf([], first, jobs);
  const plain = job('plain', 6);
  const ins = planInsert({ placed: state.placed, unslotted: [], fresh: [plain], history: [], settings, random: () => 60_000, now });
  assert.ok(ins);
  assert.equal(ins.kept, 3);
  assert.deepEqual(ins.result.placements, [
    { jobId: 'plain', scheduledAt: now + 3 * 60_000 },
    { jobId: 'low', scheduledAt: now + 4 * 60_000 },
    { jobId: 'reminder', scheduledAt: now + HOUR_MS },
  ]);
  assert.deepEqual(norm(stateOf(state.placed.slice(0, 3), ins.result, [...jobs, plain]).outcome), norm(planAll({ ...base, jobs: [...jobs, plain] })));
});

test('the worker planner (append, insert or full plan per batch) holds exactly the full plan, batch after batch', () => {
  let inserted = 0;
  for (let seed = 1; seed <= 1500; seed++) {
    const c = genCase(seed);
    const now = c.nows[0]!;
    const settings = { ...EXISTING_INSTANCE_DEFAULTS, ...c.settings, enabled: true };
    const planner = new Planner({ salt: `p${seed}` });
    planner.load({ history: c.history, lastDispatchAt: c.lastDispatchAt, waiting: [] });
    const waiting: PlanJob[] = [];
    for (const group of c.groups) {
      const p = planner.tryAdd(group, now, settings);
      p.commit?.();
      // a job whose slot is absent was refused (TTL_UNREACHABLE): it never joins the queue
      for (const j of group) if (p.slots.has(j.id)) waiting.push(j);
      if (p.moved.length > 0 && p.moved.length < waiting.length - group.length) inserted++;
      const full = planAll({ jobs: waiting, history: c.history, settings, lastDispatchAt: c.lastDispatchAt, now, random: stableRandomDelay(`p${seed}`) });
      for (const [i, f] of full.placements.entries()) {
        assert.equal(planner.position(f.jobId), i + 1, `seed ${seed}: position of ${f.jobId}`);
        assert.equal(planner.slotOf(f.jobId), f.scheduledAt, `seed ${seed}: slot of ${f.jobId}`);
      }
    }
  }
  assert.ok(inserted > 50, `batches that moved part of the plan ${inserted}`);
});

test('a job of the kept prefix that leaves between an insert and its commit (a cancel, a dispatch): every waiting job once in the order', () => {
  // The insert keeps the plan's prefix and plans the rest again; the dispatch order is then cut where the
  // prefix ended. A job of the prefix removed while the batch commits moves that place: the order must not
  // keep a re-planned job there and add it again at its end.
  const now = BASE;
  const settings = { ...EXISTING_INSTANCE_DEFAULTS, minDelayMs: 60_000, maxDelayMs: 60_000, enabled: true };
  const planner = new Planner({ salt: 'cut' });
  planner.load({ history: [], lastDispatchAt: null, waiting: [] });
  const plain = (id: string, priority = 5) => ({ id, priority, notBefore: null, expiresAt: now + 30 * 86_400_000 });
  for (const group of [[plain('c1'), plain('c2'), plain('c3'), plain('c4')], [plain('low', 1)]]) planner.tryAdd(group, now, settings).commit?.();
  const p = planner.tryAdd([plain('new')], now, settings);
  assert.ok(p.moved.some((m) => m.jobId === 'low'), 'the new job went in front of the priority-1 job (an insert, not an append)');
  planner.remove('c2');
  p.commit?.();
  const waiting = ['c1', 'c3', 'c4', 'new', 'low'];
  assert.equal(planner.scheduledCount(), waiting.length);
  const bySlot = [...waiting].sort((a, b) => (planner.slotOf(a) as number) - (planner.slotOf(b) as number));
  assert.deepEqual(bySlot.map((id) => planner.position(id)), [1, 2, 3, 4, 5]);
  assert.deepEqual(bySlot, ['c1', 'c3', 'c4', 'new', 'low']);
});
