/**
 * One request to the gateway with the retry policy of retry.ts: the same method, path, body and idempotency
 * key on every attempt, a bounded number of attempts, waits from the policy. Answers are unwrapped from the
 * envelope `{success, data}` / `{success:false, error, code, data}`; failures become GatewayError.
 */
import { GatewayError, isGatewayErrorCode, type ErrorCode } from './errors.js';
import { decideRetry, type AttemptOutcome, type RetryClass, type RetryOptions } from './retry.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type QueryValue = string | number | boolean | undefined;

export interface RetryInfo {
  method: HttpMethod;
  path: string;
  /** the attempt that just failed (1-based) */
  attempt: number;
  delayMs: number;
  /** the failure's code (NO_RESPONSE for no answer) */
  code: string;
  status: number;
  idempotencyKey: string | null;
}

export interface TransportConfig {
  baseUrl: string;
  apiKey: string;
  fetch: typeof fetch;
  /** per attempt */
  timeoutMs: number;
  retry: Required<RetryOptions>;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  random: () => number;
  onRetry?: (info: RetryInfo) => void;
}

export interface RequestSpec {
  method: HttpMethod;
  path: string;
  query?: Record<string, QueryValue>;
  /** JSON-serialized, or a FormData sent as multipart */
  body?: unknown;
  retry: RetryClass;
  idempotencyKey?: string | null;
  signal?: AbortSignal | undefined;
}

export interface RawAnswer {
  status: number;
  headers: Headers;
  bytes: Uint8Array;
}

/** Sleep that wakes early, rejecting, when `signal` aborts. */
export function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Error codes of Node's sockets and of undici that mean the connection was never made. */
const REFUSED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

function causeCode(err: unknown): string | null {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return null;
}

function buildUrl(base: string, path: string, query?: Record<string, QueryValue>): string {
  const u = new URL(base.replace(/\/+$/, '') + path);
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
  return u.toString();
}

interface Envelope {
  success?: unknown;
  data?: unknown;
  error?: unknown;
  code?: unknown;
}

function parseEnvelope(bytes: Uint8Array): Envelope | null {
  try {
    const v: unknown = JSON.parse(new TextDecoder().decode(bytes));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Envelope) : null;
  } catch {
    return null;
  }
}

function asRecord(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The error an answer stands for (not 2xx, or `success:false`). */
function answerError(raw: RawAnswer, attempts: number, key: string | null): GatewayError {
  const env = parseEnvelope(raw.bytes);
  if (!env || env.success !== false) {
    return new GatewayError({
      code: 'INVALID_RESPONSE',
      status: raw.status,
      message: `HTTP ${raw.status}: the answer is not the gateway's JSON envelope`,
      attempts,
      idempotencyKey: key,
    });
  }
  const rawCode = typeof env.code === 'string' ? env.code : null;
  const code: ErrorCode = isGatewayErrorCode(rawCode) ? rawCode : 'UNKNOWN_CODE';
  return new GatewayError({
    code,
    status: raw.status,
    message: typeof env.error === 'string' ? env.error : `HTTP ${raw.status}`,
    data: asRecord(env.data),
    attempts,
    idempotencyKey: key,
    rawCode,
  });
}

function outcomeOf(raw: RawAnswer): AttemptOutcome {
  // not JSON: no code, so nothing is retryable
  const env = parseEnvelope(raw.bytes);
  const after = asRecord(env?.data).retryAfterSeconds;
  return {
    kind: 'answer',
    status: raw.status,
    code: typeof env?.code === 'string' ? env.code : null,
    retryAfterSeconds: typeof after === 'number' && Number.isFinite(after) ? after : null,
  };
}

export class Transport {
  constructor(private readonly cfg: TransportConfig) {}

  /** The answer's `data` (any 2xx with `success: true`), or a GatewayError. */
  async json<T>(spec: RequestSpec): Promise<{ status: number; data: T }> {
    const raw = await this.raw(spec);
    const env = parseEnvelope(raw.bytes);
    if (!env || env.success !== true) {
      throw new GatewayError({ code: 'INVALID_RESPONSE', status: raw.status, message: `HTTP ${raw.status}: the answer is not the gateway's JSON envelope`, idempotencyKey: spec.idempotencyKey ?? null });
    }
    return { status: raw.status, data: env.data as T };
  }

  /** The 2xx answer's bytes (downloads), or a GatewayError. Retries per the policy. */
  async raw(spec: RequestSpec): Promise<RawAnswer> {
    const key = spec.idempotencyKey ?? null;
    const { retry, random, sleep } = this.cfg;
    for (let attempt = 1; ; attempt++) {
      if (spec.signal?.aborted) throw this.aborted(spec, attempt - 1, key);
      let outcome: AttemptOutcome;
      let failure: GatewayError;
      try {
        const raw = await this.once(spec);
        if (raw.status >= 200 && raw.status < 300) return raw;
        outcome = outcomeOf(raw);
        failure = answerError(raw, attempt, key);
      } catch (err) {
        if (spec.signal?.aborted) throw this.aborted(spec, attempt, key);
        const code = causeCode(err);
        outcome = { kind: 'no-response', connectRefused: code !== null && REFUSED.has(code) };
        failure = new GatewayError({
          code: 'NO_RESPONSE',
          status: 0,
          // the cause's code only: a message could echo the URL, and nothing secret belongs in an error text
          message: `no answer from the gateway (${code ?? (err instanceof Error ? err.name : 'error')})`,
          attempts: attempt,
          idempotencyKey: key,
          cause: err,
        });
      }
      const decision = decideRetry(spec.retry, outcome, attempt, retry, random);
      if (!decision.retry) throw failure;
      this.cfg.onRetry?.({ method: spec.method, path: spec.path, attempt, delayMs: decision.delayMs, code: failure.code, status: failure.status, idempotencyKey: key });
      try {
        await sleep(decision.delayMs, spec.signal);
      } catch {
        throw this.aborted(spec, attempt, key);
      }
    }
  }

  private aborted(spec: RequestSpec, attempts: number, key: string | null): GatewayError {
    return new GatewayError({ code: 'ABORTED', status: 0, message: `${spec.method} ${spec.path} aborted by the caller`, attempts, idempotencyKey: key, cause: spec.signal?.reason });
  }

  /** One attempt: an answer with its whole body read, or a throw (no answer, or the body broke off). */
  private async once(spec: RequestSpec): Promise<RawAnswer> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.cfg.apiKey}`, accept: 'application/json' };
    if (spec.idempotencyKey) headers['x-idempotency-key'] = spec.idempotencyKey;
    let body: string | FormData | undefined;
    if (spec.body instanceof FormData) body = spec.body;
    else if (spec.body !== undefined) {
      body = JSON.stringify(spec.body);
      headers['content-type'] = 'application/json';
    }
    const timeout = AbortSignal.timeout(this.cfg.timeoutMs);
    const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
    const res = await this.cfg.fetch(buildUrl(this.cfg.baseUrl, spec.path, spec.query), {
      method: spec.method,
      headers,
      ...(body !== undefined ? { body } : {}),
      signal,
      redirect: 'error',
    });
    const bytes = new Uint8Array(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, bytes };
  }
}
