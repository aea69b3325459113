/**
 * Typed errors. Every failure the client reports is a GatewayError: an answer of the gateway with its stable
 * `code` (docs/api.md "Errors"), or one of the client's own codes (no answer at all, an answer that is not the
 * gateway's JSON envelope, an outcome that did not arrive in time). Branch on `code`, never on `message`.
 */

/** The gateway's codes (docs/api.md "Errors"). */
export const GATEWAY_ERROR_CODES = [
  'VALIDATION_FAILED',
  'IDEMPOTENCY_KEY_CONFLICT',
  'VOICE_MIMETYPE_UNSUPPORTED',
  'STICKER_VIDEO_UNSUPPORTED',
  'NOT_A_GROUP',
  'UNAUTHORIZED',
  'INVALID_API_KEY',
  'FORBIDDEN',
  'NOT_FOUND',
  'JOB_NOT_FOUND',
  'MESSAGE_NOT_FOUND',
  'CHAT_NOT_FOUND',
  'CONTACT_NOT_FOUND',
  'MEDIA_NOT_FOUND',
  'NO_MEDIA',
  'INSTANCE_NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'REQUEST_TIMEOUT',
  'IDEMPOTENCY_PAYLOAD_MISMATCH',
  'JOB_NOT_CANCELLABLE',
  'JOB_NOT_REQUEUEABLE',
  'CONFLICT',
  'MEDIA_GONE',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'QUEUE_FULL',
  'TTL_UNREACHABLE',
  'RATE_LIMITED',
  'HEADERS_TOO_LARGE',
  'WA_CALL_FAILED',
  'INTERNAL_ERROR',
  'INSTANCE_UNREACHABLE',
  'INSTANCE_OFFLINE',
  'QUEUE_STORE_UNAVAILABLE',
  'QUEUE_PAUSED',
  'QUEUE_WAIT_TIMEOUT',
  'INSTANCE_TIMEOUT',
  'MEDIA_STORE_UNAVAILABLE',
] as const;
export type GatewayErrorCode = (typeof GATEWAY_ERROR_CODES)[number];

/**
 * The client's own codes (status 0 unless an answer came):
 * - `NO_RESPONSE`: no answer at all (connection refused or dropped, socket hang up, the per-attempt timeout).
 *   For a send the job may or may not exist: look it up by `idempotencyKey` (`client.jobByKey`).
 * - `INVALID_RESPONSE`: an answer that is not the gateway's JSON envelope (e.g. a reverse proxy's 413 page).
 * - `OUTCOME_TIMEOUT`: `waitForOutcome` ran out of time; the job is still in `data.state` and goes on.
 * - `ABORTED`: the caller's AbortSignal fired.
 * - `UNKNOWN_CODE`: an error answer with a code this client does not know yet (codes are only ever added);
 *   `rawCode` holds it.
 */
export type ClientErrorCode = 'NO_RESPONSE' | 'INVALID_RESPONSE' | 'OUTCOME_TIMEOUT' | 'ABORTED' | 'UNKNOWN_CODE';

export type ErrorCode = GatewayErrorCode | ClientErrorCode;

/** `data` of the codes that document one (docs/api.md); every other code has a free-form object. */
export interface ErrorDataByCode {
  VALIDATION_FAILED: { field?: string; reason?: string; status?: number };
  VOICE_MIMETYPE_UNSUPPORTED: { accepted: string[] };
  NOT_A_GROUP: { groupId: string };
  METHOD_NOT_ALLOWED: { allowed: string[] };
  IDEMPOTENCY_PAYLOAD_MISMATCH: { jobId: string };
  JOB_NOT_CANCELLABLE: { state: string };
  JOB_NOT_REQUEUEABLE: { state: string };
  CONFLICT: { reason?: string };
  PAYLOAD_TOO_LARGE: { maxBytes: number };
  HEADERS_TOO_LARGE: { maxBytes: number };
  QUEUE_FULL: { maxPending: number };
  TTL_UNREACHABLE: { expiresAt: string };
  RATE_LIMITED: { retryAfterMs: number };
  INSTANCE_OFFLINE: { instance: { status: string; detail?: string | null; lastError?: string | null } };
  QUEUE_STORE_UNAVAILABLE: { queueMode: 'memory-degraded' | 'disabled' };
  QUEUE_PAUSED: { retryAfterSeconds: number };
  QUEUE_WAIT_TIMEOUT: { jobId: string; scheduledAt: string | null; etaSeconds: number | null };
  MEDIA_STORE_UNAVAILABLE: { reason: 'low_disk' | 'too_large' };
  OUTCOME_TIMEOUT: { jobId: string; state: string };
}
export type ErrorData<C extends ErrorCode> = C extends keyof ErrorDataByCode ? ErrorDataByCode[C] & Record<string, unknown> : Record<string, unknown>;

export interface GatewayErrorInit<C extends ErrorCode> {
  code: C;
  status: number;
  message: string;
  data?: ErrorData<C>;
  /** requests made, the retries included */
  attempts?: number;
  /** the idempotency key the request carried (sends), to look the job up after a NO_RESPONSE */
  idempotencyKey?: string | null;
  /** the code exactly as the gateway sent it (differs from `code` only for UNKNOWN_CODE) */
  rawCode?: string | null;
  cause?: unknown;
}

export class GatewayError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = 'GatewayError';
  readonly code: C;
  /** HTTP status; 0 when no answer came (NO_RESPONSE, ABORTED, OUTCOME_TIMEOUT) */
  readonly status: number;
  readonly data: ErrorData<C>;
  readonly attempts: number;
  readonly idempotencyKey: string | null;
  readonly rawCode: string | null;

  constructor(init: GatewayErrorInit<C>) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.data = init.data ?? ({} as ErrorData<C>);
    this.attempts = init.attempts ?? 1;
    this.idempotencyKey = init.idempotencyKey ?? null;
    this.rawCode = init.rawCode ?? (isGatewayErrorCode(init.code) ? init.code : null);
  }

  /** Narrow to one code: `if (err.is('IDEMPOTENCY_PAYLOAD_MISMATCH')) err.data.jobId`. */
  is<K extends ErrorCode>(code: K): this is GatewayError<K> {
    return (this.code as ErrorCode) === code;
  }
}

/** `isGatewayError(e)` or `isGatewayError(e, 'JOB_NOT_FOUND')`, narrowing `e`. */
export function isGatewayError<K extends ErrorCode = ErrorCode>(err: unknown, code?: K): err is GatewayError<K> {
  return err instanceof GatewayError && (code === undefined || err.code === code);
}

const KNOWN = new Set<string>(GATEWAY_ERROR_CODES);
export const isGatewayErrorCode = (code: unknown): code is GatewayErrorCode => typeof code === 'string' && KNOWN.has(code);
