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
 *
 * And one thing it adds: at most MAX_IN_PROGRESS requests pipelined behind an answer still to be written are
 * answered at a time (beside that one); the ones behind them wait their turn (at most MAX_WAITING), and are
 * dropped unanswered if the connection closes first. A request with no answer ahead of it, which is every
 * request of a client that reads each answer before it sends the next, runs at once. Found from the outside: 16
 * connections that pipelined `GET /openapi.json` and never read an answer made the gateway build 232 KB answers
 * for every request of each 64 KiB chunk it read (1,600 small requests fit one), 150 MB a second, until V8's
 * heap limit killed the process. A client that pipelines more than MAX_WAITING behind them gets the answers of
 * those in progress, then the connection is closed: what waited never ran (found by the second probe: closing
 * the connection at once lost the answers of requests that had run), and nothing is read from it any more. The
 * connection is read on while requests wait, so that a reset by the client is seen at once and what waits
 * dropped (found by the second probe: paused, a closed connection was noticed only at the next answer's write,
 * and a send waiting there ran after its client had gone); a client that only half-closes (FIN) may still read
 * its answers, so its requests run. An answer counts until it is handed to the kernel (its response's `close`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Koa from 'koa';
import type { Context } from 'koa';
import compose from 'koa-compose';

/** Koa's own answer for a context whose chain has run (its `handleRequest`, given a chain that has nothing to do). */
type HandleRequest = (ctx: Context, fnMiddleware: (ctx: Context) => Promise<void>) => Promise<void>;

/** How many requests of one connection are answered at a time (the rest, pipelined behind them, wait). */
export const MAX_IN_PROGRESS = 16;
/** How many may wait behind them; one more ends the connection once those in progress are answered. */
export const MAX_WAITING = 64;

/** A connection's requests being answered, and those waiting for their turn. */
interface Lane {
  active: number;
  waiting: (() => void)[];
  /** more waited than MAX_WAITING: nothing more runs, and the connection ends after the answers in progress */
  ending: boolean;
}

/** How long a connection that overflowed has, from the overflow, to take the answers in progress. */
export const OVERFLOW_CLOSE_MS = 30_000;

/**
 * Stop reading a connection that overflowed, for good: node's server resumes a paused socket whenever its
 * buffered answers drain (its `_paused` flag notwithstanding), so this socket's `resume` does nothing from now
 * on. Found from the outside: the reads went on, node held every request parsed after the overflow (1.6 GB in
 * 20 s), and answering none of them at the close took the event loop minutes; cutting such a client off at once
 * instead lost the answers of the requests that had run. What was read already (the rest of a chunk) is parsed
 * and dropped. The connection is destroyed OVERFLOW_CLOSE_MS after the overflow (the timer goes with the
 * socket), and ended (FIN) once the answers in progress are written, for a client that reads them to close.
 */
function stopReadingForGood(socket: IncomingMessage['socket'] & { _paused?: boolean }, closeMs: number): void {
  socket._paused = true;
  socket.pause();
  socket.resume = () => socket;
  const timer = setTimeout(() => socket.destroy(), closeMs);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

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

/** `overflowCloseMs`: OVERFLOW_CLOSE_MS unless a test says otherwise. */
export function requestHandler(app: Koa, opts: { overflowCloseMs?: number } = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const overflowCloseMs = opts.overflowCloseMs ?? OVERFLOW_CLOSE_MS;
  const chain = compose(app.middleware);
  // as app.callback(): an error that reaches Koa goes to its default listener unless the app has one
  if (app.listenerCount('error') === 0) app.on('error', (err: Error) => app.onerror(err));
  const kept = (app as unknown as { handleRequest: HandleRequest }).handleRequest.bind(app);
  const lanes = new WeakMap<object, Lane>();
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
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
  return (req, res) => {
    // no answer of the connection ahead of this one (node's server gives the response the socket at once; a
    // pipelined one waits for those ahead of it): it runs at once, outside the lane, and so does every request
    // of a client that waits for each answer before it sends the next. At most one runs so: a request that
    // comes while it is being answered is pipelined behind it
    if (res.socket !== null) return handle(req, res);
    const socket = req.socket;
    let lane = lanes.get(socket);
    if (!lane) {
      const created: Lane = { active: 0, waiting: [], ending: false };
      lanes.set(socket, created);
      // what waits of a connection that closed is never answered: nobody would read it
      socket.once('close', () => {
        created.waiting.length = 0;
      });
      lane = created;
    }
    const own = lane;
    // read before the reads stopped (the rest of the chunk that overflowed): never run
    if (own.ending) return;
    const run = () => {
      own.active += 1;
      // once it is handed to the kernel whole (node emits `close` right after `finish`); a connection that closes
      // first drops what waits (above)
      res.once('close', () => {
        own.active -= 1;
        // the connection is gone (node closes the answers in progress as it learns so, before this sees it)
        if (socket.destroyed) own.waiting.length = 0;
        const next = own.waiting.shift();
        if (next) next();
        else if (own.ending && own.active === 0) socket.end();
      });
      handle(req, res);
    };
    if (own.active < MAX_IN_PROGRESS) return run();
    if (own.waiting.length < MAX_WAITING) return void own.waiting.push(run);
    // a client that sends this many without reading: the answers in progress go out, then the connection ends
    own.ending = true;
    own.waiting.length = 0;
    stopReadingForGood(socket, overflowCloseMs);
  };
}
