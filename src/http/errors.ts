/**
 * Typed API errors with the stable codes of SPEC.md "Errors". Thrown anywhere below a route; the one error
 * boundary (http/envelope.ts) writes them as `{success:false, error, code, data}`.
 */
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
  | 'MEDIA_STORE_UNAVAILABLE';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly data: Record<string, unknown> = {},
    /** extra top-level envelope fields (SPEC.md puts `reason` of 507 beside `code`) */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const validationFailed = (field: string, message: string) =>
  new ApiError(400, 'VALIDATION_FAILED', message, { field });
export const notFound = (code: ErrorCode, message: string, data: Record<string, unknown> = {}) =>
  new ApiError(404, code, message, data);
export const instanceOffline = (instance: Record<string, unknown>) =>
  new ApiError(503, 'INSTANCE_OFFLINE', 'instance is not connected', { instance });
export const instanceTimeout = () =>
  new ApiError(504, 'INSTANCE_TIMEOUT', 'the instance did not answer in time; the request may have been accepted');
export const queuePaused = () =>
  new ApiError(503, 'QUEUE_PAUSED', 'ordered restart in progress; retry in about 60 s', { retryAfterSeconds: 60 });
export const queueStoreUnavailable = (queueMode: string) =>
  new ApiError(503, 'QUEUE_STORE_UNAVAILABLE', `persistent queue unavailable (mode ${queueMode})`, { queueMode });
export const payloadTooLarge = (maxBytes: number) =>
  new ApiError(413, 'PAYLOAD_TOO_LARGE', `payload exceeds ${maxBytes} bytes`, { maxBytes });
export const waCallFailed = (message = 'the network call failed') => new ApiError(500, 'WA_CALL_FAILED', message);

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
