/**
 * Reading a JSON request body, after the route matched and its guard passed. Every way a client can get a body
 * wrong is a 4xx in the envelope, never a 5xx: a body that is not JSON (415), an unsupported encoding or
 * charset (415), bytes that do not inflate or decode (400), more than the limit after inflating (413); what the
 * text may hold is checked by src/http/json-text.ts (400 VALIDATION_FAILED naming the field).
 */
import { brotliDecompress, gunzip, inflate, type InputType, type ZlibOptions } from 'node:zlib';
import { promisify } from 'node:util';
import type { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { Context, Middleware, Next } from 'koa';
import { DomainError, payloadTooLarge, validationFailed as bad } from '../errors.js';
import { closeUnreadRequest, continueBody, otherTransferCoding } from '../media/linger.js';
import { parseJsonText } from './json-text.js';

/** The methods whose body is never read (the OpenAPI document lists the body's refusals on the others). */
export const BODYLESS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Strict UTF-8 (a leading BOM dropped); one decoder serves every request (each decode is complete in itself). */
const utf8 = new TextDecoder('utf-8', { fatal: true });

const unsupported = (message: string) => new DomainError('UNSUPPORTED_MEDIA_TYPE', message);

function hasBody(ctx: Context): boolean {
  const h = ctx.req.headers;
  if (h['transfer-encoding'] !== undefined) return true;
  const len = h['content-length'];
  // `Content-Length: 00` declares no bytes as `0` does
  return len !== undefined && !/^0+$/.test(len);
}

const encodingOf = (ctx: Context) => (ctx.get('content-encoding') || 'identity').trim().toLowerCase();

type Inflate = (input: InputType, options: ZlibOptions) => Promise<Buffer>;
const INFLATERS: Record<string, Inflate> = {
  gzip: promisify(gunzip),
  'x-gzip': promisify(gunzip),
  deflate: promisify(inflate),
  // brotli's options differ in type only: maxOutputLength is the one passed
  br: promisify(brotliDecompress) as Inflate,
};

/** The inflater of a Content-Encoding (null: identity); 415 for one it does not know. */
function inflaterOf(encoding: string): Inflate | null {
  if (encoding === 'identity') return null;
  const inflater = INFLATERS[encoding];
  if (!inflater) throw unsupported('Content-Encoding must be one of identity, gzip, deflate, br');
  return inflater;
}

/**
 * The whole body when it arrived with the request (a small body usually comes in the same packet as the
 * headers): read from the request's buffer at once, which also consumes the stream. Null otherwise.
 * Node's parser puts such a body in the stream's buffer before it marks the message complete (that waits for
 * the socket's next read): a buffer as long as the declared Content-Length is the whole body. Without this,
 * nearly every request took the listeners' way (`collect`), a promise and a turn of the stream for 50 bytes.
 */
function arrived(req: IncomingMessage): Buffer | null {
  if (req.readableEnded || req.readableFlowing === true) return null;
  if (!req.complete) {
    const h = req.headers;
    const declared = Number(h['content-length']);
    if (h['transfer-encoding'] !== undefined || !(declared > 0) || req.readableLength < declared) return null;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for (let chunk = req.read() as Buffer | null; chunk !== null; chunk = req.read() as Buffer | null) {
    chunks.push(chunk);
    size += chunk.length;
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
}

/** A stream closed before its end, as an async iterator rejects it. */
const prematureClose = () => Object.assign(new Error('the stream closed before its end'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });

/**
 * The chunks of a stream up to its end, at most `limit` bytes (413 beyond, the stream left paused, never
 * destroyed: the answer must still go out on its socket). Listeners rather than an async iterator, whose
 * machinery cost more than the small body it reads. A stream that closes before its end rejects as an
 * async iterator would (ERR_STREAM_PREMATURE_CLOSE). The listeners are an object's methods, not arrows bound to
 * names: tsx (esbuild's keepNames) names such an arrow with Object.defineProperty each time it is made, which
 * was 2.5 % of the busy event loop over 500 instances (V8's profiler on machine X, docs/benchmarks.md).
 */
function collect(source: Readable, limit: number): Promise<{ chunks: Buffer[]; size: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // read already (as an iterator would find it): nothing more comes
    if (source.readableEnded) return resolve({ chunks, size });
    if (source.destroyed) return reject(prematureClose());
    const on = {
      stop() {
        source.off('data', on.data);
        source.off('end', on.end);
        source.off('error', on.error);
        source.off('close', on.close);
      },
      data(chunk: Buffer) {
        size += chunk.length;
        if (size <= limit) {
          chunks.push(chunk);
          return;
        }
        on.stop();
        source.pause();
        reject(payloadTooLarge(limit));
      },
      end() {
        on.stop();
        resolve({ chunks, size });
      },
      error(err: Error) {
        on.stop();
        reject(err);
      },
      close() {
        on.stop();
        reject(prematureClose());
      },
    };
    source.on('data', on.data);
    source.on('end', on.end);
    source.on('error', on.error);
    source.on('close', on.close);
  });
}

/**
 * The body's bytes after inflating, at most `limit` of them; the request stream is consumed or abandoned. At
 * once when the whole body arrived with the request (the usual small one), else a promise.
 */
function readAll(ctx: Context, limit: number): Buffer | Promise<Buffer> {
  const declared = Number(ctx.get('content-length') || NaN);
  if (Number.isFinite(declared) && declared > limit) {
    closeUnreadRequest(ctx.req, ctx.res);
    throw payloadTooLarge(limit);
  }
  const encoding = encodingOf(ctx);
  const inflater = inflaterOf(encoding);
  continueBody(ctx.req, ctx.res);
  const whole = arrived(ctx.req);
  if (whole && whole.length > limit) throw payloadTooLarge(limit);
  if (!inflater) return whole ?? readStreamed(ctx, limit);
  // a compressed body is inflated once all of it has arrived: inflated as it came, a client that sent 10 KB of a
  // gzip bomb and stopped held 10 MB of the gateway's memory until the request timed out (found from the outside:
  // 500 such connections without a key, 2.4 GB)
  return whole ? inflated(ctx, inflater, whole, limit) : readStreamed(ctx, limit).then((raw) => inflated(ctx, inflater, raw, limit));
}

/** A whole compressed body inflated, at most `limit` bytes of it (413 beyond; 400 for bytes that do not inflate). */
async function inflated(ctx: Context, inflater: Inflate, raw: Buffer, limit: number): Promise<Buffer> {
  // no bytes at all is an empty body, `{}` whatever its Content-Encoding (as with `Content-Length: 0`), though an
  // inflater fails on an empty input ("unexpected end of file")
  if (raw.length === 0) return raw;
  try {
    return await inflater(raw, { maxOutputLength: limit });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw payloadTooLarge(limit);
    throw bad('body', `the body could not be decoded with Content-Encoding ${ctx.get('content-encoding') || 'identity'}`);
  }
}

/** `readAll` for a body still on its way. */
async function readStreamed(ctx: Context, limit: number): Promise<Buffer> {
  let chunks: Buffer[];
  let size: number;
  try {
    ({ chunks, size } = await collect(ctx.req, limit));
  } catch (err) {
    // answered before the body was read to its end: Connection: close, then a bounded drain (src/media/linger.ts)
    closeUnreadRequest(ctx.req, ctx.res);
    if (err instanceof DomainError) throw err;
    throw bad('body', 'the request was aborted before its body arrived');
  }
  if (!ctx.req.complete) throw bad('body', 'the request was aborted before its body arrived');
  return Buffer.concat(chunks, size);
}

/**
 * The two spellings of a JSON body's Content-Type that nearly every client sends, which `ctx.is` accepts: told
 * apart by comparing the header, not by type-is's parse of it (1.4 % of the event loop's time accepting messages).
 * Any other spelling is left to `ctx.is`.
 */
const isPlainJson = (contentType: string | undefined): boolean => contentType === 'application/json' || contentType === 'application/json; charset=utf-8';

/**
 * A chunked body that is not typed as JSON, and no `Expect: 100-continue` (which would ask for a body that is
 * refused): it may well be empty (a client streaming nothing), which counts as `{}`, as an empty body with
 * `Content-Length: 0` does whatever its type. It was refused 415 unread while the same empty body with a length
 * went through.
 */
function untypedChunks(ctx: Context): boolean {
  const h = ctx.req.headers;
  return h['transfer-encoding'] !== undefined && h.expect === undefined && !otherTransferCoding(h['transfer-encoding']);
}

/** Reads a chunked body not typed as JSON (`untypedChunks`): none at all is `{}`, a single byte is 415. */
async function emptyOrRefused(ctx: Context): Promise<void> {
  try {
    await readAll(ctx, 0);
  } catch (err) {
    if (err instanceof DomainError && err.code === 'PAYLOAD_TOO_LARGE') throw unsupported('send the body as JSON with Content-Type: application/json');
    throw err;
  }
}

/**
 * Parses a JSON body into `ctx.request.body` (`{}` when there is none). `entriesAt`: the field of the
 * request's route whose entries it takes one by one (declared with the route by `entriesApart`), if any.
 */
export function jsonBody(opts: { limitBytes: number; entriesAt?: (ctx: Context) => string | undefined }) {
  /** the parsed body put on the request, then the rest of the chain */
  const parsed = (ctx: Context, next: Next, bytes: Buffer): Promise<void> => {
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      throw bad('body', 'the body is not valid UTF-8');
    }
    ctx.request.body = text.trim() === '' ? {} : parseJsonText(text, opts.entriesAt?.(ctx));
    return next();
  };
  // not async: a body that arrived with its request is read and parsed without a turn of the promise queue
  return function readJsonBody(ctx: Context, next: Next): Promise<void> {
    // read already by an earlier family whose route passed the request on (DELETE /api/v2/messages/:id: the
    // queue's cancel takes job ids only): its stream is consumed, and reading it again gave {}. Found from the
    // outside: a delete for everyone came through as `{}`, answered `everyone: false`, and could not be redone.
    if (ctx.request.body !== undefined) return next();
    if (BODYLESS.has(ctx.method) || !hasBody(ctx)) {
      ctx.request.body = {};
      return next();
    }
    if (!isPlainJson(ctx.req.headers['content-type']) && !ctx.is('application/json', '+json')) {
      if (untypedChunks(ctx)) return emptyOrRefused(ctx).then(() => {
        ctx.request.body = {};
        return next();
      });
      throw unsupported('send the body as JSON with Content-Type: application/json');
    }
    if (otherTransferCoding(ctx.req.headers['transfer-encoding'])) throw unsupported('Transfer-Encoding must be chunked alone (compress with Content-Encoding instead)');
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(ctx.get('content-type'))?.[1]?.toLowerCase();
    if (charset && charset !== 'utf-8' && charset !== 'utf8') throw unsupported('the JSON body must be UTF-8');
    const bytes = readAll(ctx, opts.limitBytes);
    return bytes instanceof Promise ? bytes.then((b) => parsed(ctx, next, b)) : parsed(ctx, next, bytes);
  };
}

/** The declarations made by `entriesApart`, found again in the routes' chains (src/http/router.ts). */
const ENTRY_FIELDS = new WeakMap<Middleware, string>();

/**
 * Declared with a route whose body holds a top-level array of entries it takes one by one, rejecting a bad one
 * alone (v1 send-bulk's `messages`): a NUL or a lone surrogate inside one of them refuses that entry
 * (`refusedEntry`), not the body. A link that does nothing itself: the body was read before the route ran.
 */
export function entriesApart(field: string): Middleware {
  const declared: Middleware = (_ctx, next) => next();
  ENTRY_FIELDS.set(declared, field);
  return declared;
}

/** The field a route's chain declared with `entriesApart`, if any. */
export function entriesFieldOf(chain: readonly Middleware[]): string | undefined {
  for (const m of chain) {
    const field = ENTRY_FIELDS.get(m);
    if (field !== undefined) return field;
  }
  return undefined;
}

declare module 'koa' {
  interface Request {
    /** the parsed JSON body (`{}` when none); set by jsonBody for every family that reads JSON */
    body?: unknown;
  }
}
