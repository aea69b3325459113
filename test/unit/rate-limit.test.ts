import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { simulatedClock } from '../../src/clock.js';
import { InteractionLimiter } from '../../src/http/rate-limit.js';
import { DomainError } from '../../src/errors.js';

describe('InteractionLimiter (60 calls per 60 s per instance, sliding)', () => {
  test('the 61st call inside the window is refused with the wait until the oldest call leaves', () => {
    const clock = simulatedClock();
    const limiter = new InteractionLimiter(clock);
    for (let i = 0; i < 60; i++) {
      assert.equal(limiter.take('a').allowed, true, `call ${i + 1}`);
      clock.increment(500); // 60 calls spread over 30 s
    }
    const d = limiter.take('a');
    assert.equal(d.allowed, false);
    // first call at t0, now t0+30000: room opens at t0+60000
    assert.deepEqual(d, { allowed: false, retryAfterMs: 30_000 });
    assert.equal(limiter.used('a'), 60, 'a refused call is not counted');
  });

  test('the window slides: calls age out one by one instead of all at a fixed boundary', () => {
    const clock = simulatedClock();
    const limiter = new InteractionLimiter(clock);
    for (let i = 0; i < 60; i++) {
      limiter.take('a');
      clock.increment(1000);
    }
    // now t0+60000: the call at t0 left, the one at t0+1000 has not
    assert.equal(limiter.take('a').allowed, true);
    assert.equal(limiter.take('a').allowed, false);
    clock.increment(1000);
    assert.equal(limiter.take('a').allowed, true);
    assert.equal(limiter.take('a').allowed, false);
  });

  test('a burst is let in again only a full window after it started', () => {
    const clock = simulatedClock();
    const limiter = new InteractionLimiter(clock);
    for (let i = 0; i < 60; i++) assert.equal(limiter.take('a').allowed, true);
    clock.increment(59_999);
    const d = limiter.take('a');
    assert.deepEqual(d, { allowed: false, retryAfterMs: 1 });
    clock.increment(1);
    assert.equal(limiter.take('a').allowed, true);
  });

  test('instances have their own windows', () => {
    const clock = simulatedClock();
    const limiter = new InteractionLimiter(clock);
    for (let i = 0; i < 60; i++) limiter.take('a');
    assert.equal(limiter.take('a').allowed, false);
    assert.equal(limiter.take('b').allowed, true);
    limiter.reset('a');
    assert.equal(limiter.take('a').allowed, true);
  });

  test('INTERACTION_RATE_POINTS sets the number of calls; consume throws 429 RATE_LIMITED with retryAfterMs', () => {
    const clock = simulatedClock();
    const limiter = new InteractionLimiter(clock, { points: 3 });
    limiter.consume('a');
    limiter.consume('a');
    limiter.consume('a');
    clock.increment(10_000);
    assert.throws(
      () => limiter.consume('a'),
      (err: unknown) =>
        err instanceof DomainError && err.status === 429 && err.code === 'RATE_LIMITED' && err.data.retryAfterMs === 50_000,
    );
    assert.throws(() => new InteractionLimiter(clock, { points: 0 }), RangeError);
  });
});
