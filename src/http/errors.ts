/**
 * The HTTP-only error: V1Error, a v1 route's frozen body. Domain errors (codes, statuses, factories) live in
 * src/errors.ts.
 */
import { DomainError, type ErrorCode } from '../errors.js';


/**
 * A v1 error: SPEC.md freezes v1 error bodies as `{success:false, error}` (no code, no data) except 504
 * QUEUE_WAIT_TIMEOUT. The boundary writes exactly the fields given here, in this order.
 */
export class V1Error extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: Record<string, unknown> = { success: false, error: message },
  ) {
    super(message);
    this.name = 'V1Error';
  }
}

/** v1's error texts (SPEC.md "v1 send outcomes"); the answers themselves are in routes/legacy-answer.ts. */
export const NOT_CONNECTED = 'instance not connected';
/** The store went away before the message was accepted: nothing was queued or sent; the caller may resend. */
export const STORE_LOST = 'the persistent queue became unreachable before the message was accepted; nothing was queued or sent: retry';
/** The store went away while an accepted message waited for its slot: it expires unsent. */
export const STORE_LOST_QUEUED = 'the persistent queue became unreachable before the message could be sent; it was not sent and will not be (it expires unsent): retry';
/** The connection broke during the COMMIT of the acceptance: the message may be queued. */
export const COMMIT_UNKNOWN = 'the persistent queue became unreachable while the message was being accepted; it may have been queued: do not resend';
export const RESTARTING = 'instance not connected: restart in progress';
