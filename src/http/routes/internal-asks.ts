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
  array, boolean, define, enums, literal, nullable, optional, refine, string, type as shape, unknown, type Struct,
} from 'superstruct';
import { NETWORK_OPS, type InstanceAsk } from '../../actors/port.js';
import { checkSend, SEND_KINDS } from '../../queue/payload.js';
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
  originRoute: text(200),
  chatId: nullable(text(200)),
  phone: nullable(text(64)),
  payloadHash: nullable(text(200)),
  idempotencyKey: nullable(text(200)),
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
  network: shape({ type: literal('network'), op: enums(NETWORK_OPS), args: array(unknown()), label: optional(text(200)), notFound: optional(ReplyError) }),
  'queue.accept': shape({ type: literal('queue.accept'), request: AcceptRequest, gate: optional(shape({ phoneNumber: nullable(text(64)), v1: optional(boolean()) })) }),
  'queue.replay': shape({ type: literal('queue.replay'), request: AcceptRequest }),
  'queue.acceptMany': shape({ type: literal('queue.acceptMany'), requests: array(AcceptRequest) }),
  'queue.cancel': shape({ type: literal('queue.cancel'), jobId: text(100), reason: optional(text(500)) }),
  'queue.replan': shape({ type: literal('queue.replan'), reason: text(500) }),
  'queue.summary': shape({ type: literal('queue.summary') }),
  'queue.awaitOutcome': shape({ type: literal('queue.awaitOutcome'), jobId: text(100), timeoutMs: integerIn(0, 600_000) }),
  'queue.releaseCaller': shape({ type: literal('queue.releaseCaller'), jobId: text(100) }),
  'queue.callerGone': shape({ type: literal('queue.callerGone'), callerBoot: text(100) }),
  'queue.direct': shape({ type: literal('queue.direct'), send: shape({ kind: enums(SEND_KINDS), payload: unknown(), chatId: text(200) }) }),
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

/** A payload checked against its kind; the failure names the field (never the payload). */
function checkPayload(send: unknown, field: string): void {
  const parts = SendParts.mask(send);
  try {
    checkSend(parts.kind, parts.payload);
  } catch (err) {
    throw validationFailed(`${field}.payload`, err instanceof Error ? err.message : 'is not a payload of its kind');
  }
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
  if (ask.type === 'queue.accept' || ask.type === 'queue.replay') checkPayload(ask.request, 'ask.request');
  else if (ask.type === 'queue.acceptMany') ask.requests.forEach((r, i) => checkPayload(r, `ask.requests.${i}`));
  else if (ask.type === 'queue.direct') checkPayload(ask.send, 'ask.send');
  return ask;
}
