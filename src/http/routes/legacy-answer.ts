/**
 * The frozen v1 answer shapes (SPEC.md "v1 send outcomes"), in one place so that their bytes, key order
 * included, cannot drift: test/integration/legacy-routes.test.ts compares them byte for byte.
 *
 * Successes are written with `ok()` (`{success:true, data}`); failures are thrown as V1Error, whose body the
 * error boundary writes verbatim: `{success:false, error}`, and only the 504 adds `code` and `data`.
 */
import type { Context } from 'koa';
import { ok } from '../envelope.js';
import { NOT_CONNECTED, V1Error } from '../errors.js';
import { etaSeconds, iso } from '../../wire/job.js';
import type { Job } from '../../queue/jobs.js';
import type { DispatchOutcome } from '../../queue/worker.js';
import type { V1Send } from './legacy-parse.js';

/** How a v1 send ended: a dispatch outcome, or not sent at all (`offline`: because of the connection). */
export type V1Outcome = DispatchOutcome | { kind: 'not_sent'; offline: boolean; error: string };

export { COMMIT_UNKNOWN, NOT_CONNECTED, RESTARTING, STORE_LOST, STORE_LOST_QUEUED } from '../errors.js';

const mediaTag = (send: Pick<V1Send, 'kind'>) => (send.kind === 'media' ? { type: 'media' } : {});

/** 200 `{success:true, data:{messageId, phone, status:'sent'}}`, plus `type:'media'` after `status`. */
export function sentData(send: Pick<V1Send, 'kind' | 'phone'>, messageId: string | null): Record<string, unknown> {
  return { messageId, phone: send.phone, status: 'sent', ...mediaTag(send) };
}

/** 202 of `legacyQueueMode: async`: `{messageId:null, phone, status:'queued', jobId, scheduledAt, etaSeconds}`. */
export function queuedData(send: Pick<V1Send, 'kind' | 'phone'>, job: Job, now: number): Record<string, unknown> {
  return {
    messageId: null,
    phone: send.phone,
    status: 'queued',
    ...mediaTag(send),
    jobId: job.id,
    scheduledAt: iso(job.scheduledAt),
    etaSeconds: etaSeconds(job.scheduledAt, now),
  };
}

/** An accepted send-bulk entry. */
export function bulkQueued(phone: string, job: Job, now: number): Record<string, unknown> {
  return { phone, status: 'queued', jobId: job.id, scheduledAt: iso(job.scheduledAt), etaSeconds: etaSeconds(job.scheduledAt, now) };
}

/** A rejected send-bulk entry: it does not abort the batch. */
export function bulkRejected(phone: string | null, error: string): Record<string, unknown> {
  return { phone, status: 'rejected', error };
}

/**
 * 504: the message is still on its way after the synchronous wait; the caller polls the job and does not
 * resend. Either it waits in the queue and goes out at `scheduledAt` (its slot as read after the wait;
 * `etaSeconds` is null only for a job without a slot), or it was being sent when the wait ended: the network
 * had not answered yet (a hanging call runs until DRIVER_CALL_TIMEOUT_MS). That one was told "still queued, it
 * goes out at scheduledAt" with a slot already past; found from the outside.
 */
export function waitTimeout(job: Job, now: number): V1Error {
  const error = job.state === 'sending'
    ? 'the message was being sent when the synchronous wait ended and the network has not answered yet: poll the job for its outcome, do not resend'
    : 'the message is still queued after the synchronous wait; it goes out at scheduledAt: poll the job, do not resend';
  return new V1Error(504, error, {
    success: false,
    error,
    code: 'QUEUE_WAIT_TIMEOUT',
    data: { jobId: job.id, scheduledAt: iso(job.scheduledAt), etaSeconds: etaSeconds(job.scheduledAt, now) },
  });
}

/** Write a delivered outcome (200), or throw the failure (500 not delivered, 503 not connected). */
export function answerOutcome(ctx: Context, send: V1Send, o: V1Outcome): void {
  switch (o.kind) {
    case 'confirmed':
    case 'assumed':
      ok(ctx, sentData(send, o.messageId));
      return;
    case 'failed':
      // the dispatcher found no session: the one "failed" that is about the connection
      throw new V1Error(o.resultCode === 'INSTANCE_OFFLINE' ? 503 : 500, o.resultCode === 'INSTANCE_OFFLINE' ? NOT_CONNECTED : o.errorMessage);
    case 'unknown':
      throw new V1Error(500, `the outcome is unknown (${o.unknownReason}); the message may have been delivered: do not resend`);
    case 'not_sent':
      throw new V1Error(o.offline ? 503 : 500, o.error);
  }
}

/** The outcome of a terminal job; `expired` gets its reason from the caller (it knows why the slot never came). */
export function outcomeOfJob(job: Job, whyExpired: () => V1Outcome): V1Outcome {
  switch (job.state) {
    case 'sent':
      return job.deliveryConfidence === 'confirmed' && job.messageId !== null
        ? { kind: 'confirmed', messageId: job.messageId }
        : { kind: 'assumed', messageId: job.messageId };
    case 'failed':
      return { kind: 'failed', resultCode: job.resultCode ?? 'FAILED', errorMessage: job.errorMessage ?? 'message not delivered' };
    case 'unknown':
      return { kind: 'unknown', unknownReason: job.unknownReason ?? 'the network gave no verifiable answer' };
    case 'cancelled':
      return { kind: 'not_sent', offline: false, error: 'the message was cancelled before it was sent' };
    case 'expired':
      return whyExpired();
    default:
      return { kind: 'unknown', unknownReason: `the job is still ${job.state}` };
  }
}
