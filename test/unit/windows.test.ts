import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DAY_MS, HOUR_MS, WindowCounter, countInSortedWindow, countInWindow, limitsObject, oldestInWindow } from '../../src/queue/windows.js';
import { DispatchHistory } from '../../src/queue/dispatch-history.js';
import { seededRandomDelay } from '../../src/queue/plan.js';
import { NEW_INSTANCE_DEFAULTS, EXISTING_INSTANCE_DEFAULTS } from '../../src/queue/settings.js';

const now = Date.UTC(2026, 0, 5, 10, 0, 0);

describe('sliding window edges', () => {
  test('a dispatch counts while t - 1 h < d <= t', () => {
    assert.equal(countInWindow([now - HOUR_MS], now, HOUR_MS), 0, 'exactly one hour ago has left the window');
    assert.equal(countInWindow([now - HOUR_MS + 1], now, HOUR_MS), 1);
    assert.equal(countInWindow([now], now, HOUR_MS), 1);
    assert.equal(countInWindow([now + 1], now, HOUR_MS), 0, 'a later dispatch is not in the window at now');
    assert.equal(countInWindow([now - DAY_MS + 1, now - DAY_MS], now, DAY_MS), 1);
  });

  test('the binary-search count of ascending instants equals the linear count, at every edge', () => {
    const rnd = seededRandomDelay(5);
    for (let round = 0; round < 200; round++) {
      const xs = Array.from({ length: rnd(0, 60, '') }, () => now - rnd(-HOUR_MS, DAY_MS + HOUR_MS, '')).sort((a, b) => a - b);
      // the instants themselves and their window edges, plus random ones
      const ts = [now, ...xs, ...xs.map((x) => x + HOUR_MS), ...xs.map((x) => x + DAY_MS), ...xs.map((x) => x + HOUR_MS - 1)];
      for (const t of ts) {
        for (const span of [HOUR_MS, DAY_MS]) assert.equal(countInSortedWindow(xs, t, span), countInWindow(xs, t, span), `round ${round} t ${t - now} span ${span}`);
      }
    }
  });

  test('the planner\'s history stays ascending when a dispatch is recorded out of order, and a record can be taken back', () => {
    const h = new DispatchHistory();
    h.load([now - 5_000, now - 60_000, now - 2 * DAY_MS], now - 5_000);
    h.record(now);
    const undo = h.record(now - 30_000); // a write-back of an earlier dispatch
    h.record(now - 30_000);
    const xs = h.recent(now);
    assert.deepEqual(xs, [now - 60_000, now - 30_000, now - 30_000, now - 5_000, now]);
    assert.equal(limitsObject(EXISTING_INSTANCE_DEFAULTS, xs, now, 'pg', true).usedLast24h, 5);
    undo();
    assert.deepEqual(h.recent(now), [now - 60_000, now - 30_000, now - 5_000, now]);
    assert.equal(h.last, now);
  });

  test('oldest in the window, in any input order', () => {
    const h = [now - 10, now - 3_000_000, now - 4_000_000, now - 20];
    assert.equal(oldestInWindow(h, now, HOUR_MS), now - 3_000_000);
    assert.equal(oldestInWindow(h, now, DAY_MS), now - 4_000_000);
    assert.equal(oldestInWindow([], now, HOUR_MS), null);
  });
});

describe('WindowCounter (the planner form)', () => {
  test('agrees with the linear count through forward seeks and adds, and after a backward seek', () => {
    const rnd = seededRandomDelay(3);
    const history = Array.from({ length: 300 }, () => now - rnd(0, DAY_MS + HOUR_MS, ''));
    const all = [...history];
    const w = new WindowCounter(history);
    let t = now - HOUR_MS;
    for (let i = 0; i < 2000; i++) {
      t += rnd(0, 120_000, '');
      w.seek(t);
      if (i % 3 === 0) {
        // Mostly at the sought instant (the planner's case), sometimes in the past or future.
        const d = i % 9 === 0 ? t - rnd(0, 2 * HOUR_MS, '') : i % 27 === 0 ? t + 5000 : t;
        w.add(d);
        all.push(d);
      }
      assert.equal(w.usedHour(), countInWindow(all, t, HOUR_MS), `hour at step ${i}`);
      assert.equal(w.usedDay(), countInWindow(all, t, DAY_MS), `day at step ${i}`);
      assert.equal(w.oldestHour(), oldestInWindow(all, t, HOUR_MS));
      assert.equal(w.oldestDay(), oldestInWindow(all, t, DAY_MS));
    }
    const back = t - 5 * HOUR_MS;
    w.seek(back);
    assert.equal(w.usedHour(), countInWindow(all, back, HOUR_MS));
    assert.equal(w.usedDay(), countInWindow(all, back, DAY_MS));
  });

  test('a clone is independent and keeps only what can still count', () => {
    const w = new WindowCounter([now - 2 * DAY_MS, now - 10, now - 5]);
    w.seek(now);
    const c = w.clone();
    c.add(now);
    assert.equal(c.usedHour(), 3);
    assert.equal(w.usedHour(), 2);
    assert.equal(c.oldestDay(), now - 10);
  });

  test('clones share their array but never see each other: a branch appended, the old view appended, clones of clones', () => {
    // A plan's tail is cloned for every acceptance and the clone appended to; a proposal that is not committed
    // leaves the old tail to be cloned again. Counters branch into a tree here, each checked against a plain
    // list of what it holds, so an add that leaked into a sibling through the shared array is caught.
    const rnd = seededRandomDelay(11);
    type Node = { w: WindowCounter; all: number[]; t: number };
    const history = Array.from({ length: 200 }, () => now - rnd(0, DAY_MS + HOUR_MS, ''));
    const nodes: Node[] = [{ w: new WindowCounter(history), all: [...history], t: now }];
    nodes[0]!.w.seek(now);
    const check = (n: Node, what: string) => {
      n.w.seek(n.t);
      assert.equal(n.w.usedHour(), countInWindow(n.all, n.t, HOUR_MS), `hour: ${what}`);
      assert.equal(n.w.usedDay(), countInWindow(n.all, n.t, DAY_MS), `day: ${what}`);
      assert.equal(n.w.oldestHour(), oldestInWindow(n.all, n.t, HOUR_MS), `oldest hour: ${what}`);
      assert.equal(n.w.oldestDay(), oldestInWindow(n.all, n.t, DAY_MS), `oldest day: ${what}`);
      assert.equal(n.w.newest(), n.all.length === 0 ? null : Math.max(...n.all), `newest: ${what}`);
    };
    for (let i = 0; i < 3000; i++) {
      // mostly the newest counters (the planner's chain), sometimes an old one (a dropped proposal's parent)
      const k = i % 7 === 0 ? rnd(0, nodes.length - 1, '') : nodes.length - 1 - rnd(0, Math.min(2, nodes.length - 1), '');
      const n = nodes[k]!;
      const op = rnd(0, 9, '');
      if (op < 4) {
        // clone at a later cursor (what a plan continues from); it drops what can no longer count
        const from = n.t + rnd(0, 3 * HOUR_MS, '');
        const c = { w: n.w.clone(from), all: n.all.filter((d) => d > from - DAY_MS), t: from };
        nodes.push(c);
        check(c, `clone ${i}`);
      } else {
        // an add: at the newest instant or after (the planner's case), sometimes in the middle
        const d = op < 8 ? Math.max(n.t, n.w.newest() ?? n.t) + rnd(0, 600_000, '') : n.t - rnd(0, 2 * HOUR_MS, '');
        n.w.seek(n.t);
        n.w.add(d);
        n.all.push(d);
        if (op === 9) n.t += rnd(0, 20 * 60_000, '');
      }
      if (i % 50 === 0) for (const [j, m] of nodes.entries()) check(m, `counter ${j} at step ${i}`);
    }
    for (const [j, m] of nodes.entries()) check(m, `counter ${j} at the end`);
  });
});

describe('limitsObject (SPEC.md "Limits object")', () => {
  const history = [now - 30 * 60_000, now - 2 * HOUR_MS, now - 23 * HOUR_MS, now - 25 * HOUR_MS];

  test('pg: configured ceilings, used and remaining over both windows', () => {
    assert.deepEqual(limitsObject(NEW_INSTANCE_DEFAULTS, history, now, 'pg'), {
      maxPerHour: 40,
      maxPer24h: 500,
      usedLastHour: 1,
      usedLast24h: 3,
      remainingHour: 39,
      remaining24h: 497,
      minDelayMs: 4000,
      maxDelayMs: 12000,
      quietHours: { start: '22:00', end: '07:00', tz: 'Europe/Berlin' },
      window: 'sliding',
    });
  });

  test('unlimited (existing instances): remaining is null, used is still counted', () => {
    const l = limitsObject(EXISTING_INSTANCE_DEFAULTS, history, now, 'pg');
    assert.equal(l.usedLastHour, 1);
    assert.equal(l.remainingHour, null);
    assert.equal(l.remaining24h, null);
    assert.equal(l.maxPerHour, null);
    assert.equal(l.quietHours, null);
  });

  test('remaining never goes negative after a limit was lowered', () => {
    const l = limitsObject({ ...NEW_INSTANCE_DEFAULTS, maxPer24h: 2 }, history, now, 'pg');
    assert.equal(l.remaining24h, 0);
  });

  test('memory-degraded: used* and remaining* are null, the rest is reported', () => {
    const l = limitsObject(NEW_INSTANCE_DEFAULTS, history, now, 'memory-degraded');
    assert.equal(l.usedLastHour, null);
    assert.equal(l.usedLast24h, null);
    assert.equal(l.remainingHour, null);
    assert.equal(l.remaining24h, null);
    assert.equal(l.maxPerHour, 40);
    assert.equal(l.window, 'sliding');
  });
});
