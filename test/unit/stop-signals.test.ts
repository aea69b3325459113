/**
 * A stop request (src/stop-signals.ts): the first signal stops gracefully; one arriving within FORCE_AFTER_MS is
 * the same request delivered twice (a terminal's Ctrl-C reaches npm and the gateway, and npm forwards it), and
 * only a later one forces the exit. Signals are emitted on `process` by hand; no signal is really sent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FORCE_AFTER_MS, onStopRequest } from '../../src/stop-signals.js';

function harness() {
  let t = 1_000_000;
  const stops: string[] = [];
  let forced = 0;
  const off = onStopRequest((reason) => stops.push(reason), { env: { MGW_STOP_WITH_PARENT: '0' }, onForce: () => (forced += 1), now: () => t });
  return { stops, forced: () => forced, advance: (ms: number) => (t += ms), off };
}

test('a second SIGINT a few milliseconds after the first (Ctrl-C under npm) does not force the exit', () => {
  const h = harness();
  try {
    process.emit('SIGINT', 'SIGINT');
    h.advance(5);
    process.emit('SIGINT', 'SIGINT');
    assert.deepEqual(h.stops, ['SIGINT']);
    assert.equal(h.forced(), 0);
  } finally {
    h.off();
  }
});

test('a signal FORCE_AFTER_MS or more after the first is the user insisting: forced', () => {
  const h = harness();
  try {
    process.emit('SIGTERM', 'SIGTERM');
    h.advance(FORCE_AFTER_MS);
    process.emit('SIGINT', 'SIGINT');
    assert.deepEqual(h.stops, ['SIGTERM']);
    assert.equal(h.forced(), 1);
  } finally {
    h.off();
  }
});
