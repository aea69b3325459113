/**
 * The outcomes of the dispatch lane's calls (src/queue/dispatch-loop.ts), written to PostgreSQL beside the lane:
 * one at a time, in the order of their calls, with at most OUTCOMES_BESIDE_LANE unwritten while the lane claims
 * the next job; one the store does not take is kept for write-back (src/queue/write-back.ts), and a call that
 * never reached the network puts its job back in the queue. Apart from the lane because the lane decides when to
 * claim and call, this only what becomes of a claimed job once called: it holds the jobs between their claim and
 * their persisted outcome (`sending` in PostgreSQL).
 */
import { performance } from 'node:perf_hooks';
import type { Job } from './job.js';
import { applyJobEvent, isTerminal } from '../../machines/job.machine.js';
import type { QueueCore } from './core.js';
import { neverReachedNetwork, outcomeStep, RETURNED_FIELDS } from './outcome.js';
import { forgetDispatch } from './sql/forgetDispatch.js';
import { laterLastDispatch } from './sql/laterLastDispatch.js';
import type { SlotWriter } from './slot-writer.js';
import type { PoolClient } from '../store/pool.js';
import type { DispatchOutcome } from './types.js';
import type { LaneTiming } from './lane-trace.js';

/**
 * How many outcomes may be unwritten while the lane claims and calls the next job: the one being written and
 * the one after it. Each is a job in `sending` until then (after a crash: `unknown`, never resent).
 */
export const OUTCOMES_BESIDE_LANE = 2;

/**
 * How long an outcome's write may take before the outcome is put on disk as well (real time): a store that hangs
 * rather than refuses makes the write fail only at its deadline, seconds later, and a process killed meanwhile
 * would lose an outcome the network gave (src/queue/write-back.ts `journalOutcome`). Writes that end in time, all
 * of them in normal operation, touch no file.
 */
export const OUTCOME_ON_DISK_AFTER_MS = 100;

/** How much later than its claim a call must come for the instance's last dispatch to be written anew (`fromTheCall`). */
export const MOVE_WRITE_MS = 50;

/**
 * The instant of the call when it came more than `afterMs` after the job's claim; null when there was none or it
 * came with it.
 */
function calledAfterClaim(job: Job, outcome: DispatchOutcome, afterMs = 0): number | null {
  return outcome.callAt !== undefined && job.dispatchedAt !== null && outcome.callAt - job.dispatchedAt > afterMs ? outcome.callAt : null;
}

/** The job as its outcome leaves it, in memory (null: an outcome that ends nothing, a call that never reached the network). */
function endedAs(job: Job, outcome: DispatchOutcome, at: number): Job | null {
  const step = outcomeStep(outcome, at);
  const next = applyJobEvent(job.state, step.event);
  if (!next || !isTerminal(next.next)) return null;
  const { attemptsIncrement: _ignored, ...fields } = step.fields;
  return { ...job, ...fields, state: next.next, deliveryConfidence: next.deliveryConfidence ?? job.deliveryConfidence };
}

export class OutcomeWriter {
  /** jobs between their committed claim and their persisted outcome (PostgreSQL: `sending`): one called, one written */
  private readonly claimed = new Set<string>();
  /** outcomes being written (or waiting for the one before them) after the lane moved on */
  private readonly outcomes = new Set<Promise<void>>();
  /** the last outcome write begun: the next one follows it */
  private lastOutcome: Promise<void> = Promise.resolve();

  constructor(private readonly core: QueueCore, private readonly slots: SlotWriter) {}

  get sendingCount(): number {
    return this.claimed.size;
  }

  /** A claim of the job committed: it is `sending` until its outcome is persisted. */
  claimedJob(jobId: string): void {
    this.claimed.add(jobId);
  }

  /** Whether the job is between its committed claim and its persisted outcome here. */
  holds(jobId: string): boolean {
    return this.claimed.has(jobId);
  }

  /** Resolves once the outcomes being written now are written. */
  allWritten(): Promise<void[]> {
    return Promise.all(this.outcomes);
  }

  /**
   * The pause to the next message runs from this one's call, not from its claim (SPEC.md: "measured against the
   * last actual dispatch"): preparing the message came between them, reading or fetching its media. Counted
   * from the claim, a 5 MB document's send left the next message 654-800 ms behind it on the network with a
   * 1 s pause (the claims exactly 1 s apart). Moved in memory before the lane goes on; the instance's
   * `last_dispatch_at` is moved with the outcome (`persistOutcome`) when the call came more than MOVE_WRITE_MS
   * after the claim (below that, only a restart within that instant of the call could measure the pause from
   * the claim). The sliding windows and the job's `dispatchedAt` keep the claim's instant.
   */
  fromTheCall(job: Job, outcome: DispatchOutcome): void {
    const at = calledAfterClaim(job, outcome);
    if (at !== null) this.core.planner.dispatchCalledAt(at);
  }

  /**
   * Persist the outcome of a call that returned at `at` (begun at `t0`, for the metrics). A job put back (the
   * call never reached the network) is written before this resolves, after all earlier outcomes (the mirror is
   * read again). Any other outcome is written while the lane goes on to the next slot, after the outcomes before
   * it: this resolves once fewer than OUTCOMES_BESIDE_LANE are unwritten. An outcome the store does not take is
   * kept for write-back.
   */
  async write(job: Job, outcome: DispatchOutcome, at: number, t0: number, trace: LaneTiming | null): Promise<void> {
    const { core } = this;
    const late = job.scheduledAt === null ? 0 : (job.dispatchedAt ?? at) - job.scheduledAt;
    const back = neverReachedNetwork(outcome);
    // Outcomes are written one at a time, in the order of their calls, beside the lane. The lane goes on once
    // fewer than OUTCOMES_BESIDE_LANE are unwritten: one outcome write slower than a pause (a transaction
    // queued for a pool connection behind acceptance group commits) does not hold the next claim back.
    // A job put back is written before the lane goes on, after all earlier outcomes (the mirror is read again).
    if (back) await Promise.all(this.outcomes);
    else while (this.outcomes.size >= OUTCOMES_BESIDE_LANE) await Promise.race(this.outcomes);
    if (trace) trace.previousOutcomeWritten = performance.now();
    const written = this.lastOutcome.then(() => this.persistOrKeep(job, outcome, at)).then(() => {
      if (trace) trace.outcomeWritten = performance.now();
      core.deps.metrics?.dispatched(back ? 'returned' : outcome.kind, performance.now() - t0, late);
    });
    this.lastOutcome = written.catch(() => undefined);
    if (back) return written;
    this.outcomes.add(written);
    void written.finally(() => this.outcomes.delete(written));
  }

  /** Persist an outcome; one the store does not take is kept for write-back (never throws). */
  private async persistOrKeep(job: Job, outcome: DispatchOutcome, at: number): Promise<void> {
    const { core } = this;
    const write = () => this.persistOutcome(job, outcome, at);
    // the store known away, or the write not over in time: the outcome goes on disk meanwhile
    const onDisk = () => core.writeBack.journalOutcome({ job, outcome, at });
    if (core.degraded) onDisk();
    const late = core.degraded ? null : setTimeout(onDisk, OUTCOME_ON_DISK_AFTER_MS);
    late?.unref();
    try {
      // a job put back reads the mirror again: on the executor
      await (neverReachedNetwork(outcome) ? core.serial.runFirst(write) : write());
      core.writeBack.outcomeStored(job.id, at);
    } catch (err) {
      core.writeBack.keepOutcome({ job, outcome, at });
      core.deps.log.warn({ err, jobId: job.id, outcome: outcome.kind }, 'dispatch outcome not written; kept for write-back');
      // the outcome is known, only not stored yet: a synchronous caller waiting for it is told it now
      const ended = endedAs(job, outcome, at);
      if (ended) core.waiters.settle(ended);
    } finally {
      // no await since the write ended: the timer cannot have fired after the outcome was settled above
      if (late) clearTimeout(late);
      this.claimed.delete(job.id);
    }
  }

  /** Write one outcome with its event (once: the move is conditional on `sending`). */
  private async persistOutcome(job: Job, outcome: DispatchOutcome, at: number): Promise<void> {
    const { core } = this;
    const step = outcomeStep(outcome, at);
    if (step.event.type === 'RETURNED') {
      if (await this.putBack(job, at, outcome)) {
        // the mirror is read again from PostgreSQL: what only memory holds is written first
        await this.slots.flush();
        await core.reload(core.now());
      }
      return;
    }
    const later = calledAfterClaim(job, outcome, MOVE_WRITE_MS);
    const also = async (c: PoolClient) => {
      if (step.forgetDispatch) await forgetDispatch(c, job.id);
      if (later !== null) await laterLastDispatch(c, core.instanceId, later);
    };
    const moved = await core.move(job, step.event, step.fields, {}, step.forgetDispatch || later !== null ? also : undefined);
    if (moved && step.forgetDispatch) core.planner.forgetDispatch(job.dispatchedAt ?? at);
  }

  /** A claimed job whose call never reached the network: waiting again, its dispatch no longer counted. */
  async putBack(job: Job, now: number, outcome?: DispatchOutcome): Promise<Job | null> {
    const back = await this.core.move(job, { type: 'RETURNED' }, RETURNED_FIELDS, {}, (c) => forgetDispatch(c, job.id));
    const why = outcome?.kind === 'failed' ? { resultCode: outcome.resultCode, detail: outcome.errorMessage } : {};
    if (back) this.core.deps.log.warn({ jobId: job.id, at: now, ...why }, 'the call was never made (no session took it, its start could not be recorded, or quiet hours or its expiry came while its media was prepared): job back in the queue');
    return back;
  }

  /** Write back the kept outcomes, oldest first; throws (keeping the rest) when the store still fails. */
  async writeBackOutcomes(): Promise<void> {
    for (const kept of this.core.writeBack.keptOutcomes()) {
      await this.persistOutcome(kept.job, kept.outcome, kept.at);
      this.core.writeBack.outcomeWritten(kept.job.id);
    }
  }
}
