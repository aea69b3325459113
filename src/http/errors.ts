/**
 * The HTTP-only error: V1Error, a v1 route's frozen body. Domain errors (codes, statuses, factories) live in
 * src/errors.ts; they are re-exported here only while src/queue/** still imports them from this path.
 */
import { DomainError, type ErrorCode } from '../errors.js';

export {
  DomainError,
  type ErrorCode,
  validationFailed,
  notFound,
  instanceOffline,
  instanceTimeout,
  queuePaused,
  queueStoreUnavailable,
  payloadTooLarge,
  waCallFailed,
} from '../errors.js';

/**
 * TEMPORARY, for src/queue/** only (being restructured; it switches to `new DomainError(code, …)` of
 * src/errors.ts): the old `(status, code, message, data, extra)` constructor over DomainError. `instanceof
 * ApiError` holds for every DomainError, so the queue's checks see errors thrown elsewhere as before. The
 * explicit status is kept as given (the queue's internal refusal sentinel uses 0).
 */
export class ApiError extends DomainError {
  override readonly status: number;

  constructor(status: number, code: ErrorCode, message: string, data: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
    super(code, message, data, extra);
    this.status = status;
  }

  static override [Symbol.hasInstance](value: unknown): value is DomainError {
    return value instanceof DomainError;
  }
}

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
