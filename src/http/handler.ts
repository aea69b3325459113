/**
 * The HTTP server's request handler for a Koa app: `app.callback()` without the two things it does for every
 * request that this API's answers never need.
 *
 * - Koa's `respond` tests a body for every kind it may be (Buffer, string, Blob, web stream, Response, node
 *   stream) before it writes the JSON that nearly every answer is. A plain object or array (what `ok()` and
 *   the error boundary answer, src/http/envelope.ts) is written here as `respond` writes it: its JSON, a
 *   `Content-Length` unless a `Transfer-Encoding` was set, one `end`. Every other answer (an empty status,
 *   HEAD, no body, a stream, a Buffer, a string, `ctx.respond = false`) goes to Koa's own `handleRequest` with
 *   the chain already run, so its bytes are Koa's.
 * - Koa waits on every response with `on-finished` to hand a socket's error to `ctx.onerror`, which for an
 *   app without an `error` listener of its own (this one: `app.silent`, the boundary logs) only emits the error
 *   to Koa's default listener, which prints nothing when silent. Two listeners and a closure a request, gone.
 *
 * Together they were about 5 % of the event loop's time accepting messages (a perf profile, docs/benchmarks.md).
 * test/integration/request-handler.test.ts sends the same requests to `app.callback()` and to this and compares
 * the bytes answered.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Koa from 'koa';
import type { Context } from 'koa';
import compose from 'koa-compose';

/** Koa's own answer for a context whose chain has run (its `handleRequest`, given a chain that has nothing to do). */
type HandleRequest = (ctx: Context, fnMiddleware: (ctx: Context) => Promise<void>) => Promise<void>;

/** The statuses whose answers carry no body (Koa's `statuses.empty`). */
const EMPTY = new Set([204, 205, 304]);

/** A body Koa answers as JSON: a plain object or an array (not a Buffer, stream, Blob, Response or class instance). */
function plainJson(body: unknown): body is object {
  if (body === null || typeof body !== 'object') return false;
  if (Array.isArray(body)) return true;
  const proto: unknown = Object.getPrototypeOf(body);
  return proto === Object.prototype || proto === null;
}

/** Writes the answer when it is JSON and nothing else applies, as Koa's respond would; false to leave it to Koa. */
function answeredAsJson(ctx: Context): boolean {
  const body: unknown = ctx.body;
  if (!plainJson(body) || ctx.respond === false || ctx.method === 'HEAD') return false;
  const res = ctx.res;
  if (EMPTY.has(res.statusCode) || !ctx.writable) return false;
  const text = JSON.stringify(body);
  if (!res.headersSent && !res.hasHeader('Transfer-Encoding')) res.setHeader('Content-Length', String(Buffer.byteLength(text)));
  res.end(text);
  return true;
}

export function requestHandler(app: Koa): (req: IncomingMessage, res: ServerResponse) => void {
  const chain = compose(app.middleware);
  // as app.callback(): an error that reaches Koa goes to its default listener unless the app has one
  if (app.listenerCount('error') === 0) app.on('error', (err: Error) => app.onerror(err));
  const kept = (app as unknown as { handleRequest: HandleRequest }).handleRequest.bind(app);
  return (req, res) => {
    const ctx = app.createContext(req, res);
    res.statusCode = 404;
    chain(ctx).then(
      () => {
        if (answeredAsJson(ctx)) return;
        // Koa's answer: its handleRequest sets 404 before it runs the chain, so the chain given it puts back the status
        const status = res.statusCode;
        return kept(ctx, () => {
          res.statusCode = status;
          return Promise.resolve();
        });
      },
    ).catch((err: unknown) => ctx.onerror(err as Error));
  };
}
