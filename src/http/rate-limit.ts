/**
 * The interaction limiter of SPEC.md "Interaction endpoints" / "Group endpoints": at most
 * INTERACTION_RATE_POINTS calls per 60 s per instance, over a sliding window, answered with 429 RATE_LIMITED.
 * It is separate from the send limits (queue/) on purpose: interactions produce no visible message and never
 * count against the hourly/daily windows, and sends never count here.
 *
 * A sliding log (one timestamp per accepted call) rather than a fixed window or a token bucket: it is exactly
 * "no more than N in any 60 s", and at 60 points per instance the memory is trivial. Rejected calls are not
 * logged, so a caller that keeps hammering is let in again as soon as its oldest accepted call ages out.
 * Time comes from the injectable clock so tests can walk the window without sleeping.
 */
import type { Context } from 'koa';
import { DomainError } from '../errors.js';
import type { Clock } from '../clock.js';

export interface InteractionLimiterOptions {
  /** calls allowed per window (INTERACTION_RATE_POINTS, default 60) */
  points?: number;
  /** window length in ms (default 60000) */
  windowMs?: number;
}

export type LimitDecision = { allowed: true; remaining: number } | { allowed: false; retryAfterMs: number };

export class InteractionLimiter {
  readonly points: number;
  readonly windowMs: number;
  private readonly log = new Map<string, number[]>();

  constructor(private readonly clock: Clock, opts: InteractionLimiterOptions = {}) {
    this.points = opts.points ?? 60;
    this.windowMs = opts.windowMs ?? 60_000;
    if (!Number.isInteger(this.points) || this.points < 1) throw new RangeError('points must be an integer >= 1');
    if (!(this.windowMs > 0)) throw new RangeError('windowMs must be > 0');
  }

  /** Record one call for `key` if the window has room; otherwise say when the next call would be let in. */
  take(key: string): LimitDecision {
    const now = this.clock.now();
    const calls = this.prune(key, now);
    if (calls.length >= this.points) {
      // calls[0] is the oldest accepted call still inside the window; room opens when it leaves
      const oldest = calls[0] ?? now;
      return { allowed: false, retryAfterMs: Math.max(1, oldest + this.windowMs - now) };
    }
    calls.push(now);
    this.log.set(key, calls);
    return { allowed: true, remaining: this.points - calls.length };
  }

  /** Like `take`, but throws 429 RATE_LIMITED (data.retryAfterMs) when the window is full. */
  consume(key: string): void {
    const d = this.take(key);
    if (!d.allowed) throw rateLimited(this, d.retryAfterMs);
  }

  /** Calls counted for `key` in the current window. */
  used(key: string): number {
    return this.prune(key, this.clock.now()).length;
  }

  /** Forget an instance (deleted, or its limits reset by the operator). */
  reset(key?: string): void {
    if (key === undefined) this.log.clear();
    else this.log.delete(key);
  }

  private prune(key: string, now: number): number[] {
    const calls = this.log.get(key);
    if (!calls) return [];
    const cutoff = now - this.windowMs;
    let drop = 0;
    while (drop < calls.length && (calls[drop] ?? 0) <= cutoff) drop++;
    if (drop > 0) calls.splice(0, drop);
    if (calls.length === 0) this.log.delete(key);
    return calls;
  }
}

/**
 * Count one interaction call for the request's instance; a refusal also sets `Retry-After` (whole seconds)
 * for clients that honour the header, beside `data.retryAfterMs` in the body.
 */
export function consumeInteraction(ctx: Context, limiter: InteractionLimiter, instanceId: string): void {
  const d = limiter.take(instanceId);
  if (d.allowed) {
    ctx.set('X-RateLimit-Remaining', String(d.remaining));
    return;
  }
  ctx.set('Retry-After', String(Math.ceil(d.retryAfterMs / 1000)));
  throw rateLimited(limiter, d.retryAfterMs);
}

function rateLimited(limiter: InteractionLimiter, retryAfterMs: number): DomainError {
  return new DomainError('RATE_LIMITED', `more than ${limiter.points} interaction calls in ${limiter.windowMs / 1000} s`, {
    retryAfterMs,
    limit: limiter.points,
    windowMs: limiter.windowMs,
  });
}
