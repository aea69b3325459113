/**
 * The worker's planner memory (src/queue/planning.ts) driven as the queue worker drives it: acceptances
 * (tryAdd + commit), dispatches (remove + recordDispatch), cancellations, the dispatcher's re-check and its
 * re-plan. Issue 13, finding 4: no path leaves a plain job waiting behind a notBefore job.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Planner } from '../../src/queue/planning.js';
import { seededRandomDelay } from '../../src/queue/plan.js';
import { EXISTING_INSTANCE_DEFAULTS, type InstanceSettings } from '../../src/queue/settings.js';
import { DAY_MS, HOUR_MS } from '../../src/queue/windows.js';

const T0 = Date.parse('2026-01-05T10:00:00Z');
const UNLIMITED: InstanceSettings = { ...EXISTING_INSTANCE_DEFAULTS, enabled: true, minDelayMs: 0, maxDelayMs: 0 };

/** A planner plus what PostgreSQL would hold: each waiting job's slot, written from the proposals. */
class Harness {
  readonly planner = new Planner({ salt: 'inst' });
  readonly slots = new Map<string, number | null>();
  readonly notBefore = new Map<string, number | null>();
  private n = 0;

  constructor(readonly settings: InstanceSettings) {
    this.planner.load({ history: [], lastDispatchAt: null, waiting: [] });
  }

  accept(now: number, o: { priority?: number; notBefore?: number | null } = {}): { id: string; slot: number | null | undefined } {
    const id = `wq_${++this.n}`;
    const p = this.planner.tryAdd([{ id, priority: o.priority ?? 5, notBefore: o.notBefore ?? null, expiresAt: now + DAY_MS }], now, this.settings);
    for (const m of p.moved) this.slots.set(m.jobId, m.scheduledAt);
    const slot = p.slots.get(id);
    if (slot !== undefined) {
      this.slots.set(id, slot);
      this.notBefore.set(id, o.notBefore ?? null);
    }
    p.commit?.();
    return { id, slot };
  }

  /** What the worker's step() does at `now`: claim the due job if the re-check passes, else re-plan. */
  step(now: number): string | null {
    const due = this.planner.due(now);
    if (due === null) return null;
    if (!this.planner.recheck(now, this.settings).ok) {
      this.replan(now);
      return null;
    }
    this.planner.remove(due, false);
    this.planner.recordDispatch(now);
    this.slots.delete(due);
    return due;
  }

  replan(now: number): void {
    const r = this.planner.replan(now, this.settings);
    for (const s of r.slots) this.slots.set(s.jobId, s.scheduledAt);
    for (const id of r.unslotted) this.slots.set(id, null);
    r.commit(r.writes());
  }

  cancel(id: string): void {
    this.planner.remove(id);
    this.slots.delete(id);
  }
}

describe('a notBefore job holds back nothing (Planner, as the worker drives it)', () => {
  test('the finding: a plain job a second after a reminder is due at once; so is the next after its dispatch', () => {
    const h = new Harness(UNLIMITED);
    const reminder = h.accept(T0, { notBefore: T0 + HOUR_MS });
    assert.equal(reminder.slot, T0 + HOUR_MS);
    const plain = h.accept(T0 + 1000);
    assert.equal(plain.slot, T0 + 1000);
    assert.equal(h.planner.position(plain.id), 1);
    assert.equal(h.step(T0 + 1000), plain.id);
    const next = h.accept(T0 + 6000);
    assert.equal(next.slot, T0 + 6000);
    assert.equal(h.step(T0 + 6000), next.id);
    assert.equal(h.planner.nextAt(), T0 + HOUR_MS);
    assert.equal(h.step(T0 + HOUR_MS), reminder.id);
    // after the reminder went out the plan appends again
    assert.equal(h.accept(T0 + 2 * HOUR_MS).slot, T0 + 2 * HOUR_MS);
  });

  test('a cancelled reminder leaves no gap for the next plain job', () => {
    const h = new Harness(UNLIMITED);
    const reminder = h.accept(T0, { notBefore: T0 + 2 * HOUR_MS });
    h.cancel(reminder.id);
    assert.equal(h.accept(T0 + 1000).slot, T0 + 1000);
  });

  test("the dispatcher's re-check fails (a send outside the queue): the re-plan puts the plain job first", () => {
    const h = new Harness({ ...UNLIMITED, minDelayMs: 5000, maxDelayMs: 5000 });
    const reminder = h.accept(T0, { notBefore: T0 + HOUR_MS });
    const plain = h.accept(T0 + 1000);
    assert.equal(plain.slot, T0 + 1000);
    h.planner.recordDispatch(T0 + 500); // a v1 send in memory-degraded mode: spacing no longer holds at T0 + 1 s
    assert.equal(h.step(T0 + 1000), null);
    assert.equal(h.slots.get(plain.id), T0 + 5500);
    assert.equal(h.slots.get(reminder.id), T0 + HOUR_MS);
    assert.equal(h.step(T0 + 5500), plain.id);
  });

  test('random acceptances, dispatches, cancellations and re-plans: every allowed job is due at once', () => {
    // No limits and 0 ms pauses: a job allowed at `now` (notBefore passed or none) must have a slot ≤ now, and
    // never a slot before its notBefore.
    const rnd = seededRandomDelay(13);
    const r = (min: number, max: number) => rnd(min, max, '');
    for (let run = 0; run < 40; run++) {
      const h = new Harness(UNLIMITED);
      let now = T0;
      for (let i = 0; i < 200; i++) {
        const what = r(0, 9);
        if (what <= 3) {
          const nb = r(0, 2) === 0 ? now + r(-HOUR_MS, 2 * HOUR_MS) : null;
          const { id, slot } = h.accept(now, { priority: r(1, 9), notBefore: nb });
          assert.equal(slot, Math.max(now, nb ?? now), `run ${run} step ${i}: ${id}`);
        } else if (what <= 6) {
          now += r(0, 2) === 0 ? r(0, 2 * HOUR_MS) : r(0, 5000);
          while (h.step(now) !== null);
        } else if (what === 7 && h.slots.size > 0) {
          h.cancel([...h.slots.keys()][r(0, h.slots.size - 1)]!);
        } else if (what === 8) {
          h.replan(now);
        } else {
          h.planner.recordDispatch(now); // a send outside the queue
        }
        for (const [id, slot] of h.slots) {
          const nb = h.notBefore.get(id) ?? null;
          assert.ok(slot !== null, `run ${run} step ${i}: ${id} has a slot`);
          if (nb !== null) assert.ok(slot >= nb, `run ${run} step ${i}: ${id} not before its notBefore`);
          if (nb === null || nb <= now) assert.ok(slot <= now, `run ${run} step ${i}: ${id} allowed at ${now - T0} but slotted at ${slot - T0}`);
        }
      }
    }
  });
});
