/**
 * Degraded mode: PostgreSQL is unreachable. The queue dispatches nothing; v1 sends go out at once through
 * `directSend`, past the same gate as the dispatcher's re-check, from memory. What memory knows and the store
 * does not (those sends, outcomes whose write failed) is written back on recovery, with the window's
 * `queue.degraded` and `queue.recovered` events; a recovery that fails is tried again.
 * `directSend` without limits is the `disabled` mode: nothing held back, but what goes out is counted and
 * written (the pause and the ceilings count it once the queue is enabled again).
 */
import type { TimerHandle } from '../clock.js';
import { bulkJobEvent } from '../../machines/job.machine.js';
import { DIRECT_ORIGIN, type Job } from './job.js';
import { sendPart } from './payload.js';
import type { QueueCore } from './core.js';
import type { DispatchLoop } from './dispatch-loop.js';
import { WRITE_BACK_RETRY_MS } from './write-back.js';
import { insertDispatches } from './sql/insertDispatches.js';
import type { DirectOutcome, DirectSend } from './types.js';

/** No instant within the planner's attempts (e.g. a limit of 0): not before a day has passed. */
const NO_INSTANT_RETRY_MS = 86_400_000;

export class DegradedMode {
  private recoveryTimer: TimerHandle | null = null;

  constructor(private readonly core: QueueCore, private readonly loop: DispatchLoop) {}

  /**
   * Send now without a job: mode `disabled` (no limits; what goes out is counted) or `memory-degraded` (the same gate
   * as the dispatcher's re-check, from memory; what goes out is counted and written back on recovery).
   */
  async directSend(req: DirectSend, enforceLimits: boolean): Promise<DirectOutcome> {
    const { core } = this;
    let at = core.now();
    if (enforceLimits) {
      const gate = await core.serial.run(async () => {
        at = core.now();
        const check = core.planner.recheck(at, core.deps.settings());
        if (!check.ok) return check;
        core.planner.recordDispatch(at);
        if (core.degraded) core.writeBack.keepDispatch(at);
        return check;
      });
      if (!gate.ok) return { kind: 'rate_limited', retryAt: 'nextAt' in gate && typeof gate.nextAt === 'number' ? gate.nextAt : at + NO_INSTANT_RETRY_MS };
    }
    const outcome = await core.deps.dispatcher.send(directJob(core.instanceId, req, at));
    if (outcome.kind === 'failed' && enforceLimits) {
      await core.serial.run(async () => {
        core.planner.forgetDispatch(at);
        core.writeBack.dropDispatch(at);
      });
    }
    if (outcome.kind !== 'failed' && !enforceLimits) await this.countUngated(at);
    return outcome;
  }

  /**
   * A send of mode `disabled` went out (or may have): no limit held it back, but it is an actual dispatch,
   * which the pause and the ceilings count once the queue is enabled again (SPEC.md: the pause is measured
   * against the last actual dispatch, which is persisted). Found from the outside: a v2 send right after
   * the queue was enabled went out 82 ms after such a send, with a 15 s pause. Kept in memory at once; a
   * write the store refuses now is written back with the next recovery.
   */
  private async countUngated(at: number): Promise<void> {
    const { core } = this;
    await core.serial.run(async () => {
      core.planner.recordDispatch(at);
      if (core.degraded) return core.writeBack.keepDispatch(at);
      await insertDispatches(core.deps.pool, core.instanceId, [{ jobId: null, at }]).catch((err: unknown) => {
        core.deps.log.warn({ err }, 'a direct send of the disabled queue was not written; kept for the next recovery');
        core.writeBack.keepDispatch(at);
      });
    });
  }

  /**
   * The store became unreachable (true) or reachable again (false). On recovery the kept sends and the
   * window's two queue events are written, then the kept outcomes; a recovery that fails is tried again
   * (else the queue would stay degraded, dispatching nothing, while the store answers).
   */
  setDegraded(on: boolean, since: number): Promise<void> {
    const { core } = this;
    this.clearRecoveryTimer();
    if (on) {
      core.degraded = true;
      this.loop.disarm();
      return Promise.resolve();
    }
    if (!core.degraded) return Promise.resolve();
    return core.serial.run(async () => {
      if (!core.degraded) return;
      const sends = core.writeBack.keptDispatches();
      await core.transaction(async (c) => {
        // kept sends belong to no job
        await insertDispatches(c, core.instanceId, sends.map((at) => ({ jobId: null, at })));
        // The outbox lives in PostgreSQL: the window's two events are written when it is reachable again.
        await core.emit(c, 'queue.degraded', { queueMode: 'memory-degraded', limitsEnforced: true, since: new Date(since).toISOString() });
        await core.emit(c, 'queue.recovered', { queueMode: 'pg', sentWhileDegraded: sends.length });
      });
      core.writeBack.dispatchesWritten(sends.length);
      core.degraded = false;
      // outcomes of sends that went out during the outage, each with its message.* event; arm() retries a failure
      await this.loop.writeBackOutcomes().catch((err: unknown) => core.deps.log.warn({ err }, 'kept outcomes not written yet'));
    }).then(
      () => this.loop.resume(),
      (err: unknown) => {
        this.retryRecovery(since);
        throw err;
      },
    );
  }

  clearRecoveryTimer(): void {
    if (this.recoveryTimer !== null) this.core.deps.clock.clearTimeout(this.recoveryTimer);
    this.recoveryTimer = null;
  }

  private retryRecovery(since: number): void {
    const { core } = this;
    if (core.stopped) return;
    this.recoveryTimer = core.deps.clock.setTimeout(() => {
      this.recoveryTimer = null;
      void this.setDegraded(false, since).catch((err: unknown) => core.deps.log.warn({ err }, 'queue recovery failed again; retrying'));
    }, WRITE_BACK_RETRY_MS);
  }
}

/** The job a direct send is dispatched as: never stored, sent at once, in the state a claim leads to. */
const DISPATCHED = bulkJobEvent('DISPATCH').step.next;

let directSeq = 0;

/** A send outside the queue as a job for the dispatcher: an id of its own (`direct_<n>`, never a `wq_` id). */
function directJob(instanceId: string, req: DirectSend, at: number): Job {
  return {
    ...sendPart(req),
    id: `direct_${++directSeq}`, seq: 0, instanceId, state: DISPATCHED, originRoute: DIRECT_ORIGIN, chatId: req.chatId, phone: null,
    payloadHash: null, idempotencyKey: null, priority: 9, notBefore: null, queuedAt: at, scheduledAt: at, dispatchedAt: at,
    terminalAt: null, expiresAt: at, attempts: 1, deliveryConfidence: null, messageId: null, resultCode: null,
    errorMessage: null, unknownReason: null, previousJobId: null,
  };
}
