/**
 * Quiet hours: "no sending in this local window" (SPEC.md "Instance settings"), time-zone and DST aware.
 *
 * Model. Every local calendar day D owns one window: it opens at D `start` and closes at `end` on D (when
 * `start < end`, e.g. 12:00–13:00) or on D+1 (when `end < start`, e.g. 22:00–07:00, crossing midnight). A window
 * is the half-open interval of instants [open, close): sending at `close` itself is allowed.
 *
 * Turning a local wall-clock time into an instant, on the two days a year where that is not one-to-one:
 * - A time that does not exist (spring forward; in Europe/Berlin 02:00–02:59 on 29 March 2026) resolves to the
 *   instant the clocks jump, i.e. the first instant whose local time is at or after it (03:00 CEST). So a window
 *   ending at 02:30 ends at the jump, not an hour late at 03:30; a window opening at 02:30 opens at the jump; a
 *   window lying wholly inside the gap does not happen that day.
 * - A time that exists twice (fall back; 02:00–02:59 on 25 October 2026) is taken so that the window covers every
 *   instant whose local time lies in it: a window opens at the first occurrence of its start (CEST) and closes at
 *   the last occurrence of its end (CET). So 01:00–02:30 on 25 October is quiet from 01:00 CEST to 02:30 CET, both
 *   times the clocks read 02:00–02:30. Found from the outside: the window closed at the first 02:30, and three
 *   messages went out at 02:00, 02:10 and 02:20 CET, inside the quiet hours the clocks showed. Quiet hours are a
 *   promise to the people written to: on these two days a window may be longer than its local span, never shorter.
 *   A window that closes that late may reach the next day's (a window of nearly a whole day): the two are one.
 * Consequently 22:00–07:00 lasts 8 real hours in the night to 29 March 2026 and 10 in the night to 25 October.
 */
import { IANAZone } from 'luxon';
import type { QuietHours } from './settings.js';

const MINUTE = 60_000;
const DAY = 86_400_000;

/** A quiet window as instants: sending is not allowed for `start <= t < end`. */
export interface QuietWindow {
  start: number;
  end: number;
}

function zoneOf(tz: string): IANAZone {
  const zone = IANAZone.create(tz);
  if (!zone.isValid) throw new RangeError(`invalid time zone: ${tz}`);
  return zone;
}

function minutesOf(hhmm: string): number {
  const m = /^(\d{2}):(\d{2})$/.exec(hhmm);
  if (!m) throw new RangeError(`invalid HH:MM: ${hhmm}`);
  return Number(m[1]) * 60 + Number(m[2]);
}

/** Local wall-clock reading of instant `t`, expressed as if it were UTC milliseconds. */
const wallOf = (zone: IANAZone, t: number) => t + zone.offset(t) * MINUTE;

/**
 * The instant of local wall-clock time `wall` (ms as if UTC), with the gap and overlap rules above: a time that
 * exists twice is its `first` occurrence (a window's start) or its last (`first` false: a window's end).
 */
function instantOf(zone: IANAZone, wall: number, first: boolean): number {
  // Offsets a day either side bracket any single DST change near `wall`.
  const a = wall - zone.offset(wall - DAY) * MINUTE;
  const b = wall - zone.offset(wall + DAY) * MINUTE;
  const valid = [a, b].filter((t) => wallOf(zone, t) === wall);
  if (valid.length > 0) return first ? Math.min(...valid) : Math.max(...valid);
  // In a gap: the first instant whose wall clock reads `wall` or later. The wall clock is monotone across a
  // spring-forward, so bisect between the two candidates.
  let lo = Math.min(a, b);
  let hi = Math.max(a, b);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallOf(zone, mid) >= wall) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** A compiled quiet-hours setting: the zone looked up and the times parsed once. */
export class QuietSchedule {
  private readonly zone: IANAZone;
  private readonly open: number;
  private readonly close: number;
  private readonly crossesMidnight: boolean;
  // Resolving a wall-clock time costs a few Intl calls (~20 µs); a plan walks the same days repeatedly.
  private readonly days = new Map<number, QuietWindow>();

  constructor(qh: QuietHours) {
    this.zone = zoneOf(qh.tz);
    this.open = minutesOf(qh.start) * MINUTE;
    this.close = minutesOf(qh.end) * MINUTE;
    if (this.open === this.close) throw new RangeError('quiet hours start and end must differ');
    this.crossesMidnight = this.close < this.open;
  }

  /** The window owned by local day number `day` (days since 1970-01-01 in local time); may be empty. */
  private windowOfDay(day: number): QuietWindow {
    const cached = this.days.get(day);
    if (cached) return cached;
    if (this.days.size > 1000) this.days.clear();
    const w = this.resolveDay(day);
    this.days.set(day, w);
    return w;
  }

  private resolveDay(day: number): QuietWindow {
    const start = instantOf(this.zone, day * DAY + this.open, true);
    const end = instantOf(this.zone, (this.crossesMidnight ? day + 1 : day) * DAY + this.close, false);
    return { start, end };
  }

  /**
   * Day `day`'s window `w` with the next days' windows that open before it closes (a window that closes in a
   * repeated hour can reach the next one's start): where `w` ends, sending is allowed.
   */
  private joined(w: QuietWindow, day: number): QuietWindow {
    let end = w.end;
    for (let next = day + 1; next <= day + 2; next++) {
      const n = this.windowOfDay(next);
      if (n.end <= n.start || n.start > end) break;
      end = Math.max(end, n.end);
    }
    return end === w.end ? w : { start: w.start, end };
  }

  /** The first window that has not ended at `t` (it contains `t` when `start <= t`). */
  windowAfter(t: number): QuietWindow {
    const today = Math.floor(wallOf(this.zone, t) / DAY);
    // Yesterday's window may still be open (crossing midnight); a day whose window fell into a DST gap is empty.
    for (let day = today - 1; day <= today + 3; day++) {
      const w = this.windowOfDay(day);
      if (w.end > w.start && w.end > t) return this.joined(w, day);
    }
    throw new Error('no quiet window found within four days'); // unreachable: at most one day is empty
  }
}

// Schedules are immutable apart from their day cache, so instances share one per setting: each re-plan of an
// instance would otherwise resolve the same days from scratch.
const schedules = new Map<string, QuietSchedule>();

/** The shared compiled schedule for a quiet-hours setting. */
export function quietSchedule(qh: QuietHours): QuietSchedule {
  const key = `${qh.start}|${qh.end}|${qh.tz}`;
  let s = schedules.get(key);
  if (!s) {
    s = new QuietSchedule(qh);
    if (schedules.size >= 256) schedules.clear();
    schedules.set(key, s);
  }
  return s;
}

/** Is sending forbidden at instant `ms`? Always false without quiet hours. */
export function isQuiet(ms: number, qh: QuietHours | null): boolean {
  if (qh === null) return false;
  return quietSchedule(qh).windowAfter(ms).start <= ms;
}

/**
 * The instant the quiet window containing `ms` ends (the first instant sending is allowed again);
 * `ms` itself when `ms` is not in quiet hours.
 */
export function quietEnd(ms: number, qh: QuietHours | null): number {
  if (qh === null) return ms;
  const w = quietSchedule(qh).windowAfter(ms);
  return w.start <= ms ? w.end : ms;
}

/**
 * Quiet-hours checks for a caller whose instants mostly move forward (the planner): the current window is
 * cached, so a plan over thousands of jobs touches the time-zone database about once per planned day.
 */
export class QuietCursor {
  private readonly schedule: QuietSchedule | null;
  private window: QuietWindow | null = null;
  private from = Number.POSITIVE_INFINITY;

  constructor(qh: QuietHours | null) {
    this.schedule = qh === null ? null : quietSchedule(qh);
  }

  private windowAt(t: number): QuietWindow | null {
    if (this.schedule === null) return null;
    if (this.window === null || t < this.from || t >= this.window.end) {
      this.window = this.schedule.windowAfter(t);
      this.from = t;
    }
    return this.window;
  }

  isQuiet(t: number): boolean {
    const w = this.windowAt(t);
    return w !== null && w.start <= t;
  }

  /** End of the quiet window containing `t`, or `t` when not quiet. */
  end(t: number): number {
    const w = this.windowAt(t);
    return w !== null && w.start <= t ? w.end : t;
  }
}
