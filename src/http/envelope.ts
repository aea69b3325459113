/**
 * The one place that writes responses' envelopes: success `{success:true, data}` and the error boundary
 * `{success:false, error, code, data}`. What a thrown error answers is decided by translate.ts; an unknown
 * error is logged in full and answered without internals. A V1Error's frozen body is written with the fields it
 * has. An error's answer may echo what the client gave (an id, the path): a secret in it is masked as in the log
 * (maskClientText), in whatever spelling it came, so an answer never carries an API key or the admin token back.
 */
import type { Context, Next } from 'koa';
import { DomainError } from '../errors.js';
import { V1Error } from './errors.js';
import { translate, type TranslateOptions } from './translate.js';
import { maskClientValue, type Logger } from '../log.js';
import { StoreFault } from '../store/health.js';

export function ok(ctx: Context, data: unknown, status = 200): void {
  ctx.status = status;
  ctx.body = { success: true, data };
}

/**
 * An instance deleted while a request its API key let in was on its way: the key no longer works, 401
 * INVALID_API_KEY as for any request that comes after the delete (SPEC.md), not a 404 INSTANCE_NOT_FOUND of an
 * instance the caller never names (found from the outside: v2 sends sent beside the delete were answered 404).
 */
function keyOutlived(ctx: Context, err: DomainError): DomainError {
  if (err.code !== 'INSTANCE_NOT_FOUND' || ctx.state.authenticated !== 'instance') return err;
  return new DomainError('INVALID_API_KEY', 'API key is not valid: its instance was deleted');
}

/**
 * The network refused an input of a request without a body: the driver's refusal names `body`
 * (src/drivers/domain-errors.ts), which such a request does not have. Its one input is its path parameter (GET
 * /api/v2/chats/:chatId, POST /api/v2/groups/:groupId/invite/revoke): `data.field` names that (found from the
 * outside: a GET answered 400 naming `body`).
 */
function bodilessRefusal(ctx: Context, err: DomainError): DomainError {
  if (err.code !== 'VALIDATION_FAILED' || err.data.field !== 'body' || sentBody(ctx)) return err;
  const params = Object.keys((ctx as { params?: Record<string, string> }).params ?? {});
  if (params.length !== 1) return err;
  return new DomainError('VALIDATION_FAILED', err.message, { ...err.data, field: params[0] });
}

/** Whether the request came with a body (a length above 0, or chunked). */
const sentBody = (ctx: Context): boolean =>
  ctx.request.headers['transfer-encoding'] !== undefined || (ctx.request.length ?? 0) > 0;

export function errorBoundary(log: Logger, opts: TranslateOptions = {}) {
  return async function errors(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new DomainError('NOT_FOUND', `no route for ${ctx.method} ${ctx.path}`);
      }
    } catch (raw) {
      // a refusal may echo what the client sent (a path, a field's name): never read as anything but JSON
      ctx.set('X-Content-Type-Options', 'nosniff');
      if (raw instanceof V1Error) {
        ctx.status = raw.status;
        ctx.body = maskClientValue(raw.body);
        return;
      }
      const err = bodilessRefusal(ctx, keyOutlived(ctx, translate(raw, opts)));
      if (err.status >= 500 && err.code === 'INTERNAL_ERROR') {
        log.error({ err: raw, method: ctx.method, path: ctx.path }, 'unhandled error');
      } else if (err.data.reason === 'store_fault' && !(raw instanceof StoreFault)) {
        // PostgreSQL's own error, seen here first (an actor's was logged where it happened): the operator must hear of it
        log.error({ err: raw, method: ctx.method, path: ctx.path }, 'PostgreSQL failed a statement for a reason of its own');
      }
      ctx.status = err.status;
      ctx.body = maskClientValue({ success: false, error: err.message, code: err.code, ...err.extra, data: err.data });
    }
  };
}
