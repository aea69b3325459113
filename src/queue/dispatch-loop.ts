/**
 * Timing and dispatch of one instance's queue, driven by the clock: one timer set to the next due slot or
 * expiry; at it, expire what is due, re-check the limits and claim the next job (committed as `sending`
 * before the network is called: at most once), call the network and persist the outcome. The claim is one
 * conditional statement off the serial executor (a due slot never waits behind an acceptance batch); the
 * outcome is written while the lane goes on. The re-plans it asks for (a backlog, a failed re-check) are
 * src/queue/replans.ts's: they move slots, on the serial executor.
 */
import { performance } from 'node:perf_hooks';
import type { TimerHandle } from '../clock.js';
import type { Job } from './job.js';
import { CLAIMED_JOB_STATES, applyJobEvent, isTerminal } from '../../machines/job.machine.js';
import type { QueueCore } from './core.js';
import { claimDue, readStored, type ClaimHelpers } from './dispatch-claim.js';
import { neverReachedNetwork, outcomeStep } from './outcome.js';
import { ORPHAN_REASON, BOOT_ID } from './sync-callers.js';
import { WRITE_BACK_RETRY_MS } from './write-back.js';
import { forgetDispatch } from './sql/forgetDispatch.js';
import { laterLastDispatch } from './sql/laterLastDispatch.js';
import { orphanedSyncJobs } from './sql/orphanedSyncJobs.js';
import { recoverSending } from './sql/recoverSending.js';
import type { SlotWriter } from './slot-writer.js';
import { claimPool, warmClaimPool, type PoolClient } from '../store/pool.js';
import type { DispatchOutcome } from './types.js';
import { laneTrace, startLaneTiming, type LaneTiming } from './lane-trace.js';
import { Replans } from './replans.js';

/**
 * How many outcomes may be unwritten while the lane claims and calls the next job: the one being written and
 * the one after it. Each is a job in `sending` until then (after a crash: `unknown`, never resent).
 */
export const OUTCOMES_BESIDE_LANE = 2;

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

export class DispatchLoop {
  private timer: TimerHandle | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  /** the lane: a step, and the call of the job it claimed */
  private dispatching: Promise<void> | null = null;
  /** for laneTrace: a timer that found the lane busy, and when the lane was last free */
  private busyAt: { dueAt: number; at: number } | null = null;
  private laneFreeAt = 0;
  /** outcomes being written (or waiting for the one before them) after the lane moved on */
  private readonly outcomes = new Set<Promise<void>>();
  /** the last outcome write begun: the next one follows it */
  private lastOutcome: Promise<void> = Promise.resolve();

  /** the re-plans: of every waiting job (a limit change, a backlog), and after a failed re-check */
  private readonly replans: Replans;

  private readonly claimHelpers: ClaimHelpers = {
    writeSlot: (id) => this.slots.flush([id]),
    putBack: (job, now) => this.putBack(job, now),
  };

  constructor(private readonly core: QueueCore, private readonly slots: SlotWriter) {
    this.replans = new Replans(core, slots, () => this.arm());
    core.claimHeld = (id) => this.claimed.has(id) || core.writeBack.keepsOutcomeOf(id);
    // the claims go to connections of their own (src/queue/dispatch-claim.ts): one is opened before the first is due
    if (core.deps.lease) void warmClaimPool(core.deps.pool);
  }

  /** jobs between their committed claim and their persisted outcome (PostgreSQL: `sending`): one called, one written */
  private readonly claimed = new Set<string>();

  get sendingCount(): number {
    return this.claimed.size;
  }

  /**
   * At start, before the mirror is loaded: jobs left `sending` by an earlier process become `unknown` (never
   * resent; `failed` where it was still preparing its media, src/queue/sql/recoverSending.ts), and waiting jobs
   * whose synchronous v1 caller died with an earlier process are expired.
   */
  async recoverAtStart(now: number): Promise<void> {
    const { core } = this;
    const recovered = await core.transaction(async (c) => {
      const moved = await recoverSending(c, core.instanceId, now);
      for (const m of moved) if (m.step.emits) await core.emitFor(c, m.job, m.step.emits);
      for (const j of await orphanedSyncJobs(c, core.instanceId, BOOT_ID)) {
        await core.moveIn(c, j, { type: 'EXPIRE' }, { terminalAt: now }, { reason: ORPHAN_REASON });
      }
      return moved;
    });
    const ids = (state: string) => recovered.filter((m) => m.job.state === state).map((m) => m.job.id);
    const [unknown, failed] = [ids('unknown'), ids('failed')];
    if (unknown.length > 0) core.deps.log.warn({ instanceId: core.instanceId, jobs: unknown }, 'jobs found in sending at start are unknown');
    if (failed.length > 0) core.deps.log.warn({ instanceId: core.instanceId, jobs: failed }, 'jobs found in sending at start, their media not yet prepared, failed: never sent');
  }

  /** Re-plan every waiting job and arm (src/queue/replans.ts `locked`; on the serial executor: the caller holds it). */
  replanLocked(reason: string, now: number, announce: boolean): Promise<{ affected: number; epoch: number }> {
    return this.replans.locked(reason, now, announce);
  }

  /**
   * Something changed that may allow sending (connected again, the store back): re-plan the backlog from now
   * and arm; slots not written while the store was away are written.
   */
  resume(): void {
    const { core } = this;
    if (!core.running) return;
    this.slots.soon();
    void core.serial.run(async () => {
      if (core.planner.hasOverdue(core.now())) await this.replanLocked('backlog', core.now(), true);
    }).catch((err: unknown) => {
      // found from the outside as an unhandled rejection with the store's answers lost: the overdue jobs are
      // still claimed in their order (each claim re-checks the limits), and the next resume plans them again
      core.deps.log.warn({ err, instanceId: core.instanceId }, 'the backlog was not planned again yet');
    }).finally(() => this.arm());
  }

  disarm(): void {
    if (this.timer !== null) this.core.deps.clock.clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  /** Set the timer to the next due slot or expiry. */
  arm(): void {
    const { core } = this;
    if (!core.running) return;
    // While the session cannot send, due slots are no reason to wake (resume() re-arms on `ready`);
    // expiries still are.
    let next = core.planner.nextWake(core.deps.dispatcher.connected());
    // outcomes the store did not take are tried again soon (in degraded mode the recovery writes them)
    if (core.writeBack.hasOutcomes && !core.degraded) next = Math.min(next ?? Number.POSITIVE_INFINITY, core.now() + WRITE_BACK_RETRY_MS);
    if (next === null) return this.disarm();
    if (this.timer !== null && this.timerAt <= next) return;
    this.disarm();
    this.timerAt = next;
    const armedAt = core.now();
    this.timer = core.deps.clock.setTimeout(() => {
      this.timer = null;
      this.timerAt = Number.POSITIVE_INFINITY;
      this.tick(next, armedAt);
    }, Math.max(0, next - core.now()));
  }

  /** Stop: no new tick; wait for an in-flight dispatch to finish and persist its outcome. */
  async stop(): Promise<void> {
    this.disarm();
    await this.dispatching;
    await Promise.all(this.outcomes);
  }

  /**
   * The dispatch lane: not on the serial executor, so a due slot never waits behind an acceptance batch (which
   * holds the executor until its group commits) or a re-plan's writes. What needs the executor goes through
   * `runFirst`: a re-plan, a write-back, a job put back (the mirror is read again). The lane is free again once
   * the call returned; the outcome is written beside the next claims (`outcomes`, OUTCOMES_BESIDE_LANE).
   */
  private tick(dueAt: number, armedAt: number): void {
    const { core } = this;
    if (this.dispatching && laneTrace.sink) this.busyAt ??= { dueAt, at: core.now() };
    if (core.stopped || this.dispatching || core.degraded) return;
    const busy = this.busyAt;
    this.busyAt = null;
    const trace = startLaneTiming({ instanceId: core.instanceId, dueAt, armedAt, firedAt: core.now(), busyAt: busy?.at ?? null, laneFreeAt: this.laneFreeAt });
    this.dispatching = this.step(trace)
      .then(async (claimed) => {
        if (claimed) await this.finish(claimed, trace);
      })
      .catch((err: unknown) => core.deps.log.error({ err, instanceId: core.instanceId }, 'queue step failed'))
      .finally(() => {
        this.dispatching = null;
        this.laneFreeAt = core.now();
        this.arm();
        if (trace && trace.claimed) {
          // reported once its outcome is written
          const written = [...this.outcomes];
          void Promise.all(written).then(() => laneTrace.sink?.(trace));
        } else if (trace && (trace.claimSent !== null || trace.replanned)) laneTrace.sink?.(trace);
      });
  }

  /** Expire what is due; claim the next due job if every constraint holds (commit `sending`). */
  private async step(trace: LaneTiming | null = null): Promise<Job | null> {
    const { core } = this;
    const { planner, deps } = core;
    const s0 = performance.now();
    // nothing is claimed while an earlier outcome is still unwritten (a failure here ends the step; arm retries)
    if (core.writeBack.hasOutcomes) await core.serial.runFirst(() => this.writeBackOutcomes());
    await this.expireDue(core.now());
    // the plan stopped at the attempt cap: plan again once the instant it reached has come
    if (planner.retryDue(core.now())) await core.serial.runFirst(() => this.replanLocked('backlog', core.now(), true));
    const now = core.now();
    const due = planner.due(now);
    if (!due) return null;
    if (!deps.dispatcher.connected()) return null; // resume() re-arms when connected again
    if (!planner.recheck(now, deps.settings()).ok) {
      // A constraint no longer holds (a dispatch before this one went out late, limits changed, a send outside
      // the queue): not sent; the job waits a few milliseconds for its spacing, or all get new slots, taken at
      // once (src/queue/replans.ts: waitOutSpacing, atOnce).
      const replanned = await core.serial.runFirst(async () => this.replans.afterFailedRecheck(due));
      if (trace) {
        trace.serialMs += performance.now() - s0;
        trace.replanned = replanned;
      }
      return null;
    }
    // The instant is counted at once, with no await after the re-check: a send outside the queue
    // (src/queue/degraded.ts) re-checks against it. It stops counting if nothing is claimed.
    const takeBack = planner.recordDispatch(now);
    let claimed: Job | null = null;
    if (trace) {
      trace.serialMs += performance.now() - s0;
      trace.claimSent = performance.now();
      const p = deps.lease ? claimPool(deps.pool) : deps.pool;
      trace.pool = { waiting: p.waitingCount, idle: p.idleCount, total: p.totalCount };
    }
    try {
      claimed = await claimDue(core, this.claimHelpers, due, planner.slotOf(due) ?? now, now);
      if (trace) {
        trace.claimAnswered = performance.now();
        trace.claimed = claimed !== null;
      }
    } finally {
      if (!claimed) takeBack();
    }
    // claimed: the slot was used; not: the job left by another path (a cancel won), its slot is free
    planner.remove(due, claimed !== null);
    if (claimed) this.claimed.add(claimed.id);
    return claimed;
  }

  /** Waiting jobs whose TTL ran out before a slot came free. */
  private async expireDue(now: number): Promise<void> {
    const { core } = this;
    for (const id of core.planner.expiredAt(now)) {
      let job = await readStored(core, id);
      // a claim whose answer was lost (core.reload): its call was never made, so it goes back, then expires
      if (job && CLAIMED_JOB_STATES.includes(job.state) && !core.claimHeld(id)) job = await this.putBack(job, now);
      const moved = job ? await core.move(job, { type: 'EXPIRE' }, { terminalAt: now }, { reason: 'ttl elapsed before a slot came free' }) : null;
      // out of the mirror only once the store has the outcome: a failed write leaves it to expire on the next step
      core.planner.remove(id);
      if (moved) core.settledOne();
    }
  }

  /**
   * Call the network and persist the outcome. A session that went away since the claim is not called at all:
   * the job goes back, on the serial executor (the mirror is read again), before the lane moves on. Any other
   * outcome is written while the lane goes on to the next slot (the call has returned: the next one may be
   * made), after the outcomes before it; an outcome the store does not take is kept for write-back.
   */
  private async finish(job: Job, trace: LaneTiming | null = null): Promise<void> {
    const { core } = this;
    const t0 = performance.now();
    if (trace) trace.sendStarted = t0;
    const outcome: DispatchOutcome = core.deps.dispatcher.connected()
      ? await core.deps.dispatcher.send(job)
      : { kind: 'failed', resultCode: 'INSTANCE_OFFLINE', errorMessage: 'the session went away before the call' };
    const at = core.now();
    this.fromTheCall(job, outcome);
    if (trace) trace.sendAnswered = performance.now();
    if (!neverReachedNetwork(outcome)) core.settledOne();
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

  /**
   * The pause to the next message runs from this one's call, not from its claim (SPEC.md: "measured against the
   * last actual dispatch"): preparing the message came between them, reading or fetching its media. Counted
   * from the claim, a 5 MB document's send left the next message 654-800 ms behind it on the network with a
   * 1 s pause (the claims exactly 1 s apart). Moved in memory before the lane goes on; the instance's
   * `last_dispatch_at` is moved with the outcome (`persistOutcome`) when the call came more than MOVE_WRITE_MS
   * after the claim (below that, only a restart within that instant of the call could measure the pause from
   * the claim). The sliding windows and the job's `dispatchedAt` keep the claim's instant.
   */
  private fromTheCall(job: Job, outcome: DispatchOutcome): void {
    const at = calledAfterClaim(job, outcome);
    if (at !== null) this.core.planner.dispatchCalledAt(at);
  }

  /** Persist an outcome; one the store does not take is kept for write-back (never throws). */
  private async persistOrKeep(job: Job, outcome: DispatchOutcome, at: number): Promise<void> {
    const { core } = this;
    const write = () => this.persistOutcome(job, outcome, at);
    try {
      // a job put back reads the mirror again: on the executor
      await (neverReachedNetwork(outcome) ? core.serial.runFirst(write) : write());
    } catch (err) {
      core.writeBack.keepOutcome({ job, outcome, at });
      core.deps.log.warn({ err, jobId: job.id, outcome: outcome.kind }, 'dispatch outcome not written; kept for write-back');
      // the outcome is known, only not stored yet: a synchronous caller waiting for it is told it now
      const ended = endedAs(job, outcome, at);
      if (ended) core.waiters.settle(ended);
    } finally {
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
  private async putBack(job: Job, now: number, outcome?: DispatchOutcome): Promise<Job | null> {
    const back = await this.core.move(job, { type: 'RETURNED' }, { dispatchedAt: null }, {}, (c) => forgetDispatch(c, job.id));
    const why = outcome?.kind === 'failed' ? { resultCode: outcome.resultCode, detail: outcome.errorMessage } : {};
    if (back) this.core.deps.log.warn({ jobId: job.id, at: now, ...why }, 'the call was never made (no session took it, or its start could not be recorded): job back in the queue');
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
