/**
 * Quiet hours: "no sending in this local window" (SPEC.md "Instance settings"), time-zone and DST aware.
 *
 * Model. An instant is quiet when the local wall-clock time it reads lies in the setting's span: `[start, end)`
 * when `start < end` (12:00–13:00), `[start, 24:00) ∪ [00:00, end)` when `end < start` (22:00–07:00, crossing
 * midnight). Sending at `end` itself is allowed. A quiet window is a maximal run of quiet instants.
 *
 * That is all, on the two days a year the clocks change too, and it is what the people written to see:
 * - Spring forward (Europe/Berlin 29 March 2026, 02:00 → 03:00): the clocks never read 02:00–02:59, so a window
 *   ending at 02:30 ends at the jump (not an hour late at 03:30), one opening at 02:30 opens at the jump, and one
 *   lying wholly inside the gap does not happen that day.
 * - Fall back (25 October 2026, 03:00 → 02:00): the clocks read 02:00–02:59 twice, and each reading is quiet or not
 *   by the span. 01:00–02:30 is quiet from 01:00 to 02:30 CEST and again from 02:00 to 02:30 CET, with 02:30–02:59
 *   CEST between them open (found from the outside once: the window closed at the first 02:30 and messages went
 *   out at 02:00, 02:10 and 02:20 CET, inside the quiet hours the clocks showed). 22:00–07:00 lasts 8 real hours
 *   in the night to 29 March and 10 in the night to 25 October. A window of nearly a whole day keeps its gap:
 *   02:59–02:00 leaves 02:00–02:58 open both times the clocks read it (an earlier model, which closed a window at
 *   the last reading of its end and opened it at the first of its start, ran two such windows into one and sent
 *   nothing that day). Where a spring-forward skips every reading outside the span (02:40-02:30 on 29 March), that
 *   day has no open instant, and its window runs into the next.
 *
 * How. Between two offset changes of the zone the wall clock runs with the instant, so there the quiet windows
 * are the span's days shifted by the offset; the offset changes (found by sampling every 12 hours and bisecting)
 * cut the days, and quiet runs that touch across a cut are one window. A range of a week around the instant
 * asked about is computed at once and kept (a plan asks about the same days over and over).
 */
import { IANAZone } from 'luxon';
import type { QuietHours } from './settings.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
/** Offset changes are months apart (at least days, in any zone): one sample every 12 hours finds each. */
const SAMPLE_MS = 12 * HOUR;
/**
 * Longer than any quiet window: a span of under a day plus the hour (or half hour) a fall-back adds, or two such
 * spans run into one where a spring-forward skips every reading outside the span (02:40-02:30 on 29 March 2026).
 */
const LONGEST_WINDOW_MS = 2 * DAY + 2 * HOUR;
/** The range computed around an instant asked about: before it (a window holding it began in it), after it. */
const RANGE_BEFORE_MS = 3 * DAY;
const RANGE_AFTER_MS = 5 * DAY;
/** Ranges kept per schedule (instances sharing a setting ask about different days). */
const RANGES_KEPT = 4;

/** A quiet window as instants: sending is not allowed for `start <= t < end`. */
export interface QuietWindow {
  start: number;
  end: number;
}

interface Range {
  from: number;
  to: number;
  /** the quiet windows in [from, to), in order, apart from each other (those at the edges cut by them) */
  windows: QuietWindow[];
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

/** A compiled quiet-hours setting: the zone looked up, the times parsed, and the windows of recent ranges. */
export class QuietSchedule {
  private readonly zone: IANAZone;
  private readonly open: number;
  private readonly close: number;
  private readonly crossesMidnight: boolean;
  // An offset costs an Intl call (~15 µs); a range, about 40 of them. The most recent first.
  private ranges: Range[] = [];

  constructor(qh: QuietHours) {
    this.zone = zoneOf(qh.tz);
    this.open = minutesOf(qh.start) * MINUTE;
    this.close = minutesOf(qh.end) * MINUTE;
    if (this.open === this.close) throw new RangeError('quiet hours start and end must differ');
    this.crossesMidnight = this.close < this.open;
  }

  /** The first window that has not ended at `t` (it contains `t` when `start <= t`). */
  windowAfter(t: number): QuietWindow {
    for (const range of this.ranges) {
      const w = windowIn(range, t);
      if (w) return w;
    }
    const range = this.compute(t - RANGE_BEFORE_MS, t + RANGE_AFTER_MS);
    this.ranges = [range, ...this.ranges.slice(0, RANGES_KEPT - 1)];
    const w = windowIn(range, t);
    // unreachable: a window begins every day but one a spring-forward swallows, and a range holds five after `t`
    if (!w) throw new Error('no quiet window found within five days');
    return w;
  }

  /** Offset of the zone at `t`, in ms. */
  private offset(t: number): number {
    return this.zone.offset(t) * MINUTE;
  }

  /** The quiet windows of [from, to). */
  private compute(from: number, to: number): Range {
    // the instants where the offset changes, with the range's ends: between two of them the wall clock runs evenly
    const cuts = [from];
    let before = from;
    let offset = this.offset(from);
    while (before < to) {
      const at = Math.min(before + SAMPLE_MS, to);
      const next = this.offset(at);
      if (next !== offset) cuts.push(this.changeIn(before, at, offset));
      before = at;
      offset = next;
    }
    cuts.push(to);
    const windows: QuietWindow[] = [];
    for (let i = 0; i + 1 < cuts.length; i++) {
      const a = cuts[i] as number;
      const b = cuts[i + 1] as number;
      if (a >= b) continue;
      const off = this.offset(a);
      // local days whose span reaches into [a, b): from the day before (a span crossing midnight) on
      const last = Math.floor((b - 1 + off) / DAY);
      for (let day = Math.floor((a + off) / DAY) - 1; day <= last; day++) {
        const start = Math.max(a, day * DAY + this.open - off);
        const end = Math.min(b, (this.crossesMidnight ? day + 1 : day) * DAY + this.close - off);
        if (start >= end) continue;
        const prev = windows[windows.length - 1];
        // a run that touches the one before (across a cut, or a day's span into the next) is the same window
        if (prev && prev.end >= start) prev.end = Math.max(prev.end, end);
        else windows.push({ start, end });
      }
    }
    return { from, to, windows };
  }

  /** The first instant in (lo, hi] whose offset is not `offset` (there is one: the offset at `hi` differs). */
  private changeIn(lo: number, hi: number, offset: number): number {
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.offset(mid) === offset) lo = mid;
      else hi = mid;
    }
    return hi;
  }
}

/**
 * The first window of `range` not ended at `t`, when the range can tell: `t` far enough inside it that a window
 * holding `t` began in it, and the window found ending before the range does (else it may go on).
 */
function windowIn(range: Range, t: number): QuietWindow | null {
  if (t < range.from + LONGEST_WINDOW_MS || t >= range.to) return null;
  const { windows } = range;
  let lo = 0;
  let hi = windows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((windows[mid] as QuietWindow).end > t) hi = mid;
    else lo = mid + 1;
  }
  const w = windows[lo];
  return w && w.end < range.to ? w : null;
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
