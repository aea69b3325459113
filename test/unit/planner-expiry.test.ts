/**
 * Expiry in the planner's memory (src/queue/planning.ts): `nextWake` and `expiredAt` answer from the earliest
 * expiresAt the planner keeps as jobs come and go (found again after a removal that may have taken it), and
 * must equal what a look at every waiting job gives. Random acceptances, dispatches, expiries, cancellations
 * and re-plans, checked after every step.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyPlanners, seededInts } from '../helpers/random-planners.js';
import { EXISTING_INSTANCE_DEFAULTS, type InstanceSettings } from '../../src/queue/settings.js';
import { DAY_MS, HOUR_MS } from '../../src/queue/windows.js';

const T0 = Date.parse('2026-01-05T10:00:00Z');
const S: InstanceSettings = { ...EXISTING_INSTANCE_DEFAULTS, enabled: true, maxPerHour: null, maxPer24h: null, minDelayMs: 1000, maxDelayMs: 60_000 };

test('nextWake and expiredAt equal a look at every waiting job, over random histories', () => {
  const r = seededInts(41);
  let arrivals = 0;
  for (const { p, run } of emptyPlanners(30, 'expiry')) {
    /** waiting job → its expiresAt */
    const known = new Map<string, number>();
    let now = T0;
    for (let step = 0; step < 150; step++) {
      const what = r(0, 9);
      if (what <= 3) {
        const batch = Array.from({ length: r(1, 10) }, () => ({
          id: `j${++arrivals}`,
          priority: r(0, 3) === 0 ? r(1, 9) : 5,
          notBefore: r(0, 4) === 0 ? now + r(0, 6 * HOUR_MS) : null,
          // short validities too, so that jobs expire while they wait
          expiresAt: now + (r(0, 1) === 0 ? r(1_000, 10 * 60_000) : r(HOUR_MS, 2 * DAY_MS)),
        }));
        const prop = p.tryAdd(batch, now, S);
        prop.commit?.();
        for (const j of batch) if (prop.slots.get(j.id) !== undefined) known.set(j.id, j.expiresAt);
      } else if (what <= 6) {
        now += r(0, 2) === 0 ? r(0, 2 * HOUR_MS) : r(0, 120_000);
        // the dispatch step: what expired first (as dispatch-loop.ts expireDue), then what is due
        const expired = p.expiredAt(now).sort();
        const want = [...known].filter(([, at]) => at < now).map(([id]) => id).sort();
        assert.deepEqual(expired, want, `run ${run} step ${step}: expired at ${now}`);
        for (const id of expired) {
          p.remove(id);
          known.delete(id);
        }
        for (let due = p.due(now); due !== null; due = p.due(now)) {
          p.remove(due, false);
          p.recordDispatch(now);
          known.delete(due);
        }
      } else if (what === 7 && known.size > 0) {
        const id = [...known.keys()][r(0, known.size - 1)] as string;
        p.remove(id);
        known.delete(id);
      } else {
        const rp = p.replan(now, S);
        rp.commit(rp.writes());
      }
      const earliest = Math.min(...known.values());
      assert.equal(p.nextWake(false), known.size === 0 ? null : earliest + 1, `run ${run} step ${step}: the next wake for an expiry`);
      if (known.size > 0) {
        assert.deepEqual(p.expiredAt(earliest + 1).sort(), [...known].filter(([, at]) => at === earliest).map(([id]) => id).sort(), `run ${run} step ${step}: just after the earliest expiry`);
        assert.deepEqual(p.expiredAt(earliest), [], `run ${run} step ${step}: at the earliest expiry, nothing yet`);
      }
      assert.equal(p.expiredAt(now).length, [...known.values()].filter((at) => at < now).length, `run ${run} step ${step}: expired now`);
    }
  }
});
