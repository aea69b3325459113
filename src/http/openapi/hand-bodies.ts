/**
 * Request bodies and queries whose superstruct structs are module-private in their route files (send-schemas.ts
 * SCHEMAS, admin-instances.ts CreateSchema/PatchSchema, interactions.ts, queue.ts ItemsQuery/KeyQuery,
 * webhooks.ts, groups.ts AddSchema/ParticipantsBody/PatchSchema, reads.ts). Described here by hand from those
 * structs until they are exported; then the registry takes the structs and this file goes. The shared pieces
 * that ARE exported (patterns of ids and keys, job states, settings) are used as they are.
 */
import { IDEMPOTENCY_KEY } from '../routes/send-schemas.js';
import { CHAT_ID, CONTACT_ID } from '../../phone.js';
import { JOB_STATES } from '../../../machines/job.machine.js';
import type { JsonSchema } from './struct-schema.js';

const s = (extra: JsonSchema = {}): JsonSchema => ({ type: 'string', ...extra });
const contactId = s({ pattern: CONTACT_ID.source, description: 'a contact id: digits@c.us or digits@lid' });
const chatId = s({ pattern: CHAT_ID.source });
const intIn = (minimum: number, maximum: number): JsonSchema => ({ type: 'integer', minimum, maximum });
const bool: JsonSchema = { type: 'boolean' };

function body(properties: Record<string, JsonSchema>, required: string[] = [], exact = false): JsonSchema {
  return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: !exact };
}

const COMMON: Record<string, JsonSchema> = {
  phone: s({ description: 'recipient as an international number; give exactly one of phone and chatId' }),
  chatId: s({ description: 'recipient as a chat id ending in @c.us, @lid or @g.us' }),
  idempotencyKey: s({ pattern: IDEMPOTENCY_KEY.source, description: 'or the X-Idempotency-Key header (identical when both are given)' }),
  priority: { ...intIn(1, 9), default: 5 },
  notBefore: s({ format: 'date-time', description: 'ISO 8601 with a time zone' }),
  ttlSeconds: intIn(60, 2_592_000),
  options: {
    type: 'object',
    description: 'per-message options; unknown keys are dropped',
    properties: {
      quotedMessageId: s({ minLength: 1 }),
      mentions: { type: 'array', items: contactId },
      groupMentions: { type: 'array', items: { type: 'object', properties: { subject: s(), id: s({ pattern: '@g\\.us$' }) }, required: ['subject', 'id'] } },
      linkPreview: bool,
      isViewOnce: bool,
      sendMediaAsHd: bool,
      parseVCards: bool,
    },
  },
};
const MEDIA: Record<string, JsonSchema> = {
  mediaUrl: s({ minLength: 1, description: 'public http(s) URL; give exactly one of mediaUrl, mediaBase64 and mediaId' }),
  mediaBase64: s({ minLength: 1, description: 'plain base64 without data: prefix; needs mimetype' }),
  mediaId: s({ pattern: '^md_[A-Za-z0-9]+$', description: 'from POST /api/v2/media' }),
  mimetype: s({ description: 'a MIME type such as image/png or audio/ogg; codecs=opus' }),
  filename: s({ minLength: 1, maxLength: 255 }),
};
const caption = { caption: s(), message: s({ description: 'alias of caption' }) };

/** v2 send bodies by route name (send-schemas.ts SCHEMAS). */
export const SEND_BODIES: Record<string, JsonSchema> = {
  'send-message': body({ ...COMMON, message: s({ minLength: 1 }) }, ['message']),
  'send-media': body({ ...COMMON, ...MEDIA, ...caption }),
  'send-voice': body({ ...COMMON, ...MEDIA }),
  'send-document': body({ ...COMMON, ...MEDIA, ...caption }),
  'send-sticker': body({ ...COMMON, ...MEDIA, stickerName: s({ maxLength: 128 }), stickerAuthor: s({ maxLength: 128 }) }),
  'send-video': body({ ...COMMON, ...MEDIA, ...caption, asGif: bool }),
  'send-location': body(
    { ...COMMON, latitude: { type: 'number', minimum: -90, maximum: 90 }, longitude: { type: 'number', minimum: -180, maximum: 180 }, name: s(), address: s(), url: s(), description: s() },
    ['latitude', 'longitude'],
  ),
  'send-contact': body({ ...COMMON, contactIds: { type: 'array', items: contactId, minItems: 1, maxItems: 256 } }, ['contactIds']),
  'send-poll': body(
    { ...COMMON, name: s({ minLength: 1, maxLength: 255 }), options: { type: 'array', items: s({ minLength: 1, maxLength: 100 }), minItems: 2, maxItems: 12, description: 'the poll answers' }, allowMultipleAnswers: bool },
    ['name', 'options'],
  ),
  forward: body({ ...COMMON, toChatId: chatId }, ['toChatId']),
};

export const ADMIN_CREATE = body(
  { name: s({ pattern: '^[A-Za-z0-9-]{1,40}$' }), driver: { enum: ['sandbox', 'webjs'], default: 'sandbox' }, settings: { type: 'object', description: 'instance settings (see PATCH)' } },
  ['name'],
  true,
);
export const PAIRING = body({ phoneNumber: s({ pattern: '^\\d{7,15}$' }) }, ['phoneNumber'], true);
export const MOVE = body({ node: s({ pattern: '^[A-Za-z0-9._:-]{1,64}$' }) }, ['node'], true);
export const WEBHOOK_PUT = body(
  {
    url: s({ format: 'uri' }),
    secret: s({ minLength: 16, maxLength: 512 }),
    events: { type: 'array', items: s(), description: 'default: message, ready, disconnected, instance_restarting, test; * for all' },
    allowPrivate: bool,
    enabled: bool,
  },
  ['url', 'secret'],
);
export const WEBHOOK_TEST = body({ message: s({ minLength: 1, maxLength: 1000 }) }, [], true);
export const DELIVERIES_QUERY = body({ limit: { ...intIn(1, 200), default: 50 }, cursor: s({ minLength: 1, maxLength: 100 }), state: s() }, [], true);
export const ITEMS_QUERY = body({ state: { enum: [...JOB_STATES] }, limit: intIn(1, 1_000_000), cursor: s({ pattern: '^\\d{1,15}$' }) }, [], true);
export const KEY_QUERY = body({ idempotencyKey: s({ pattern: IDEMPOTENCY_KEY.source }) }, [], true);
export const REACTION = body({ emoji: s({ minLength: 1, maxLength: 32 }) }, ['emoji'], true);
export const PRESENCE = body({ durationMs: { type: 'integer', minimum: 1, default: 25_000, description: 'capped at 300000' } }, [], true);
export const EDIT = body(
  { message: s({ minLength: 1, maxLength: 65_536 }), options: { type: 'object', properties: { linkPreview: bool, mentions: { type: 'array', items: contactId } } } },
  ['message'],
  true,
);
export const DELETE_MESSAGE = body({ everyone: { type: 'boolean', default: false } }, [], true);
export const GROUP_PATCH = body({ subject: s({ minLength: 1, maxLength: 100 }), description: s({ maxLength: 2048 }) }, [], true);
export const CHATS_QUERY = body({ limit: { type: 'integer', minimum: 1, default: 50 }, cursor: s(), archived: { enum: ['1', 'true', '0', 'false'] } }, [], true);
export const MESSAGES_QUERY = body({ limit: { type: 'integer', minimum: 1, default: 50 }, fromMe: { enum: ['1', 'true', '0', 'false'] } }, [], true);
export const DOWNLOAD_QUERY = body({ download: { enum: ['1'] } });
export const V1_SEND = body({ phone: s(), message: s(), mediaUrl: s(), mediaBase64: s(), mimetype: s(), filename: s(), caption: s() });
export const V1_BULK = body({ messages: { type: 'array', items: { type: 'object' } } });
export const UPLOAD = body({ file: s({ format: 'binary' }), filename: s(), mimetype: s() }, ['file']);
export const INTERNAL_ASK = body({ ask: { type: 'object', properties: { type: s() }, required: ['type'] }, deadlineMs: intIn(1, 600_000) }, ['ask', 'deadlineMs'], true);
