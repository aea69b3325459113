/**
 * v1 send-message / send-media without the persistent queue: queue mode `disabled` (sent at once, no limits)
 * and `memory-degraded` (sent at once through the in-memory gate). The gateway's `directSend` does the send;
 * this file keeps the v1 wait around it:
 * - an ordered restart is waited for (v1 is accepted and waits), any other disconnection is 503;
 * - a gate refusal (`rate_limited`) is waited out when its retry time falls inside the wait; otherwise the
 *   answer is 500 "not sent" with the retry time. Not 504: a 504 promises the message stays queued and goes
 *   out by itself, and nothing is queued here (nothing persists in these modes);
 * - everything happens inside the one synchronous wait (legacyWaitMs): a send still without an answer at its
 *   end is 500 "may have been delivered", never a silence that would make the caller resend.
 * `legacyQueueMode: async` has no meaning without a queue: these modes always answer synchronously.
 */
import type { Context } from 'koa';
import { V1Error } from '../errors.js';
import { legacyWaitMs, type Config } from '../../config.js';
import { raceClock, sleep, type Clock } from '../../clock.js';
import type { InstanceHandle } from '../../actors/handle.js';
import type { DirectSend as QueueDirectSend, DispatchOutcome } from '../../queue/worker.js';
import { sendPart } from '../../queue/payload.js';
import type { V1Send } from './legacy-parse.js';
import { NOT_CONNECTED, RESTARTING, answerOutcome } from './legacy-answer.js';

export type DirectSendResult = DispatchOutcome | { kind: 'rate_limited'; retryAt: number };
export type DirectSend = (handle: InstanceHandle, job: QueueDirectSend) => Promise<DirectSendResult>;

export interface DirectDeps {
  clock: Clock;
  config: Pick<Config, 'LEGACY_SYNC_TIMEOUT_MS' | 'LEGACY_CALLER_TIMEOUT_MS'>;
  directSend: DirectSend;
}

/** How often a v1 request waiting out an ordered restart looks at the connection again. */
export const RESTART_POLL_MS = 250;

const TIMED_OUT = Symbol('timed out');

/** `p`, or TIMED_OUT when the clock reaches `at` first. */
function until<T>(clock: Clock, at: number, p: Promise<T>): Promise<T | typeof TIMED_OUT> {
  return raceClock(clock, at - clock.now(), p, () => TIMED_OUT);
}

/** Return once connected; wait out an ordered restart until `deadline`; otherwise 503. */
export async function untilConnected(handle: InstanceHandle, clock: Clock, deadline: number): Promise<void> {
  for (;;) {
    const view = handle.view();
    if (view.connected) return;
    if (!view.paused) throw new V1Error(503, NOT_CONNECTED);
    const left = deadline - clock.now();
    if (left <= 0) throw new V1Error(503, `${RESTARTING}; nothing was sent`);
    await sleep(clock, Math.min(RESTART_POLL_MS, left));
  }
}

export async function sendDirect(ctx: Context, deps: DirectDeps, handle: InstanceHandle, send: V1Send): Promise<void> {
  const { clock } = deps;
  const deadline = clock.now() + legacyWaitMs(deps.config);
  const job: QueueDirectSend = { ...sendPart(send.parsed), chatId: send.parsed.chatId };
  for (;;) {
    await untilConnected(handle, clock, deadline);
    const r = await until(clock, deadline, deps.directSend(handle, job));
    if (r === TIMED_OUT) {
      throw new V1Error(500, 'the network did not answer within the synchronous wait; the message may have been delivered: do not resend');
    }
    if (r.kind !== 'rate_limited') return answerOutcome(ctx, send, r);
    if (r.retryAt > deadline) {
      throw new V1Error(500, `not sent: the send limits allow the next message at ${new Date(r.retryAt).toISOString()}; nothing was sent`);
    }
    await sleep(clock, Math.max(0, r.retryAt - clock.now()));
  }
}
