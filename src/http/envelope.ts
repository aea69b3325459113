/**
 * The one place that writes responses' envelopes: success `{success:true, data}` and the error boundary
 * `{success:false, error, code, data}`. Library errors (superstruct, body parser, pg) are translated here;
 * an unknown error is logged in full and answered without internals.
 */
import type { Context, Next } from 'koa';
import { StructError } from 'superstruct';
import { ApiError, V1Error, type ErrorCode } from './errors.js';
import type { Logger } from '../log.js';
import { isConnectionError } from '../store/health.js';
import { CommitOutcomeUnknown } from '../store/pool.js';

export function ok(ctx: Context, data: unknown, status = 200): void {
  ctx.status = status;
  ctx.body = { success: true, data };
}

/** `data.field` and the "<field> must be …" message of a superstruct failure (src/http/validate.ts). */
import { structField, structMessage } from './validate.js';
export { structField, structMessage };

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  type?: string;
  message?: string;
}

export function errorBoundary(log: Logger, opts: { onStoreError?: () => void } = {}) {
  return async function errors(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ApiError(404, 'NOT_FOUND', `no route for ${ctx.method} ${ctx.path}`);
      }
    } catch (raw) {
      const err = translate(raw, opts);
      if (err instanceof V1Error) {
        ctx.status = err.status;
        ctx.body = err.body;
        return;
      }
      if (err.status >= 500 && err.code === 'INTERNAL_ERROR') {
        log.error({ err: raw, method: ctx.method, path: ctx.path }, 'unhandled error');
      }
      ctx.status = err.status;
      ctx.body = { success: false, error: err.message, code: err.code, ...err.extra, data: err.data };
    }
  };
}

/** Codes for the 4xx a library may throw with `ctx.throw`/http-errors (our own code throws ApiError). */
const CLIENT_CODES: Record<number, ErrorCode> = {
  400: 'VALIDATION_FAILED',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};

function translate(raw: unknown, opts: { onStoreError?: () => void }): ApiError | V1Error {
  if (raw instanceof ApiError || raw instanceof V1Error) return raw;
  if (isConnectionError(raw)) {
    // PostgreSQL went away under this request: nothing was accepted; the probe switches the mode.
    opts.onStoreError?.();
    return new ApiError(503, 'QUEUE_STORE_UNAVAILABLE', 'the persistent queue is unreachable; nothing was accepted', { queueMode: 'memory-degraded' });
  }
  if (raw instanceof CommitOutcomeUnknown) {
    // the connection broke during COMMIT: the request may have been accepted (SPEC.md: retry only with a key)
    opts.onStoreError?.();
    return new ApiError(504, 'INSTANCE_TIMEOUT', 'the store connection broke while committing; the request may have been accepted: retry only with the same idempotency key');
  }
  if (raw instanceof StructError) {
    return new ApiError(400, 'VALIDATION_FAILED', structMessage(raw), { field: structField(raw) });
  }
  const e = (raw ?? {}) as HttpLikeError;
  const status = e.status ?? e.statusCode;
  const code = status !== undefined && e.expose === true ? CLIENT_CODES[status] : undefined;
  if (status !== undefined && code) return new ApiError(status, code, e.message ?? code);
  return new ApiError(500, 'INTERNAL_ERROR', 'internal error');
}
