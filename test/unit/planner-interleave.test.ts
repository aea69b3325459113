/**
 * The dispatch lane is off the serial executor (src/queue/dispatch-loop.ts): it removes a claimed job from the
 * planner (and a cancel removes one) while an acceptance's proposal (Planner.tryAdd) or a re-plan
 * (Planner.replan) computed before that removal waits for its commit. Property over random planner cases
 * (test/helpers/plan-cases.ts): a job removed between a proposal and its commit never comes back — not due,
 * not in the dispatch order, no slot, not among the slots to write — and every other job is exactly where
 * the commit put it. A claimed job back in the planner would be claimed again: its stored row says
 * `sending`, which the lane takes for a claim of its own whose answer was lost, puts back and sends again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Planner, type SlotWrite } from '../../src/queue/planning.js';
import { EXISTING_INSTANCE_DEFAULTS } from '../../src/queue/settings.js';
import { genCase, rngOf } from '../helpers/plan-cases.js';

const SEEDS = 400;

/** Everything the planner answers about its jobs: waiting ones with their slot, and the order `due` walks. */
function snapshot(planner: Planner, ids: readonly string[]): { slots: Map<string, number | null>; order: string[] } {
  const slots = new Map<string, number | null>();
  for (const id of ids) {
    const s = planner.slotOf(id);
    if (s !== undefined) slots.set(id, s);
  }
  const order = ids.filter((id) => planner.slotOf(id) !== undefined && planner.slotOf(id) !== null)
    .sort((a, b) => planner.position(a) - planner.position(b));
  return { slots, order };
}

function check(planner: Planner, removed: ReadonlySet<string>, all: readonly string[], label: string): void {
  for (const id of removed) {
    assert.equal(planner.slotOf(id), undefined, `${label}: removed ${id} is waiting again`);
    assert.equal(planner.position(id), 0, `${label}: removed ${id} has a queue position`);
  }
  assert.deepEqual(planner.unpersisted().filter((w) => removed.has(w.jobId)), [], `${label}: a removed job's slot is to be written`);
  const waiting = all.filter((id) => planner.slotOf(id) !== undefined);
  assert.equal(planner.waitingCount(), waiting.length, `${label}: waiting count`);
  const slotted = waiting.filter((id) => planner.slotOf(id) !== null);
  assert.equal(planner.scheduledCount(), slotted.length, `${label}: the dispatch order holds a job that is not waiting`);
  // the lane's walk: due → remove, to the end of the plan; each slotted job once, none of the removed
  const seen: string[] = [];
  for (let guard = 0; guard <= slotted.length; guard++) {
    const due = planner.due(Number.MAX_SAFE_INTEGER);
    if (due === null) break;
    assert.ok(!removed.has(due), `${label}: removed ${due} is due again`);
    seen.push(due);
    planner.remove(due, false);
  }
  assert.deepEqual([...seen].sort(), [...slotted].sort(), `${label}: the walk of the dispatch order`);
}

test('a job removed between a proposal and its commit stays removed (acceptance and re-plan beside the lane)', () => {
  for (let seed = 0; seed < SEEDS; seed++) {
    const c = genCase(seed);
    const rng = rngOf(seed + 1_000_000);
    const settings = { ...EXISTING_INSTANCE_DEFAULTS, ...c.settings, enabled: true };
    const planner = new Planner({ salt: `i${seed}` });
    planner.load({ history: c.history, lastDispatchAt: c.lastDispatchAt, waiting: [] });
    const all: string[] = [];
    const removed = new Set<string>();
    for (let g = 0; g < c.groups.length; g++) {
      const group = c.groups[g] ?? [];
      const now = c.nows[g] ?? c.now0;
      const replan = rng(0, 3) === 0;
      const add = replan ? null : planner.tryAdd(group.map(({ seq: _seq, ...j }) => j), now, settings);
      const re = replan ? planner.replan(now, settings) : null;
      // what the lane (head: a claim) and cancels (anywhere) remove before the commit
      const waitingNow = all.filter((id) => planner.slotOf(id) !== undefined);
      for (let k = rng(0, 3); k > 0; k--) {
        const id = rng(0, 1) === 0 ? planner.due(Number.MAX_SAFE_INTEGER) : waitingNow[rng(0, Math.max(0, waitingNow.length - 1))];
        if (!id) continue;
        planner.remove(id);
        removed.add(id);
      }
      const before = snapshot(planner, all);
      if (add) {
        add.commit?.();
        for (const j of group) all.push(j.id);
        // the jobs already waiting and not removed keep what the proposal gave them, the removed stay out
        for (const [id, slot] of before.slots) {
          const moved: SlotWrite | undefined = add.moved.find((m) => m.jobId === id);
          assert.equal(planner.slotOf(id), moved ? moved.scheduledAt : slot, `seed ${seed}: ${id} after the acceptance`);
        }
        for (const [id, slot] of add.slots) assert.equal(planner.slotOf(id), slot, `seed ${seed}: new ${id}`);
      } else if (re) {
        const writes = re.writes();
        assert.deepEqual(writes.filter((w) => removed.has(w.jobId)), [], `seed ${seed}: the re-plan writes a removed job's slot`);
        re.commit(writes);
      }
      for (const id of removed) assert.equal(planner.slotOf(id), undefined, `seed ${seed}: removed ${id} is waiting again after group ${g}`);
    }
    check(planner, removed, all, `seed ${seed}`);
  }
});

test('a re-plan proposed before another still writes and applies its own slots', () => {
  // Planner.replan marks each job with the latest proposal's slot; an older proposal then reads its own
  // placements by id. Two planners fed the same jobs: one commits the proposal alone, the other after a
  // second proposal (a later instant) was made and dropped. Both must write the same rows and end alike.
  let compared = 0;
  for (let seed = 0; seed < SEEDS; seed++) {
    const c = genCase(seed);
    const settings = { ...EXISTING_INSTANCE_DEFAULTS, ...c.settings, enabled: true };
    const fed = () => {
      const planner = new Planner({ salt: `p${seed}` });
      planner.load({ history: c.history, lastDispatchAt: c.lastDispatchAt, waiting: [] });
      for (let g = 0; g < c.groups.length; g++) {
        planner.tryAdd((c.groups[g] ?? []).map(({ seq: _seq, ...j }) => j), c.nows[g] ?? c.now0, settings).commit?.();
      }
      return planner;
    };
    const ids = c.groups.flat().map((j) => j.id);
    const now = (c.nows[c.nows.length - 1] ?? c.now0) + 1_000;
    const alone = fed();
    const a = alone.replan(now, settings);
    const aWrites = a.writes();
    a.commit(aWrites);
    const after = fed();
    const b = after.replan(now, settings);
    after.replan(now + 3 * 3_600_000, settings); // proposed, never committed
    const bWrites = b.writes();
    assert.deepEqual(bWrites, aWrites, `seed ${seed}: the rows to write`);
    b.commit(bWrites);
    assert.deepEqual(snapshot(after, ids), snapshot(alone, ids), `seed ${seed}: slots and order after the commit`);
    assert.deepEqual(after.unpersisted(), alone.unpersisted(), `seed ${seed}: slots left to write`);
    compared += ids.length;
  }
  assert.ok(compared > SEEDS, 'the cases hold jobs');
});

test('a re-plan proposed before the planner loaded its jobs again applies its slots to the loaded ones', () => {
  // A reload (the queue read again from PostgreSQL) replaces the planner's objects; a proposal made before it
  // then finds its jobs by id. Committed after a load of the same waiting jobs, it must end as it ends alone.
  for (let seed = 0; seed < SEEDS; seed += 4) {
    const c = genCase(seed);
    const settings = { ...EXISTING_INSTANCE_DEFAULTS, ...c.settings, enabled: true };
    const planner = new Planner({ salt: `l${seed}` });
    planner.load({ history: c.history, lastDispatchAt: c.lastDispatchAt, waiting: [] });
    for (let g = 0; g < c.groups.length; g++) {
      planner.tryAdd((c.groups[g] ?? []).map(({ seq: _seq, ...j }) => j), c.nows[g] ?? c.now0, settings).commit?.();
    }
    const ids = c.groups.flat().map((j) => j.id);
    const waiting = c.groups.flat().map((j) => ({ ...j, scheduledAt: planner.slotOf(j.id) ?? null })).filter((j) => planner.slotOf(j.id) !== undefined);
    const now = (c.nows[c.nows.length - 1] ?? c.now0) + 1_000;
    const reference = new Planner({ salt: `l${seed}` });
    reference.load({ history: c.history, lastDispatchAt: c.lastDispatchAt, waiting });
    const r = reference.replan(now, settings);
    const rWrites = r.writes();
    r.commit(rWrites);
    const p = planner.replan(now, settings);
    planner.load({ history: c.history, lastDispatchAt: c.lastDispatchAt, waiting });
    const pWrites = p.writes();
    assert.deepEqual(pWrites, rWrites, `seed ${seed}: the rows to write`);
    p.commit(pWrites);
    assert.deepEqual(snapshot(planner, ids), snapshot(reference, ids), `seed ${seed}: slots and order after the commit`);
  }
});
