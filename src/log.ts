/**
 * Logging: bunyan, JSON lines. Secrets never reach a log line: serializers and a stream filter redact API
 * keys (wapi_…), the admin token, webhook secrets, QR strings and pairing codes wherever they appear; a `code`
 * that names an error (ECONNREFUSED, a SQLSTATE of pg, the gateway's own) is kept for the operator. Text a
 * client gave (a request's path) is masked in every spelling a server decodes to a secret, percent-encoded too
 * (`maskClientText`); error answers that echo such text use it as well.
 */
import bunyan from 'bunyan';
import dns from 'node:dns';
import os from 'node:os';
import { Writable } from 'node:stream';
import { getSystemErrorMap } from 'node:util';
import { DRIVER_ERROR_CODES, ERROR_STATUS } from './errors.js';

export type Logger = bunyan;

const SECRET_KEYS = /^(apikey|api_key|key|secret|token|admintoken|admin_token|authorization|qr|code|pairingcode|password)$/i;
const KEY_PATTERN = /wapi_[A-Za-z0-9-]+_[A-Za-z0-9_-]+/g;

/**
 * The values of a `code` field that name an error, shown in log lines because operators diagnose outages by
 * them: the gateway's own codes (src/errors.ts) and its drivers' (src/drivers/contract.ts), the system's errno
 * and signal names, libuv's (`EAI_AGAIN`) and the DNS resolver's (`ENOTFOUND`). Any other `code` is redacted: a
 * pairing code or a login code is a secret, and it comes under that name in any spelling (`4F7K-9XQ3`, `ABCD1234`).
 */
const ERROR_CODES: ReadonlySet<string> = new Set<string>([
  ...Object.keys(ERROR_STATUS),
  ...DRIVER_ERROR_CODES,
  ...Object.keys(os.constants.errno),
  ...Object.keys(os.constants.signals),
  ...[...getSystemErrorMap().values()].map(([name]) => name),
  ...(Object.values(dns) as unknown[]).filter((v): v is string => typeof v === 'string' && /^E[A-Z]+$/.test(v)),
]);
/** node's own error codes and undici's */
const NODE_ERROR_CODE = /^(?:UND_)?ERR_[A-Z0-9_]+$/;
/** a PostgreSQL SQLSTATE (`57P01`): shown only on an error from pg, since elsewhere five characters could be a secret */
const SQLSTATE = /^[0-9A-Z]{5}$/;

/** Whether a secret-named field is a `code` that names an error (ERROR_CODES, node's, undici's), so that it is shown. */
const isErrorCode = (key: string, value: unknown): value is string =>
  /^code$/i.test(key) && typeof value === 'string' && (ERROR_CODES.has(value) || NODE_ERROR_CODE.test(value));

/**
 * An error from PostgreSQL, as pg builds it from the server's ErrorResponse: the server always sends the severity
 * and the routine that raised it, and only such an error's `code` is a SQLSTATE.
 */
const isPgError = (err: Error): boolean => {
  const { severity, routine } = err as { severity?: unknown; routine?: unknown };
  return typeof severity === 'string' && typeof routine === 'string';
};

/** Deep copy with secret-named fields replaced and API keys masked in every string (percent-encoded ones too). */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 6) return '[deep]';
  if (typeof value === 'string') return value.includes('%') ? maskClientText(value) : value.replace(KEY_PATTERN, 'wapi_[redacted]');
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value instanceof Error) return { name: value.name, message: redact(value.message), stack: redact(value.stack) };
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    // a secret-named field with nothing in it stays empty: bunyan's error serializer gives every error a `code`, and
    // one without (pg-pool's "timeout exceeded when trying to connect") was logged "code":"[redacted]", as if it hid one
    for (const [k, v] of Object.entries(value)) out[k] = !SECRET_KEYS.test(k) ? redact(v, depth + 1) : v === undefined || v === null || isErrorCode(k, v) ? v : '[redacted]';
    return out;
  }
  return value;
}

/**
 * A logged error as bunyan's serializer reads it (message, name, stack, code, signal), redacted. The serializer
 * drops the fields that tell an error from pg apart, so they are read here, on the error itself, and its SQLSTATE
 * is kept.
 */
function redactError(err: Error): unknown {
  const out = redact(bunyan.stdSerializers.err(err));
  const { code } = err as { code?: unknown };
  if (out && typeof out === 'object' && typeof code === 'string' && SQLSTATE.test(code) && isPgError(err)) return { ...out, code };
  return out;
}

/**
 * Finding registered secrets in a line. A few (the admin token, some webhook secrets) are looked for one by one;
 * many (a webhook secret per instance) by the hash of their first SECRET_HEAD characters, rolled along the
 * line, so that a line costs the same with 10,000 secrets as with 10 (one by one, 10,000 took ~0.5 ms a line).
 */
const SECRET_HEAD = 8;
const ONE_BY_ONE = 8;
const BASE = 31;
let BASE_HEAD = 1;
for (let i = 0; i < SECRET_HEAD; i++) BASE_HEAD = Math.imul(BASE_HEAD, BASE);
/** secrets by the hash of their head, longest first; rebuilt after a registration */
let byHead: Map<number, string[]> | null = null;

const extraSecrets = new Set<string>();
/** Register a secret (e.g. the admin token) so that it is masked wherever it appears in a log line. */
export function registerSecret(secret: string): void {
  if (secret.length < SECRET_HEAD || extraSecrets.has(secret)) return;
  extraSecrets.add(secret);
  byHead = null;
}

const headHash = (s: string, at: number) => {
  let h = 0;
  for (let i = at; i < at + SECRET_HEAD; i++) h = (Math.imul(h, BASE) + s.charCodeAt(i)) | 0;
  return h;
};

function secretIndex(): Map<number, string[]> {
  if (byHead) return byHead;
  const index = new Map<number, string[]>();
  for (const secret of extraSecrets) {
    const h = headHash(secret, 0);
    index.set(h, [...(index.get(h) ?? []), secret].sort((a, b) => b.length - a.length));
  }
  return (byHead = index);
}

function maskSecrets(line: string): string {
  if (extraSecrets.size <= ONE_BY_ONE) {
    let out = line;
    for (const s of extraSecrets) if (out.includes(s)) out = out.split(s).join('[redacted]');
    return out;
  }
  if (line.length < SECRET_HEAD) return line;
  const index = secretIndex();
  let out = '';
  let from = 0;
  let h = headHash(line, 0);
  for (let i = 0; ; i++) {
    const candidates = i >= from ? index.get(h) : undefined;
    const found = candidates?.find((s) => line.startsWith(s, i));
    if (found) {
      out += `${line.slice(from, i)}[redacted]`;
      from = i + found.length;
    }
    if (i + SECRET_HEAD >= line.length) break;
    h = (Math.imul(h, BASE) + line.charCodeAt(i + SECRET_HEAD) - Math.imul(line.charCodeAt(i), BASE_HEAD)) | 0;
  }
  return from === 0 ? line : out + line.slice(from);
}

function maskLine(line: string): string {
  return maskSecrets(line.includes('wapi_') ? line.replace(KEY_PATTERN, 'wapi_[redacted]') : line);
}

/** A run of well-formed percent escapes; a malformed one (`%zz`, `%4`) is not part of a run and stays as written. */
const PERCENT_RUN = /(?:%[0-9A-Fa-f]{2})+/g;
/**
 * A server decodes a path once, a proxy in front of it maybe once more: 8 rounds are far past what any decodes,
 * and bound the work on a hostile path (`%252525…`, each round only 2 characters shorter).
 */
const MAX_DECODES = 8;

/** One round of percent-decoding as a server does it (the bytes of a run as UTF-8); never throws, unlike decodeURIComponent. */
const decodePercent = (text: string) => text.replace(PERCENT_RUN, (run) => Buffer.from(run.replaceAll('%', ''), 'hex').toString('utf8'));

/**
 * Text a client gave (a request's path, an id echoed in an error), with every secret masked in every spelling a
 * server decodes to it: as written, and percent-encoded in any way (any character, upper- or lower-case hex, an
 * encoded `%` decoded again). Text without `%` costs what maskLine does. Text that decodes to a secret is given
 * back decoded, masked (`/api/v2/messages/wapi%5Fdemo_…` is `/api/v2/messages/wapi_[redacted]`): masking its
 * encoded spelling in place would keep any part of the secret that the masked span missed (`wapi_demo_ab%41cd`);
 * text that holds none is given back as written.
 */
export function maskClientText(text: string): string {
  if (!text.includes('%')) return maskLine(text);
  let found = false;
  let decoded = text;
  for (let round = 0; round < MAX_DECODES; round++) {
    // a registered secret is masked in the spelling it has at this round, before a decoding could change it
    const masked = maskSecrets(decoded);
    found ||= masked !== decoded;
    decoded = decodePercent(masked);
    if (decoded === masked) break;
  }
  const masked = maskLine(decoded);
  return found || masked !== decoded ? masked : text;
}

/**
 * A deep copy of an answer's fields with every string masked as maskClientText does: for error answers that echo
 * what a client gave (an id, a path). Only arrays and plain objects are entered; field names are kept as they are.
 */
export function maskClientValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return maskClientText(value);
  if (depth > 6) return '[deep]';
  if (Array.isArray(value)) return value.map((v) => maskClientValue(v, depth + 1));
  if (value !== null && typeof value === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(value))) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = maskClientValue(v, depth + 1);
    return out;
  }
  return value;
}

/** The part of a stream a log line is written to: a stream, or the process's batched stdout. */
export interface LineTarget {
  write(chunk: string): unknown;
}

/**
 * A stream that writes bunyan records to `target` after masking every known secret. Bunyan only calls
 * `write` with each record's line, so a bare writer does (no stream machinery per line).
 */
export function redactingStream(target: LineTarget): NodeJS.WritableStream {
  const writer = {
    write(chunk: Buffer | string): boolean {
      target.write(maskLine(typeof chunk === 'string' ? chunk : chunk.toString()));
      return true;
    },
  };
  return writer as unknown as NodeJS.WritableStream;
}

/** What a batched writer holds before it writes at once rather than at the end of the turn. */
const BATCH_MAX_BYTES = 64 * 1024;

/**
 * Lines gathered while the event loop works through one turn, then written to `target` as one chunk right after
 * it (setImmediate), or at once when BATCH_MAX_BYTES are held. Under load every request writes a line, and the
 * process's stdout (a file, a pipe or a terminal) writes each chunk with its own write(2): one system call a turn
 * instead of one a line. Lines keep their order. `flush()` writes what is held now; the process's own writer
 * (`stdoutLines`) flushes on the process's 'exit', so process.exit() and an uncaught exception lose nothing (stdout
 * writes to files and pipes are synchronous on Linux); only a SIGKILL can lose the last turn's lines.
 */
export class BatchedLines {
  private held: string[] = [];
  private bytes = 0;
  private scheduled = false;
  constructor(
    private readonly target: LineTarget,
    private readonly maxBytes = BATCH_MAX_BYTES,
  ) {}

  write(line: string): boolean {
    this.held.push(line);
    this.bytes += line.length;
    if (this.bytes >= this.maxBytes) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    }
    return true;
  }

  flush(): void {
    if (this.held.length === 0) return;
    const chunk = this.held.length === 1 ? (this.held[0] as string) : this.held.join('');
    this.held = [];
    this.bytes = 0;
    this.target.write(chunk);
  }
}

let stdoutWriter: BatchedLines | null = null;
/** The process's one batched writer to stdout, flushed when the process exits. */
export function stdoutLines(): BatchedLines {
  if (stdoutWriter) return stdoutWriter;
  const writer = new BatchedLines(process.stdout);
  process.on('exit', () => writer.flush());
  return (stdoutWriter = writer);
}

/**
 * A logger of bunyan JSON lines, every known secret masked. Without `stream`, the lines go to the process's stdout
 * through its batched writer (`stdoutLines`); a given stream is written line by line, as it is called.
 */
export function createLogger(opts: { level: bunyan.LogLevel; name?: string; stream?: LineTarget }): Logger {
  return bunyan.createLogger({
    name: opts.name ?? 'mgw',
    level: opts.level,
    streams: [{ level: opts.level, stream: redactingStream(opts.stream ?? stdoutLines()) }],
    serializers: {
      err: (e: unknown) => (e instanceof Error ? redactError(e) : redact(e)),
      req: (r: unknown) => redact(r),
      data: (d: unknown) => redact(d),
      payload: (d: unknown) => redact(d),
      // a request's path as the client sent it (src/http/request-log.ts): its percent-encoded spellings of a
      // secret are masked here; the plain ones by the stream, as in every line (so a path without '%' costs nothing more)
      path: (p: unknown) => (typeof p !== 'string' ? redact(p) : p.includes('%') ? maskClientText(p) : p),
    },
  });
}

/** A logger that discards everything, for tests that do not look at logs. */
export function silentLogger(): Logger {
  return bunyan.createLogger({ name: 'mgw', level: 'fatal', streams: [{ level: 'fatal', stream: new Writable({ write: (_c, _e, cb) => cb() }) }] });
}
