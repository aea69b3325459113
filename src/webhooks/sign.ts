/**
 * Webhook signatures (SPEC.md "Request headers").
 *
 * - `X-Webhook-Signature: sha256=<hex>`: HMAC-SHA256 of the exact body bytes with the shared secret.
 * - `X-Webhook-Signature-V2: t=<ts>,v1=<hex>`: HMAC-SHA256 of `<ts>.<body>`. `t` is the time this attempt
 *   was signed (unix ms). Why the signing time and not the event time: a delivery resumed after a long
 *   outage or a retry must still pass a receiver's freshness window, and a captured request replayed later
 *   must not. `X-Webhook-Timestamp` stays the event time (the envelope `timestamp`).
 *
 * `verifyWebhook` is the receiver side. docs/webhooks.md carries the same logic as a standalone Node
 * snippet; test/integration/webhook-delivery.test.ts runs that snippet against real deliveries, so the two
 * cannot drift apart silently.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-Webhook-Signature';
export const SIGNATURE_V2_HEADER = 'X-Webhook-Signature-V2';
export const DEFAULT_TOLERANCE_MS = 5 * 60_000;

export interface SignatureHeaders {
  'X-Webhook-Signature': string;
  'X-Webhook-Signature-V2': string;
}

const hmacHex = (secret: string, data: Buffer | string): string =>
  createHmac('sha256', secret).update(data).digest('hex');

/** The two signature headers for `body` (the exact bytes sent) signed at `ts` (unix ms). */
export function signBody(secret: string, body: Buffer | string, ts: number): SignatureHeaders {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return {
    'X-Webhook-Signature': `sha256=${hmacHex(secret, bytes)}`,
    'X-Webhook-Signature-V2': `t=${ts},v1=${hmacHex(secret, Buffer.concat([Buffer.from(`${ts}.`), bytes]))}`,
  };
}

/** Headers as Node's IncomingMessage has them (lower-case keys) or anything with `get(name)` (fetch Headers). */
export type HeaderSource =
  | Record<string, string | string[] | undefined>
  | { get(name: string): string | null };

export interface VerifyInput {
  /** the request body exactly as received (never a re-serialized JSON.parse result) */
  rawBody: Buffer | string;
  headers: HeaderSource;
  secret: string;
  /** how old (or how far in the future) the V2 timestamp may be; default 5 minutes */
  toleranceMs?: number;
  /** current time in unix ms; default Date.now() */
  now?: number;
}

export type VerifyResult = { ok: true; timestamp: number } | { ok: false; reason: string };

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof headers.get === 'function') return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const v = record[name.toLowerCase()] ?? record[name];
  return Array.isArray(v) ? v[0] : v;
}

function sameHex(expectedHex: string, givenHex: string): boolean {
  // The length check leaks only the (public) digest length; the comparison itself is constant-time.
  if (givenHex.length !== expectedHex.length || !/^[0-9a-f]+$/i.test(givenHex)) return false;
  return timingSafeEqual(Buffer.from(expectedHex, 'hex'), Buffer.from(givenHex, 'hex'));
}

/**
 * Check both signatures of a delivery. Both headers must be present and valid, and the V2 timestamp must
 * lie within `toleranceMs` of `now`. Several `v1=` entries in V2 are accepted (any one may match).
 */
export function verifyWebhook(input: VerifyInput): VerifyResult {
  const { secret, toleranceMs = DEFAULT_TOLERANCE_MS, now = Date.now() } = input;
  const body = typeof input.rawBody === 'string' ? Buffer.from(input.rawBody, 'utf8') : input.rawBody;

  const v1 = header(input.headers, SIGNATURE_HEADER) ?? '';
  if (!v1.startsWith('sha256=') || !sameHex(hmacHex(secret, body), v1.slice('sha256='.length))) {
    return { ok: false, reason: 'bad X-Webhook-Signature' };
  }

  let t: string | undefined;
  const candidates: string[] = [];
  for (const part of (header(input.headers, SIGNATURE_V2_HEADER) ?? '').split(',')) {
    const [key, value = ''] = part.trim().split('=');
    if (key === 't') t = value;
    else if (key === 'v1') candidates.push(value);
  }
  if (!t || !/^\d+$/.test(t) || candidates.length === 0) {
    return { ok: false, reason: 'missing or malformed X-Webhook-Signature-V2' };
  }
  if (Math.abs(now - Number(t)) > toleranceMs) return { ok: false, reason: 'stale X-Webhook-Signature-V2 timestamp' };
  const expected = hmacHex(secret, Buffer.concat([Buffer.from(`${t}.`), body]));
  if (!candidates.some((c) => sameHex(expected, c))) return { ok: false, reason: 'bad X-Webhook-Signature-V2' };
  return { ok: true, timestamp: Number(t) };
}
