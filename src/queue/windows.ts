/**
 * Sliding windows over dispatch instants (SPEC.md "Limits": "the last 60 minutes and the last 24 hours counted
 * from now"). A dispatch at instant d counts at time t when t - span < d <= t. Every message in `sending`,
 * `sent` or `unknown` is one dispatch instant (its `dispatched_at`, or its planned slot inside a plan).
 *
 * `WindowCounter` is the planner's incremental form: instants in a sorted array, one pointer per window edge.
 * The planner only moves forward in time, so each check is amortised O(1) instead of a rescan of the history.
 */
import type { InstanceSettings, QueueMode, QuietHours } from './settings.js';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** Dispatches counted at `t` in the window of length `span`. Any order; linear, for one-off questions. */
export function countInWindow(instants: readonly number[], t: number, span: number): number {
  let n = 0;
  for (const d of instants) if (d > t - span && d <= t) n++;
  return n;
}

/** Dispatches counted at `t` in the window of length `span`, of instants in ascending order: two binary searches. */
export function countInSortedWindow(sorted: readonly number[], t: number, span: number): number {
  return upperBound(sorted, t, 0, sorted.length) - upperBound(sorted, t - span, 0, sorted.length);
}

/** The oldest dispatch counted at `t` in the window of length `span`, or null when the window is empty. */
export function oldestInWindow(instants: readonly number[], t: number, span: number): number | null {
  let oldest: number | null = null;
  for (const d of instants) if (d > t - span && d <= t && (oldest === null || d < oldest)) oldest = d;
  return oldest;
}

/** Budget left under `limit` with `used` counted; null when unlimited. Never negative. */
export function remaining(limit: number | null, used: number): number | null {
  return limit === null ? null : Math.max(0, limit - used);
}

/** First index in sorted `a[from, to)` whose value is > x (`to` when none). */
export function upperBound(a: readonly number[], x: number, from: number, to: number): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Hourly and daily window counts over a growing set of dispatch instants, for non-decreasing query times.
 * `seek(t)` positions the window edges at t; `used`/`oldest` then answer for t. Going back in time works
 * (binary search) but is not the fast path.
 *
 * A counter is a view `[start, end)` of a sorted array it may share with its clones. A plan's tail keeps one,
 * and every acceptance appended to it clones it (the tail is immutable: a proposal that is not committed
 * leaves the old one valid). The clone shares the array instead of copying it: only the clone that appends at
 * the array's end pushes onto it; any other add (a clone of an older view, an insert in the middle) copies
 * its view first. An instance with a day of planned slots used to copy them all (and promote the copy to the
 * old generation, as it lives until the instance's next acceptance) for every message it accepted.
 */
export class WindowCounter {
  private times: number[];
  /** the view: `times[start, end)`, sorted */
  private start = 0;
  private end: number;
  private at = Number.NEGATIVE_INFINITY;
  // edges as indices into `times`, within [start, end]
  private hi = 0; // first index > at
  private loHour = 0; // first index > at - 1 h
  private loDay = 0; // first index > at - 24 h

  constructor(instants: readonly number[] = []) {
    this.times = [...instants].sort((a, b) => a - b);
    this.end = this.times.length;
  }

  seek(t: number): void {
    const a = this.times;
    const end = this.end;
    if (t < this.at) this.place(t);
    else {
      while (this.hi < end && a[this.hi]! <= t) this.hi++;
      while (this.loHour < end && a[this.loHour]! <= t - HOUR_MS) this.loHour++;
      while (this.loDay < end && a[this.loDay]! <= t - DAY_MS) this.loDay++;
    }
    this.at = t;
  }

  usedHour(): number {
    return this.hi - this.loHour;
  }

  usedDay(): number {
    return this.hi - this.loDay;
  }

  /** Oldest dispatch in the hourly window at the sought time (null if none). */
  oldestHour(): number | null {
    return this.loHour < this.hi ? this.times[this.loHour]! : null;
  }

  oldestDay(): number | null {
    return this.loDay < this.hi ? this.times[this.loDay]! : null;
  }

  /** Record a dispatch. Appending at or after the newest instant is O(1); anything else is inserted in order. */
  add(instant: number): void {
    if (this.end === this.start || this.times[this.end - 1]! <= instant) {
      // Appended after every other instant, so the edges only move if they sat at the old end.
      if (this.end !== this.times.length) this.own();
      const end = this.end;
      const t = this.at;
      this.times.push(instant);
      this.end = end + 1;
      if (instant <= t) this.hi++;
      if (this.loHour === end && instant <= t - HOUR_MS) this.loHour++;
      if (this.loDay === end && instant <= t - DAY_MS) this.loDay++;
      return;
    }
    this.own();
    const a = this.times;
    a.splice(upperBound(a, instant, 0, a.length), 0, instant);
    this.end = a.length;
    this.place(this.at);
  }

  /** Newest recorded instant, or null. */
  newest(): number | null {
    return this.end > this.start ? this.times[this.end - 1]! : null;
  }

  /**
   * An independent counter for queries at `from` or later, without the instants that can no longer count then
   * (at or before `from` - 24 h). `from`, not the sought time: a plan may have looked ahead (a gate past a job
   * that then proved unreachable) while its cursor stayed behind, and the next plan starts from that cursor.
   * O(log n): it shares this one's array (see the class).
   */
  clone(from: number = this.at): WindowCounter {
    const cut = upperBound(this.times, from - DAY_MS, this.start, this.end);
    const c = new WindowCounter();
    c.times = this.times;
    c.start = cut;
    c.end = this.end;
    if (this.at >= from) {
      // every edge is at or after the cut (loDay is the first instant after at - 24 h ≥ from - 24 h)
      c.at = this.at;
      c.hi = this.hi;
      c.loHour = this.loHour;
      c.loDay = this.loDay;
    } else {
      // placed at `from` by binary search: a seek only moves forward from there. Left unsought (at = -∞, the
      // edges at the cut), the first seek walked every instant of the day before `from` one by one, and a
      // plan's tail is cloned for every acceptance (src/queue/plan.ts run): with a day of slots planned at
      // 5 s apart, 2 × 17,280 steps per accepted message.
      c.place(from);
      c.at = from;
    }
    // an array whose live part is under half of it is copied: what the cuts dropped is then freed
    if (cut > 64 && cut * 2 > c.end) c.own();
    return c;
  }

  /** Copy the view into an array of this counter's own (before a change its clones must not see). */
  private own(): void {
    const shift = this.start;
    this.times = this.times.slice(shift, this.end);
    this.start = 0;
    this.end = this.times.length;
    this.hi -= shift;
    this.loHour -= shift;
    this.loDay -= shift;
  }

  /** The edges for `t` by binary search (going back in time, or after an insert in the middle). */
  private place(t: number): void {
    const a = this.times;
    this.hi = upperBound(a, t, this.start, this.end);
    this.loHour = upperBound(a, t - HOUR_MS, this.start, this.end);
    this.loDay = upperBound(a, t - DAY_MS, this.start, this.end);
  }
}

/** SPEC.md "Limits object". */
export interface LimitsObject {
  maxPerHour: number | null;
  maxPer24h: number | null;
  usedLastHour: number | null;
  usedLast24h: number | null;
  remainingHour: number | null;
  remaining24h: number | null;
  minDelayMs: number;
  maxDelayMs: number;
  quietHours: QuietHours | null;
  window: 'sliding';
}

/**
 * The Limits object for responses, at `now`, from the dispatch instants that count (`sending`, `sent`,
 * `unknown`). In `memory-degraded` the counts are not reported (SPEC.md): used* and remaining* are null.
 */
export function limitsObject(
  settings: Pick<InstanceSettings, 'maxPerHour' | 'maxPer24h' | 'minDelayMs' | 'maxDelayMs' | 'quietHours'>,
  history: readonly number[],
  now: number,
  mode: QueueMode,
  /** `history` is in ascending order: counted by binary search (every acceptance answers with the limits) */
  sorted = false,
): LimitsObject {
  const counted = mode !== 'memory-degraded';
  const count = sorted ? countInSortedWindow : countInWindow;
  const usedLastHour = counted ? count(history, now, HOUR_MS) : null;
  const usedLast24h = counted ? count(history, now, DAY_MS) : null;
  return {
    maxPerHour: settings.maxPerHour,
    maxPer24h: settings.maxPer24h,
    usedLastHour,
    usedLast24h,
    remainingHour: usedLastHour === null ? null : remaining(settings.maxPerHour, usedLastHour),
    remaining24h: usedLast24h === null ? null : remaining(settings.maxPer24h, usedLast24h),
    minDelayMs: settings.minDelayMs,
    maxDelayMs: settings.maxDelayMs,
    quietHours: settings.quietHours === null ? null : { ...settings.quietHours },
    window: 'sliding',
  };
}
