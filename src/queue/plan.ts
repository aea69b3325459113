/**
 * The planner: SPEC.md "Planner rule" as pure functions over plain millisecond instants.
 *
 *   1. Waiting jobs go out by priority descending, then arrival (seq) ascending. Limits move *when*, never *which*.
 *   2. Start t = max(now, lastDispatchAt + random(minDelayMs, maxDelayMs)); t = now without a last dispatch.
 *   3. Up to 200 attempts until every constraint holds: inside quiet hours → end of the quiet window; hourly
 *      limit reached → oldest dispatch in the last hour + 1 h + 1 ms; daily limit reached → oldest in the last
 *      24 h + 24 h + 1 ms. Dispatches the plan itself placed count like history.
 *   4. The job is placed at t; the cursor moves to t + random(minDelayMs, maxDelayMs).
 *   5. A job whose t falls after its expiresAt is unreachable (422 TTL_UNREACHABLE at acceptance).
 *
 * `notBefore`. A job is *eligible* from its notBefore on. At each step the planner takes the best eligible job
 * (rule 1 among eligible jobs); when none is eligible it idles to the next notBefore. So a reminder scheduled
 * for next week waits alone instead of holding every later job behind it (which, with a 24 h TTL, would make
 * each of them TTL_UNREACHABLE). Without notBefore this is exactly rules 1–4 in sort order.
 *
 * Attempt cap. The constraints do not depend on the job, so the walk of rule 3 is done once per step ("gate").
 * If 200 attempts do not find a slot (e.g. a limit lowered below what the window already holds), no job can be
 * placed from there: every remaining job is `unplaced` with a `retryAt` (the instant reached; plan again then),
 * or unreachable if that instant is already past its expiresAt. A limit of 0 never has a slot: unreachable.
 *
 * Cost: one sort, a pointer over the sorted jobs plus a heap for the few with notBefore, and amortised O(1)
 * window and quiet-hours checks (windows.ts, quiet-hours.ts): a full plan of 5,000 jobs takes 1–3 ms
 * (bench/replan.ts).
 */
import { QuietCursor, isQuiet } from './quiet-hours.js';
import type { InstanceSettings } from './settings.js';
import { DAY_MS, HOUR_MS, WindowCounter, countInWindow } from './windows.js';
import { Waiting, before, type PlanJob } from './plan-waiting.js';
import { mathRandomDelay, type RandomDelay } from './random-delay.js';

export const MAX_ATTEMPTS = 200;

export { mathRandomDelay, seededRandomDelay, stableRandomDelay, type RandomDelay } from './random-delay.js';

export type { PlanJob };

export type PlanSettings = Pick<InstanceSettings, 'maxPerHour' | 'maxPer24h' | 'minDelayMs' | 'maxDelayMs' | 'quietHours'>;

export interface PlanInput {
  /** Waiting jobs (queued and scheduled), any order. */
  jobs: readonly PlanJob[];
  /** Instants of dispatches that count (sending, sent, unknown, degraded write-backs), last 24 h at least. */
  history: readonly number[];
  settings: PlanSettings;
  /** The last actual dispatch (persisted), or null if there never was one. */
  lastDispatchAt: number | null;
  now: number;
  random?: RandomDelay;
}

export interface Placement {
  jobId: string;
  scheduledAt: number;
}

export interface Unplaced {
  jobId: string;
  /** Plan again at this instant: 200 attempts got this far without finding a slot. */
  retryAt: number;
}

export interface PlanResult {
  /** In dispatch order (scheduledAt ascending, then rule 1); the index is the queue position. */
  placements: Placement[];
  /** For each placement, the job object the plan was given (the same object, not a copy). */
  placedJobs: PlanJob[];
  /** For each placement, the cursor after it (its slot plus the pause that follows it, rule 4). */
  after: number[];
  /** For each placement, whether the plan ran out of eligible jobs just before it (or may have: an append). */
  idled: boolean[];
  /** Jobs whose earliest slot is after their expiresAt (or never exists: a limit of 0). */
  unreachable: string[];
  /** Jobs that hit the 200-attempt cap before their expiresAt. */
  unplaced: Unplaced[];
  /** State after the last job, for `planAppend`. */
  tail: PlanTail;
}

type Gate = { kind: 'slot'; at: number } | { kind: 'never' } | { kind: 'exhausted'; at: number };

/** Rule 3: the earliest instant at or after `from` where every constraint holds. */
function gate(from: number, s: PlanSettings, quiet: QuietCursor, windows: WindowCounter): Gate {
  let t = from;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (quiet.isQuiet(t)) {
      t = quiet.end(t);
      continue;
    }
    windows.seek(t);
    if (s.maxPerHour !== null && windows.usedHour() >= s.maxPerHour) {
      const oldest = windows.oldestHour();
      if (oldest === null) return { kind: 'never' };
      t = oldest + HOUR_MS + 1;
      continue;
    }
    if (s.maxPer24h !== null && windows.usedDay() >= s.maxPer24h) {
      const oldest = windows.oldestDay();
      if (oldest === null) return { kind: 'never' };
      t = oldest + DAY_MS + 1;
      continue;
    }
    return { kind: 'slot', at: t };
  }
  return { kind: 'exhausted', at: t };
}

/**
 * Where a plan ended: cursor, window contents, quiet-hours cache, the last job in rule-1 order and where the
 * plan last ran out of eligible jobs. Opaque; pass it to `planAppend`. Never mutated: `planAppend` returns a
 * new one.
 */
export class PlanTail {
  /** @internal */
  constructor(
    readonly settings: PlanSettings,
    readonly random: RandomDelay,
    /** Where the next job could go (before rule 3). */
    readonly cursor: number,
    /** Set once the attempt cap was hit: nothing after this point was placed; plan again then. */
    readonly exhaustedAt: number | null,
    /**
     * Where the cursor went the last time no job was eligible (the next notBefore). The plan has a gap before
     * it: a new job allowed before this instant would have filled the gap, so it cannot simply be appended.
     */
    readonly idleUntil: number,
    /** The latest `now` this plan was made or appended at. */
    readonly plannedAt: number,
    /** The last job of the plan in rule-1 order (placed or not), or null for an empty plan. */
    readonly lastJob: PlanJob | null,
    /** @internal */ readonly windows: WindowCounter,
    /** @internal */ readonly quiet: QuietCursor,
  ) {}
}

/** Run the eligible-first walk over `jobs`, continuing from `tail`; mutates nothing it was given. */
function run(jobs: readonly PlanJob[], from: PlanTail): PlanResult {
  const s = from.settings;
  const random = from.random;
  const windows = from.windows.clone(from.cursor);
  const quiet = from.quiet;
  const waiting = new Waiting(jobs);
  const placements: Placement[] = [];
  const placedJobs: PlanJob[] = [];
  const after: number[] = [];
  const idled: boolean[] = [];
  // an append continues after a plan that may have ended idle: its first placement may follow a gap
  let idle = from.idleUntil > Number.NEGATIVE_INFINITY;
  const unreachable: string[] = [];
  const unplaced: Unplaced[] = [];
  let cursor = from.cursor;
  let exhaustedAt = from.exhaustedAt;
  let idleUntil = from.idleUntil;
  let g: Gate | null = null; // gate at `cursor`; valid until something is placed

  while (!waiting.empty) {
    if (exhaustedAt !== null) {
      // Past the attempt cap nothing is placed; every remaining job waits for the next plan.
      for (const job of waiting.drain()) {
        if (job.expiresAt < exhaustedAt) unreachable.push(job.id);
        else unplaced.push({ jobId: job.id, retryAt: exhaustedAt });
      }
      break;
    }
    g ??= gate(cursor, s, quiet, windows);
    if (g.kind === 'exhausted') {
      exhaustedAt = g.at;
      continue;
    }
    if (g.kind === 'never') {
      for (const job of waiting.drain()) unreachable.push(job.id);
      break;
    }
    const at = g.at;
    waiting.admit(at);
    const job = waiting.take();
    if (job === undefined) {
      // Nobody may go yet: idle until the next notBefore (rule 2's max(t, notBefore)).
      cursor = Math.max(cursor, waiting.nextNotBefore() ?? cursor);
      idleUntil = cursor;
      idle = true;
      g = null;
      continue;
    }
    if (at > job.expiresAt) {
      unreachable.push(job.id); // takes no slot: the next job gets the same gate
      continue;
    }
    placements.push({ jobId: job.id, scheduledAt: at });
    placedJobs.push(job);
    windows.seek(at);
    windows.add(at);
    cursor = at + random(s.minDelayMs, s.maxDelayMs, job.id);
    after.push(cursor);
    idled.push(idle);
    idle = false;
    g = null;
  }

  const last = waiting.last;
  const lastJob = last === null ? from.lastJob : from.lastJob === null || before(from.lastJob, last) ? last : from.lastJob;
  const tail = new PlanTail(s, random, cursor, exhaustedAt, idleUntil, from.plannedAt, lastJob, windows, quiet);
  return { placements, placedJobs, after, idled, unreachable, unplaced, tail };
}

/** The empty plan at `now`: rule 2's start cursor, the history in the windows. */
function startTail(input: Omit<PlanInput, 'jobs'>): PlanTail {
  const s = input.settings;
  const random = input.random ?? mathRandomDelay;
  const cursor =
    input.lastDispatchAt === null
      ? input.now
      : Math.max(input.now, input.lastDispatchAt + random(s.minDelayMs, s.maxDelayMs, 'start'));
  const windows = new WindowCounter(input.history.filter((d) => d > input.now - DAY_MS));
  return new PlanTail(s, random, cursor, null, Number.NEGATIVE_INFINITY, input.now, null, windows, new QuietCursor(s.quietHours));
}

/** A full (re-)plan of every waiting job. */
export function planAll(input: PlanInput): PlanResult {
  return run(input.jobs, startTail(input));
}

/**
 * The walk continued from a point inside a plan (src/queue/plan-insert.ts): `cursor` is where the next job
 * could go, `counted` the instants the windows count there (the history and the placements before it).
 */
export function planFrom(jobs: readonly PlanJob[], at: { settings: PlanSettings; random: RandomDelay; cursor: number; counted: readonly number[]; now: number }): PlanResult {
  const windows = new WindowCounter(at.counted.filter((d) => d > at.now - DAY_MS));
  const start = new PlanTail(at.settings, at.random, at.cursor, null, Number.NEGATIVE_INFINITY, at.now, null, windows, new QuietCursor(at.settings.quietHours));
  return run(jobs, start);
}

/**
 * Plan newly accepted jobs after an existing plan without re-planning the others: the result equals `planAll`
 * over old and new jobs together (same input, a RandomDelay that is a function of its key), provided a full
 * plan at `now` would leave the old jobs where they are. Otherwise this returns null and the caller runs
 * `planAll`. The cases where appending cannot equal a full plan:
 *
 * - a new job does not go after every planned one in rule-1 order (a higher priority overtakes: others move);
 * - a new job is allowed (max(now, notBefore)) before the plan's last gap ends (`idleUntil`): a full plan puts
 *   it into the gap in front of the notBefore job instead of behind it (issue 13, finding 4);
 * - the plan stopped at the attempt cap (nothing after `exhaustedAt` was placed: plan again);
 * - `now` is earlier than the plan (the clock went back): the plan's start no longer holds.
 *
 * `now` lifts the cursor when time has passed since the plan was made.
 */
export function planAppend(tail: PlanTail, jobs: readonly PlanJob[], now: number): PlanResult | null {
  if (tail.exhaustedAt !== null || now < tail.plannedAt) return null;
  for (const job of jobs) {
    if (tail.lastJob !== null && !before(tail.lastJob, job)) return null;
    if (Math.max(job.notBefore ?? Number.NEGATIVE_INFINITY, now) < tail.idleUntil) return null;
  }
  const lifted = new PlanTail(tail.settings, tail.random, Math.max(tail.cursor, now), null, tail.idleUntil, now, tail.lastJob, tail.windows, tail.quiet);
  return run(jobs, lifted);
}

export type RecheckFailure = 'quiet' | 'hourly' | 'daily' | 'spacing';

export type Recheck =
  | { ok: true }
  /**
   * `nextAt`: the earliest instant every constraint holds (reschedule there); if 200 attempts did not get
   * there, how far they got (check again then); null when there is never a slot (a limit of 0).
   */
  | { ok: false; failed: RecheckFailure[]; nextAt: number | null; exhausted: boolean };

/**
 * The dispatcher's check for a job due at `at` (SPEC.md "Job transitions", scheduled → sending): hourly and
 * daily budget free, at least minDelayMs since the last actual dispatch, outside quiet hours. `history` holds
 * the dispatches that count, up to `at`.
 */
export function recheck(at: number, history: readonly number[], settings: PlanSettings, lastDispatchAt: number | null): Recheck {
  const failed: RecheckFailure[] = [];
  if (isQuiet(at, settings.quietHours)) failed.push('quiet');
  if (settings.maxPerHour !== null && countInWindow(history, at, HOUR_MS) >= settings.maxPerHour) failed.push('hourly');
  if (settings.maxPer24h !== null && countInWindow(history, at, DAY_MS) >= settings.maxPer24h) failed.push('daily');
  if (lastDispatchAt !== null && at - lastDispatchAt < settings.minDelayMs) failed.push('spacing');
  if (failed.length === 0) return { ok: true };
  const from = Math.max(at, lastDispatchAt === null ? at : lastDispatchAt + settings.minDelayMs);
  const g = gate(from, settings, new QuietCursor(settings.quietHours), new WindowCounter(history));
  return { ok: false, failed, nextAt: g.kind === 'never' ? null : g.at, exhausted: g.kind === 'exhausted' };
}
