import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { simulatedClock } from '../../src/clock.js';
import { PresenceManager, effectiveDuration, PRESENCE_MAX_MS } from '../../src/actors/presence.js';

/** A task that records when (on the simulated clock) it fired and cleared; `failFrom` makes fires fail. */
function recorder(clock: { now(): number }, opts: { failFrom?: number } = {}) {
  const fires: number[] = [];
  const clears: number[] = [];
  let calls = 0;
  return {
    fires,
    clears,
    task: {
      fire: async () => {
        calls++;
        if (opts.failFrom !== undefined && calls >= opts.failFrom) throw new Error('session disconnected');
        fires.push(clock.now());
      },
      clear: async () => {
        clears.push(clock.now());
      },
    },
  };
}

/** Advance simulated time in 1 s steps, letting the fired promises settle between steps. */
async function advance(clock: ReturnType<typeof simulatedClock>, ms: number) {
  for (let t = 0; t < ms; t += 1000) {
    clock.increment(1000);
    await tick();
  }
}

describe('PresenceManager (typing/recording keep-alive)', () => {
  test('durationMs: default 25000, capped at 300000', () => {
    assert.equal(effectiveDuration(undefined), 25_000);
    assert.equal(effectiveDuration(1), 1);
    assert.equal(effectiveDuration(300_000), 300_000);
    assert.equal(effectiveDuration(300_001), PRESENCE_MAX_MS);
    assert.equal(effectiveDuration(10_000_000), 300_000);
  });

  test('up to 25 s: fired once, cleared when the duration ends, never re-fired', async () => {
    const clock = simulatedClock();
    const t0 = clock.now();
    const pm = new PresenceManager(clock);
    const r = recorder(clock);
    const info = await pm.start('i1', 'c1', 'typing', 25_000, r.task);
    assert.equal(info.expiresAt, t0 + 25_000);
    await advance(clock, 60_000);
    assert.deepEqual(r.fires, [t0]);
    assert.deepEqual(r.clears, [t0 + 25_000]);
    assert.equal(pm.size, 0);
  });

  test('above 25 s: re-fired every 20 s until the duration ends, then cleared', async () => {
    const clock = simulatedClock();
    const t0 = clock.now();
    const pm = new PresenceManager(clock);
    const r = recorder(clock);
    await pm.start('i1', 'c1', 'recording', 65_000, r.task);
    await advance(clock, 120_000);
    assert.deepEqual(r.fires, [t0, t0 + 20_000, t0 + 40_000, t0 + 60_000]);
    assert.deepEqual(r.clears, [t0 + 65_000]);
    assert.equal(pm.active('i1', 'c1'), null);
  });

  test('the maximum of 300 s re-fires 15 times after the first call', async () => {
    const clock = simulatedClock();
    const pm = new PresenceManager(clock);
    const r = recorder(clock);
    await pm.start('i1', 'c1', 'typing', effectiveDuration(900_000), r.task);
    await advance(clock, 400_000);
    assert.equal(r.fires.length, 15); // 0, 20 s, …, 280 s
    assert.equal(r.clears.length, 1);
  });

  test('cancel stops the re-firing; clearing is left to the caller', async () => {
    const clock = simulatedClock();
    const t0 = clock.now();
    const pm = new PresenceManager(clock);
    const r = recorder(clock);
    await pm.start('i1', 'c1', 'typing', 120_000, r.task);
    await advance(clock, 45_000);
    assert.equal(pm.cancel('i1', 'c1'), true);
    assert.equal(pm.cancel('i1', 'c1'), false);
    await advance(clock, 120_000);
    assert.deepEqual(r.fires, [t0, t0 + 20_000, t0 + 40_000]);
    assert.deepEqual(r.clears, []);
  });

  test('a failing re-fire (session disconnected) stops the keep-alive', async () => {
    const clock = simulatedClock();
    const t0 = clock.now();
    const errors: string[] = [];
    const pm = new PresenceManager(clock, { onError: (_e, w) => errors.push(w.step) });
    const r = recorder(clock, { failFrom: 3 });
    await pm.start('i1', 'c1', 'typing', 300_000, r.task);
    await advance(clock, 100_000);
    assert.deepEqual(r.fires, [t0, t0 + 20_000]); // the third call (t0+40 s) failed, none after
    assert.deepEqual(errors, ['refire']);
    assert.equal(pm.active('i1', 'c1'), null);
  });

  test('a failing first call propagates and schedules nothing', async () => {
    const clock = simulatedClock();
    const pm = new PresenceManager(clock);
    const r = recorder(clock, { failFrom: 1 });
    await assert.rejects(pm.start('i1', 'c1', 'typing', 60_000, r.task), /session disconnected/);
    assert.equal(pm.size, 0);
    await advance(clock, 60_000);
    assert.deepEqual(r.clears, []);
  });

  test('a new request for the same chat replaces the running one; other chats and instances are independent', async () => {
    const clock = simulatedClock();
    const t0 = clock.now();
    const pm = new PresenceManager(clock);
    const a = recorder(clock);
    const b = recorder(clock);
    const other = recorder(clock);
    await pm.start('i1', 'c1', 'typing', 100_000, a.task);
    await pm.start('i2', 'c1', 'typing', 30_000, other.task);
    await advance(clock, 10_000);
    await pm.start('i1', 'c1', 'recording', 30_000, b.task);
    assert.equal(pm.active('i1', 'c1')?.kind, 'recording');
    await advance(clock, 100_000);
    assert.deepEqual(a.fires, [t0]);
    assert.deepEqual(a.clears, []);
    assert.deepEqual(b.fires, [t0 + 10_000, t0 + 30_000]);
    assert.deepEqual(b.clears, [t0 + 40_000]);
    assert.deepEqual(other.fires, [t0, t0 + 20_000]);
    assert.deepEqual(other.clears, [t0 + 30_000]);
  });

  test('stopInstance ends every keep-alive of that instance only', async () => {
    const clock = simulatedClock();
    const pm = new PresenceManager(clock);
    await pm.start('i1', 'c1', 'typing', 100_000, recorder(clock).task);
    await pm.start('i1', 'c2', 'typing', 100_000, recorder(clock).task);
    await pm.start('i2', 'c1', 'typing', 100_000, recorder(clock).task);
    assert.equal(pm.stopInstance('i1'), 2);
    assert.equal(pm.size, 1);
    pm.stopAll();
    assert.equal(pm.size, 0);
  });
});
