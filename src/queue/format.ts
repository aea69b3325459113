/** The queue's public shapes: SPEC.md "Job status object" and "Accepted-job response". */
import { isWaiting } from '../../machines/job.machine.js';
import type { Job } from './job.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
export const etaSeconds = (scheduledAt: number | null, now: number) =>
  scheduledAt === null ? null : Math.max(0, Math.ceil((scheduledAt - now) / 1000));

export function jobStatus(job: Job, now: number): Record<string, unknown> {
  const waiting = isWaiting(job.state);
  return {
    jobId: job.id,
    state: job.state,
    deliveryConfidence: job.deliveryConfidence ?? (job.state === 'sent' ? 'assumed' : 'unknown'),
    messageId: job.messageId,
    resultCode: job.resultCode,
    errorMessage: job.errorMessage,
    unknownReason: job.unknownReason,
    idempotencyKey: job.idempotencyKey,
    kind: job.kind,
    chatId: job.chatId,
    phone: job.phone,
    priority: job.priority,
    originRoute: job.originRoute,
    queuedAt: iso(job.queuedAt),
    scheduledAt: iso(job.scheduledAt),
    dispatchedAt: iso(job.dispatchedAt),
    terminalAt: iso(job.terminalAt),
    expiresAt: iso(job.expiresAt),
    attempts: job.attempts,
    etaSeconds: waiting ? etaSeconds(job.scheduledAt, now) : null,
    ...(job.previousJobId ? { previousJobId: job.previousJobId } : {}),
  };
}

export interface AcceptedView {
  job: Job;
  replay: boolean;
  queuePosition: number;
  limits: Record<string, unknown>;
  warnings: string[];
}

/** `data` of a v2 send answer (202 fresh, 200 replay). */
export function acceptedResponse(v: AcceptedView, now: number): Record<string, unknown> {
  const { job } = v;
  // A fresh submission always says `queued`; a replay mirrors the original job but never says `scheduled`.
  const status = !v.replay ? 'queued' : job.state === 'scheduled' ? 'queued' : job.state;
  return {
    status,
    queueState: job.scheduledAt !== null && isWaiting(job.state) ? 'scheduled' : 'queued',
    jobId: job.id,
    messageId: job.messageId,
    idempotencyKey: job.idempotencyKey,
    idempotentReplay: v.replay,
    scheduledAt: iso(job.scheduledAt),
    etaSeconds: etaSeconds(job.scheduledAt, now) ?? 0,
    queuePosition: v.queuePosition,
    expiresAt: iso(job.expiresAt),
    statusUrl: `/api/v2/messages/${job.id}`,
    limits: v.limits,
    ...(v.warnings.length > 0 ? { warnings: v.warnings } : {}),
  };
}
