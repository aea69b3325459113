/**
 * The queue of one instance: the parts composed, and the interface its owner, the planner actor
 * (src/actors/planner.ts), uses.
 *
 * PostgreSQL is the truth. The queue keeps a mirror of the instance's waiting jobs and of its dispatch
 * history (the last 24 h) so that planning is a pure function over memory (src/queue/plan.ts), and every
 * decision that assigns slots runs on one serial executor (src/queue/core.ts). The parts:
 * - acceptance (src/queue/acceptance.ts): batching, idempotency, QUEUE_FULL, TTL_UNREACHABLE;
 * - timing and dispatch (src/queue/dispatch-loop.ts): the timer, claims, expiry; its outcomes (src/queue/outcome-writer.ts)
 *   and re-plans (src/queue/replans.ts); at start, what an earlier process left (src/queue/start-recovery.ts);
 * - the slot writer (src/queue/slot-writer.ts): the slots of waiting jobs a plan moved;
 * - degraded mode (src/queue/degraded.ts): direct sends, and the write-back when the store answers again.
 */
import { DomainError, notFound } from '../errors.js';
import { applyJobEvent, isTerminal, type JobState } from '../../machines/job.machine.js';
import type { Job, QueueCounts } from './job.js';
import { Acceptance } from './acceptance.js';
import { QueueCore } from './core.js';
import { DegradedMode } from './degraded.js';
import { DispatchLoop } from './dispatch-loop.js';
import { SlotWriter } from './slot-writer.js';
import { recoverAtStart } from './start-recovery.js';
import { raceClock, type TimerHandle } from '../clock.js';
import type { QueueStarts } from './starts.js';
import type { QueueMode } from './settings.js';
import { getJob } from './sql/getJob.js';
import { releaseSyncCaller } from './sql/releaseSyncCaller.js';
import { syncJobsOfCaller } from './sql/orphanedSyncJobs.js';
import { expireOrphans } from './orphans.js';
import { BOOT_ID } from './sync-callers.js';
import { limitsObject, type LimitsObject } from './windows.js';
import type { AcceptOutcome, AcceptRequest, AcceptResult, DirectOutcome, DirectSend, Refusal, WorkerDeps } from './types.js';

export type { AcceptOutcome, AcceptRequest, AcceptResult, Dispatcher, DirectOutcome, DirectSend, DispatchOutcome, QueueEventSink, Refusal, WorkerDeps } from './types.js';
export { IDEMPOTENCY_RETENTION_MS } from './acceptance.js';

/** How a queue starts (src/actors/planner.ts knows which applies). */
export interface StartOptions {
  /**
   * A brand-new instance, never owned before (src/cluster/cluster.ts decides): no job, no dispatch, epoch 0 —
   * its queue starts empty, without a recovery or a read.
   */
  fresh?: boolean;
  /** the node's batched start reads (none: this queue reads alone, as QueueCore.reload does) */
  starts?: QueueStarts;
}

/** A start that failed (the store, a pool timeout) is tried again after this, doubling up to the maximum. */
export const START_RETRY_MS = 1_000;
export const START_RETRY_MAX_MS = 15_000;

export class QueueWorker {
  private readonly core: QueueCore;
  private readonly acceptance: Acceptance;
  private readonly loop: DispatchLoop;
  private readonly degradedMode: DegradedMode;
  private readonly slots: SlotWriter;
  private starting: Promise<void> | null = null;
  private startRetry: TimerHandle | null = null;
  private startRetryMs = START_RETRY_MS;
  /** re-plans asked for and not started yet, by reason: a later ask of the same reason joins it */
  private readonly replans = new Map<string, Promise<{ affected: number; epoch: number }>>();

  constructor(deps: WorkerDeps, private readonly how: StartOptions = {}) {
    this.core = new QueueCore(deps);
    this.slots = new SlotWriter(this.core);
    this.loop = new DispatchLoop(this.core, this.slots);
    this.acceptance = new Acceptance(this.core, this.slots, () => this.loop.arm());
    this.degradedMode = new DegradedMode(this.core, this.loop);
  }

  get instanceId(): string {
    return this.core.instanceId;
  }

  get epoch(): number {
    return this.core.epoch;
  }

  get isDegraded(): boolean {
    return this.core.degraded;
  }

  /**
   * Whether the queue has read what it starts from (or started empty, brand-new). Until then its views (counts,
   * waiting jobs, limits used) are those of an empty queue, not of the instance's: a start read of thousands of
   * waiting jobs takes a while, and a summary answered meanwhile said 0 pending.
   */
  get loaded(): boolean {
    return this.core.started;
  }

  /**
   * Resolves once the queue has read what it starts from: at once when it has, when the start on its way
   * succeeds. Rejects at once, as other asks are answered meanwhile (`ready`), when the queue stopped
   * (INSTANCE_UNREACHABLE: it runs elsewhere next, or nowhere), and when that start fails or a start failed and
   * waits to be tried again (the store: a summary would otherwise wait out its whole deadline, 10 s, and the
   * console asks every instance's every 2 s) with 503 QUEUE_STORE_UNAVAILABLE, `data.reason` `queue_not_loaded`
   * and the queue's mode (`mode`, read then): the instance was reached, its queue could not be read from
   * PostgreSQL. That was 502 INSTANCE_UNREACHABLE, "the gateway could not reach the instance", which a node
   * forwarding the ask took for an owner being handed over and asked again for seconds. The caller bounds the
   * wait (a route's deadline).
   */
  whenLoaded(mode: () => QueueMode): Promise<void> {
    const { core } = this;
    if (core.started) return Promise.resolve();
    const notLoaded = () =>
      core.stopped
        ? new DomainError('INSTANCE_UNREACHABLE', 'the instance queue stopped before it read its jobs')
        : new DomainError(
          'QUEUE_STORE_UNAVAILABLE',
          "the instance's queue could not read its jobs from PostgreSQL at start (it is tried again); nothing of it is known yet: retry shortly",
          { queueMode: mode(), reason: 'queue_not_loaded' },
        );
    const attempt = this.starting;
    if (core.stopped || !attempt) return Promise.reject(notLoaded());
    // loaded once the start on its way is over, whether it succeeded (started) or failed (not)
    return attempt.catch(() => undefined).then(() => {
      if (!core.started) throw notLoaded();
    });
  }

  /**
   * `whenLoaded`, waiting at most `ms` (the queue's clock) for a start read on its way: past that, 503
   * QUEUE_STORE_UNAVAILABLE with `data.reason` `queue_loading` and the queue's mode. For the reads that poll (a
   * queue summary, a status): a start of full queues reads for seconds (200 queues of 5,000 waiting jobs: 12-16 s),
   * and a summary that waited out its whole deadline (10 s) was 504 INSTANCE_TIMEOUT, which says the instance did
   * not answer and that a send may have been accepted, while the console's next poll piled up behind it.
   */
  loadedWithin(mode: () => QueueMode, ms: number): Promise<void> {
    if (this.core.started) return Promise.resolve();
    return raceClock(this.core.deps.clock, ms, this.whenLoaded(mode), () => {
      throw new DomainError(
        'QUEUE_STORE_UNAVAILABLE',
        "the instance's queue is still reading its jobs from PostgreSQL (it is starting); nothing of it is known yet: retry shortly",
        { queueMode: mode(), reason: 'queue_loading' },
      );
    });
  }

  /**
   * Recover, load the mirror, plan what has no slot, arm the timer. A start that fails (the store) is tried
   * again after a pause, until it succeeds or the queue stops; meanwhile asks answer INSTANCE_UNREACHABLE.
   */
  start(): Promise<void> {
    if (!this.starting) {
      const attempt = this.core.serial.run(() => this.startLocked());
      this.starting = attempt;
      attempt.then(() => (this.startRetryMs = START_RETRY_MS), (err: unknown) => this.startFailed(attempt, err));
    }
    return this.starting;
  }

  private async startLocked(): Promise<void> {
    const { core } = this;
    if (core.stopped) return;
    const now = core.now();
    if (this.how.fresh) {
      // nothing in PostgreSQL yet: the mirror, the epoch, the counts and the tally are their empty selves
      core.started = true;
      this.loop.arm();
      return;
    }
    const state = this.how.starts ? await this.how.starts.load(core.instanceId) : null;
    if (!state || state.needsRecovery) {
      await recoverAtStart(core, now);
      await core.reload(now);
    } else {
      // from the reads made together with other queues' starts
      core.load(state);
    }
    core.started = true;
    // with no waiting job a plan would change nothing but the epoch
    if (core.planner.waitingCount() > 0) await this.loop.replanLocked('start', now, false);
    else this.loop.arm();
  }

  private startFailed(attempt: Promise<void>, err: unknown): void {
    const { core } = this;
    if (core.stopped || this.starting !== attempt) return;
    core.deps.log.warn({ err, retryInMs: this.startRetryMs }, 'queue start failed; trying again');
    this.starting = null;
    this.startRetry = core.deps.clock.setTimeout(() => {
      this.startRetry = null;
      if (!core.stopped) void this.start().catch(() => undefined);
    }, this.startRetryMs);
    this.startRetryMs = Math.min(this.startRetryMs * 2, START_RETRY_MAX_MS);
  }

  /** Stop timers; wait for an in-flight dispatch to finish and persist its outcome. */
  async stop(): Promise<void> {
    const { core } = this;
    core.stopped = true;
    if (this.startRetry !== null) core.deps.clock.clearTimeout(this.startRetry);
    this.startRetry = null;
    this.degradedMode.clearRecoveryTimer();
    this.slots.stop();
    await this.loop.stop();
    // slots only memory holds: written for whoever runs the instance next (it re-plans anyway)
    await this.slots.flush().catch(() => undefined);
    // a last try for outcomes the store did not take; what is left is `sending` and becomes `unknown` at start
    if (core.writeBack.hasOutcomes) await core.serial.runFirst(() => this.loop.writeBackOutcomes()).catch(() => undefined);
    await core.serial.idle();
    this.acceptance.rejectWaiting(new DomainError('INSTANCE_UNREACHABLE', 'the instance is stopping; nothing was accepted'));
    // the jobs still waiting end where the instance runs next (another node after a hand-over, or a queue started
    // here again): their synchronous callers ask its owner from now on, not this queue
    core.waiters.left(new DomainError('INSTANCE_UNREACHABLE', 'the instance\'s queue stopped here (handed over, or stopping); its jobs end where it runs next'));
  }

  /**
   * Accept a send, answered with what acceptance decided: accepted, a replay, or a refusal. A queue that runs
   * hands it on at once (no wait on `ready`, a turn of the promise queue for every send).
   */
  offer(req: AcceptRequest): Promise<AcceptOutcome> {
    if (this.core.running) return this.acceptance.offer(req);
    return this.ready().then(() => this.acceptance.offer(req));
  }

  /** The replay of an idempotent send its instance cannot take now, when its key names a job (src/queue/acceptance.ts `replayOf`). */
  replayOf(req: AcceptRequest): Promise<AcceptOutcome | null> {
    // after the offers that wait for the queue to load, as an offer would be (their keys are then in flight)
    if (this.core.running) return this.acceptance.replayOf(req);
    return this.ready().then(() => this.acceptance.replayOf(req));
  }

  /** Accept several sends as one batch, in their order (a send-bulk): one outcome each. */
  async offerMany(reqs: readonly AcceptRequest[]): Promise<AcceptOutcome[]> {
    await this.ready();
    return this.acceptance.offerMany(reqs);
  }

  private async ready(): Promise<void> {
    // acceptances that arrive while the queue is still loading wait for it (they are serialized after it)
    if (!this.core.started && this.starting) await this.starting.catch(() => undefined);
    if (!this.core.running) throw new DomainError('INSTANCE_UNREACHABLE', 'the instance queue is not running');
  }

  /** Accept a send: the job, or the refusal thrown as the route's error. */
  async accept(req: AcceptRequest): Promise<AcceptResult> {
    const o = await this.offer(req);
    if (o.kind === 'refused') throw refusalError(o);
    return { job: o.job, replay: o.kind === 'replay', queuePosition: o.queuePosition };
  }

  /**
   * DELETE /api/v2/messages/:jobId: only before sending starts. Not on the serial executor: the job machine's
   * conditional UPDATE decides alone (a claim commits `sending` by the same kind of UPDATE, so exactly one of
   * the two wins), and a cancel never waits behind acceptances or a re-plan. The plan forgets the job after
   * the commit; new jobs are not placed behind its slot (src/queue/planning.ts `remove`).
   */
  async cancel(jobId: string, reason = 'cancelled by the caller'): Promise<Job> {
    const { core } = this;
    // claimed here (a call in flight, or an outcome not yet written): sending, whatever the store answers now.
    // Found from the outside: the store's answers lost, a cancel that could not read the row was taken for one
    // of a job never dispatched, and a v1 caller was told "not sent, retry" for a message that went out.
    if (core.claimHeld(jobId)) throw notCancellable(jobId, 'sending');
    const job = await getJob(core.deps.pool, core.instanceId, jobId);
    if (!job) throw notFound('JOB_NOT_FOUND', 'no such job', { jobId });
    if (!applyJobEvent(job.state, { type: 'CANCEL' })) throw notCancellable(jobId, job.state);
    const moved = await core.move(job, { type: 'CANCEL' }, { terminalAt: core.now() }, { reason });
    // moved by another path between the read and the update
    if (!moved) throw notCancellable(jobId, (await getJob(core.deps.pool, core.instanceId, jobId))?.state);
    core.planner.remove(jobId);
    core.settledOne();
    this.loop.arm();
    return moved;
  }

  /**
   * Re-plan every waiting job (POST /api/v2/queue/replan, a limit change, a backlog after an outage). Asks
   * that arrive while one of the same reason waits to start are answered by that one: it plans after them.
   */
  replan(reason: string): Promise<{ affected: number; epoch: number }> {
    const waiting = this.replans.get(reason);
    if (waiting) return waiting;
    let started = false;
    const run = this.core.serial.run(() => {
      started = true;
      this.replans.delete(reason);
      return this.loop.replanLocked(reason, this.core.now(), true);
    });
    if (!started) this.replans.set(reason, run);
    return run;
  }

  /** Something changed that may allow sending (connected again): re-plan the backlog from now and arm. */
  resume(): void {
    this.loop.resume();
  }

  /** Set the timer to the next due slot or expiry. */
  arm(): void {
    this.loop.arm();
  }

  // ---------------------------------------------------------------- views

  limits(mode: 'pg' | 'memory-degraded' | 'disabled' = 'pg'): LimitsObject {
    const now = this.core.now();
    // the planner's history is in ascending order (src/queue/dispatch-history.ts)
    return limitsObject(this.core.deps.settings(), this.core.planner.historySnapshot(now), now, mode, true);
  }

  nextAt(): number | null {
    return this.core.planner.nextAt();
  }

  waitingCount(): number {
    return this.core.planner.waitingCount();
  }

  /**
   * Queue counts from memory, without a query: waiting jobs from the mirror, the one being sent, and the
   * outcomes the queue counted as it committed them (src/queue/tally.ts). Also right while PostgreSQL is
   * unreachable (outcomes not written yet count once they are).
   */
  counts(): QueueCounts {
    const { planner } = this.core;
    const waiting = planner.waitingCount();
    const scheduled = planner.scheduledCount();
    const { totals, last24h } = this.core.tally.read(this.core.now());
    return {
      queued: waiting - scheduled, scheduled, sending: this.loop.sendingCount,
      sent: totals.sent, failed: totals.failed, unknown: totals.unknown,
      sent24h: last24h.sent, failed24h: last24h.failed, unknown24h: last24h.unknown,
    };
  }

  /**
   * Resolve when the job reaches a terminal state, or with null after `timeoutMs` (v1 synchronous wait);
   * INSTANCE_UNREACHABLE once this queue stopped (the job ends where the instance runs next).
   */
  waitForTerminal(jobId: string, timeoutMs: number): Promise<Job | null> {
    const { core } = this;
    const waiting = core.waiters.wait(jobId, timeoutMs);
    // it may have finished before we started waiting
    void getJob(core.deps.pool, core.instanceId, jobId).then(
      (job) => {
        if (job && isTerminal(job.state)) core.waiters.settle(job);
      },
      // the store is unreachable: the waiter still ends by its timeout or by the job's next transition
      (err: unknown) => core.deps.log.warn({ err, jobId }, 'job lookup for a waiter failed'),
    );
    return waiting;
  }

  /** The synchronous caller of `jobId` was answered with its id: the job no longer ends with this process. */
  releaseCaller(jobId: string): Promise<void> {
    return releaseSyncCaller(this.core.deps.pool, this.core.instanceId, jobId);
  }

  /**
   * The process `callerBoot` names is gone, and with it the synchronous v1 callers it held: its jobs still waiting
   * here are expired, never sent (src/queue/orphans.ts), so that the callers' resends are the only copies. A job
   * already claimed is left alone: it may be on the network. The number expired.
   */
  async callerGone(callerBoot: string): Promise<number> {
    const { core } = this;
    if (callerBoot === BOOT_ID) return 0;
    const expired = await expireOrphans(core, (c) => syncJobsOfCaller(c, core.instanceId, callerBoot), core.now());
    if (expired.length > 0) this.loop.arm();
    return expired.length;
  }

  // ---------------------------------------------------------------- outside the persistent queue

  /** Send now without a job (src/queue/degraded.ts). */
  directSend(req: DirectSend, enforceLimits: boolean): Promise<DirectOutcome> {
    return this.degradedMode.directSend(req, enforceLimits);
  }

  /** The store became unreachable (true) or reachable again (false). */
  setDegraded(on: boolean, since: number): Promise<void> {
    return this.degradedMode.setDegraded(on, since);
  }
}

/** A refusal as the domain error routes answer with (SPEC.md codes and data). */
export function refusalError(r: Refusal): DomainError {
  switch (r.code) {
    case 'QUEUE_FULL':
      return new DomainError('QUEUE_FULL', `more than ${r.maxPending} pending jobs for this instance`, { maxPending: r.maxPending });
    case 'TTL_UNREACHABLE':
      return new DomainError('TTL_UNREACHABLE', 'no send slot before the message expires; raise ttlSeconds or the limits', {
        expiresAt: new Date(r.expiresAt).toISOString(),
      });
    case 'IDEMPOTENCY_PAYLOAD_MISMATCH':
      return new DomainError('IDEMPOTENCY_PAYLOAD_MISMATCH', 'this idempotency key was used with a different payload', { jobId: r.jobId });
  }
}

function notCancellable(jobId: string, state: JobState | undefined): DomainError {
  return new DomainError('JOB_NOT_CANCELLABLE', `a job in state ${state ?? 'unknown'} cannot be cancelled`, { jobId, state });
}
