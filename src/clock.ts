/**
 * The one source of time for the runtime. Everything that plans, waits or expires (planner, dispatcher,
 * TTL, backoff, quiet hours, typing re-fire, webhook retries) reads `now()` and schedules through this, so
 * tests drive it with XState's SimulatedClock instead of sleeping.
 */
import { SimulatedClock } from 'xstate';

export type TimerHandle = unknown;

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** An instant in epoch ms as a Date for PostgreSQL (null and undefined: NULL). */
export const dateOf = (ms: number | null | undefined): Date | null => (ms === null || ms === undefined ? null : new Date(ms));

/**
 * The longest delay node's timers take (2^31 - 1 ms, 24.8 days). Past it setTimeout fires after 1 ms instead, and
 * a waiting job's slot may be 30 days ahead (ttlSeconds goes to 2,592,000): the dispatch timer of an instance with
 * only such a job fired every millisecond, re-armed for the same far instant (8.6 % of a core for one instance,
 * and a warning on stderr each time). A longer delay is armed for this long; what the timer wakes checks the time
 * itself and arms again (the dispatch loop: src/queue/dispatch-loop.ts tick → step → arm).
 */
export const LONGEST_TIMER_MS = 2_147_483_647;

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, Math.min(ms, LONGEST_TIMER_MS));
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** A simulated clock starting at `startMs` (wall-clock ms). Advance it with `increment(ms)` or `set(ms)`. */
export function simulatedClock(startMs: number = Date.UTC(2026, 0, 5, 10, 0, 0)): SimulatedClock & Clock {
  const c = new SimulatedClock();
  c.set(startMs);
  return c as SimulatedClock & Clock;
}

/** Resolve after `ms` on the given clock (simulated time resolves when the test advances it). */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const h = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clock.clearTimeout(h);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Settle with `promise`, or with `onTimeout()` once `ms` passed on `clock`, whichever comes first. `onTimeout`
 * may return a value (a sentinel) or throw (a timeout error). The timer is cleared when the promise wins.
 */
export function raceClock<T, U = never>(clock: Clock, ms: number, promise: Promise<T>, onTimeout: () => U): Promise<T | U> {
  return new Promise<T | U>((resolve, reject) => {
    const timer = clock.setTimeout(() => {
      try {
        resolve(onTimeout());
      } catch (err) {
        reject(err);
      }
    }, Math.max(0, ms));
    promise.then(
      (value) => {
        clock.clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clock.clearTimeout(timer);
        reject(err);
      },
    );
  });
}
