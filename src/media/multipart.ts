/**
 * A streaming multipart/form-data reader (RFC 7578) with hard bounds: part headers, field values, the number
 * of parts and each file's size are capped as bytes arrive, and a file's bytes are handed on chunk by chunk,
 * never collected. Why our own: the upload route needs to stream one file straight into the media store,
 * decide between 413 and 507 itself, and know exactly how much of the request it has read.
 *
 * Parts must be consumed in order (one reader, one pass). A part's body may be abandoned (`return()` on its
 * iterator does not skip ahead); the next part, or `drain()`, skips the rest while still counting it against
 * the cap.
 */
import { DomainError, payloadTooLarge } from '../errors.js';
import { toBuffer, type ByteSource } from './capped.js';

export interface MultipartLimits {
  /** per file part; crossing it throws 413 PAYLOAD_TOO_LARGE with data.maxBytes */
  fileMaxBytes: number;
  /** a part of this name is a file part even without a filename parameter */
  fileField?: string;
  /** per non-file field, default 64 KiB */
  fieldMaxBytes?: number;
  /** per part header block, default 8 KiB */
  headerMaxBytes?: number;
  /** default 16 */
  maxParts?: number;
  /** preamble and epilogue together, default 16 KiB */
  slackMaxBytes?: number;
}

export interface MultipartPart {
  name: string;
  /** the filename parameter */
  filename: string | null;
  contentType: string | null;
  /** has a filename parameter or is the `fileField` part; capped at fileMaxBytes */
  readonly isFile: boolean;
  /** bytes of this part's body read so far */
  readonly bytes: number;
  body: AsyncIterable<Buffer>;
  text(): Promise<string>;
  drain(): Promise<void>;
}

const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

export const malformed = (why: string) =>
  new DomainError('VALIDATION_FAILED', `malformed multipart body: ${why}`, { field: 'file' });

/** The boundary of a `multipart/form-data` Content-Type, or null. */
export function boundaryOf(contentType: string | undefined): string | null {
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType)) return null;
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))\s*(?:;|$)/i.exec(contentType);
  const b = m?.[1] ?? m?.[2];
  return b && /^[0-9A-Za-z'()+_,\-./:=? ]*[0-9A-Za-z'()+_,\-./:=?]$/.test(b) ? b : null;
}

/** `form-data; name="file"; filename="a.png"` → parameters (quoted strings unescaped, filename* decoded). */
export function dispositionParams(value: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /;\s*([A-Za-z0-9!#$%&'*+.^_`|~-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (let m = re.exec(value); m; m = re.exec(value)) {
    const key = (m[1] ?? '').toLowerCase();
    const raw = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : (m[3] ?? '').trim();
    if (key.endsWith('*')) {
      const ext = /^([\w!#$%&+^`{}~-]+)'[^']*'(.*)$/.exec(raw);
      if (ext && ext[1]?.toLowerCase() === 'utf-8') {
        try {
          out[key.slice(0, -1)] = decodeURIComponent(ext[2] ?? '');
        } catch {
          // an undecodable extended value is ignored; the plain parameter, if any, stands
        }
      }
    } else if (!(key in out)) {
      out[key] = raw;
    }
  }
  return out;
}

function parseHeaders(block: string): Map<string, string> {
  const headers = new Map<string, string>();
  for (const line of block.split('\r\n')) {
    if (line === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) throw malformed('bad part header');
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return headers;
}

/** Pulls chunks from the source on demand into one small look-ahead buffer. */
class Cursor {
  buf: Buffer = Buffer.alloc(0);
  private ended = false;
  constructor(private readonly it: AsyncIterator<Buffer | Uint8Array | string>) {}

  async more(): Promise<boolean> {
    if (this.ended) return false;
    const r = await this.it.next();
    if (r.done) {
      this.ended = true;
      return false;
    }
    const chunk = toBuffer(r.value);
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    return true;
  }

  consume(n: number): void {
    this.buf = this.buf.subarray(n);
  }

  /** Wait until `n` bytes are buffered; false if the source ends first. */
  async need(n: number): Promise<boolean> {
    while (this.buf.length < n) if (!(await this.more())) return false;
    return true;
  }
}

class Part implements MultipartPart {
  bytes = 0;
  done = false;
  readonly body: AsyncIterable<Buffer>;

  constructor(
    private readonly cursor: Cursor,
    private readonly delimiter: Buffer,
    private readonly cap: number,
    readonly isFile: boolean,
    readonly name: string,
    readonly filename: string | null,
    readonly contentType: string | null,
  ) {
    const next = async (): Promise<IteratorResult<Buffer>> => {
      const chunk = await this.read();
      return chunk ? { value: chunk, done: false } : { value: undefined, done: true };
    };
    // return() deliberately does not drain: the owner decides whether the rest is skipped or refused
    this.body = { [Symbol.asyncIterator]: () => ({ next, return: async () => ({ value: undefined, done: true }) }) };
  }

  private count(chunk: Buffer): Buffer {
    this.bytes += chunk.length;
    if (this.bytes > this.cap) {
      throw this.isFile
        ? payloadTooLarge(this.cap)
        : new DomainError('VALIDATION_FAILED', `${this.name} is too long`, { field: this.name });
    }
    return chunk;
  }

  /** The next piece of this part's body, or null at its end. */
  async read(): Promise<Buffer | null> {
    const c = this.cursor;
    const d = this.delimiter;
    while (!this.done) {
      const at = c.buf.indexOf(d);
      if (at >= 0) {
        const last = c.buf.subarray(0, at);
        c.consume(at + d.length);
        this.done = true;
        if (last.length > 0) return this.count(last);
        break;
      }
      // keep a possible partial delimiter at the end of the buffer
      const safe = c.buf.length - (d.length - 1);
      if (safe > 0) {
        const out = c.buf.subarray(0, safe);
        c.consume(safe);
        return this.count(out);
      }
      if (!(await c.more())) throw malformed('truncated body');
    }
    return null;
  }

  async text(): Promise<string> {
    const chunks: Buffer[] = [];
    for (let c = await this.read(); c; c = await this.read()) chunks.push(c);
    return Buffer.concat(chunks).toString('utf8');
  }

  async drain(): Promise<void> {
    while (await this.read());
  }
}

/**
 * Read the parts of a multipart body. After the closing delimiter the epilogue is read to the end of the
 * source (bounded), so a keep-alive connection is left clean.
 */
export async function* readMultipart(source: ByteSource, boundary: string, limits: MultipartLimits): AsyncGenerator<MultipartPart> {
  const fieldMax = limits.fieldMaxBytes ?? 64 * 1024;
  const headerMax = limits.headerMaxBytes ?? 8 * 1024;
  const maxParts = limits.maxParts ?? 16;
  const slackMax = limits.slackMaxBytes ?? 16 * 1024;
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  const cursor = new Cursor(source[Symbol.asyncIterator]());
  // a leading CRLF lets the first boundary, which has none before it, match the same delimiter
  cursor.buf = Buffer.from(CRLF);

  let slack = 0;
  for (;;) {
    const at = cursor.buf.indexOf(delimiter);
    if (at >= 0) {
      slack += at;
      cursor.consume(at + delimiter.length);
      break;
    }
    if (cursor.buf.length > slackMax + delimiter.length) throw malformed('no opening boundary');
    if (!(await cursor.more())) throw malformed('no opening boundary');
  }

  for (let count = 0; ; count++) {
    if (!(await cursor.need(2))) throw malformed('truncated after boundary');
    if (cursor.buf[0] === 0x2d && cursor.buf[1] === 0x2d) break; // "--": closing delimiter
    while (cursor.buf[0] === 0x20 || cursor.buf[0] === 0x09) {
      cursor.consume(1);
      if (!(await cursor.need(2))) throw malformed('truncated after boundary');
    }
    if (!cursor.buf.subarray(0, 2).equals(CRLF)) throw malformed('bad boundary line');

    let end = cursor.buf.indexOf(HEADER_END);
    while (end < 0) {
      if (cursor.buf.length > headerMax) throw malformed('part headers too large');
      if (!(await cursor.more())) throw malformed('truncated part headers');
      end = cursor.buf.indexOf(HEADER_END);
    }
    if (end > headerMax) throw malformed('part headers too large');
    const headers = parseHeaders(cursor.buf.subarray(2, end).toString('utf8'));
    cursor.consume(end + HEADER_END.length);

    if (count >= maxParts) throw malformed('too many parts');
    const disposition = headers.get('content-disposition');
    if (!disposition || !/^form-data\s*(;|$)/i.test(disposition)) throw malformed('part without form-data disposition');
    const params = dispositionParams(disposition);
    if (params.name === undefined) throw malformed('part without name');
    const filename = params.filename ?? null;
    const isFile = filename !== null || params.name === limits.fileField;
    const cap = isFile ? limits.fileMaxBytes : fieldMax;
    const part = new Part(cursor, delimiter, cap, isFile, params.name, filename, headers.get('content-type') ?? null);
    yield part;
    await part.drain();
  }

  slack += cursor.buf.length;
  while (slack <= slackMax && (await cursor.more())) slack = cursor.buf.length;
  if (slack > slackMax) throw malformed('epilogue too large');
}
