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

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/**
 * Timers that a busy process also fires from its hot path (`poll`), not only from node's timer phase.
 *
 * Node runs due timers once per turn of its event loop, after the turn's I/O: under a load of requests, a turn
 * handles every socket that became readable (tens of requests, each a few hundred µs of work on a slow
 * machine), and a timer due meanwhile waits for all of them: 33 ms at p99 on machine M of docs/benchmarks.md,
 * while 50 other instances accepted at full speed. The dispatch lane arms its next slot on this clock, and the
 * HTTP server polls it as each request arrives (src/gateway.ts), so a due slot is taken within about one
 * request's work of its instant however busy the loop is.
 *
 * `poll` fires only what is past due (`now() > at`: node fires a timer 1 ms after its instant at the soonest, and a
 * simulated clock whose time stands still fires nothing until a test moves it) and runs it as a microtask, after
 * the code that polled and before the next I/O callback, never inside it. Each timer fires once: from `poll` or from its timer on the
 * base clock, whichever comes first; an idle process fires them from the latter alone. The timers wait in a
 * binary heap by instant (a node of ten thousand instances arms one each): set, clear and fire in O(log n),
 * and a poll with nothing due reads the clock and the heap's top.
 */
export class PolledTimers implements Clock {
  private readonly heap: PolledTimer[] = [];

  constructor(private readonly base: Clock) {}

  now(): number {
    return this.base.now();
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const wait = Math.max(0, ms);
    const timer: PolledTimer = { at: this.base.now() + wait, fn, handle: null, index: -1 };
    timer.handle = this.base.setTimeout(() => this.fire(timer), wait);
    this.push(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    const timer = handle as PolledTimer;
    if (timer.index < 0) return;
    this.base.clearTimeout(timer.handle);
    this.remove(timer);
  }

  /** Fire, each as a microtask, the timers whose instant has passed. */
  poll(): void {
    const first = this.heap[0];
    if (first === undefined || first.at >= this.base.now()) return;
    const now = this.base.now();
    for (let top = this.heap[0]; top !== undefined && top.at < now; top = this.heap[0]) {
      this.base.clearTimeout(top.handle);
      this.remove(top);
      queueMicrotask(top.fn);
    }
  }

  /** Timers waiting (for /debug and tests). */
  get size(): number {
    return this.heap.length;
  }

  private fire(timer: PolledTimer): void {
    if (timer.index < 0) return;
    this.remove(timer);
    timer.fn();
  }

  private push(timer: PolledTimer): void {
    timer.index = this.heap.length;
    this.heap.push(timer);
    this.up(timer.index);
  }

  private remove(timer: PolledTimer): void {
    const i = timer.index;
    const last = this.heap.pop() as PolledTimer;
    timer.index = -1;
    if (last === timer) return;
    this.heap[i] = last;
    last.index = i;
    this.down(i);
    this.up(last.index);
  }

  private up(i: number): void {
    const { heap } = this;
    const t = heap[i] as PolledTimer;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = heap[p] as PolledTimer;
      if (parent.at <= t.at) break;
      heap[i] = parent;
      parent.index = i;
      i = p;
    }
    heap[i] = t;
    t.index = i;
  }

  private down(i: number): void {
    const { heap } = this;
    const n = heap.length;
    const t = heap[i] as PolledTimer;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && (heap[r] as PolledTimer).at < (heap[l] as PolledTimer).at ? r : l;
      const child = heap[c] as PolledTimer;
      if (child.at >= t.at) break;
      heap[i] = child;
      child.index = i;
      i = c;
    }
    heap[i] = t;
    t.index = i;
  }
}

interface PolledTimer {
  at: number;
  fn: () => void;
  /** its timer on the base clock */
  handle: TimerHandle;
  /** its place in the heap; -1 once fired or cleared */
  index: number;
}

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
