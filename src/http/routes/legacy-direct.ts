/**
 * v1 send-message / send-media without the persistent queue: queue mode `disabled` (sent at once, no limits)
 * and `memory-degraded` (sent at once through the in-memory gate). The instance's planner does the send (the
 * port's `queue.direct` ask); this file keeps the v1 wait around it:
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
import { sleep, type Clock } from '../../clock.js';
import { isDomainError } from '../../errors.js';
import type { InstancePort, InstanceView } from '../../actors/port.js';
import type { DirectSend } from '../../queue/worker.js';
import { sendPart } from '../../queue/payload.js';
import type { V1Send } from './legacy-parse.js';
import { NOT_CONNECTED, RESTARTING, answerOutcome } from './legacy-answer.js';
import { viewOf } from './queue-gate.js';

export interface DirectDeps {
  clock: Clock;
  config: Pick<Config, 'LEGACY_SYNC_TIMEOUT_MS' | 'LEGACY_CALLER_TIMEOUT_MS'>;
}

/** How often a v1 request waiting out an ordered restart looks at the connection again. */
export const RESTART_POLL_MS = 250;

/**
 * The instance's view once it is connected or no ordered restart holds it (v1 is accepted and waits a restart
 * out), looked at every RESTART_POLL_MS; null when a restart still holds it at `deadline`. Also the v1 number
 * lookup's wait (src/http/routes/legacy-reads.ts).
 */
export async function pastRestart(port: InstancePort, clock: Clock, deadline: number): Promise<InstanceView | null> {
  for (;;) {
    const view = await viewOf(port);
    if (view.connected || !view.paused) return view;
    const left = deadline - clock.now();
    if (left <= 0) return null;
    await sleep(clock, Math.min(RESTART_POLL_MS, left));
  }
}

/** Return once connected; wait out an ordered restart until `deadline`; otherwise 503. */
export async function untilConnected(port: InstancePort, clock: Clock, deadline: number): Promise<void> {
  const view = await pastRestart(port, clock, deadline);
  if (!view) throw new V1Error(503, `${RESTARTING}; nothing was sent`);
  if (!view.connected) throw new V1Error(503, NOT_CONNECTED);
}

export async function sendDirect(ctx: Context, deps: DirectDeps, port: InstancePort, send: V1Send): Promise<void> {
  const { clock } = deps;
  const deadline = clock.now() + legacyWaitMs(deps.config);
  const job: DirectSend = { ...sendPart(send.parsed), chatId: send.parsed.chatId };
  for (;;) {
    await untilConnected(port, clock, deadline);
    const r = await port.ask({ type: 'queue.direct', send: job }, Math.max(0, deadline - clock.now())).catch((err: unknown) => {
      if (isDomainError(err, 'INSTANCE_TIMEOUT')) {
        throw new V1Error(500, 'the network did not answer within the synchronous wait; the message may have been delivered: do not resend');
      }
      throw err;
    });
    if (r.kind !== 'rate_limited') return answerOutcome(ctx, send, r);
    if (r.retryAt > deadline) {
      throw new V1Error(500, `not sent: the send limits allow the next message at ${new Date(r.retryAt).toISOString()}; nothing was sent`);
    }
    await sleep(clock, Math.max(0, r.retryAt - clock.now()));
  }
}
