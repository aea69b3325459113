/**
 * Validation of the v2 send routes (SPEC.md "Common send request fields" and "v2 send routes"). Each route's
 * body becomes a canonical job payload: only known fields, the options whitelist applied, the route-set
 * options added. The payload (not the raw body) is what idempotency compares.
 */
import {
  array, boolean, integer, nonempty, number, optional, pattern, refine, size, string, type,
  type Infer,
} from 'superstruct';
import { DomainError, validationFailed } from '../../errors.js';
import { chars, integerIn, matching, nonBlank, parse, trimmedMatching } from '../validate.js';
import { CHAT_ID, GROUP_ID, normalizePhone, phoneToChatId, chatIdToPhone } from '../../phone.js';
import { CONTACT_ID_FIELD } from './network-common.js';
import { checkSend, sendOf, type Send, type SendKind } from '../../queue/payload.js';
import { buildPayload, ROUTE_OPTIONS } from './send-payloads.js';

export type { SendKind };

export const IDEMPOTENCY_KEY = /^[A-Za-z0-9_.:-]{8,128}$/;

const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;

/**
 * An ISO 8601 timestamp with a time zone that names a real instant. Date.parse alone takes a day the month
 * does not have and rolls it over (2026-02-30 is March 2nd, 2026-11-31 December 1st): a caller's typo would be
 * scheduled silently at another date, so the day is checked against its month (as written, before the offset).
 */
export function isIsoTimestamp(v: string): boolean {
  const m = ISO_TIMESTAMP.exec(v);
  if (!m || Number.isNaN(Date.parse(v))) return false;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  return month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month);
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const daysIn = (year: number, month: number): number =>
  month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : (DAYS_IN_MONTH[month - 1] as number);

const isoTimestamp = refine(string(), 'iso8601', (v) =>
  isIsoTimestamp(v) || 'must be an ISO 8601 timestamp with a time zone, e.g. 2030-01-31T09:00:00Z');

const Common = {
  phone: optional(string()),
  chatId: optional(string()),
  idempotencyKey: optional(matching(IDEMPOTENCY_KEY, '8 to 128 characters of A-Z a-z 0-9 _ . : -')),
  priority: optional(integerIn(1, 9)),
  notBefore: optional(isoTimestamp),
  ttlSeconds: optional(integerIn(60, 2_592_000)),
  options: optional(type({})),
};

const OptionsSchema = type({
  quotedMessageId: optional(nonempty(string())),
  mentions: optional(array(CONTACT_ID_FIELD)),
  groupMentions: optional(array(type({ subject: string(), id: trimmedMatching(GROUP_ID, 'a group id ending in @g.us (digits, or digits-digits, before it)') }))),
  linkPreview: optional(boolean()),
  isViewOnce: optional(boolean()),
  sendMediaAsHd: optional(boolean()),
  parseVCards: optional(boolean()),
});
type Options = Infer<typeof OptionsSchema>;
const OPTION_KEYS: readonly (keyof Options)[] = ['quotedMessageId', 'mentions', 'groupMentions', 'linkPreview', 'isViewOnce', 'sendMediaAsHd', 'parseVCards'];

const MediaSource = {
  mediaUrl: optional(nonempty(string())),
  mediaBase64: optional(nonempty(string())),
  mediaId: optional(matching(/^md_[A-Za-z0-9]+$/, 'a media id from POST /api/v2/media (md_…)')),
  mimetype: optional(matching(/^[a-z0-9.+-]+\/[a-z0-9.+-]+(\s*;\s*[a-z0-9-]+=[^;\s]+)*$/i, 'a MIME type such as image/png or audio/ogg; codecs=opus')),
  filename: optional(chars(1, 255)),
};

const finite = (lo: number, hi: number) => refine(number(), 'finite', (v) => (Number.isFinite(v) && v >= lo && v <= hi) || `must be a number from ${lo} to ${hi}`);

export const SCHEMAS = {
  text: type({ ...Common, message: nonempty(string()) }),
  media: type({ ...Common, ...MediaSource, caption: optional(string()), message: optional(string()) }),
  voice: type({ ...Common, ...MediaSource }),
  document: type({ ...Common, ...MediaSource, caption: optional(string()), message: optional(string()) }),
  sticker: type({ ...Common, ...MediaSource, stickerName: optional(chars(0, 128)), stickerAuthor: optional(chars(0, 128)) }),
  video: type({ ...Common, ...MediaSource, asGif: optional(boolean()), caption: optional(string()), message: optional(string()) }),
  location: type({
    ...Common,
    latitude: finite(-90, 90),
    longitude: finite(-180, 180),
    name: optional(string()),
    address: optional(string()),
    url: optional(string()),
    description: optional(string()),
  }),
  contact: type({ ...Common, contactIds: size(array(CONTACT_ID_FIELD), 1, 256) }),
  poll: type({
    ...Common,
    name: chars(1, 255),
    options: size(array(chars(1, 100)), 2, 12),
    allowMultipleAnswers: optional(boolean()),
  }),
  forward: type({ ...Common, toChatId: trimmedMatching(CHAT_ID, 'a chat id: digits@c.us, digits@lid or a group id ending in @g.us') }),
};

/** A validated send: the canonical job payload (src/queue/payload.ts) stored with the job and sent at dispatch. */
export type ParsedSend = Send & {
  chatId: string;
  phone: string | null;
  priority: number;
  notBefore: number | null;
  ttlSeconds: number | null;
  idempotencyKey: string | null;
  warnings: string[];
};

/** The idempotency key from header and/or body (SPEC.md rule 3: both present must be identical). */
export function idempotencyKeyOf(body: unknown, header: string | undefined): string | null {
  const fromBody = body && typeof body === 'object' && 'idempotencyKey' in body ? (body as { idempotencyKey: unknown }).idempotencyKey : undefined;
  if (header !== undefined && !IDEMPOTENCY_KEY.test(header)) throw validationFailed('idempotencyKey', 'X-Idempotency-Key must be 8 to 128 characters of [A-Za-z0-9_.:-]');
  if (fromBody !== undefined && fromBody !== null && (typeof fromBody !== 'string' || !IDEMPOTENCY_KEY.test(fromBody))) {
    throw validationFailed('idempotencyKey', 'idempotencyKey must be 8 to 128 characters of [A-Za-z0-9_.:-]');
  }
  const b = typeof fromBody === 'string' ? fromBody : undefined;
  if (header !== undefined && b !== undefined && header !== b) {
    throw new DomainError('IDEMPOTENCY_KEY_CONFLICT', 'X-Idempotency-Key header and body idempotencyKey differ');
  }
  const key = header ?? b ?? null;
  if (key?.startsWith(REQUEUE_KEY_PREFIX)) {
    throw validationFailed('idempotencyKey', `keys starting with ${REQUEUE_KEY_PREFIX} are the gateway's own (a requeued job's key); choose another`);
  }
  return key;
}

/**
 * The prefix of the key a requeue derives from the job it requeues (`requeue:<jobId>`, src/http/routes/queue.ts).
 * Refused in a client's key: found from the outside, a send keyed `requeue:<id of a cancelled job>` made that
 * job impossible to requeue ever (409 IDEMPOTENCY_PAYLOAD_MISMATCH against the send).
 */
export const REQUEUE_KEY_PREFIX = 'requeue:';
export const requeueKey = (jobId: string): string => `${REQUEUE_KEY_PREFIX}${jobId}`;

/**
 * A recipient refused for being the number the instance is linked to now (400 VALIDATION_FAILED): a refusal of the
 * moment, not of the request, since the instance may have been linked to that number after a send was accepted
 * with the same key; the routes look the key up before answering it (src/http/routes/send.ts `parsedOrReplay`).
 */
export class OwnNumberRefused extends DomainError {
  constructor(field: string, message: string) {
    super('VALIDATION_FAILED', message, { field });
  }
}

/** Exactly one of phone/chatId; German national numbers corrected. `chatField` names the chat id in the body. */
export function resolveTarget(body: { phone?: string | undefined; chatId?: string | undefined }, ownNumber: string | null, chatField = 'chatId'): { chatId: string; phone: string | null } {
  const hasPhone = body.phone !== undefined && body.phone !== '';
  const hasChat = body.chatId !== undefined && body.chatId !== '';
  if (hasPhone === hasChat) throw validationFailed(hasPhone ? 'chatId' : 'phone', 'exactly one of phone or chatId is required');
  let chatId: string;
  let phone: string | null;
  if (hasPhone) {
    const p = normalizePhone(body.phone as string);
    if (!p) throw validationFailed('phone', 'phone must be an international number, with or without + (German numbers may start with 0)');
    phone = p;
    chatId = phoneToChatId(p);
  } else {
    chatId = (body.chatId as string).trim();
    if (!CHAT_ID.test(chatId)) throw validationFailed(chatField, `${chatField} must be digits@c.us (an international number: no leading 0), digits@lid or a group id digits@g.us or digits-digits@g.us (5 to 20 digits each)`);
    phone = chatIdToPhone(chatId);
  }
  if (ownNumber && phone === ownNumber) {
    // Sending to the linked number itself crashes the session on the real network.
    throw new OwnNumberRefused(hasPhone ? 'phone' : chatField, 'cannot send to the instance\'s own number');
  }
  return { chatId, phone };
}

/**
 * The options parsed where they are in the body, so that a failure's `data.field` is its path from the body
 * (`options.mentions.0`, as every other field's is). Found from the outside: parsed alone, it was `mentions.0`.
 */
const OptionsInBody = type({ options: OptionsSchema });

function whitelistOptions(raw: unknown): Options {
  if (raw === undefined || raw === null) return {}; // what the schema makes of {}
  const opts = parse({ options: raw }, OptionsInBody).options;
  const out: Record<string, unknown> = {};
  for (const k of OPTION_KEYS) if (opts[k] !== undefined) out[k] = opts[k];
  return out as Options;
}

export const GroupCreateBody = type({
  idempotencyKey: Common.idempotencyKey,
  priority: Common.priority,
  notBefore: Common.notBefore,
  ttlSeconds: Common.ttlSeconds,
  title: nonBlank(100),
  participants: size(array(CONTACT_ID_FIELD), 1, 1024),
  options: optional(type({})),
});

/**
 * POST /api/v2/groups: group creation goes through the queue like a send (limits, pauses, quiet hours) and
 * is counted against the windows. The job's chatId is null until the network gives the group id.
 */
export function parseGroupCreate(sent: unknown, header: string | undefined, ownNumber: string | null): ParsedSend {
  const body = withoutNulls(sent, false);
  const idempotencyKey = idempotencyKeyOf(body, header);
  const b = parse(body, GroupCreateBody);
  const own = ownNumber ? `${ownNumber}@c.us` : null;
  if (own && b.participants.includes(own)) throw new OwnNumberRefused('participants', 'the instance itself is the group creator; do not list it');
  return {
    ...sendOf('group_create', { title: b.title.trim(), participants: [...new Set(b.participants)], ...(b.options ? { options: b.options } : {}) }),
    chatId: '',
    phone: null,
    priority: b.priority ?? 5,
    notBefore: b.notBefore ? Date.parse(b.notBefore) : null,
    ttlSeconds: b.ttlSeconds ?? null,
    idempotencyKey,
    warnings: [],
  };
}

/**
 * The common fields (SPEC.md "Common send request fields") a client may send as null to mean "not given":
 * their default is null or the instance's, and typed clients write null for a field they leave unset. Found
 * from the outside: `"notBefore": null` was 400 "must be a string". In send-poll, `options` is the required
 * list of answers, so a null there is checked as sent.
 */
const NULL_MEANS_UNSET = ['phone', 'chatId', 'idempotencyKey', 'priority', 'notBefore', 'ttlSeconds', 'options'] as const;

/** `body` without the common fields it sets to null (the same object when there is none). */
export function withoutNulls(body: unknown, pollAnswers: boolean): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const b = body as Record<string, unknown>;
  let copy: Record<string, unknown> | null = null;
  for (const k of NULL_MEANS_UNSET) {
    if (b[k] !== null || (pollAnswers && k === 'options')) continue;
    copy ??= { ...b };
    delete copy[k];
  }
  return copy ?? body;
}

/** Parse one v2 send route's body. `ownNumber` is the linked number (refused as recipient). */
export function parseSend(kind: Exclude<SendKind, 'group_create'>, sent: unknown, header: string | undefined, ownNumber: string | null, extra: { msgId?: string } = {}): ParsedSend {
  const body = withoutNulls(sent, kind === 'poll');
  const idempotencyKey = idempotencyKeyOf(body, header);
  const warnings: string[] = [];
  let payload: Record<string, unknown>;
  let target: { chatId: string; phone: string | null };
  let common: { priority?: number | undefined; notBefore?: string | undefined; ttlSeconds?: number | undefined; options?: unknown };
  switch (kind) {
    case 'forward': {
      const b = parse(body, SCHEMAS.forward);
      common = b;
      target = resolveTarget({ chatId: b.toChatId }, ownNumber, 'toChatId');
      payload = { msgId: extra.msgId, toChatId: target.chatId };
      break;
    }
    default: {
      const b = parseBody(kind, body);
      common = b;
      target = resolveTarget(b, ownNumber);
      payload = buildPayload(kind, b, warnings);
    }
  }
  payload.chatId = target.chatId;
  // In send-poll, `options` is the list of poll answers (SPEC.md), so that route has no per-message options.
  const options = kind === 'poll' ? {} : whitelistOptions(common.options);
  const routeOptions = ROUTE_OPTIONS[kind](payload);
  if (Object.keys(options).length + Object.keys(routeOptions).length > 0) payload.options = { ...options, ...routeOptions };
  // a text without options is built typed as it is (the same fields in the same order); the rest is checked
  const send = kind === 'text' && payload.options === undefined && typeof payload.body === 'string'
    ? sendOf('text', { body: payload.body, chatId: target.chatId })
    : checkSend(kind, payload);
  return {
    chatId: target.chatId,
    phone: target.phone,
    priority: common.priority ?? 5,
    notBefore: common.notBefore ? Date.parse(common.notBefore) : null,
    ttlSeconds: common.ttlSeconds ?? null,
    idempotencyKey,
    warnings,
    // the payload built above, checked against its kind's shape (a mismatch is a bug here, not bad input);
    // last: a literal that starts with a spread is slow to build (src/queue/sql/row.ts)
    ...send,
  };
}

type BodyOf = Record<string, unknown> & {
  phone?: string | undefined;
  chatId?: string | undefined;
  priority?: number | undefined;
  notBefore?: string | undefined;
  ttlSeconds?: number | undefined;
  options?: unknown;
};

const optionalString = (v: unknown) => v === undefined || typeof v === 'string';
const optionalIntegerIn = (v: unknown, lo: number, hi: number) => v === undefined || (typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi);

/**
 * The common fields as `Common` accepts them, checked without superstruct (a send-bulk checks thousands of
 * entries, and superstruct's walk of every schema key costs several microseconds each). Only a yes: anything
 * else is left to the schema, which names the field and the rule.
 */
function commonValid(b: Record<string, unknown>): boolean {
  const { options, notBefore, idempotencyKey } = b;
  return optionalString(b.phone) && optionalString(b.chatId) &&
    (idempotencyKey === undefined || (typeof idempotencyKey === 'string' && IDEMPOTENCY_KEY.test(idempotencyKey))) &&
    optionalIntegerIn(b.priority, 1, 9) && optionalIntegerIn(b.ttlSeconds, 60, 2_592_000) &&
    (notBefore === undefined || isoTimestamp.is(notBefore)) &&
    (options === undefined || (options !== null && typeof options === 'object' && !Array.isArray(options)));
}

/**
 * A text body the schema would accept as it is (what `parse` would answer: the same fields; its copy is not
 * needed, nothing changes the body), or null to let the schema decide.
 */
function plainText(body: unknown): BodyOf | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  const b = body as Record<string, unknown>;
  return typeof b.message === 'string' && b.message.length > 0 && commonValid(b) ? (b as BodyOf) : null;
}

/** Validate a body against its route's schema (one call per kind keeps the struct types precise). */
function parseBody(kind: Exclude<SendKind, 'group_create' | 'forward'>, body: unknown): BodyOf {
  switch (kind) {
    case 'text': return plainText(body) ?? parse(body, SCHEMAS.text);
    case 'media': return parse(body, SCHEMAS.media);
    case 'voice': return parse(body, SCHEMAS.voice);
    case 'document': return parse(body, SCHEMAS.document);
    case 'sticker': return parse(body, SCHEMAS.sticker);
    case 'video': return parse(body, SCHEMAS.video);
    case 'location': return parse(body, SCHEMAS.location);
    case 'contact': return parse(body, SCHEMAS.contact);
    case 'poll': return parse(body, SCHEMAS.poll);
  }
}
