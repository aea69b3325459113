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
  /** outages begun so far: a recovery that a newer outage overtook leaves the queue degraded */
  private outages = 0;

  constructor(private readonly core: QueueCore, private readonly loop: DispatchLoop) {}

  /**
   * Send now without a job: mode `disabled` (no limits; what goes out is counted) or `memory-degraded` (the same gate
   * as the dispatcher's re-check, from memory; what goes out is counted and written back on recovery).
   */
  async directSend(req: DirectSend, enforceLimits: boolean): Promise<DirectOutcome> {
    const { core } = this;
    let at = core.now();
    // kept for the write-back of a recovery (the store is away): else written once the send went out
    let kept = false;
    if (enforceLimits) {
      // The gate reads and counts memory only, at once, not on the serial executor: as the dispatch lane does
      // (src/queue/dispatch-loop.ts `step`, no await between its re-check and the count), and so that a send
      // made while the store is away does not wait behind a statement hung on it (found from the outside: in a
      // partition that answered nothing, these sends left in bursts every 4-5 s, behind the queue's re-reads, and
      // callers got 500 "may have been delivered" for sends that never passed the gate).
      at = core.now();
      const gate = core.planner.recheck(at, core.deps.settings());
      if (!gate.ok) return { kind: 'rate_limited', retryAt: gate.nextAt ?? at + NO_INSTANT_RETRY_MS };
      core.planner.recordDispatch(at);
      if (core.degraded) {
        core.writeBack.keepDispatch(at);
        kept = true;
      } else core.writeBack.writing(at);
    }
    const outcome = await core.deps.dispatcher.send(directJob(core.instanceId, req, at));
    if (outcome.kind === 'failed') {
      if (enforceLimits) {
        core.planner.forgetDispatch(at);
        if (kept) core.writeBack.dropDispatch(at);
        else core.writeBack.written(at);
      }
    } else if (!enforceLimits) await this.countUngated(at);
    // The route chose this send by a view that said the store was away, and the queue no longer thinks so (it
    // recovered meanwhile, or had not noticed yet): counted in memory and written now, like every dispatch. Found
    // from the outside: such sends went out and were never written (kept only while degraded), so the windows
    // PostgreSQL holds missed them and the hourly ceiling was passed after a restart or hand-over.
    else if (!kept) await this.persistDispatch(at).finally(() => core.writeBack.written(at));
    return outcome;
  }

  /**
   * A send of mode `disabled` went out (or may have): no limit held it back, but it is an actual dispatch,
   * which the pause and the ceilings count once the queue is enabled again (SPEC.md: the pause is measured
   * against the last actual dispatch, which is persisted). Found from the outside: a v2 send right after
   * the queue was enabled went out 82 ms after such a send, with a 15 s pause.
   */
  private async countUngated(at: number): Promise<void> {
    const { writeBack } = this.core;
    writeBack.writing(at);
    this.core.planner.recordDispatch(at);
    await this.persistDispatch(at).finally(() => writeBack.written(at));
  }

  /**
   * A send outside the queue, already counted in memory, into `dispatches`: kept for the next recovery while the
   * store is away, else written now together with sends kept earlier whose write failed; a write the store
   * refuses keeps them all for the next recovery (or the next such write).
   */
  private persistDispatch(at: number): Promise<void> {
    const { core } = this;
    return core.serial.run(async () => {
      if (core.degraded) return core.writeBack.keepDispatch(at);
      const earlier = core.writeBack.keptDispatches();
      await insertDispatches(core.deps.pool, core.instanceId, [...earlier, at].map((t) => ({ jobId: null, at: t }))).then(
        () => core.writeBack.dispatchesWritten(earlier.length),
        (err: unknown) => {
          core.deps.log.warn({ err }, 'a send outside the queue was not written; kept for the next recovery');
          core.writeBack.keepDispatch(at);
        },
      );
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
      this.outages++;
      core.degraded = true;
      this.loop.disarm();
      return Promise.resolve();
    }
    if (!core.degraded) return Promise.resolve();
    let overtaken = false;
    return core.serial.run(async () => {
      if (!core.degraded) return;
      const outage = this.outages;
      const sends = core.writeBack.keptDispatches();
      await core.transaction(async (c) => {
        // kept sends belong to no job
        await insertDispatches(c, core.instanceId, sends.map((at) => ({ jobId: null, at })));
        // The outbox lives in PostgreSQL: the window's two events are written when it is reachable again.
        await core.emit(c, 'queue.degraded', { queueMode: 'memory-degraded', limitsEnforced: true, since: new Date(since).toISOString() });
        await core.emit(c, 'queue.recovered', { queueMode: 'pg', sentWhileDegraded: sends.length });
      });
      core.writeBack.dispatchesWritten(sends.length);
      for (;;) {
        // The store went away again while this was written (setDegraded(true) does not wait for the executor):
        // the queue stays degraded, and that outage's recovery writes what it keeps. Found from the outside: a
        // recovery that ended after a newer outage had begun set the queue back to pg, and the sends of that
        // outage were neither kept nor written.
        if (this.outages !== outage) {
          overtaken = true;
          return;
        }
        // sends kept while that was written (the gate does not wait for the executor): written before the queue
        // leaves degraded mode, after which a send is written as it goes out
        const more = core.writeBack.keptDispatches();
        if (more.length === 0) break;
        await insertDispatches(core.deps.pool, core.instanceId, more.map((at) => ({ jobId: null, at })));
        core.writeBack.dispatchesWritten(more.length);
      }
      core.degraded = false;
      // outcomes of sends that went out during the outage, each with its message.* event; arm() retries a failure
      await this.loop.writeBackOutcomes().catch((err: unknown) => core.deps.log.warn({ err }, 'kept outcomes not written yet'));
    }).then(
      () => {
        if (!overtaken) this.loop.resume();
      },
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
