/**
 * Domain errors with the stable codes of SPEC.md "Errors". Any layer (queue, media, drivers' callers, sandbox,
 * webhooks, routes) throws a DomainError; it knows nothing of HTTP. Its status is looked up in ONE table (the
 * contract's error table plus this gateway's own codes); the one translation to responses is
 * src/http/translate.ts (the v2 envelope `{success:false, error, code, data}` and v1's frozen shapes).
 */
/**
 * The codes of a driver's DriverError (src/drivers/contract.ts), as a list a process can read: the sandbox's
 * transport checks a code it receives against it, and the log shows these codes (src/log.ts), where other `code`
 * fields are redacted as possible secrets. Kept here, below both, so that neither imports upwards.
 */
export const DRIVER_ERROR_CODES = ['NOT_REGISTERED', 'INVALID_INPUT', 'NOT_FOUND', 'NOT_A_GROUP', 'NOT_CONNECTED', 'CALL_FAILED', 'TIMEOUT', 'SESSION_CLOSED'] as const;
export type DriverErrorCode = (typeof DRIVER_ERROR_CODES)[number];

export type ErrorCode =
  | 'VALIDATION_FAILED'
  | 'IDEMPOTENCY_KEY_CONFLICT'
  | 'VOICE_MIMETYPE_UNSUPPORTED'
  | 'STICKER_VIDEO_UNSUPPORTED'
  | 'NOT_A_GROUP'
  | 'UNAUTHORIZED'
  | 'INVALID_API_KEY'
  | 'FORBIDDEN'
  | 'METHOD_NOT_ALLOWED'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'NOT_FOUND'
  | 'JOB_NOT_FOUND'
  | 'MESSAGE_NOT_FOUND'
  | 'CHAT_NOT_FOUND'
  | 'CONTACT_NOT_FOUND'
  | 'INSTANCE_NOT_FOUND'
  | 'MEDIA_NOT_FOUND'
  | 'NO_MEDIA'
  | 'JOB_NOT_CANCELLABLE'
  | 'JOB_NOT_REQUEUEABLE'
  | 'IDEMPOTENCY_PAYLOAD_MISMATCH'
  | 'CONFLICT'
  | 'MEDIA_GONE'
  | 'PAYLOAD_TOO_LARGE'
  | 'QUEUE_FULL'
  | 'TTL_UNREACHABLE'
  | 'RATE_LIMITED'
  | 'INTERNAL_ERROR'
  | 'WA_CALL_FAILED'
  | 'INSTANCE_UNREACHABLE'
  | 'INSTANCE_OFFLINE'
  | 'QUEUE_STORE_UNAVAILABLE'
  | 'QUEUE_PAUSED'
  | 'QUEUE_WAIT_TIMEOUT'
  | 'INSTANCE_TIMEOUT'
  | 'MEDIA_STORE_UNAVAILABLE'
  /** refused by the HTTP parser before routing (src/http/client-error.ts) */
  | 'HEADERS_TOO_LARGE'
  | 'REQUEST_TIMEOUT';

/** code → HTTP status: SPEC.md "Errors", then the gateway's own codes (docs/api.md). The only such table. */
export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = {
  VALIDATION_FAILED: 400,
  IDEMPOTENCY_KEY_CONFLICT: 400,
  VOICE_MIMETYPE_UNSUPPORTED: 400,
  STICKER_VIDEO_UNSUPPORTED: 400,
  NOT_A_GROUP: 400,
  UNAUTHORIZED: 401,
  INVALID_API_KEY: 401,
  JOB_NOT_FOUND: 404,
  MESSAGE_NOT_FOUND: 404,
  CHAT_NOT_FOUND: 404,
  MEDIA_NOT_FOUND: 404,
  NO_MEDIA: 404,
  IDEMPOTENCY_PAYLOAD_MISMATCH: 409,
  MEDIA_GONE: 410,
  PAYLOAD_TOO_LARGE: 413,
  QUEUE_FULL: 422,
  TTL_UNREACHABLE: 422,
  RATE_LIMITED: 429,
  WA_CALL_FAILED: 500,
  INSTANCE_UNREACHABLE: 502,
  INSTANCE_OFFLINE: 503,
  QUEUE_STORE_UNAVAILABLE: 503,
  QUEUE_PAUSED: 503,
  QUEUE_WAIT_TIMEOUT: 504,
  INSTANCE_TIMEOUT: 504,
  MEDIA_STORE_UNAVAILABLE: 507,
  // the gateway's own
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  INSTANCE_NOT_FOUND: 404,
  CONTACT_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  JOB_NOT_CANCELLABLE: 409,
  JOB_NOT_REQUEUEABLE: 409,
  CONFLICT: 409,
  UNSUPPORTED_MEDIA_TYPE: 415,
  REQUEST_TIMEOUT: 408,
  HEADERS_TOO_LARGE: 431,
  INTERNAL_ERROR: 500,
};

/**
 * `fn` with no stack captured for the errors made meanwhile. A refused request is an answer, not a fault: no
 * one reads the stack of a 400 or a 401, and capturing it (V8 walks the frames, here through Koa's chain
 * and superstruct's nested validators) cost more than the rest of the refusal. Measured with a load of
 * refusals on machine G, gateway CPU a request: a 400 VALIDATION_FAILED 166–230 µs with stacks (an accepted
 * message then cost 115–150), a 401 99–106 µs, a 404 104–110 µs (figures without: the README).
 */
export function withoutStack<T>(fn: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return fn();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export class DomainError extends Error {
  /** the HTTP status of `code` (ERROR_STATUS) */
  readonly status: number;

  /**
   * A 4xx is made without a stack, as withoutStack does (inline here: super() cannot be wrapped in a function);
   * a 5xx keeps its own, for the log that reports it.
   */
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly data: Record<string, unknown> = {},
    /** extra top-level envelope fields (SPEC.md puts `reason` of 507 beside `code`) */
    readonly extra: Record<string, unknown> = {},
  ) {
    const limit = Error.stackTraceLimit;
    if (ERROR_STATUS[code] < 500) Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = 'DomainError';
    this.status = ERROR_STATUS[code];
  }
}

/**
 * An ask forwarded to the node that owns the instance (src/cluster/remote-port.ts) that this node could not get
 * answered there: the connection refused, no answer within the deadline, the ask refused or failed there.
 * `node` names that node and `why` says what happened, for the operator's view of the instance
 * (src/instances.ts: its state is unknown, and why) and the operator's queue routes. Both are properties, not
 * `data`: the envelope an API-key caller gets never carries the cluster's node ids.
 */
export class OwnerNotAnswering extends DomainError {
  constructor(
    code: 'INSTANCE_UNREACHABLE' | 'INSTANCE_TIMEOUT',
    message: string,
    readonly node: string,
    /** a short phrase after "node <id>": `cannot be reached (ECONNREFUSED)`, `did not answer within 5 s`, … */
    readonly why: string,
  ) {
    super(code, message);
  }
}

/**
 * An operator route's refusal when the node that runs the instance did not answer: the same code, its message
 * led by that node's id and what happened, and `data.node` (the operator's answers may name nodes; an API-key
 * caller's never do). Any other error is answered as it is, so an operator route can pass every error it meets.
 */
export function namingOwner(err: unknown): unknown {
  if (!(err instanceof OwnerNotAnswering)) return err;
  const done = err.code === 'INSTANCE_UNREACHABLE' ? 'nothing was done there' : 'what was asked may have been done there';
  return new DomainError(err.code, `node ${err.node}, which runs the instance, ${err.why}; ${done}`, { node: err.node });
}

export const isDomainError = (err: unknown, code?: ErrorCode): err is DomainError =>
  err instanceof DomainError && (code === undefined || err.code === code);

export const validationFailed = (field: string, message: string) => new DomainError('VALIDATION_FAILED', message, { field });
/** a 404 of one of the *_NOT_FOUND codes */
export const notFound = (
  code: Extract<ErrorCode, `${string}NOT_FOUND` | 'NO_MEDIA'>,
  message: string,
  data: Record<string, unknown> = {},
) => new DomainError(code, message, data);
export const instanceOffline = (instance: Record<string, unknown>) =>
  new DomainError('INSTANCE_OFFLINE', 'instance is not connected', { instance });
export const instanceTimeout = () =>
  new DomainError('INSTANCE_TIMEOUT', 'the instance did not answer in time; the request may have been accepted');
export const queuePaused = () =>
  new DomainError('QUEUE_PAUSED', 'ordered restart in progress; retry in about 60 s', { retryAfterSeconds: 60 });
export const queueStoreUnavailable = (queueMode: string) =>
  new DomainError('QUEUE_STORE_UNAVAILABLE', `persistent queue unavailable (mode ${queueMode})`, { queueMode });
export const payloadTooLarge = (maxBytes: number) =>
  new DomainError('PAYLOAD_TOO_LARGE', `payload exceeds ${maxBytes} bytes`, { maxBytes });
export const waCallFailed = (message = 'the network call failed') => new DomainError('WA_CALL_FAILED', message);
export const internalError = () => new DomainError('INTERNAL_ERROR', 'internal error');
