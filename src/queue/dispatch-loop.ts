/**
 * Timing and dispatch of one instance's queue, driven by the clock: one timer set to the next due slot or
 * expiry; at it, expire what is due, re-check the limits and claim the next job (committed as `sending`
 * before the network is called: at most once) and call the network. The claim is one conditional statement
 * off the serial executor (a due slot never waits behind an acceptance batch); the outcome is written while the
 * lane goes on (src/queue/outcome-writer.ts). The re-plans it asks for (a backlog, a failed re-check) are
 * src/queue/replans.ts's: they move slots, on the serial executor. What an earlier process left is settled
 * before the lane starts (src/queue/start-recovery.ts).
 */
import { performance } from 'node:perf_hooks';
import type { TimerHandle } from '../clock.js';
import type { Job } from './job.js';
import { CLAIMED_JOB_STATES } from '../../machines/job.machine.js';
import type { QueueCore } from './core.js';
import { claimDue, readStored, type ClaimHelpers } from './dispatch-claim.js';
import { neverReachedNetwork } from './outcome.js';
import { OutcomeWriter } from './outcome-writer.js';
import { WRITE_BACK_RETRY_MS } from './write-back.js';
import type { SlotWriter } from './slot-writer.js';
import { claimPool, warmClaimPool } from '../store/pool.js';
import { isConnectionError, isStatementTimeout } from '../store/health.js';
import type { DispatchOutcome } from './types.js';
import { laneTrace, startLaneTiming, type LaneTiming } from './lane-trace.js';
import { Replans } from './replans.js';

export class DispatchLoop {
  private timer: TimerHandle | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  /** the lane: a step, and the call of the job it claimed */
  private dispatching: Promise<void> | null = null;
  /** expiries run while the lane waits on a call (`expireBeside`) */
  private expiring: Promise<void> | null = null;
  /** for laneTrace: a timer that found the lane busy, and when the lane was last free */
  private busyAt: { dueAt: number; at: number } | null = null;
  private laneFreeAt = 0;
  /** the claimed jobs' outcomes, written beside the lane (OUTCOMES_BESIDE_LANE) */
  private readonly outcomes: OutcomeWriter;

  /** the re-plans: of every waiting job (a limit change, a backlog), and after a failed re-check */
  private readonly replans: Replans;

  private readonly claimHelpers: ClaimHelpers = {
    writeSlot: (id) => this.slots.flush([id]),
    putBack: (job, now) => this.outcomes.putBack(job, now),
  };

  constructor(private readonly core: QueueCore, private readonly slots: SlotWriter) {
    this.replans = new Replans(core, slots, () => this.arm());
    this.outcomes = new OutcomeWriter(core, slots);
    core.claimHeld = (id) => this.outcomes.holds(id) || core.writeBack.keepsOutcomeOf(id);
    // the claims go to connections of their own (src/queue/dispatch-claim.ts): one is opened before the first is due
    if (core.deps.lease) void warmClaimPool(core.deps.pool);
  }

  /** jobs between their committed claim and their persisted outcome (PostgreSQL: `sending`): one called, one written */
  get sendingCount(): number {
    return this.outcomes.sendingCount;
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
    this.wakeAt(next);
  }

  /** The timer at `next`, unless it is set for that or earlier already. */
  private wakeAt(next: number): void {
    const { core } = this;
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
    await this.expiring;
    await this.outcomes.allWritten();
  }

  /**
   * The dispatch lane: not on the serial executor, so a due slot never waits behind an acceptance batch (which
   * holds the executor until its group commits) or a re-plan's writes. What needs the executor goes through
   * `runFirst`: a re-plan, a write-back, a job put back (the mirror is read again). The lane is free again once
   * the call returned; the outcome is written beside the next claims (src/queue/outcome-writer.ts).
   */
  private tick(dueAt: number, armedAt: number): void {
    const { core } = this;
    if (this.dispatching && laneTrace.sink) this.busyAt ??= { dueAt, at: core.now() };
    if (core.stopped || core.degraded) return;
    if (this.dispatching) return this.expireBeside();
    const busy = this.busyAt;
    this.busyAt = null;
    const trace = startLaneTiming({ instanceId: core.instanceId, dueAt, armedAt, firedAt: core.now(), busyAt: busy?.at ?? null, laneFreeAt: this.laneFreeAt });
    this.dispatching = this.step(trace)
      .then(async (claimed) => {
        if (!claimed) return;
        // the call may hang (until DRIVER_CALL_TIMEOUT_MS): the jobs behind it still expire on time (expireBeside)
        this.wakeForExpiry();
        await this.finish(claimed, trace);
      })
      // the store unreachable or too slow is an outage the health probe reports (warn), not a fault of the queue's
      // own (found from the outside: every plain outage logged this at error level, once per due slot)
      .catch((err: unknown) => {
        const outage = isConnectionError(err) || isStatementTimeout(err);
        core.deps.log[outage ? 'warn' : 'error']({ err, instanceId: core.instanceId }, 'queue step failed');
      })
      .finally(() => {
        this.dispatching = null;
        this.laneFreeAt = core.now();
        this.arm();
        if (trace && trace.claimed) {
          // reported once its outcome is written
          void this.outcomes.allWritten().then(() => laneTrace.sink?.(trace));
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
    if (this.expiring) await this.expiring;
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
    if (claimed) this.outcomes.claimedJob(claimed.id);
    return claimed;
  }

  /**
   * The lane waits on a call (a send that hangs until DRIVER_CALL_TIMEOUT_MS): the waiting jobs whose validity
   * ends meanwhile are expired on time beside it, and the timer is set for the next expiry (the lane re-arms for
   * slots once it is free). Found from the outside: behind a hanging send a job read `scheduled` seconds past its
   * expiresAt. The lane's next step waits for these first (the two never expire one job at once).
   */
  private expireBeside(): void {
    const { core } = this;
    if (this.expiring === null && core.planner.expiredAt(core.now()).length > 0) {
      this.expiring = this.expireDue(core.now())
        .catch((err: unknown) => core.deps.log.warn({ err, instanceId: core.instanceId }, 'expiry beside a call failed; the lane expires them next'))
        .finally(() => {
          this.expiring = null;
        });
    }
    this.wakeForExpiry();
  }

  /** While the lane is busy, the timer is set for the next expiry only (the lane re-arms for slots once free). */
  private wakeForExpiry(): void {
    const next = this.core.planner.nextExpiry();
    if (next !== null && next > this.core.now()) this.wakeAt(next);
  }

  /** Waiting jobs whose TTL ran out before a slot came free. */
  private async expireDue(now: number): Promise<void> {
    const { core } = this;
    for (const id of core.planner.expiredAt(now)) {
      let job = await readStored(core, id);
      // a claim whose answer was lost (core.reload): its call was never made, so it goes back, then expires
      if (job && CLAIMED_JOB_STATES.includes(job.state) && !core.claimHeld(id)) job = await this.outcomes.putBack(job, now);
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
   * made), after the outcomes before it (src/queue/outcome-writer.ts).
   */
  private async finish(job: Job, trace: LaneTiming | null = null): Promise<void> {
    const { core } = this;
    const t0 = performance.now();
    if (trace) trace.sendStarted = t0;
    const outcome: DispatchOutcome = core.deps.dispatcher.connected()
      ? await core.deps.dispatcher.send(job)
      : { kind: 'failed', resultCode: 'INSTANCE_OFFLINE', errorMessage: 'the session went away before the call' };
    const at = core.now();
    this.outcomes.fromTheCall(job, outcome);
    if (trace) trace.sendAnswered = performance.now();
    if (!neverReachedNetwork(outcome)) core.settledOne();
    return this.outcomes.write(job, outcome, at, t0, trace);
  }

  /** Write back the kept outcomes, oldest first; throws (keeping the rest) when the store still fails. */
  writeBackOutcomes(): Promise<void> {
    return this.outcomes.writeBackOutcomes();
  }
}
