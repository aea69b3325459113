/** The queue worker's interface: what it needs (deps) and what it answers. */
import type { Pool, Queryable } from '../store/pool.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { InstanceSettings } from './settings.js';
import type { Job } from './jobs.js';

export interface QueueEventSink {
  /** Write an event to the outbox inside the caller's transaction. */
  emit(q: Queryable, event: string, data: Record<string, unknown>): Promise<void>;
  /** Several events in one statement, in order (the `message.queued` events of an acceptance batch). */
  emitMany(q: Queryable, items: { event: string; data: Record<string, unknown> }[]): Promise<void>;
  /** Called after a commit that emitted events: wake the webhook sender. */
  flushed(): void;
}

export interface Dispatcher {
  /** Send one job (a claimed one is already committed as `sending`); resolves with the outcome, never throws. */
  send(job: Job): Promise<DispatchOutcome>;
  /** Whether the session can send now. */
  connected(): boolean;
}

export type DispatchOutcome =
  | { kind: 'confirmed'; messageId: string }
  | { kind: 'assumed'; messageId: string | null }
  | { kind: 'failed'; resultCode: string; errorMessage: string }
  | { kind: 'unknown'; unknownReason: string };

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
}

/** A validated send as a route hands it over: the job's own fields, its validity and, for a requeue, its origin. */
export type AcceptRequest = Pick<
  Job,
  'kind' | 'originRoute' | 'chatId' | 'phone' | 'payload' | 'payloadHash' | 'idempotencyKey' | 'priority' | 'notBefore'
> & {
  /** null: the instance's defaultTtlSeconds */
  ttlSeconds: number | null;
  previousJobId?: string | null;
  /** a synchronous v1 caller waits for the outcome in this process (src/queue/sync-callers.ts) */
  awaitsCaller?: boolean;
};

export interface AcceptResult {
  job: Job;
  replay: boolean;
  queuePosition: number;
}

/** A send outside the persistent queue (v1 in `disabled` and `memory-degraded` modes). */
export interface DirectSend {
  kind: string;
  chatId: string;
  payload: Record<string, unknown>;
}
export type DirectOutcome = DispatchOutcome | { kind: 'rate_limited'; retryAt: number };
