/**
 * One log line per request, at info, when its answer is decided: method, path (never the query string: it may
 * carry a credential; a secret in the path is masked by the logger in any spelling, src/log.ts), status,
 * duration, and a request id. The id is the client's `X-Request-Id` when that is a sane token (1 to 128 of
 * A-Z a-z 0-9 . _ : ~ + / = -), else a new one; it is echoed in the answer's
 * `X-Request-Id` and kept in `ctx.state.requestId` for other log lines of the request. Headers and bodies are
 * never logged. Mounted first (outside the error boundary), so the status logged is the one answered.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Context, Middleware, Next } from 'koa';
import type { Logger } from '../log.js';
import { refusalOn } from './client-error.js';

const SANE_ID = /^[A-Za-z0-9._:~+/=-]{1,128}$/;

/** 12 random bytes per id, drawn from a block filled for 256 ids at a time (one call into the CSPRNG, not one per request). */
const ID_BYTES = 12;
let block = Buffer.alloc(0);
let taken = 0;
function freshId(): string {
  if (taken + ID_BYTES > block.length) {
    block = randomBytes(ID_BYTES * 256);
    taken = 0;
  }
  const id = block.toString('base64url', taken, taken + ID_BYTES);
  taken += ID_BYTES;
  return `req_${id}`;
}

/** The request id for a client's header value: the value when it is a sane token, else a fresh one. */
export function requestIdFor(header: string | undefined): string {
  return header !== undefined && SANE_ID.test(header) ? header : freshId();
}

export function requestLog(log: Logger): Middleware {
  return async function logRequest(ctx: Context, next: Next): Promise<void> {
    const started = performance.now();
    const reqId = requestIdFor(ctx.get('x-request-id') || undefined);
    ctx.state.requestId = reqId;
    ctx.set('X-Request-Id', reqId);
    let failed = false;
    try {
      await next();
    } catch (err) {
      failed = true;
      throw err;
    } finally {
      const instance = (ctx.state as { instance?: { id?: unknown } }).instance;
      log.info(
        {
          reqId,
          method: ctx.method,
          path: ctx.path,
          // what the client got: a refusal written by the server (a body stalled past the request timeout) wins
          status: refusalOn(ctx.req.socket) ?? (failed ? 500 : ctx.status),
          ms: Math.round((performance.now() - started) * 10) / 10,
          ...(typeof instance?.id === 'string' ? { instanceId: instance.id } : {}),
        },
        'request',
      );
    }
  };
}
