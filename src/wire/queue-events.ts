/**
 * Wire shapes of the queue's webhook events (src/wire/): the payloads of the `message.*` events (SPEC.md
 * "Queue events") from a job as it is after its transition.
 */
import type { QueueEventName } from '../../machines/job.machine.js';
import type { Job } from '../queue/jobs.js';
import { etaSeconds, iso } from './job.js';

export function queueEventData(event: QueueEventName, job: Job, ctx: { now: number; position: number; reason?: string | undefined }): Record<string, unknown> {
  switch (event) {
    case 'message.queued':
      return {
        jobId: job.id,
        idempotencyKey: job.idempotencyKey,
        chatId: job.chatId,
        scheduledAt: iso(job.scheduledAt),
        etaSeconds: etaSeconds(job.scheduledAt, ctx.now),
        queuePosition: ctx.position,
      };
    case 'message.sent':
      return { jobId: job.id, messageId: job.messageId, deliveryConfidence: job.deliveryConfidence, dispatchedAt: iso(job.dispatchedAt) };
    case 'message.failed':
      return { jobId: job.id, resultCode: job.resultCode, errorMessage: job.errorMessage };
    case 'message.unknown':
      return { jobId: job.id, unknownReason: job.unknownReason, dispatchedAt: iso(job.dispatchedAt) };
    case 'message.cancelled':
    case 'message.expired':
      return { jobId: job.id, reason: ctx.reason ?? event.slice('message.'.length) };
  }
}
