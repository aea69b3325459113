/**
 * When a request may be repeated (docs/api.md "Idempotency and when a retry is safe"), and how long to wait.
 *
 * A request belongs to one of three classes:
 * - `keyed`: a send carrying an idempotency key (and a requeue, whose key the gateway derives). A repeat is at
 *   worst a replay of the same job, so it may be repeated after no answer at all, `502 INSTANCE_UNREACHABLE`,
 *   `503 QUEUE_PAUSED` (after `data.retryAfterSeconds`), `504 INSTANCE_TIMEOUT` and `500 INTERNAL_ERROR`.
 * - `read`: a GET. Nothing changes, so the same as `keyed`.
 * - `unkeyed`: a send without a key and every other change (cancel, interactions, groups, media). Only where
 *   provably nothing was done: a refused connection (no byte left), `502 INSTANCE_UNREACHABLE` and
 *   `503 QUEUE_PAUSED`. Never after a dropped connection or a `504`/`500`: the first request may have acted.
 *
 * Every other answer is final (a 4xx, `503 INSTANCE_OFFLINE`, `503 QUEUE_STORE_UNAVAILABLE`, …).
 */
export type RetryClass = 'keyed' | 'read' | 'unkeyed';

export interface RetryOptions {
  /** requests in all, the first included (default 4; 1 turns retries off) */
  maxAttempts?: number;
  /** first backoff ceiling in ms (default 250); doubles each attempt */
  baseDelayMs?: number;
  /** backoff ceiling in ms (default 10_000) */
  maxDelayMs?: number;
  /** longest `503 QUEUE_PAUSED` wait the client will sit through, in ms (default 120_000); longer: give up */
  maxPauseWaitMs?: number;
}

export const RETRY_DEFAULTS: Required<RetryOptions> = { maxAttempts: 4, baseDelayMs: 250, maxDelayMs: 10_000, maxPauseWaitMs: 120_000 };

/** What happened to one attempt, as far as a retry decision needs it. */
export type AttemptOutcome =
  | { kind: 'no-response'; connectRefused: boolean }
  | { kind: 'answer'; status: number; code: string | null; retryAfterSeconds: number | null };

export type RetryDecision = { retry: false } | { retry: true; delayMs: number };

/** Full jitter: a random wait in [ceiling/2, ceiling] with ceiling = min(max, base * 2^(attempt-1)). */
export function backoffMs(attempt: number, o: Required<RetryOptions>, random: () => number): number {
  const ceiling = Math.min(o.maxDelayMs, o.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** Whether attempt number `attempt` (1-based) may be followed by another one, and after how long. */
export function decideRetry(cls: RetryClass, outcome: AttemptOutcome, attempt: number, o: Required<RetryOptions>, random: () => number): RetryDecision {
  if (attempt >= o.maxAttempts) return { retry: false };
  const replaySafe = cls === 'keyed' || cls === 'read';
  const backoff = () => ({ retry: true as const, delayMs: backoffMs(attempt, o, random) });
  if (outcome.kind === 'no-response') return replaySafe || outcome.connectRefused ? backoff() : { retry: false };
  const { status, code } = outcome;
  if (status === 502 && code === 'INSTANCE_UNREACHABLE') return backoff();
  if (status === 503 && code === 'QUEUE_PAUSED') {
    const waitMs = Math.max(0, (outcome.retryAfterSeconds ?? 60) * 1000);
    if (waitMs > o.maxPauseWaitMs) return { retry: false };
    // the announced delay plus a little jitter, so that many callers do not return in the same instant
    return { retry: true, delayMs: waitMs + Math.round(random() * o.baseDelayMs) };
  }
  if (replaySafe && ((status === 504 && code === 'INSTANCE_TIMEOUT') || (status === 500 && code === 'INTERNAL_ERROR'))) return backoff();
  return { retry: false };
}
