/**
 * Verify a webhook delivery of the gateway (docs/webhooks.md "The request"):
 * - `X-Webhook-Signature: sha256=<hex>`: HMAC-SHA256 of the exact body bytes with the shared secret;
 * - `X-Webhook-Signature-V2: t=<unix ms>,v1=<hex>`: HMAC-SHA256 of `<t>.<body>`; `t` is when the attempt was
 *   signed, and a `t` outside the freshness window is refused, so a captured delivery cannot be replayed later.
 * Both must be present and valid. Comparisons are constant-time. Always verify the raw bytes as received,
 * never a re-serialized JSON object.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Node's `req.headers` (lower-case keys) or a fetch `Headers`. */
export type WebhookHeaders = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export interface VerifyWebhookInput {
  rawBody: Uint8Array | string;
  headers: WebhookHeaders;
  secret: string;
  /** how far `t` may be from `now`, either way (default 5 minutes) */
  toleranceMs?: number;
  /** unix ms (default Date.now()) */
  now?: number;
}

export type WebhookVerification = { ok: true; signedAt: number } | { ok: false; reason: WebhookRejection };
export type WebhookRejection = 'bad_signature' | 'bad_signature_v2' | 'malformed_signature_v2' | 'stale';

/** The body of every delivery. */
export interface WebhookEvent<D = Record<string, unknown>> {
  v: number;
  eventId: string;
  event: string;
  instanceId: string;
  /** when the event happened, unix ms */
  timestamp: number;
  data: D;
}

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  constructor(readonly reason: WebhookRejection) {
    super(`webhook delivery rejected: ${reason}`);
  }
}

export const WEBHOOK_TOLERANCE_MS = 5 * 60_000;

function readHeader(headers: WebhookHeaders, name: string): string {
  if (typeof headers.get === 'function') return (headers as { get(n: string): string | null }).get(name) ?? '';
  const record = headers as Record<string, string | string[] | undefined>;
  const v = record[name.toLowerCase()] ?? record[name];
  return (Array.isArray(v) ? v[0] : v) ?? '';
}

function hmac(secret: string, ...parts: (Uint8Array | string)[]): Buffer {
  const h = createHmac('sha256', secret);
  for (const p of parts) h.update(p);
  return h.digest();
}

/** Constant-time comparison of a digest with a hex string of the right form. */
function matches(digest: Buffer, hex: string): boolean {
  if (!/^[0-9a-f]{64}$/i.test(hex)) return false;
  return timingSafeEqual(digest, Buffer.from(hex, 'hex'));
}

/** Check both signatures and the freshness of `t`. */
export function verifyWebhook(input: VerifyWebhookInput): WebhookVerification {
  const body = typeof input.rawBody === 'string' ? Buffer.from(input.rawBody, 'utf8') : input.rawBody;
  const now = input.now ?? Date.now();
  const tolerance = input.toleranceMs ?? WEBHOOK_TOLERANCE_MS;

  const v1 = readHeader(input.headers, 'X-Webhook-Signature');
  if (!v1.startsWith('sha256=') || !matches(hmac(input.secret, body), v1.slice(7))) return { ok: false, reason: 'bad_signature' };

  let t: string | null = null;
  const given: string[] = [];
  for (const part of readHeader(input.headers, 'X-Webhook-Signature-V2').split(',')) {
    const eq = part.indexOf('=');
    const [k, v] = [part.slice(0, eq).trim(), part.slice(eq + 1).trim()];
    if (k === 't') t = v;
    else if (k === 'v1') given.push(v);
  }
  if (t === null || !/^\d{1,16}$/.test(t) || given.length === 0) return { ok: false, reason: 'malformed_signature_v2' };
  const signedAt = Number(t);
  if (Math.abs(now - signedAt) > tolerance) return { ok: false, reason: 'stale' };
  const expected = hmac(input.secret, `${t}.`, body);
  // every candidate is compared (no early exit), so the time taken does not tell which one matched
  const ok = given.map((g) => matches(expected, g)).includes(true);
  return ok ? { ok: true, signedAt } : { ok: false, reason: 'bad_signature_v2' };
}

/** Verify, then parse: the event, or a WebhookVerificationError. Deduplicate on `eventId` (at-least-once). */
export function parseWebhook<D = Record<string, unknown>>(input: VerifyWebhookInput): WebhookEvent<D> {
  const check = verifyWebhook(input);
  if (!check.ok) throw new WebhookVerificationError(check.reason);
  const text = typeof input.rawBody === 'string' ? input.rawBody : new TextDecoder().decode(input.rawBody);
  return JSON.parse(text) as WebhookEvent<D>;
}
