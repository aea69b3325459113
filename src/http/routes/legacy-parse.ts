/**
 * v1 request bodies (SPEC.md "v1 routes (synchronous, frozen)") turned into the same canonical job payload the
 * v2 routes build: the v1 fields are picked out, checked for presence here, and then handed to the v2 parser
 * (send-schemas.ts), so the two generations cannot drift apart in what they accept and send.
 *
 * v1 status rules: a missing required field is 400 (no code); any other invalid value is a "validation
 * failure", which v1 collapses into 500 (SPEC.md "Errors"). Both bodies are `{success:false, error}`.
 */
import { StructError } from 'superstruct';
import { DomainError } from '../../errors.js';
import { V1Error } from '../errors.js';
import { structMessage } from '../validate.js';
import { refusedEntry } from '../json-text.js';
import { parseSend, type ParsedSend } from './send-schemas.js';
import { normalizePhone } from '../../phone.js';

export type V1Kind = 'text' | 'media';

export interface V1Send {
  kind: V1Kind;
  parsed: ParsedSend;
  /** what v1 answers as `phone`: the normalized digits, the number of a `@c.us` id, or a `@lid` id itself */
  phone: string;
}

const V1_CHAT_ID = /@(c\.us|lid)$/;
const INVALID_PHONE = 'invalid phone number: use the international format with or without +, or a German national number starting with 0';

/** A present value: not absent, not null, not an empty string. */
const present = (v: unknown): boolean => v !== undefined && v !== null && v !== '';

const missing = (error: string) => new V1Error(400, error);
const invalid = (error: string) => new V1Error(500, error);

/**
 * A v1 phone may arrive as a JSON number (older integrations); a safe integer is read as its digits.
 * Returns undefined when absent.
 */
function phoneInput(v: unknown): unknown {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return String(v);
  return v;
}

/** The recipient fields of a v1 body: a `chatId` wins over `phone` when both are given (it is exact). */
function target(b: Record<string, unknown>): { chatId: unknown } | { phone: unknown } {
  if (present(b.chatId)) {
    if (typeof b.chatId === 'string' && !V1_CHAT_ID.test(b.chatId.trim())) throw invalid('chatId must end in @c.us or @lid');
    return { chatId: b.chatId };
  }
  if (present(b.phone)) {
    const phone = phoneInput(b.phone);
    if (typeof phone === 'string' && normalizePhone(phone) === null) throw invalid(INVALID_PHONE);
    return { phone };
  }
  throw missing('phone or chatId is required');
}

/** The fields of `b` named in `keys` that are present (null and '' count as absent, as older clients send them). */
function pick(b: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (present(b[k])) out[k] = b[k];
  return out;
}

const asRecord = (body: unknown): Record<string, unknown> =>
  body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};

/** Parse the body of POST /api/send-message (`text`) or /api/send-media (`media`). Throws V1Error. */
export function parseV1Send(kind: V1Kind, body: unknown, ownNumber: string | null): V1Send {
  const b = asRecord(body);
  const to = target(b);
  let v2Body: Record<string, unknown>;
  if (kind === 'text') {
    if (!present(b.message)) throw missing('message is required');
    // the recipient and `message` written out, not `{ ...to, ...pick(b, ['message']) }`: a send-bulk parses
    // thousands, and the spread of a spread builds an object that V8 also reads slowly (the v2 parser reads it)
    v2Body = 'chatId' in to ? { chatId: to.chatId, message: b.message } : { phone: to.phone, message: b.message };
  } else {
    if (!present(b.mediaUrl) && !present(b.mediaBase64)) throw missing('mediaUrl or mediaBase64 is required');
    if (present(b.mediaUrl) && present(b.mediaBase64)) throw invalid('give either mediaUrl or mediaBase64, not both');
    if (present(b.mediaBase64) && !present(b.mimetype)) throw missing('mimetype is required with mediaBase64');
    // `message` is the v1 alias of `caption` (the v2 parser applies it: caption wins when both are given)
    v2Body = { ...to, ...pick(b, ['mediaUrl', 'mediaBase64', 'mimetype', 'filename', 'caption', 'message']) };
  }
  const parsed = asV1Failure(() => parseSend(kind, v2Body, undefined, ownNumber));
  return { kind, parsed, phone: v1Phone(parsed) };
}

/** `phone` as v1 answers it. */
export function v1Phone(p: Pick<ParsedSend, 'phone' | 'chatId'>): string {
  return p.phone ?? p.chatId;
}

/** Run a v2 validation and turn its failure into the v1 validation failure (500, free text). */
export function asV1Failure<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof DomainError) throw invalid(err.message);
    if (err instanceof StructError) throw invalid(structMessage(err));
    throw err;
  }
}

export type BulkEntry =
  | { ok: true; send: V1Send }
  | { ok: false; phone: string | null; error: string };

/** Parse one entry of POST /api/send-bulk (`{phone or chatId, message}`); a bad entry is rejected, not thrown. */
export function parseBulkEntry(entry: unknown, ownNumber: string | null): BulkEntry {
  const b = asRecord(entry);
  try {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) throw new V1Error(400, 'entry must be an object {phone or chatId, message}');
    // a NUL or a lone surrogate the body reader found in this entry (src/http/json-text.ts): no store takes it
    const refused = refusedEntry(entry);
    if (refused !== undefined) throw invalid(refused);
    return { ok: true, send: parseV1Send('text', b, ownNumber) };
  } catch (err) {
    if (err instanceof V1Error) return { ok: false, phone: echoedPhone(b), error: err.message };
    throw err;
  }
}

/** The recipient of a rejected entry as the caller wrote it (there may be no valid normalized form). */
function echoedPhone(b: Record<string, unknown>): string | null {
  if (typeof b.chatId === 'string' && b.chatId !== '') return b.chatId;
  const p = phoneInput(b.phone);
  return typeof p === 'string' && p !== '' ? p : null;
}
