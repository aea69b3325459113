/**
 * Logging: bunyan, JSON lines. Secrets never reach a log line: serializers and a stream filter redact API
 * keys (wapi_…), the admin token, webhook secrets, QR strings and pairing codes wherever they appear.
 */
import bunyan from 'bunyan';
import { Writable } from 'node:stream';

export type Logger = bunyan;

const SECRET_KEYS = /^(apikey|api_key|key|secret|token|admintoken|admin_token|authorization|qr|code|pairingcode|password)$/i;
const KEY_PATTERN = /wapi_[A-Za-z0-9-]+_[A-Za-z0-9_-]+/g;

/** Deep copy with secret-named fields replaced and API keys masked in every string. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 6) return '[deep]';
  if (typeof value === 'string') return value.replace(KEY_PATTERN, 'wapi_[redacted]');
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value instanceof Error) return { name: value.name, message: redact(value.message), stack: redact(value.stack) };
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEYS.test(k) ? '[redacted]' : redact(v, depth + 1);
    return out;
  }
  return value;
}

const extraSecrets = new Set<string>();
/** Register a secret (e.g. the admin token) so that it is masked wherever it appears in a log line. */
export function registerSecret(secret: string): void {
  if (secret.length >= 8) extraSecrets.add(secret);
}

function maskLine(line: string): string {
  let out = line.replace(KEY_PATTERN, 'wapi_[redacted]');
  for (const s of extraSecrets) if (out.includes(s)) out = out.split(s).join('[redacted]');
  return out;
}

/** A stream that writes bunyan records to `target` after masking every known secret. */
export function redactingStream(target: NodeJS.WritableStream): Writable {
  return new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      target.write(maskLine(chunk.toString()));
      cb();
    },
  });
}

export function createLogger(opts: { level: bunyan.LogLevel; name?: string; stream?: NodeJS.WritableStream }): Logger {
  return bunyan.createLogger({
    name: opts.name ?? 'mgw',
    level: opts.level,
    streams: [{ level: opts.level, stream: redactingStream(opts.stream ?? process.stdout) }],
    serializers: {
      err: (e: unknown) => redact(e instanceof Error ? bunyan.stdSerializers.err(e) : e),
      req: (r: unknown) => redact(r),
      data: (d: unknown) => redact(d),
      payload: (d: unknown) => redact(d),
    },
  });
}

/** A logger that discards everything, for tests that do not look at logs. */
export function silentLogger(): Logger {
  return bunyan.createLogger({ name: 'mgw', level: 'fatal', streams: [{ level: 'fatal', stream: new Writable({ write: (_c, _e, cb) => cb() }) }] });
}
