/**
 * Reading a JSON request body, after the route matched and its guard passed. Every way a client can get a body
 * wrong is a 4xx in the envelope, never a 5xx: a body that is not JSON (415), an unsupported encoding or
 * charset (415), bytes that do not inflate or decode (400), more than the limit after inflating (413), nesting
 * deeper than any request needs, keys that reach object prototypes, NUL characters (PostgreSQL refuses them in
 * text and JSON), lone surrogates (its JSON refuses those) and a body that is not an object (400
 * VALIDATION_FAILED naming the field).
 */
import { createGunzip, createInflate, createBrotliDecompress } from 'node:zlib';
import type { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { Context, Middleware, Next } from 'koa';
import { DomainError, payloadTooLarge } from '../errors.js';
import { closeUnreadRequest, continueBody, otherTransferCoding } from '../media/linger.js';

/** Deeper than any request of the API (options.groupMentions.0.x is 4); far below any stack limit. */
export const MAX_JSON_DEPTH = 32;
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
const BODYLESS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Strict UTF-8 (a leading BOM dropped); one decoder serves every request (each decode is complete in itself). */
const utf8 = new TextDecoder('utf-8', { fatal: true });

const bad = (field: string, message: string) => new DomainError('VALIDATION_FAILED', message, { field });
const unsupported = (message: string) => new DomainError('UNSUPPORTED_MEDIA_TYPE', message);

function hasBody(ctx: Context): boolean {
  const h = ctx.req.headers;
  if (h['transfer-encoding'] !== undefined) return true;
  const len = h['content-length'];
  return len !== undefined && len !== '0';
}

const encodingOf = (ctx: Context) => (ctx.get('content-encoding') || 'identity').trim().toLowerCase();

function decoded(ctx: Context, encoding: string): Readable {
  switch (encoding) {
    case 'identity':
      return ctx.req;
    case 'gzip':
    case 'x-gzip':
      return ctx.req.pipe(createGunzip());
    case 'deflate':
      return ctx.req.pipe(createInflate());
    case 'br':
      return ctx.req.pipe(createBrotliDecompress());
    default:
      throw unsupported('Content-Encoding must be one of identity, gzip, deflate, br');
  }
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
  continueBody(ctx.req, ctx.res);
  const whole = encoding === 'identity' ? arrived(ctx.req) : null;
  if (whole) {
    if (whole.length > limit) throw payloadTooLarge(limit);
    return whole;
  }
  return readStreamed(ctx, encoding, limit);
}

/** `readAll` for a body still on its way, or to inflate. */
async function readStreamed(ctx: Context, encoding: string, limit: number): Promise<Buffer> {
  const source = decoded(ctx, encoding);
  // `pipe` does not pass on a request cut off by its client: its inflater would wait for the rest forever (the
  // request never over, never logged). Cut, it fails as the request itself does when read directly. (A method,
  // not an arrow bound to a name: see collect.)
  const request = {
    cut() {
      if (!ctx.req.complete) source.destroy(Object.assign(new Error('the request was aborted'), { code: 'ECONNRESET' }));
    },
  };
  if (source !== ctx.req) {
    if (ctx.req.destroyed) request.cut();
    else ctx.req.once('close', request.cut);
  }
  let chunks: Buffer[];
  let size: number;
  try {
    ({ chunks, size } = await collect(source, limit));
  } catch (err) {
    // answered before the body was read to its end: Connection: close, then a bounded drain (src/media/linger.ts)
    closeUnreadRequest(ctx.req, ctx.res);
    if (err instanceof DomainError) throw err;
    // a request whose body arrived whole was not aborted, whatever its stream says now (a request read to its
    // end is destroyed by then): its bytes did not decode
    if (!ctx.req.complete || (err as { code?: string }).code === 'ECONNRESET') throw bad('body', 'the request was aborted before its body arrived');
    throw bad('body', `the body could not be decoded with Content-Encoding ${ctx.get('content-encoding') || 'identity'}`);
  } finally {
    if (source !== ctx.req) {
      ctx.req.off('close', request.cut);
      source.destroy();
    }
  }
  if (!ctx.req.complete) throw bad('body', 'the request was aborted before its body arrived');
  return Buffer.concat(chunks, size);
}

/**
 * Refuses nesting deeper than MAX_JSON_DEPTH before JSON.parse builds it (strings are skipped). Answers whether
 * a string holds an escaped surrogate (`\ud800` to `\udfff`): the only way a lone one reaches a parsed string
 * (strict UTF-8 decoding has none), and then the strings are searched for one.
 */
function checkDepth(text: string): boolean {
  let depth = 0;
  let inString = false;
  let surrogates = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) {
        // backslash: skip the escaped character; \uD800-\uDFFF is a surrogate
        if (text.charCodeAt(i + 1) === 0x75 && (text.charCodeAt(i + 2) | 0x20) === 0x64 && /[89a-f]/i.test(text.charAt(i + 3))) surrogates = true;
        i++;
      } else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) throw bad('body', `the body is nested deeper than ${MAX_JSON_DEPTH} levels`);
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return surrogates;
}

/** A surrogate that is not half of a pair (`\p{Cs}` matches only those under the `u` flag). */
const LONE_SURROGATE = /\p{Cs}/u;
/** Whether a key or string is refused: a NUL, or (when the text escaped surrogates) a lone surrogate. */
const refusedText = (s: string, surrogates: boolean) => s.includes('\u0000') || (surrogates && LONE_SURROGATE.test(s));

/** True when no key reaches a prototype and no key or string is refused (the usual body): no paths built. */
function clean(root: unknown, surrogates: boolean): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (refusedText(value, surrogates)) return false;
    } else if (Array.isArray(value)) {
      for (const v of value) stack.push(v);
    } else if (value !== null && typeof value === 'object') {
      for (const k of Object.keys(value)) {
        if (FORBIDDEN_KEYS.has(k) || refusedText(k, surrogates)) return false;
        stack.push((value as Record<string, unknown>)[k]);
      }
    }
  }
  return true;
}

/**
 * The first key or string of `root` that is refused, named by its path under `base`, or null. `namesOnly`:
 * only a key that reaches a prototype (not what a text holds).
 */
function firstOffence(root: unknown, surrogates: boolean, base: string, namesOnly = false): DomainError | null {
  const stack: Array<{ value: unknown; path: string }> = [{ value: root, path: base }];
  const at = (path: string, key: string) => (path ? `${path}.${key}` : key);
  while (stack.length > 0) {
    const { value, path } = stack.pop() as { value: unknown; path: string };
    if (typeof value === 'string') {
      if (namesOnly) continue;
      if (value.includes('\u0000')) return bad(path || 'body', `${path || 'body'} must not contain NUL characters`);
      if (surrogates && LONE_SURROGATE.test(value)) return bad(path || 'body', `${path || 'body'} must be well-formed Unicode (it holds half of a surrogate pair)`);
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => stack.push({ value: v, path: at(path, String(i)) }));
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        const p = at(path, k);
        if (FORBIDDEN_KEYS.has(k)) return bad(p, `${p} is not an allowed field name`);
        if (namesOnly) {
          stack.push({ value: v, path: p });
          continue;
        }
        if (k.includes('\u0000')) return bad(path || 'body', `field names must not contain NUL characters`);
        if (surrogates && LONE_SURROGATE.test(k)) return bad(path || 'body', 'field names must be well-formed Unicode (one holds half of a surrogate pair)');
        stack.push({ value: v, path: p });
      }
    }
  }
  return null;
}

/** Why an entry of a body read with `entries` was refused (its text), by the entry: see `refusedEntry`. */
const REFUSED_ENTRIES = new WeakMap<object, string>();

/**
 * Why an entry of the route's entries (`jsonBody`'s `entriesAt`) holds text that cannot be stored: a NUL or a
 * lone surrogate, named by its field within the entry ("message must not contain NUL characters"). Undefined
 * for an entry without one. The route rejects that entry alone.
 */
export function refusedEntry(entry: unknown): string | undefined {
  return entry !== null && typeof entry === 'object' ? REFUSED_ENTRIES.get(entry) : undefined;
}

/**
 * Walks the parsed value without recursion: no key that reaches a prototype, no NUL in keys or strings, and no
 * lone surrogate (`surrogates`: the text escaped one). PostgreSQL's JSON refuses `\ud800` unpaired (a 500 from
 * the insert, found by probing), and in text it would become U+FFFD: stored, but not what the client sent.
 *
 * `entries`: the top-level array whose object entries the route takes one by one (v1 send-bulk's `messages`,
 * SPEC.md "send-bulk rules" 3: a rejected entry does not abort the batch). A NUL or a lone surrogate inside
 * such an entry is noted for the route (`refusedEntry`) instead of refusing the body; a key that reaches a
 * prototype is refused wherever it is, and so is anything outside the entries.
 */
function checkValues(root: unknown, surrogates: boolean, entries?: string): void {
  if (clean(root, surrogates)) return;
  // something to refuse: walk again with paths, to name the first offending field
  const list = entries !== undefined && !Array.isArray(root) ? (root as Record<string, unknown>)[entries] : undefined;
  if (entries === undefined || !Array.isArray(list) || !Object.hasOwn(root as object, entries)) {
    const offence = firstOffence(root, surrogates, '');
    if (offence) throw offence;
    return;
  }
  const outside = firstOffence({ ...(root as Record<string, unknown>), [entries]: [] }, surrogates, '');
  if (outside) throw outside;
  list.forEach((entry: unknown, i) => {
    if (clean(entry, surrogates)) return;
    const path = `${entries}.${i}`;
    // a key that reaches a prototype is refused wherever it is; an entry that is a bare string has nothing to
    // note its refusal on: the whole body, as anywhere else
    const whole = entry !== null && typeof entry === 'object' ? firstOffence(entry, surrogates, path, true) : firstOffence(entry, surrogates, path);
    if (whole) throw whole;
    const within = firstOffence(entry, surrogates, '');
    if (within) REFUSED_ENTRIES.set(entry as object, within.message);
  });
}

/**
 * An object or an array (as before: schemas refuse an array where they want an object, v1 in its frozen words).
 * `entries`: see `checkValues`.
 */
export function parseJsonText(text: string, entries?: string): object {
  const surrogates = checkDepth(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw bad('body', 'the body is not valid JSON');
  }
  if (value === null || typeof value !== 'object') throw bad('body', 'the body must be a JSON object');
  checkValues(value, surrogates, entries);
  return value;
}

/**
 * The two spellings of a JSON body's Content-Type that nearly every client sends, which `ctx.is` accepts: told
 * apart by comparing the header, not by type-is's parse of it (1.4 % of the event loop's time accepting messages).
 * Any other spelling is left to `ctx.is`.
 */
const isPlainJson = (contentType: string | undefined): boolean => contentType === 'application/json' || contentType === 'application/json; charset=utf-8';

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
