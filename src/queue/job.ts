/**
 * The job record as the queue sees it: a send (kind + payload, src/queue/payload.ts) with its place in the
 * queue and its outcome. PostgreSQL holds it (src/queue/sql/); states and transitions are the job machine's
 * (machines/job.machine.ts).
 */
import type { DeliveryConfidence, JobState } from '../../machines/job.machine.js';
import type { Send } from './payload.js';

export type { JobState };

/** Everything of a job but its send. */
export interface JobRecord {
  id: string;
  seq: number;
  instanceId: string;
  state: JobState;
  originRoute: string;
  chatId: string | null;
  phone: string | null;
  /**
   * The fingerprint of what is sent (src/http/routes/send.ts payloadHash), which an idempotency replay compares;
   * null for a job without an idempotency key, which nothing compares (sql/0010_payload_hash_keyed_only.sql).
   */
  payloadHash: string | null;
  idempotencyKey: string | null;
  priority: number;
  notBefore: number | null;
  queuedAt: number;
  scheduledAt: number | null;
  dispatchedAt: number | null;
  terminalAt: number | null;
  expiresAt: number;
  attempts: number;
  deliveryConfidence: DeliveryConfidence | null;
  messageId: string | null;
  resultCode: string | null;
  errorMessage: string | null;
  unknownReason: string | null;
  previousJobId: string | null;
}

/** A stored job: `kind` narrows `payload`. */
export type Job = JobRecord & Send;

/** The origin of a send outside the queue (src/queue/degraded.ts `directJob`): dispatched as a job, never stored. */
export const DIRECT_ORIGIN = 'direct';

/** Whether `job` is a row of `jobs` (not a direct send, which has none). */
export const isStoredJob = (job: JobRecord): boolean => job.originRoute !== DIRECT_ORIGIN;

/** Whether `job` was accepted by a v1 send route (`/api/send-…`), not by v2 or an operator's route. */
export const isV1Origin = (job: Pick<JobRecord, 'originRoute'>): boolean => job.originRoute.startsWith('/api/') && !job.originRoute.startsWith('/api/v2/');

/** What acceptance inserts: the job's own fields; state, seq and outcomes are the store's. */
export type NewJob = Pick<
  JobRecord,
  'id' | 'instanceId' | 'originRoute' | 'chatId' | 'phone' | 'payloadHash' | 'idempotencyKey' | 'priority' |
  'notBefore' | 'queuedAt' | 'scheduledAt' | 'expiresAt' | 'previousJobId'
> & Send & {
  /** the boot id of the process whose synchronous v1 caller waits for this job (src/queue/sync-callers.ts) */
  callerBoot: string | null;
};

/** Columns a transition writes with the state (undefined: left as it is). */
export interface TransitionFields {
  /** null clears the slot */
  scheduledAt?: number | null;
  /** null clears it (a claim that never reached the network) */
  dispatchedAt?: number | null;
  terminalAt?: number;
  messageId?: string | null;
  resultCode?: string | null;
  errorMessage?: string | null;
  unknownReason?: string | null;
  attemptsIncrement?: boolean;
}

export interface QueueCounts {
  queued: number;
  scheduled: number;
  sending: number;
  sent: number;
  failed: number;
  unknown: number;
  sent24h: number;
  failed24h: number;
  unknown24h: number;
}
