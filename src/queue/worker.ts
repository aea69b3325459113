/**
 * The queue of one instance: acceptance, planning, re-planning, cancellation, expiry and dispatch timing.
 *
 * PostgreSQL is the truth. The worker keeps a mirror of the instance's waiting jobs and of its dispatch
 * history (the last 24 h) so that planning is a pure function over memory (src/queue/plan.ts) and every
 * decision that assigns slots runs on one serial executor. Acceptances arriving together are planned and
 * committed in one transaction (group commit): the 202 is only sent once the job is in PostgreSQL.
 */
import type { PoolClient, Queryable } from '../store/pool.js';
import { CommitOutcomeUnknown, withTransaction } from '../store/pool.js';
import { isConnectionError } from '../store/health.js';
import type { TimerHandle } from '../clock.js';
import { ApiError } from '../http/errors.js';
import { newJobId } from '../ids.js';
import { TERMINAL_JOB_STATES, acceptJob, applyJobEvent, statesAccepting, type JobEvent, type QueueEventName } from '../../machines/job.machine.js';
import {
  countPending, findByIdempotencyKeys, forgetDispatch, getJob, recordDispatch, insertJobs, listWaiting, loadHistory, recoverSending, saveSlots,
  transitionJob, type Job, type NewJob, type QueueCounts, type TransitionFields,
} from './jobs.js';
import { Planner, type MirrorJob } from './planning.js';
import { Serial } from './serial.js';
import { TerminalWaiters } from './waiters.js';
import { queueEventData } from './queue-events.js';
import { limitsObject, type LimitsObject } from './windows.js';
import { neverReachedNetwork, outcomeStep } from './outcome.js';
import { BOOT_ID, ORPHAN_REASON, orphanedSyncJobs, releaseSyncCaller } from './sync-callers.js';
import { WRITE_BACK_RETRY_MS, WriteBack, insertKeptDispatches } from './write-back.js';
import type { AcceptRequest, AcceptResult, DirectOutcome, DirectSend, DispatchOutcome, WorkerDeps } from './types.js';

export type { AcceptRequest, AcceptResult, Dispatcher, DirectOutcome, DirectSend, DispatchOutcome, QueueEventSink, WorkerDeps } from './types.js';

export const IDEMPOTENCY_RETENTION_MS = 7 * 86_400_000;

interface Pending {
  req: AcceptRequest;
  resolve: (r: AcceptResult) => void;
  reject: (e: unknown) => void;
}


export class QueueWorker {
  private readonly serial = new Serial();
  private readonly planner: Planner;
  private inbox: Pending[] = [];
  private draining = false;
  private timer: TimerHandle | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  private dispatching: Promise<void> | null = null;
  private stopped = false;
  private started = false;
  private pending = 0; // queued + scheduled + sending
  private readonly waiters: TerminalWaiters;
  /** PostgreSQL is unreachable: no dispatch from the queue; v1 sends pass the in-memory gate */
  private degraded = false;
  /** sends made while degraded and outcomes whose write failed: written back when the store answers */
  private readonly writeBack = new WriteBack();
  private recoveryTimer: TimerHandle | null = null;
  epoch = 0;

  constructor(private readonly deps: WorkerDeps) {
    this.planner = new Planner({ random: deps.random, salt: deps.instanceId });
    this.waiters = new TerminalWaiters(deps.clock);
  }

  get instanceId(): string {
    return this.deps.instanceId;
  }

  private starting: Promise<void> | null = null;

  /** Recover, load the mirror, plan what has no slot, arm the timer. */
  start(): Promise<void> {
    this.starting ??= this.serial.run(async () => {
      const now = this.deps.clock.now();
      const recovered = await withTransaction(this.deps.pool, async (c) => {
        const jobs = await recoverSending(c, this.deps.instanceId, now);
        for (const j of jobs) await this.emitFor(c, j, 'message.unknown');
        // waiting jobs whose synchronous v1 caller died with an earlier process: its resend must be the only one
        for (const j of await orphanedSyncJobs(c, this.deps.instanceId)) {
          await this.moveIn(c, j, { type: 'EXPIRE' }, { terminalAt: now }, { reason: ORPHAN_REASON });
        }
        return jobs;
      });
      if (recovered.length > 0) {
        this.deps.events.flushed();
        this.deps.log.warn({ instanceId: this.deps.instanceId, jobs: recovered.map((j) => j.id) }, 'jobs found in sending at start are unknown');
      }
      await this.reload(now);
      this.started = true;
      await this.replanLocked('start', now, false);
    });
    return this.starting;
  }

  /** Load the mirror (waiting jobs, dispatch history, epoch, pending count) from PostgreSQL. */
  private async reload(now: number): Promise<void> {
    const { rows } = await this.deps.pool.query<{ last: Date | null; epoch: number }>(
      'SELECT last_dispatch_at AS last, plan_epoch AS epoch FROM instances WHERE id = $1',
      [this.deps.instanceId],
    );
    this.epoch = rows[0]?.epoch ?? 0;
    const history = await loadHistory(this.deps.pool, this.deps.instanceId, now);
    const waiting = await listWaiting(this.deps.pool, this.deps.instanceId);
    this.pending = await countPending(this.deps.pool, this.deps.instanceId);
    this.planner.load({ history, lastDispatchAt: rows[0]?.last ? rows[0].last.getTime() : null, waiting: waiting.map(toPlanJob) });
  }

  /** Stop timers; wait for an in-flight dispatch to finish and persist its outcome. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.disarm();
    this.clearRecoveryTimer();
    await this.dispatching;
    // a last try for outcomes the store did not take; what is left is `sending` and becomes `unknown` at start
    if (this.writeBack.hasOutcomes) await this.serial.runFirst(() => this.writeBackOutcomes()).catch(() => undefined);
    await this.serial.idle();
    for (const p of this.inbox.splice(0)) p.reject(new ApiError(502, 'INSTANCE_UNREACHABLE', 'the instance is stopping; nothing was accepted'));
  }

  // ---------------------------------------------------------------- acceptance

  /** Accept a send: validated by the route; idempotency, QUEUE_FULL and TTL_UNREACHABLE are decided here. */
  async accept(req: AcceptRequest): Promise<AcceptResult> {
    // acceptances that arrive while the queue is still loading wait for it (they are serialized after it)
    if (!this.started && this.starting) await this.starting.catch(() => undefined);
    if (this.stopped || !this.started) throw new ApiError(502, 'INSTANCE_UNREACHABLE', 'the instance queue is not running');
    return new Promise((resolve, reject) => {
      this.inbox.push({ req, resolve, reject });
      this.kick();
    });
  }

  /** Start draining the inbox unless a drain is already queued: arrivals meanwhile join its next batch. */
  private kick(): void {
    if (this.draining) return;
    this.draining = true;
    void this.serial.run(() => this.drain()).finally(() => {
      this.draining = false;
      if (this.inbox.length > 0) this.kick();
    });
  }

  /** One batch per turn of the serial executor, so a due dispatch never waits behind a whole burst. */
  private async drain(): Promise<void> {
    if (this.inbox.length > 0) {
      const batch = this.inbox.splice(0, this.deps.batchSize ?? 200);
      try {
        await this.acceptBatch(batch);
      } catch (err) {
        // The store went away: before the COMMIT nothing was accepted (503), during it the batch may have been
        // (CommitOutcomeUnknown); retrying members one by one could accept a job without a key twice.
        if (batch.length === 1 || isConnectionError(err) || err instanceof CommitOutcomeUnknown) {
          for (const p of batch) p.reject(err);
          return;
        }
        // A batch failed as a whole for one member (e.g. a concurrent node took a key): retry its members one
        // by one so that one bad request cannot fail the others.
        for (const p of batch) await this.acceptBatch([p]).catch((e: unknown) => p.reject(e));
      }
    }
  }

  private async acceptBatch(batch: Pending[]): Promise<void> {
    const now = this.deps.clock.now();
    const settings = this.deps.settings();
    const outcomes = new Map<Pending, AcceptResult | ApiError>();
    const fresh: { p: Pending; job: NewJob }[] = [];
    const keysInBatch = new Map<string, { p: Pending; job: NewJob }>();

    await withTransaction(this.deps.pool, async (c) => {
      const keys = [...new Set(batch.map((p) => p.req.idempotencyKey).filter((k): k is string => k !== null))];
      const known = await findByIdempotencyKeys(c, this.deps.instanceId, keys, now - IDEMPOTENCY_RETENTION_MS);
      for (const p of batch) {
        const { req } = p;
        if (req.idempotencyKey !== null) {
          const sameBatch = keysInBatch.get(req.idempotencyKey);
          if (sameBatch) {
            outcomes.set(p, sameBatch.job.payloadHash === req.payloadHash
              ? new ApiError(0, 'CONFLICT', 'replay-of-batch', { jobId: sameBatch.job.id })
              : mismatch(sameBatch.job.id));
            continue;
          }
          const found = known.get(req.idempotencyKey);
          if (found) {
            outcomes.set(p, found.payloadHash === req.payloadHash
              ? { job: found.job, replay: true, queuePosition: this.planner.position(found.job.id) }
              : mismatch(found.job.id));
            continue;
          }
        }
        if (this.pending + fresh.length >= this.deps.maxPending) {
          outcomes.set(p, new ApiError(422, 'QUEUE_FULL', `more than ${this.deps.maxPending} pending jobs for this instance`, { maxPending: this.deps.maxPending }));
          continue;
        }
        const ttl = req.ttlSeconds ?? settings.defaultTtlSeconds;
        const job: NewJob = {
          id: newJobId(),
          instanceId: this.deps.instanceId,
          kind: req.kind,
          originRoute: req.originRoute,
          chatId: req.chatId,
          phone: req.phone,
          payload: req.payload,
          payloadHash: req.payloadHash,
          idempotencyKey: req.idempotencyKey,
          priority: req.priority,
          notBefore: req.notBefore,
          queuedAt: now,
          scheduledAt: null,
          expiresAt: now + ttl * 1000,
          previousJobId: req.previousJobId ?? null,
          callerBoot: req.awaitsCaller ? BOOT_ID : null,
        };
        fresh.push({ p, job });
        if (req.idempotencyKey !== null) keysInBatch.set(req.idempotencyKey, { p, job });
      }

      // Plan the fresh jobs; refuse the ones whose earliest slot is after their expiry.
      const placed = this.planner.tryAdd(
        fresh.map((f) => ({ id: f.job.id, priority: f.job.priority, notBefore: f.job.notBefore, expiresAt: f.job.expiresAt })),
        now,
        settings,
      );
      const accepted: { p: Pending; job: NewJob }[] = [];
      for (const f of fresh) {
        const slot = placed.slots.get(f.job.id);
        if (slot === undefined) {
          outcomes.set(f.p, new ApiError(422, 'TTL_UNREACHABLE', 'no send slot before the message expires; raise ttlSeconds or the limits', {
            expiresAt: new Date(f.job.expiresAt).toISOString(),
          }));
          continue;
        }
        f.job.scheduledAt = slot;
        accepted.push(f);
      }
      const inserted = await insertJobs(c, accepted.map((a) => a.job));
      await this.deps.events.emitMany(c, inserted.map((job) => ({
        event: QUEUED_EVENT,
        data: queueEventData(QUEUED_EVENT, job, { now, position: placed.positions.get(job.id) ?? 0 }),
      })));
      // Jobs moved by this acceptance (a higher priority went in front of them) get their new slots.
      if (placed.moved.length > 0) await saveSlots(c, placed.moved, this.epoch);
      placed.commit?.();
      this.pending += inserted.length;
      inserted.forEach((job, i) => {
        const a = accepted[i];
        if (a) outcomes.set(a.p, { job, replay: false, queuePosition: this.planner.position(job.id) });
      });
    });

    this.deps.events.flushed();
    for (const p of batch) {
      const o = outcomes.get(p);
      if (o instanceof ApiError && o.status === 0) {
        // same key twice in one batch: the second is a replay of the first, now committed
        const jobId = String(o.data.jobId);
        const job = await getJob(this.deps.pool, this.deps.instanceId, jobId);
        if (job) p.resolve({ job, replay: true, queuePosition: this.planner.position(jobId) });
        else p.reject(new ApiError(500, 'INTERNAL_ERROR', 'internal error'));
      } else if (o instanceof ApiError) p.reject(o);
      else if (o) p.resolve(o);
      else p.reject(new ApiError(500, 'INTERNAL_ERROR', 'internal error'));
    }
    this.arm();
  }

  // ---------------------------------------------------------------- cancel, replan, settings

  /** DELETE /api/v2/messages/:jobId: only before sending starts. */
  cancel(jobId: string, reason = 'cancelled by the caller'): Promise<Job> {
    return this.serial.run(async () => {
      const job = await getJob(this.deps.pool, this.deps.instanceId, jobId);
      if (!job) throw new ApiError(404, 'JOB_NOT_FOUND', 'no such job', { jobId });
      const step = applyJobEvent(job.state, { type: 'CANCEL' });
      if (!step) {
        throw new ApiError(409, 'JOB_NOT_CANCELLABLE', `a job in state ${job.state} cannot be cancelled`, { jobId, state: job.state });
      }
      const now = this.deps.clock.now();
      const moved = await this.move(job, { type: 'CANCEL' }, { terminalAt: now }, { reason });
      if (!moved) {
        const current = await getJob(this.deps.pool, this.deps.instanceId, jobId);
        throw new ApiError(409, 'JOB_NOT_CANCELLABLE', `a job in state ${current?.state ?? 'unknown'} cannot be cancelled`, { jobId, state: current?.state });
      }
      this.planner.remove(jobId);
      this.pending = Math.max(0, this.pending - 1);
      this.arm();
      return moved;
    });
  }

  /** Re-plan every waiting job (POST /api/v2/queue/replan, a limit change, a backlog after an outage). */
  replan(reason: string): Promise<{ affected: number; epoch: number }> {
    return this.serial.run(() => this.replanLocked(reason, this.deps.clock.now(), true));
  }

  private async replanLocked(reason: string, now: number, announce: boolean): Promise<{ affected: number; epoch: number }> {
    const plan = this.planner.replan(now, this.deps.settings());
    const epoch = this.epoch + 1;
    await withTransaction(this.deps.pool, async (c) => {
      await saveSlots(c, plan.slots, epoch);
      if (plan.unslotted.length > 0) {
        // no slot before expiry (or past the attempt cap): back to `queued` without a slot until a re-plan or expiry
        await c.query(
          `UPDATE jobs SET state = 'queued', scheduled_at = NULL, plan_epoch = $3
            WHERE instance_id = $1 AND id = ANY($2::text[]) AND state IN ('queued','scheduled')`,
          [this.deps.instanceId, plan.unslotted, epoch],
        );
      }
      await c.query('UPDATE instances SET plan_epoch = $2 WHERE id = $1', [this.deps.instanceId, epoch]);
      if (announce) await this.deps.events.emit(c, 'queue.replanned', { affected: plan.slots.length, epoch, reason });
    });
    this.epoch = epoch;
    plan.commit();
    if (announce) this.deps.events.flushed();
    this.arm();
    return { affected: plan.slots.length, epoch };
  }

  // ---------------------------------------------------------------- views

  limits(mode: 'pg' | 'memory-degraded' | 'disabled' = 'pg'): LimitsObject {
    const now = this.deps.clock.now();
    return limitsObject(this.deps.settings(), this.planner.historySnapshot(now), now, mode);
  }

  nextAt(): number | null {
    return this.planner.nextAt();
  }

  waitingCount(): number {
    return this.planner.waitingCount();
  }

  /**
   * Queue counts from memory, for the summary while PostgreSQL is unreachable: waiting jobs from the mirror,
   * sends of the last 24 h from the window history; outcomes (sent/failed/unknown totals) are not known then.
   */
  memoryCounts(): QueueCounts {
    const now = this.deps.clock.now();
    const waiting = this.planner.waitingCount();
    const scheduled = this.planner.scheduledCount();
    return {
      queued: waiting - scheduled, scheduled, sending: this.dispatching ? 1 : 0,
      sent: 0, failed: 0, unknown: 0,
      sent24h: this.planner.historySnapshot(now).length, failed24h: 0, unknown24h: 0,
    };
  }

  /** Resolve when the job reaches a terminal state, or with null after `timeoutMs` (v1 synchronous wait). */
  waitForTerminal(jobId: string, timeoutMs: number): Promise<Job | null> {
    const waiting = this.waiters.wait(jobId, timeoutMs);
    // it may have finished before we started waiting
    void getJob(this.deps.pool, this.deps.instanceId, jobId).then(
      (job) => {
        if (job && TERMINAL.has(job.state)) this.waiters.settle(job);
      },
      // the store is unreachable: the waiter still ends by its timeout or by the job's next transition
      (err: unknown) => this.deps.log.warn({ err, jobId }, 'job lookup for a waiter failed'),
    );
    return waiting;
  }

  /** The synchronous caller of `jobId` was answered with its id: the job no longer ends with this process. */
  releaseCaller(jobId: string): Promise<void> {
    return releaseSyncCaller(this.deps.pool, this.deps.instanceId, jobId);
  }

  // ---------------------------------------------------------------- timing and dispatch

  /** Something changed that may allow sending (connected again): re-plan the backlog from now and arm. */
  resume(): void {
    if (this.stopped || !this.started) return;
    void this.serial.run(async () => {
      if (this.planner.hasOverdue(this.deps.clock.now())) await this.replanLocked('backlog', this.deps.clock.now(), true);
      this.arm();
    });
  }

  private disarm(): void {
    if (this.timer !== null) this.deps.clock.clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  /** Set the timer to the next due slot or expiry. */
  arm(): void {
    if (this.stopped || !this.started) return;
    // While the session cannot send, due slots are no reason to wake (resume() re-arms on `ready`);
    // expiries still are.
    let next = this.planner.nextWake(this.deps.dispatcher.connected());
    // outcomes the store did not take are tried again soon (in degraded mode the recovery writes them)
    if (this.writeBack.hasOutcomes && !this.degraded) next = Math.min(next ?? Number.POSITIVE_INFINITY, this.deps.clock.now() + WRITE_BACK_RETRY_MS);
    if (next === null) return this.disarm();
    if (this.timer !== null && this.timerAt <= next) return;
    this.disarm();
    this.timerAt = next;
    this.timer = this.deps.clock.setTimeout(() => {
      this.timer = null;
      this.timerAt = Number.POSITIVE_INFINITY;
      this.tick();
    }, Math.max(0, next - this.deps.clock.now()));
  }

  private tick(): void {
    if (this.stopped || this.dispatching || this.degraded) return;
    this.dispatching = this.serial
      .runFirst(() => this.step())
      .then(async (claimed) => {
        if (claimed) await this.finish(claimed);
      })
      .catch((err: unknown) => this.deps.log.error({ err, instanceId: this.deps.instanceId }, 'queue step failed'))
      .finally(() => {
        this.dispatching = null;
        this.arm();
      });
  }

  /** Expire what is due; claim the next due job if every constraint holds (commit `sending`). */
  private async step(): Promise<Job | null> {
    // nothing is claimed while an earlier outcome is still unwritten (a failure here ends the step; arm retries)
    if (this.writeBack.hasOutcomes) await this.writeBackOutcomes();
    const now = this.deps.clock.now();
    for (const id of this.planner.expiredAt(now)) {
      const job = await getJob(this.deps.pool, this.deps.instanceId, id);
      const moved = job ? await this.move(job, { type: 'EXPIRE' }, { terminalAt: now }, { reason: 'ttl elapsed before a slot came free' }) : null;
      // out of the mirror only once the store has the outcome: a failed write leaves it to expire on the next step
      this.planner.remove(id);
      if (moved) this.pending = Math.max(0, this.pending - 1);
    }
    // the plan stopped at the attempt cap: plan again once the instant it reached has come
    if (this.planner.retryDue(now)) await this.replanLocked('backlog', now, true);
    const due = this.planner.due(now);
    if (!due) return null;
    if (!this.deps.dispatcher.connected()) return null; // resume() re-arms when connected again
    const check = this.planner.recheck(now, this.deps.settings());
    if (!check.ok) {
      // A constraint no longer holds (limits changed, a send outside the queue): not sent; new slots for all.
      await this.replanLocked('recheck', now, false);
      return null;
    }
    let job = await getJob(this.deps.pool, this.deps.instanceId, due);
    // `sending` here: an earlier claim of ours committed but its answer was lost, so the call was never made
    if (job?.state === 'sending') job = await this.putBack(job, now);
    if (!job) {
      this.planner.remove(due);
      return null;
    }
    const claimed = await withTransaction(this.deps.pool, async (c) => {
      const moved = await this.moveIn(c, job, { type: 'DISPATCH' }, { dispatchedAt: now, attemptsIncrement: true });
      if (!moved) return null;
      await recordDispatch(c, this.deps.instanceId, job.id, now);
      return moved;
    });
    this.planner.remove(due);
    if (claimed) this.planner.recordDispatch(now);
    return claimed;
  }

  /**
   * Call the network (outside the serial section) and persist the outcome. A session that went away since the
   * claim is not called at all: the job goes back. An outcome the store does not take is kept for write-back.
   */
  private async finish(job: Job): Promise<void> {
    const outcome: DispatchOutcome = this.deps.dispatcher.connected()
      ? await this.deps.dispatcher.send(job)
      : { kind: 'failed', resultCode: 'INSTANCE_OFFLINE', errorMessage: 'the session went away before the call' };
    const at = this.deps.clock.now();
    if (!neverReachedNetwork(outcome)) this.pending = Math.max(0, this.pending - 1);
    await this.serial.runFirst(async () => {
      try {
        await this.persistOutcome(job, outcome, at);
      } catch (err) {
        this.writeBack.keepOutcome({ job, outcome, at });
        this.deps.log.warn({ err, jobId: job.id, outcome: outcome.kind }, 'dispatch outcome not written; kept for write-back');
      }
    });
  }

  /** Write one outcome with its event (once: the move is conditional on `sending`). */
  private async persistOutcome(job: Job, outcome: DispatchOutcome, at: number): Promise<void> {
    const step = outcomeStep(outcome, at);
    if (step.event.type === 'RETURNED') {
      if (await this.putBack(job, at)) await this.reload(this.deps.clock.now());
      return;
    }
    const moved = await this.move(job, step.event, step.fields, {}, step.forgetDispatch ? (c) => forgetDispatch(c, job.id) : undefined);
    if (moved && step.forgetDispatch) this.planner.forgetDispatch(job.dispatchedAt ?? at);
  }

  /** A claimed job whose call never reached the network: `scheduled` again, its dispatch no longer counted. */
  private async putBack(job: Job, now: number): Promise<Job | null> {
    const back = await this.move(job, { type: 'RETURNED' }, {}, {}, async (c) => {
      await forgetDispatch(c, job.id);
      await c.query('UPDATE jobs SET dispatched_at = NULL WHERE id = $1', [job.id]);
    });
    if (back) this.deps.log.warn({ jobId: job.id, at: now }, 'the session went away before the call: job back in the queue');
    return back ? { ...back, dispatchedAt: null } : null;
  }

  /** Write back the kept outcomes, oldest first; throws (keeping the rest) when the store still fails. */
  private async writeBackOutcomes(): Promise<void> {
    for (const kept of this.writeBack.keptOutcomes()) {
      await this.persistOutcome(kept.job, kept.outcome, kept.at);
      this.writeBack.outcomeWritten(kept.job.id);
    }
  }

  // ---------------------------------------------------------------- outside the persistent queue

  /**
   * Send now without a job: mode `disabled` (no limits, nothing counted) or `memory-degraded` (the same gate
   * as the dispatcher's re-check, from memory; what goes out is counted and written back on recovery).
   */
  async directSend(req: DirectSend, enforceLimits: boolean): Promise<DirectOutcome> {
    let at = this.deps.clock.now();
    if (enforceLimits) {
      const gate = await this.serial.run(async () => {
        at = this.deps.clock.now();
        const check = this.planner.recheck(at, this.deps.settings());
        if (!check.ok) return check;
        this.planner.recordDispatch(at);
        if (this.degraded) this.writeBack.keepDispatch(at);
        return check;
      });
      // no instant within the planner's 200 attempts (e.g. a limit of 0): not before a day has passed
      if (!gate.ok) return { kind: 'rate_limited', retryAt: 'nextAt' in gate && typeof gate.nextAt === 'number' ? gate.nextAt : at + 86_400_000 };
    }
    const pseudo: Job = {
      id: 'direct', seq: 0, instanceId: this.deps.instanceId, state: 'sending', kind: req.kind, originRoute: 'direct',
      chatId: req.chatId, phone: null, payload: req.payload, payloadHash: '', idempotencyKey: null, priority: 9,
      notBefore: null, queuedAt: at, scheduledAt: at, dispatchedAt: at, terminalAt: null, expiresAt: at, attempts: 1,
      deliveryConfidence: null, messageId: null, resultCode: null, errorMessage: null, unknownReason: null, previousJobId: null,
    };
    const outcome = await this.deps.dispatcher.send(pseudo);
    if (outcome.kind === 'failed' && enforceLimits) {
      await this.serial.run(async () => {
        this.planner.forgetDispatch(at);
        this.writeBack.dropDispatch(at);
      });
    }
    return outcome;
  }

  /**
   * The store became unreachable (true) or reachable again (false). On recovery the kept sends and the
   * window's two queue events are written, then the kept outcomes; a recovery that fails is tried again
   * (else the queue would stay degraded, dispatching nothing, while the store answers).
   */
  setDegraded(on: boolean, since: number): Promise<void> {
    this.clearRecoveryTimer();
    if (on) {
      this.degraded = true;
      this.disarm();
      return Promise.resolve();
    }
    if (!this.degraded) return Promise.resolve();
    return this.serial.run(async () => {
      if (!this.degraded) return;
      const sends = this.writeBack.keptDispatches();
      await withTransaction(this.deps.pool, async (c) => {
        await insertKeptDispatches(c, this.deps.instanceId, sends);
        // The outbox lives in PostgreSQL: the window's two events are written when it is reachable again.
        await this.deps.events.emit(c, 'queue.degraded', { queueMode: 'memory-degraded', limitsEnforced: true, since: new Date(since).toISOString() });
        await this.deps.events.emit(c, 'queue.recovered', { queueMode: 'pg', sentWhileDegraded: sends.length });
      });
      this.writeBack.dispatchesWritten(sends.length);
      this.degraded = false;
      this.deps.events.flushed();
      // outcomes of sends that went out during the outage, each with its message.* event; arm() retries a failure
      await this.writeBackOutcomes().catch((err: unknown) => this.deps.log.warn({ err }, 'kept outcomes not written yet'));
    }).then(
      () => this.resume(),
      (err: unknown) => {
        this.retryRecovery(since);
        throw err;
      },
    );
  }

  private retryRecovery(since: number): void {
    if (this.stopped) return;
    this.recoveryTimer = this.deps.clock.setTimeout(() => {
      this.recoveryTimer = null;
      void this.setDegraded(false, since).catch((err: unknown) => this.deps.log.warn({ err }, 'queue recovery failed again; retrying'));
    }, WRITE_BACK_RETRY_MS);
  }

  private clearRecoveryTimer(): void {
    if (this.recoveryTimer !== null) this.deps.clock.clearTimeout(this.recoveryTimer);
    this.recoveryTimer = null;
  }

  get isDegraded(): boolean {
    return this.degraded;
  }

  // ---------------------------------------------------------------- transitions

  /** Apply a job-machine event and persist it conditionally, with its event, in one transaction. */
  private async move(
    job: Job,
    event: JobEvent,
    fields: TransitionFields,
    extra: Record<string, unknown>,
    also?: (c: PoolClient) => Promise<void>,
  ): Promise<Job | null> {
    const moved = await withTransaction(this.deps.pool, async (c) => {
      const m = await this.moveIn(c, job, event, fields, extra);
      if (m && also) await also(c);
      return m;
    });
    this.deps.events.flushed();
    if (moved && TERMINAL.has(moved.state)) this.waiters.settle(moved);
    return moved;
  }

  private async moveIn(c: PoolClient, job: Job, event: JobEvent, fields: TransitionFields, extra: Record<string, unknown> = {}): Promise<Job | null> {
    const step = applyJobEvent(job.state, event);
    if (!step) return null;
    const f: TransitionFields = { ...fields };
    if (step.deliveryConfidence) f.deliveryConfidence = step.deliveryConfidence;
    const moved = await transitionJob(c, job.id, statesAccepting(event.type), step.next, f);
    if (moved && step.emits) await this.emitFor(c, moved, step.emits, extra);
    return moved;
  }

  private async emitFor(q: Queryable, job: Job, event: QueueEventName, extra: { reason?: string } = {}): Promise<void> {
    const data = queueEventData(event, job, { now: this.deps.clock.now(), position: this.planner.position(job.id), reason: extra.reason });
    await this.deps.events.emit(q, event, data);
  }
}

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_JOB_STATES);
/** what acceptance emits, read once from the job machine's initial transition */
const QUEUED_EVENT: QueueEventName = acceptJob().emits ?? 'message.queued';

function mismatch(jobId: string): ApiError {
  return new ApiError(409, 'IDEMPOTENCY_PAYLOAD_MISMATCH', 'this idempotency key was used with a different payload', { jobId });
}

function toPlanJob(j: Pick<Job, 'id' | 'priority' | 'seq' | 'notBefore' | 'expiresAt' | 'scheduledAt'>): MirrorJob {
  return { id: j.id, priority: j.priority, seq: j.seq, notBefore: j.notBefore, expiresAt: j.expiresAt, scheduledAt: j.scheduledAt };
}
