/**
 * PolledTimers (src/clock.ts): the dispatch lanes' timers, fired by the HTTP server's poll as well as by the
 * base clock. Driven by a base clock of the test's own whose time moves only when the test says and whose
 * timers fire only when the test fires them, so that what `poll` does and what the base timer does are told apart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PolledTimers, type Clock, type TimerHandle } from '../../src/clock.js';

/** A base clock: `now` set by the test; its timers are kept, fired by `fireBase` only. */
function manualClock() {
  let now = 1_000;
  let id = 0;
  const pending = new Map<number, { at: number; fn: () => void }>();
  const clock: Clock = {
    now: () => now,
    setTimeout: (fn, ms) => {
      id += 1;
      pending.set(id, { at: now + ms, fn });
      return id;
    },
    clearTimeout: (h: TimerHandle) => void pending.delete(h as number),
  };
  return {
    clock,
    pending,
    set: (ms: number) => void (now = ms),
    /** fire the base timers due by now, as node's timer phase would */
    fireBase: () => {
      for (const [k, t] of [...pending].sort((a, b) => a[1].at - b[1].at)) {
        if (t.at > now) continue;
        pending.delete(k);
        t.fn();
      }
    },
  };
}

const microtasks = () => new Promise<void>((r) => setImmediate(r));

test('poll fires what is due, each once, as a microtask after the code that polled, and clears its base timer', async () => {
  const base = manualClock();
  const timers = new PolledTimers(base.clock);
  const fired: string[] = [];
  timers.setTimeout(() => fired.push('a'), 100);
  timers.setTimeout(() => fired.push('b'), 300);
  assert.equal(base.pending.size, 2, 'each timer is armed on the base clock too (an idle process fires it there)');

  timers.poll();
  await microtasks();
  assert.deepEqual(fired, [], 'nothing is due yet');

  base.set(1_100);
  timers.poll();
  await microtasks();
  assert.deepEqual(fired, [], 'at its instant it is not past due yet (node fires a timer 1 ms after it at the soonest)');
  base.set(1_101);
  timers.poll();
  assert.deepEqual(fired, [], 'not inside the code that polled');
  await microtasks();
  assert.deepEqual(fired, ['a']);
  assert.equal(base.pending.size, 1, "a's base timer was cleared");
  assert.equal(timers.size, 1);

  timers.poll();
  base.fireBase();
  await microtasks();
  assert.deepEqual(fired, ['a'], 'a fired once');
});

test('a timer its base clock fired first is not fired again by a poll; a cleared one by neither', async () => {
  const base = manualClock();
  const timers = new PolledTimers(base.clock);
  const fired: string[] = [];
  timers.setTimeout(() => fired.push('a'), 50);
  const b = timers.setTimeout(() => fired.push('b'), 60);
  timers.clearTimeout(b);
  timers.clearTimeout(b);
  assert.equal(base.pending.size, 1, "b's base timer was cleared");

  base.set(1_100);
  base.fireBase();
  assert.deepEqual(fired, ['a'], 'the base timer runs the callback itself, at once');
  timers.poll();
  await microtasks();
  assert.deepEqual(fired, ['a']);
  assert.equal(timers.size, 0);
});

test('many timers armed and cleared in any order fire in the order of their instants, each exactly once', async () => {
  const base = manualClock();
  const timers = new PolledTimers(base.clock);
  const fired: number[] = [];
  let seed = 7;
  const rand = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  const handles = new Map<number, TimerHandle>();
  for (let i = 0; i < 2_000; i++) {
    const ms = Math.floor(rand() * 10_000);
    handles.set(i, timers.setTimeout(() => fired.push(ms), ms));
  }
  // a third cleared, from anywhere in the heap
  const cleared = new Set<number>();
  for (const [i, h] of handles) {
    if (rand() < 0.33) {
      timers.clearTimeout(h);
      cleared.add(i);
    }
  }
  const left = 2_000 - cleared.size;
  assert.equal(timers.size, left);
  for (let t = 1_000; t <= 11_250; t += 250) {
    base.set(t);
    timers.poll();
    await microtasks();
  }
  assert.equal(fired.length, left, 'every timer not cleared fired once');
  assert.deepEqual(fired, [...fired].sort((a, b) => a - b), 'in the order of their instants');
  assert.equal(timers.size, 0);
  assert.equal(base.pending.size, 0, 'no base timer is left behind');
});

test('a timer of 0 ms or less fires from a poll once the clock moved past now: a clock that stands still fires nothing', async () => {
  const base = manualClock();
  const timers = new PolledTimers(base.clock);
  let n = 0;
  timers.setTimeout(() => (n += 1), -5);
  timers.setTimeout(() => (n += 1), 0);
  assert.equal(timers.now(), 1_000);
  timers.poll();
  await microtasks();
  assert.equal(n, 0, 'a simulated clock whose time stands still fires no timer, and a poll does not either');
  base.set(1_001);
  timers.poll();
  await microtasks();
  assert.equal(n, 2);
});
