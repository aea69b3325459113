/**
 * Timing and dispatch of one instance's queue, driven by the clock: one timer set to the next due slot or
 * expiry; at it, expire what is due, re-check the limits and claim the next job (committed as `sending`
 * before the network is called: at most once), call the network outside the serial section and persist the
 * outcome. Re-planning (a limit change, a failed re-check, a backlog) lives here too: it moves slots.
 */
import { performance } from 'node:perf_hooks';
import type { TimerHandle } from '../clock.js';
import { statesAccepting } from '../../machines/job.machine.js';
import type { Job } from './job.js';
import { StoredPayloadInvalid } from './payload.js';
import type { QueueCore } from './core.js';
import { neverReachedNetwork, outcomeStep } from './outcome.js';
import { ORPHAN_REASON, BOOT_ID } from './sync-callers.js';
import { WRITE_BACK_RETRY_MS } from './write-back.js';
import { forgetDispatch } from './sql/forgetDispatch.js';
import { getJob } from './sql/getJob.js';
import { insertDispatches } from './sql/insertDispatches.js';
import { orphanedSyncJobs } from './sql/orphanedSyncJobs.js';
import { recoverSending } from './sql/recoverSending.js';
import { saveSlots } from './sql/saveSlots.js';
import { setPlanEpoch } from './sql/setPlanEpoch.js';
import type { SlotWriter } from './slot-writer.js';
import type { DispatchOutcome } from './types.js';

/** A claim whose call was never made goes back by RETURNED: the states it is allowed in are the claimed ones. */
const CLAIMED = statesAccepting('RETURNED');

export class DispatchLoop {
  private timer: TimerHandle | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  private dispatching: Promise<void> | null = null;

  constructor(private readonly core: QueueCore, private readonly slots: SlotWriter) {}

  /** the job claimed (committed `sending`) whose outcome is not persisted yet */
  private claimedId: string | null = null;

  /** A job is between its committed claim and its persisted outcome (what PostgreSQL shows as `sending`). */
  get inFlight(): boolean {
    return this.claimedId !== null;
  }

  /**
   * At start, before the mirror is loaded: jobs left `sending` by an earlier process become `unknown` (never
   * resent), and waiting jobs whose synchronous v1 caller died with an earlier process are expired.
   */
  async recoverAtStart(now: number): Promise<void> {
    const { core } = this;
    const recovered = await core.transaction(async (c) => {
      const moved = await recoverSending(c, core.instanceId, now);
      for (const m of moved) if (m.step.emits) await core.emitFor(c, m.job, m.step.emits);
      for (const j of await orphanedSyncJobs(c, core.instanceId, BOOT_ID)) {
        await core.moveIn(c, j, { type: 'EXPIRE' }, { terminalAt: now }, { reason: ORPHAN_REASON });
      }
      return moved.map((m) => m.job.id);
    });
    if (recovered.length > 0) {
      core.deps.events.flushed();
      core.deps.log.warn({ instanceId: core.instanceId, jobs: recovered }, 'jobs found in sending at start are unknown');
    }
  }

  /**
   * Re-plan every waiting job (on the serial executor: the caller holds it). Only the rows whose slot differs
   * from what PostgreSQL holds are written, with the epoch and the event, in one transaction; a job left
   * without a slot (none before its expiry, or past the attempt cap) waits without one until a re-plan or
   * its expiry.
   */
  async replanLocked(reason: string, now: number, announce: boolean): Promise<{ affected: number; epoch: number }> {
    const { core } = this;
    const plan = core.planner.replan(now, core.deps.settings());
    const epoch = core.epoch + 1;
    await this.slots.exclusive(async () => {
      const writes = plan.writes();
      await core.transaction(async (c) => {
        await saveSlots(c, core.instanceId, writes, epoch);
        await setPlanEpoch(c, core.instanceId, epoch);
        if (announce) await core.deps.events.emit(c, 'queue.replanned', { affected: plan.slots.length, epoch, reason });
      });
      core.epoch = epoch;
      plan.commit(writes);
    });
    if (announce) core.deps.events.flushed();
    this.arm();
    return { affected: plan.slots.length, epoch };
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
      this.arm();
    });
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
    this.timer = core.deps.clock.setTimeout(() => {
      this.timer = null;
      this.timerAt = Number.POSITIVE_INFINITY;
      this.tick();
    }, Math.max(0, next - core.now()));
  }

  /** Stop: no new tick; wait for an in-flight dispatch to finish and persist its outcome. */
  async stop(): Promise<void> {
    this.disarm();
    await this.dispatching;
  }

  private tick(): void {
    const { core } = this;
    if (core.stopped || this.dispatching || core.degraded) return;
    this.dispatching = core.serial
      .runFirst(() => this.step())
      .then(async (claimed) => {
        if (claimed) await this.finish(claimed);
      })
      .catch((err: unknown) => core.deps.log.error({ err, instanceId: core.instanceId }, 'queue step failed'))
      .finally(() => {
        this.dispatching = null;
        this.arm();
      });
  }

  /** Expire what is due; claim the next due job if every constraint holds (commit `sending`). */
  private async step(): Promise<Job | null> {
    const { core } = this;
    const { planner, deps } = core;
    // nothing is claimed while an earlier outcome is still unwritten (a failure here ends the step; arm retries)
    if (core.writeBack.hasOutcomes) await this.writeBackOutcomes();
    const now = core.now();
    await this.expireDue(now);
    // the plan stopped at the attempt cap: plan again once the instant it reached has come
    if (planner.retryDue(now)) await this.replanLocked('backlog', now, true);
    const due = planner.due(now);
    if (!due) return null;
    if (!deps.dispatcher.connected()) return null; // resume() re-arms when connected again
    if (!planner.recheck(now, deps.settings()).ok) {
      // A constraint no longer holds (limits changed, a send outside the queue): not sent; new slots for all.
      await this.replanLocked('recheck', now, false);
      return null;
    }
    // its row must be `scheduled` for the claim: a slot an acceptance moved may not be written yet
    if (!planner.isPersisted(due)) await this.slots.flush([due]);
    let job = await this.readDue(due);
    // still claimed: an earlier claim of ours committed but its answer was lost, so the call was never made
    if (job && CLAIMED.includes(job.state)) job = await this.putBack(job, now);
    if (!job) {
      planner.remove(due);
      return null;
    }
    const claim = job;
    const claimed = await core.transaction(async (c) => {
      const moved = await core.moveIn(c, claim, { type: 'DISPATCH' }, { dispatchedAt: now, attemptsIncrement: true });
      if (moved) await insertDispatches(c, deps.instanceId, [{ jobId: claim.id, at: now }]);
      return moved;
    });
    planner.remove(due);
    if (claimed) {
      planner.recordDispatch(now);
      this.claimedId = claimed.id;
    }
    return claimed;
  }

  /**
   * The due job as stored. A row whose payload is not a send of its kind (written by something else than
   * this gateway's acceptance) cannot be dispatched: it leaves the mirror, logged, instead of failing every
   * step (the timer would fire again at once, for ever).
   */
  private async readDue(id: string): Promise<Job | null> {
    try {
      return await getJob(this.core.deps.pool, this.core.instanceId, id);
    } catch (err) {
      if (!(err instanceof StoredPayloadInvalid)) throw err;
      this.core.deps.log.error({ err, jobId: id }, 'a stored job cannot be read as a send; it is not dispatched');
      return null;
    }
  }

  /** Waiting jobs whose TTL ran out before a slot came free. */
  private async expireDue(now: number): Promise<void> {
    const { core } = this;
    for (const id of core.planner.expiredAt(now)) {
      const job = await this.readDue(id);
      const moved = job ? await core.move(job, { type: 'EXPIRE' }, { terminalAt: now }, { reason: 'ttl elapsed before a slot came free' }) : null;
      // out of the mirror only once the store has the outcome: a failed write leaves it to expire on the next step
      core.planner.remove(id);
      if (moved) core.settledOne();
    }
  }

  /**
   * Call the network (outside the serial section) and persist the outcome. A session that went away since the
   * claim is not called at all: the job goes back. An outcome the store does not take is kept for write-back.
   */
  private async finish(job: Job): Promise<void> {
    const { core } = this;
    const t0 = performance.now();
    const outcome: DispatchOutcome = core.deps.dispatcher.connected()
      ? await core.deps.dispatcher.send(job)
      : { kind: 'failed', resultCode: 'INSTANCE_OFFLINE', errorMessage: 'the session went away before the call' };
    const at = core.now();
    if (!neverReachedNetwork(outcome)) core.settledOne();
    await core.serial.runFirst(async () => {
      try {
        await this.persistOutcome(job, outcome, at);
      } catch (err) {
        core.writeBack.keepOutcome({ job, outcome, at });
        core.deps.log.warn({ err, jobId: job.id, outcome: outcome.kind }, 'dispatch outcome not written; kept for write-back');
      } finally {
        if (this.claimedId === job.id) this.claimedId = null;
      }
    });
    const late = job.scheduledAt === null ? 0 : (job.dispatchedAt ?? at) - job.scheduledAt;
    core.deps.metrics?.dispatched(neverReachedNetwork(outcome) ? 'returned' : outcome.kind, performance.now() - t0, late);
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
    const moved = await core.move(job, step.event, step.fields, {}, step.forgetDispatch ? (c) => forgetDispatch(c, job.id) : undefined);
    if (moved && step.forgetDispatch) core.planner.forgetDispatch(job.dispatchedAt ?? at);
  }

  /** A claimed job whose call never reached the network: waiting again, its dispatch no longer counted. */
  private async putBack(job: Job, now: number, outcome?: DispatchOutcome): Promise<Job | null> {
    const back = await this.core.move(job, { type: 'RETURNED' }, { dispatchedAt: null }, {}, (c) => forgetDispatch(c, job.id));
    const why = outcome?.kind === 'failed' ? { resultCode: outcome.resultCode, detail: outcome.errorMessage } : {};
    if (back) this.core.deps.log.warn({ jobId: job.id, at: now, ...why }, 'the session went away before the call: job back in the queue');
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
