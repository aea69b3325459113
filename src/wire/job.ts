/**
 * Wire shapes of the queue (src/wire/): SPEC.md "Job status object" and "Accepted-job response", views of a job
 * at an instant. Shared by the v2 and v1 routes and the queue's events (queue-events.ts).
 */
import type { Job } from '../queue/jobs.js';

const DAY_MS = 86_400_000;
/** year 10000: from there on toISOString writes six-digit years */
const YEAR_10000 = 253_402_300_800_000;
const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);
// the date part of the last day written: a send-bulk writes thousands of instants, most on a few days
let lastDay = Number.NaN;
let lastDate = '';

/**
 * ms since the epoch → ISO 8601, null kept. Exactly `new Date(ms).toISOString()`: whole milliseconds from 1970
 * to 9999 are written here (the date part once per day, the time of day by arithmetic), anything else by Date.
 */
export function iso(ms: number | null): string | null {
  if (ms === null) return null;
  if (!(ms >= 0 && ms < YEAR_10000 && Number.isInteger(ms))) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY_MS);
  if (day !== lastDay) {
    lastDate = new Date(day * DAY_MS).toISOString().slice(0, 11);
    lastDay = day;
  }
  let rest = ms - day * DAY_MS;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = Math.floor(rest / 1000);
  return `${lastDate}${pad2(h)}:${pad2(m)}:${pad2(s)}.${pad3(rest - s * 1000)}Z`;
}
/** whole seconds from `now` to the slot, never negative; null without a slot */
export const etaSeconds = (scheduledAt: number | null, now: number) =>
  scheduledAt === null ? null : Math.max(0, Math.ceil((scheduledAt - now) / 1000));

export function jobStatus(job: Job, now: number): Record<string, unknown> {
  const waiting = job.state === 'queued' || job.state === 'scheduled';
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
  // a waiting job without a slot has no send time: etaSeconds must be an integer (SPEC.md), and its 0 is not one
  const waiting = job.state === 'queued' || job.state === 'scheduled';
  const unplanned = job.scheduledAt === null && waiting;
  const warnings = unplanned ? [...v.warnings, NO_SLOT_YET] : v.warnings;
  return {
    status,
    // SPEC.md: `queued` exactly when scheduledAt is null; a replay of a job that went out keeps the slot it had
    queueState: job.scheduledAt !== null ? 'scheduled' : 'queued',
    jobId: job.id,
    messageId: job.messageId,
    idempotencyKey: job.idempotencyKey,
    idempotentReplay: v.replay,
    scheduledAt: iso(job.scheduledAt),
    // a replay of a job no longer waiting (being sent, or ended: a cancelled one too) has no send ahead of it:
    // 0, not the seconds to a slot it will never take (its status answers etaSeconds null)
    etaSeconds: waiting ? etaSeconds(job.scheduledAt, now) ?? 0 : 0,
    queuePosition: v.queuePosition,
    expiresAt: iso(job.expiresAt),
    statusUrl: `/api/v2/messages/${job.id}`,
    limits: v.limits,
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/**
 * The warning of an answer whose job has no slot yet: the planner places at most a bounded number of jobs
 * ahead (src/queue/plan.ts), and a job beyond what the limits let it reach waits, `queued`, until earlier
 * dispatches free the windows. Its etaSeconds then reads 0 (an integer by SPEC.md), which is no send time.
 */
export const NO_SLOT_YET = 'no slot yet: the send limits leave none within what is planned so far; etaSeconds 0 is not a send time: the job is planned as earlier messages go out (its status shows the slot once it has one)';
