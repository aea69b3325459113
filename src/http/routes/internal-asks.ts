/**
 * The shape of every ask another node may forward (src/actors/port.ts `InstanceAsk`), checked before the owner
 * acts on it. Found from the outside: only `ask.type` was checked, so an ask of the wrong shape from a peer (a
 * rolling upgrade meeting a node of another version, or a bug) reached the queue and answered 500
 * INTERNAL_ERROR, or worse acted on half of it: a `settings` ask without its `instance` was a TypeError. Now it
 * is `400 VALIDATION_FAILED` naming the field, and nothing was done.
 *
 * The objects are read loosely (fields this version does not know are ignored, so that a newer peer may add
 * some); what the owner reads must be there with its type. A send's payload is checked against its kind as a
 * stored row's is (src/queue/payload.ts `checkSend`).
 */
import {
  array, boolean, define, enums, literal, nullable, optional, pattern, refine, size, string, type as shape, unknown, type Struct,
} from 'superstruct';
import { NETWORK_OPS, type InstanceAsk } from '../../actors/port.js';
import { checkSend, MEDIA_SEND_KINDS, SEND_KINDS } from '../../queue/payload.js';
import { CHAT_ID } from '../../phone.js';
import { MEDIA_SOURCES } from '../../media/resolve.js';
import { IDEMPOTENCY_KEY } from './send-schemas.js';
import { integerIn, parse } from '../validate.js';
import { validationFailed } from '../../errors.js';

/** An id or a name of this gateway's making: bounded, no control characters. */
const text = (max: number): Struct<string, null> =>
  refine(string(), 'text', (v) => (v.length <= max && !/[\u0000-\u001f]/.test(v)) || `must be a string of at most ${max} characters`);

const instant = nullable(integerIn(0, 253_402_300_799_999));

/** A send: its kind and the payload that kind needs. */
const SendParts = shape({ kind: enums(SEND_KINDS), payload: unknown() });

const AcceptRequest = shape({
  kind: enums(SEND_KINDS),
  payload: unknown(),
  originRoute: pattern(text(200), /^\/./),
  chatId: nullable(pattern(string(), CHAT_ID)),
  phone: nullable(pattern(string(), /^\d{5,24}$/)),
  payloadHash: nullable(pattern(string(), /^[0-9a-f]{64}$/)),
  idempotencyKey: nullable(pattern(string(), IDEMPOTENCY_KEY)),
  priority: integerIn(1, 9),
  notBefore: instant,
  ttlSeconds: nullable(integerIn(0, 10 * 365 * 86_400)),
  previousJobId: optional(nullable(text(100))),
  awaitsCaller: optional(boolean()),
  callerBoot: optional(text(100)),
});

const ReplyError = shape({ code: string(), message: string() });

/** Each ask's fields, by its type. */
const ASKS = {
  // no driver operation takes more than a few arguments (found from the outside: 200,000 of them overflowed the call's stack)
  network: shape({ type: literal('network'), op: enums(NETWORK_OPS), args: size(array(unknown()), 0, 8), label: optional(text(200)), notFound: optional(ReplyError) }),
  'queue.accept': shape({ type: literal('queue.accept'), request: AcceptRequest, gate: optional(shape({ phoneNumber: nullable(text(64)), v1: optional(boolean()) })) }),
  'queue.replay': shape({ type: literal('queue.replay'), request: AcceptRequest }),
  'queue.acceptMany': shape({ type: literal('queue.acceptMany'), requests: array(AcceptRequest) }),
  'queue.cancel': shape({ type: literal('queue.cancel'), jobId: text(100), reason: optional(text(500)) }),
  'queue.replan': shape({ type: literal('queue.replan'), reason: text(500) }),
  'queue.summary': shape({ type: literal('queue.summary') }),
  'queue.awaitOutcome': shape({ type: literal('queue.awaitOutcome'), jobId: text(100), timeoutMs: integerIn(0, 600_000) }),
  'queue.releaseCaller': shape({ type: literal('queue.releaseCaller'), jobId: text(100) }),
  'queue.callerGone': shape({ type: literal('queue.callerGone'), callerBoot: text(100) }),
  'queue.direct': shape({ type: literal('queue.direct'), send: shape({ kind: enums(SEND_KINDS), payload: unknown(), chatId: pattern(string(), CHAT_ID) }) }),
  view: shape({ type: literal('view') }),
  restart: shape({ type: literal('restart'), reason: text(500) }),
  logout: shape({ type: literal('logout') }),
  pairingCode: shape({ type: literal('pairingCode'), phoneNumber: text(64) }),
  qr: shape({ type: literal('qr') }),
  // the record itself is read again from the store by the owner (src/http/routes/internal.ts)
  settings: shape({ type: literal('settings'), replan: boolean() }),
  drain: shape({ type: literal('drain') }),
} satisfies Record<InstanceAsk['type'], unknown>;

const isAskType = (v: unknown): v is keyof typeof ASKS => typeof v === 'string' && Object.hasOwn(ASKS, v);

const AskType = define<keyof typeof ASKS>('askType', (v) => isAskType(v) || `must be one of ${Object.keys(ASKS).join(', ')}`);

const MEDIA_KINDS: ReadonlySet<string> = new Set(MEDIA_SEND_KINDS);

/**
 * A payload checked against its kind, as a route builds it: the chat the send names (that of the request, when it
 * names one), and one media source of a media kind. The failure names the field (never the payload). Found from
 * the outside: a media job without a source, or whose payload named another chat than its request, was accepted
 * and failed only at dispatch (or went to the request's chat).
 */
function checkPayload(send: unknown, field: string, chatId?: string | null): void {
  const parts = SendParts.mask(send);
  let payload: Record<string, unknown>;
  try {
    payload = checkSend(parts.kind, parts.payload).payload as Record<string, unknown>;
  } catch (err) {
    throw validationFailed(`${field}.payload`, err instanceof Error ? err.message : 'is not a payload of its kind');
  }
  if (parts.kind !== 'group_create') {
    if (typeof payload.chatId !== 'string' || !CHAT_ID.test(payload.chatId)) throw validationFailed(`${field}.payload.chatId`, 'must be a chat id');
    if (chatId !== undefined && chatId !== null && payload.chatId !== chatId) throw validationFailed(`${field}.payload.chatId`, 'must be the chat id of the request');
  }
  if (MEDIA_KINDS.has(parts.kind) && MEDIA_SOURCES.filter((k) => typeof payload[k] === 'string').length !== 1) {
    throw validationFailed(`${field}.payload`, 'exactly one of mediaUrl, mediaBase64 or mediaId is required');
  }
}

/** A request as a route builds it: a keyed one carries its fingerprint (idempotency compares it). */
function checkRequest(request: { idempotencyKey: string | null; payloadHash: string | null; chatId: string | null }, field: string): void {
  if (request.idempotencyKey !== null && request.payloadHash === null) throw validationFailed(`${field}.payloadHash`, 'is required with an idempotency key');
  checkPayload(request, field, request.chatId);
}

/**
 * The ask as the owner may act on it, or `400 VALIDATION_FAILED` naming the first field that is not as it must
 * be (`ask.request.priority`, …).
 */
export function parseAsk(value: unknown): InstanceAsk {
  const type = typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
  const struct = isAskType(type) ? ASKS[type] : shape({ type: AskType });
  parse({ ask: value }, shape({ ask: struct }));
  const ask = value as InstanceAsk;
  if (ask.type === 'queue.accept' || ask.type === 'queue.replay') checkRequest(ask.request, 'ask.request');
  else if (ask.type === 'queue.acceptMany') ask.requests.forEach((r, i) => checkRequest(r, `ask.requests.${i}`));
  else if (ask.type === 'queue.direct') checkPayload(ask.send, 'ask.send', ask.send.chatId);
  return ask;
}
