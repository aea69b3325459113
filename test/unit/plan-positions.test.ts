/**
 * Queue positions of the planner's memory (src/queue/planning.ts): `position(id)` and an acceptance's
 * `positions` are the place in the dispatch order by definition — 1 + the waiting jobs with a slot that go
 * before (slot ascending, then priority descending, then arrival) — or, without a slot, one after every
 * slotted job. Random acceptances (batches, priorities, notBefore), dispatches, cancellations and re-plans
 * under limits, checked after every step. The planner keeps a hint of each job's place from the last change
 * of its order; this holds it to the definition.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Planner } from '../../src/queue/planning.js';
import { emptyPlanners, seededInts } from '../helpers/random-planners.js';
import { EXISTING_INSTANCE_DEFAULTS, type InstanceSettings } from '../../src/queue/settings.js';
import { DAY_MS, HOUR_MS } from '../../src/queue/windows.js';

const T0 = Date.parse('2026-01-05T10:00:00Z');
const S: InstanceSettings = { ...EXISTING_INSTANCE_DEFAULTS, enabled: true, maxPerHour: 20, maxPer24h: 100, minDelayMs: 1000, maxDelayMs: 30_000 };

interface Known {
  priority: number;
  arrival: number;
}

/** The definition, from the slots memory reports and what the test knows of each job. */
function expectedPositions(p: Planner, known: Map<string, Known>): Map<string, number> {
  const slotted: { id: string; at: number; k: Known }[] = [];
  for (const [id, k] of known) {
    const at = p.slotOf(id);
    if (at !== null && at !== undefined) slotted.push({ id, at, k });
  }
  slotted.sort((a, b) => a.at - b.at || b.k.priority - a.k.priority || a.k.arrival - b.k.arrival);
  const out = new Map<string, number>();
  slotted.forEach((s, i) => out.set(s.id, i + 1));
  for (const id of known.keys()) if (p.slotOf(id) === null) out.set(id, slotted.length + 1);
  return out;
}

test('position() and the positions of an acceptance follow the dispatch order, over random histories', () => {
  const r = seededInts(29);
  let arrivals = 0;
  for (const { p, run } of emptyPlanners(30, 'run')) {
    const known = new Map<string, Known>();
    let now = T0;
    for (let step = 0; step < 120; step++) {
      const what = r(0, 9);
      if (what <= 4) {
        const batch = Array.from({ length: r(1, 12) }, () => {
          const id = `j${++arrivals}`;
          const nb = r(0, 3) === 0 ? now + r(-HOUR_MS, 6 * HOUR_MS) : null;
          return { id, priority: r(0, 2) === 0 ? r(1, 9) : 5, notBefore: nb, expiresAt: now + r(HOUR_MS, 3 * DAY_MS) };
        });
        const prop = p.tryAdd(batch, now, S);
        const order = new Map(batch.map((j, i) => [j.id, arrivals - batch.length + i + 1]));
        prop.commit?.();
        for (const j of batch) {
          if (prop.slots.get(j.id) !== undefined) known.set(j.id, { priority: j.priority, arrival: order.get(j.id) as number });
        }
        // positions announced by the acceptance (message.queued) are the ones after its commit
        const want = expectedPositions(p, known);
        for (const j of batch) {
          if (prop.slots.get(j.id) === undefined) continue;
          assert.equal(prop.positions.get(j.id), want.get(j.id), `run ${run} step ${step}: announced position of ${j.id}`);
        }
      } else if (what <= 6) {
        now += r(0, 3) === 0 ? r(0, 3 * HOUR_MS) : r(0, 60_000);
        for (let due = p.due(now); due !== null; due = p.due(now)) {
          p.remove(due, false);
          p.recordDispatch(now);
          known.delete(due);
        }
      } else if (what === 7 && known.size > 0) {
        const id = [...known.keys()][r(0, known.size - 1)] as string;
        p.remove(id);
        known.delete(id);
      } else if (what === 8) {
        const rp = p.replan(now, r(0, 1) === 0 ? S : { ...S, maxPerHour: r(5, 40) });
        rp.commit(rp.writes());
      } else {
        const w = p.unpersisted();
        p.persistedAs(w);
      }
      const want = expectedPositions(p, known);
      for (const [id, pos] of want) assert.equal(p.position(id), pos, `run ${run} step ${step}: position of ${id}`);
    }
  }
});
