/** The queue worker's interface: what it needs (deps) and what it answers. */
import type { Pool, Queryable } from '../store/pool.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { InstanceSettings } from './settings.js';
import type { Job, JobRecord } from './job.js';
import type { Send } from './payload.js';
import type { AcceptanceCommitter } from './group-commit.js';

export interface QueueEventSink {
  /**
   * Write an event to the outbox inside the caller's transaction; whether it was written (false: no webhook
   * wants it, so its commit need not wake the sender).
   */
  emit(q: Queryable, event: string, data: Record<string, unknown>): Promise<boolean>;
  /** Several events in one statement, in order (the `message.queued` events of an acceptance batch). */
  emitMany(q: Queryable, items: { event: string; data: Record<string, unknown> }[]): Promise<void>;
  /** Called after a commit that wrote events (QueueCore.transaction knows): wake the webhook sender. */
  flushed(): void;
}

export interface Dispatcher {
  /** Send one job (a claimed one is already committed as `sending`); resolves with the outcome, never throws. */
  send(job: Job): Promise<DispatchOutcome>;
  /** Whether the session can send now. */
  connected(): boolean;
}

export type DispatchOutcome = (
  | { kind: 'confirmed'; messageId: string }
  | { kind: 'assumed'; messageId: string | null }
  | { kind: 'failed'; resultCode: string; errorMessage: string }
  | { kind: 'unknown'; unknownReason: string }
) & {
  /**
   * When the call was handed to the network, once the message was prepared (its media read or fetched), on the
   * queue's clock; none when no call was made. The pause to the next message runs from here (src/queue/
   * outcome-writer.ts `fromTheCall`).
   */
  callAt?: number;
};

/**
 * Observations for the metrics (src/metrics/): plain numbers, so the queue needs no metrics library. Durations
 * are real time (the work takes it whatever the clock says); lateness is on the queue's clock.
 */
export interface QueueMetrics {
  /** a request left acceptance (its batch committed, or it was refused): from the offer to its answer */
  accepted(outcome: AcceptOutcome['kind'], durationMs: number): void;
  /**
   * A dispatch ended: its outcome (`returned`: the call never reached the network, the job waits again), how long
   * the call took, and how long after its slot the job was claimed.
   */
  dispatched(outcome: DispatchOutcome['kind'] | 'returned', callMs: number, lateMs: number): void;
  /**
   * A node-wide group commit of acceptances ended (src/queue/group-commit.ts), committed or not: from its start
   * to its outcome, PostgreSQL's share of each acceptance's answer, and the requests it held.
   */
  committed(durationMs: number, requests: number): void;
}

/** A lease of an instance as a fenced write checks it: held by `nodeId` at `epoch`, and not expired. */
export interface LeaseRef {
  nodeId: string;
  epoch: number;
}

export interface WorkerDeps {
  instanceId: string;
  pool: Pool;
  clock: Clock;
  log: Logger;
  settings(): InstanceSettings;
  maxPending: number;
  events: QueueEventSink;
  dispatcher: Dispatcher;
  random?: (min: number, max: number) => number;
  /** largest number of acceptances committed in one transaction */
  batchSize?: number;
  /**
   * Called first in every transaction that writes the queue (src/cluster/leases.ts): throws unless this node
   * still holds the instance's lease, and holds the lease row until the commit, so a takeover waits for it.
   */
  fence?: (q: Queryable) => Promise<void>;
  /**
   * The lease this node holds of the instance (null: none), given with `fence`: a write that is one statement
   * (the dispatch claim, src/queue/sql/claimJob.ts) fences itself inside it, instead of a transaction that
   * starts with `fence` (BEGIN, fence, write, COMMIT: four round trips where one does).
   */
  lease?: () => LeaseRef | null;
  /** observations for /metrics (none: not observed) */
  metrics?: QueueMetrics;
  /** the node's group commit of acceptances (none: the queue commits its batches alone) */
  committer?: AcceptanceCommitter;
  /** where sends made outside the store are kept on disk until it has them (none: memory only) */
  journal?: SendJournal;
}

/** A validated send as a route hands it over: the send, its place in the queue and, for a requeue, its origin. */
export type AcceptRequest = Send & Pick<JobRecord, 'originRoute' | 'chatId' | 'phone' | 'payloadHash' | 'idempotencyKey' | 'priority' | 'notBefore'> & {
  /** null: the instance's defaultTtlSeconds */
  ttlSeconds: number | null;
  previousJobId?: string | null;
  /** a synchronous v1 caller waits for the outcome in this process (src/queue/sync-callers.ts) */
  awaitsCaller?: boolean;
  /** the boot id of the process whose route waits (src/queue/sync-callers.ts), given with `awaitsCaller` */
  callerBoot?: string;
};

export interface AcceptResult {
  job: Job;
  replay: boolean;
  queuePosition: number;
}

/** Why acceptance created no job (SPEC.md "Job transitions", the `(no job)` rows, and idempotency). */
export type Refusal =
  | { kind: 'refused'; code: 'QUEUE_FULL'; maxPending: number }
  | { kind: 'refused'; code: 'TTL_UNREACHABLE'; expiresAt: number }
  | { kind: 'refused'; code: 'IDEMPOTENCY_PAYLOAD_MISMATCH'; jobId: string };

/** What acceptance answers: a new job, the job an idempotency key already names, or a refusal. */
export type AcceptOutcome =
  | { kind: 'accepted'; job: Job; queuePosition: number }
  | { kind: 'replay'; job: Job; queuePosition: number }
  | Refusal;

/** A send outside the persistent queue (v1 in `disabled` and `memory-degraded` modes). */
export type DirectSend = Send & { chatId: string };
export type DirectOutcome = DispatchOutcome | { kind: 'rate_limited'; retryAt: number };

/**
 * Where a queue keeps on disk what PostgreSQL does not have yet: sends made outside it and outcomes not written
 * (src/queue/degraded-journal.ts DegradedJournal), named here so that the queue's types need not import it.
 */
export interface SendJournal {
  kept(instanceId: string, at: number): void;
  dropped(instanceId: string, at: number): void;
  written(instanceId: string, ats: readonly number[]): void;
  outcome(instanceId: string, jobId: string, outcome: DispatchOutcome, at: number): void;
  stored(instanceId: string, jobId: string, at: number): void;
}
