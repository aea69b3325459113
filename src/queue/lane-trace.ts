/**
 * What the dispatch lane (src/queue/dispatch-loop.ts) reports of each pass when someone listens: where the
 * pass spent its time, for a benchmark's breakdown (bench/dispatch.ts). Nothing is recorded unless a sink is
 * set.
 */
import { performance } from 'node:perf_hooks';

/** One pass of the lane; all instants in real milliseconds (performance.now()). */
export interface LaneTiming {
  instanceId: string;
  /** the slot or expiry the timer was set to, on the queue's clock, and the clock when it fired */
  dueAt: number;
  /** the clock when the timer was set for it (after dueAt: the slot was already due when the lane learned of it) */
  armedAt: number;
  firedAt: number;
  /** the lane was still busy with the previous pass when a timer for this slot fired: the clock then */
  busyAt: number | null;
  /** the clock when the lane's previous pass ended (before dueAt and armedAt after it: the slot was already past when its job entered the plan) */
  laneFreeAt: number;
  /** the step began */
  step: number;
  claimSent: number | null;
  claimAnswered: number | null;
  sendStarted: number | null;
  sendAnswered: number | null;
  /** the lane went on: fewer than OUTCOMES_BESIDE_LANE earlier outcomes unwritten */
  previousOutcomeWritten: number | null;
  outcomeWritten: number | null;
  /** the pool when the claim was sent: clients waiting for a connection, idle ones, all */
  pool: { waiting: number; idle: number; total: number } | null;
  /** real ms from the step's start to its claim (or to the end of its re-plan): the serial executor, expiries */
  serialMs: number;
  claimed: boolean;
  /** the re-check at the slot failed and the waiting jobs got new slots (src/queue/replans.ts atOnce); not when the due job only waited out its spacing */
  replanned: boolean;
}

/** Set `sink` to observe every pass of every lane in this process that had a due job (bench/dispatch.ts does). */
export const laneTrace: { sink: ((t: LaneTiming) => void) | null } = { sink: null };

/** A pass's record as it begins (the lane fills in the rest), or null when nobody listens. */
export function startLaneTiming(at: Pick<LaneTiming, 'instanceId' | 'dueAt' | 'armedAt' | 'firedAt' | 'busyAt' | 'laneFreeAt'>): LaneTiming | null {
  if (!laneTrace.sink) return null;
  return {
    instanceId: at.instanceId, dueAt: at.dueAt, armedAt: at.armedAt, firedAt: at.firedAt, busyAt: at.busyAt,
    laneFreeAt: at.laneFreeAt, step: performance.now(), claimSent: null, claimAnswered: null, sendStarted: null, sendAnswered: null,
    previousOutcomeWritten: null, outcomeWritten: null, pool: null, serialMs: 0, claimed: false, replanned: false,
  };
}
