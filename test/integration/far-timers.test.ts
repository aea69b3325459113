/**
 * A job whose slot is further ahead than node's longest timer (2^31 - 1 ms, 24.8 days; a slot may be up to 30 days
 * ahead, ttlSeconds going to 2,592,000) does not make its instance's dispatch timer fire every millisecond: with a
 * delay past that limit node fires after 1 ms (and warns), and the queue armed the same far instant again each
 * time (8.6 % of a core for one such instance). The system clock arms such a timer for the longest delay instead
 * (src/clock.ts LONGEST_TIMER_MS); the queue checks what is due when it fires.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { LONGEST_TIMER_MS, systemClock } from '../../src/clock.js';

let t: TestGateway | undefined;
after(async () => {
  await t?.stop();
});

/** The TimeoutOverflowWarnings node emits while `run` runs (each is a timer set past the longest delay). */
async function overflowsDuring(run: () => Promise<void>): Promise<number> {
  let n = 0;
  const seen = (w: Error) => {
    if (w.name === 'TimeoutOverflowWarning') n += 1;
  };
  process.on('warning', seen);
  try {
    await run();
    // warnings are emitted on the next tick of the call that caused them
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off('warning', seen);
  }
  return n;
}

test('the system clock arms a delay past the longest timer for the longest one, never for 1 ms', async () => {
  let fired = false;
  const overflows = await overflowsDuring(async () => {
    const h = systemClock.setTimeout(() => (fired = true), LONGEST_TIMER_MS + 86_400_000);
    await new Promise((r) => setTimeout(r, 20));
    systemClock.clearTimeout(h);
  });
  assert.equal(fired, false, 'a timer 25.8 days ahead did not fire within 20 ms');
  assert.equal(overflows, 0);
});

test('an instance whose only job waits 27 days ahead does not wake every millisecond', async () => {
  t = await startTestGateway({ label: 'far_timers' });
  const { apiKey } = await t.createInstance('far');
  const gw = t;
  const overflows = await overflowsDuring(async () => {
    const r = await gw.api(apiKey, 'POST', '/api/v2/send-message', {
      phone: '4915112345678', message: 'in four weeks', ttlSeconds: 2_592_000, notBefore: new Date(Date.now() + 27 * 86_400_000).toISOString(),
    });
    assert.equal(r.status, 202, r.text);
    // with the overflow, the dispatch timer fired and warned about every millisecond meanwhile
    await new Promise((r2) => setTimeout(r2, 50));
  });
  assert.equal(overflows, 0, `${overflows} timers were set past node's longest delay`);
});
