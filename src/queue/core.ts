/**
 * What the parts of one instance's queue share (acceptance, dispatch timing, degraded mode): the planner's
 * mirror of PostgreSQL, the serial executor every slot decision runs on, the callers waiting for outcomes,
 * and the one way a job's state changes: a job-machine event applied by a conditional UPDATE
 * (src/queue/sql/transitionJob.ts) with the `message.*` event the step names, in one transaction.
 */
import { withTransaction, type PoolClient, type Queryable } from '../store/pool.js';
import { isTerminal, type JobEvent, type QueueEventName } from '../../machines/job.machine.js';
import type { Job, TransitionFields } from './job.js';
import { Planner } from './planning.js';
import { Serial } from './serial.js';
import { TerminalWaiters } from './waiters.js';
import { WriteBack } from './write-back.js';
import { queueEventData } from '../wire/queue-events.js';
import { countPending } from './sql/countPending.js';
import { listWaitingAndLostClaims } from './sql/listWaiting.js';
import { loadHistory } from './sql/loadHistory.js';
import { loadPlanState } from './sql/loadPlanState.js';
import { transitionJob } from './sql/transitionJob.js';
import { loadOutcomes, type Outcome } from './sql/loadOutcomes.js';
import { isOutcome, Tally } from './tally.js';
import type { WorkerDeps } from './types.js';
import type { StartState } from './sql/loadStarts.js';

/** Extra data of a move's event (`reason` of message.cancelled / message.expired). */
export interface MoveExtra {
  reason?: string;
}

export class QueueCore {
  readonly serial = new Serial();
  readonly planner: Planner;
  readonly waiters: TerminalWaiters;
  /** sends made while degraded and outcomes whose write failed: written back when the store answers */
  readonly writeBack: WriteBack;
  /** outcomes counted as they are committed (GET /api/status without a query) */
  readonly tally = new Tally();
  /** outcomes moved inside a transaction not yet committed, by its client */
  private readonly uncommitted = new Map<PoolClient, { state: Outcome; at: number }[]>();
  /** transactions not yet committed that wrote an event: their commit wakes the webhook sender */
  private readonly evented = new Set<PoolClient>();
  /** jobs not final yet (waiting or being sent): QUEUE_FULL compares it with maxPending */
  pending = 0;
  epoch = 0;
  /** PostgreSQL is unreachable: no dispatch from the queue; v1 sends pass the in-memory gate */
  degraded = false;
  started = false;
  stopped = false;
  /**
   * Whether this process holds the claim of a job: its call in flight or its outcome not yet written (set by
   * src/queue/dispatch-loop.ts). A `sending` job it does not hold is a claim whose answer was lost (`reload`).
   */
  claimHeld: (jobId: string) => boolean = () => false;

  constructor(readonly deps: WorkerDeps) {
    this.planner = new Planner({ random: deps.random, salt: deps.instanceId });
    this.writeBack = new WriteBack(deps.instanceId, deps.journal);
    this.waiters = new TerminalWaiters(deps.clock);
  }

  get instanceId(): string {
    return this.deps.instanceId;
  }

  now(): number {
    return this.deps.clock.now();
  }

  /** Whether timers may act: started and not stopped. */
  get running(): boolean {
    return this.started && !this.stopped;
  }

  /** One job fewer not final (it ended, or it was never sent and counts again when re-claimed). */
  settledOne(): void {
    this.pending = Math.max(0, this.pending - 1);
  }

  /**
   * Load the mirror (waiting jobs, dispatch history, epoch, pending count, outcome tally) from PostgreSQL. Claims
   * whose answer was lost come back into the mirror: found from the outside, a claim that committed while its
   * answer timed out (the store's answers lost for seconds under load), followed by this re-read after a group
   * commit of unknown outcome, left the job `sending` for ever with its call never made.
   */
  async reload(now: number): Promise<void> {
    const { pool, instanceId } = this.deps;
    const plan = await loadPlanState(pool, instanceId);
    const history = await loadHistory(pool, instanceId, now);
    // a claim whose answer was lost is read back into the mirror (else it would stay `sending` for ever)
    const waiting = await listWaitingAndLostClaims(pool, instanceId, this.claimHeld);
    const pending = await countPending(pool, instanceId);
    const outcomes = await loadOutcomes(pool, instanceId, now);
    this.load({ epoch: plan.epoch, lastDispatchAt: plan.lastDispatchAt, history, waiting, pending, outcomes });
  }

  /** Take what the queue starts from, read alone (`reload`) or with other queues' starts (src/queue/starts.ts). */
  load(state: Omit<StartState, 'needsRecovery'>): void {
    this.epoch = state.epoch;
    this.pending = state.pending;
    this.tally.load(state.outcomes);
    // the sends outside the queue whose rows are not in the store yet still count (src/queue/write-back.ts)
    const unwritten = this.writeBack.uncommittedDispatches();
    const history = unwritten.length === 0 ? state.history : [...state.history, ...unwritten].sort((a, b) => a - b);
    const lastDispatchAt = unwritten.length === 0 ? state.lastDispatchAt : Math.max(state.lastDispatchAt ?? Number.NEGATIVE_INFINITY, ...unwritten);
    this.planner.load({ history, lastDispatchAt, waiting: state.waiting });
  }

  /**
   * A transaction that writes the queue: fenced by the instance's lease first (WorkerDeps.fence). Its commit
   * wakes the webhook sender if it wrote an event (`emit`): only then, so that an instance without a webhook
   * costs its sender no outbox read per dispatch.
   */
  transaction<T>(work: (c: PoolClient) => Promise<T>): Promise<T> {
    const ended: { state: Outcome; at: number }[] = [];
    let client: PoolClient | null = null;
    return withTransaction(this.deps.pool, async (c) => {
      client = c;
      this.uncommitted.set(c, ended);
      await this.deps.fence?.(c);
      return work(c);
    }).then(
      (result) => {
        // committed: the outcomes it wrote count now, the events it wrote can go
        for (const e of ended) this.tally.ended(e.state, e.at);
        if (client && this.evented.has(client)) this.deps.events.flushed();
        return result;
      },
    ).finally(() => {
      if (client) {
        this.uncommitted.delete(client);
        this.evented.delete(client);
      }
    });
  }

  /** Apply a job-machine event and persist it conditionally, with its event, in one transaction. */
  async move(job: Job, event: JobEvent, fields: TransitionFields, extra: MoveExtra = {}, also?: (c: PoolClient) => Promise<void>): Promise<Job | null> {
    const moved = await this.transaction(async (c) => {
      const m = await this.moveIn(c, job, event, fields, extra);
      if (m && also) await also(c);
      return m;
    });
    if (moved && isTerminal(moved.state)) this.waiters.settle(moved);
    return moved;
  }

  /**
   * The same inside the caller's transaction; null when the job was not in a state the event is allowed in.
   * Waiters are not answered here (the caller's transaction may still roll back).
   */
  async moveIn(c: PoolClient, job: Pick<Job, 'id'>, event: JobEvent, fields: TransitionFields, extra: MoveExtra = {}): Promise<Job | null> {
    const moved = await transitionJob(c, job.id, event, fields);
    if (!moved) return null;
    if (isOutcome(moved.job.state)) this.uncommitted.get(c)?.push({ state: moved.job.state, at: moved.job.terminalAt ?? this.now() });
    if (moved.step.emits) await this.emitFor(c, moved.job, moved.step.emits, extra);
    return moved.job;
  }

  async emitFor(c: PoolClient, job: Job, event: QueueEventName, extra: MoveExtra = {}): Promise<void> {
    const data = queueEventData(event, job, { now: this.now(), position: this.planner.position(job.id), reason: extra.reason });
    await this.emit(c, event, data);
  }

  /** Write an event inside one of this queue's transactions (`transaction`), whose commit then wakes the sender. */
  async emit(c: PoolClient, event: string, data: Record<string, unknown>): Promise<void> {
    if (!this.uncommitted.has(c)) throw new Error('QueueCore.emit outside one of its transactions');
    if (await this.deps.events.emit(c, event, data)) this.evented.add(c);
  }
}
