/**
 * What a send is, by kind: defined once here and used by the route schemas' output (src/http/routes/
 * send-schemas.ts), the stored job (`jobs.kind` + `jobs.payload`, parsed back from jsonb with these checks,
 * never cast) and dispatch (src/queue/dispatch.ts switches over `kind`, checked to be exhaustive).
 *
 * A `Send` is the pair `{ kind, payload }`; `kind` narrows `payload`. The structs are loose (`type`): a stored
 * payload may carry fields an older gateway wrote; only what dispatch reads is checked and typed.
 */
import { LOCATION_FIELDS } from '../wire/location.js';
import { array, boolean, literal, number, optional, string, type as looseObject, type Infer } from 'superstruct';

export const SEND_KINDS = [
  'text', 'media', 'voice', 'document', 'sticker', 'video', 'location', 'contact', 'poll', 'forward', 'group_create',
] as const;
export type SendKind = (typeof SEND_KINDS)[number];

/** Kinds whose payload names a media source (mediaUrl, mediaBase64 or mediaId). */
export const MEDIA_SEND_KINDS = ['media', 'voice', 'document', 'sticker', 'video'] as const satisfies readonly SendKind[];
export type MediaSendKind = (typeof MEDIA_SEND_KINDS)[number];

export function isMediaKind(kind: SendKind): kind is MediaSendKind {
  return (MEDIA_SEND_KINDS as readonly SendKind[]).includes(kind);
}

/** Per-message options as stored: the route's whitelist plus what the route sets itself (SPEC.md). */
const MessageOptions = looseObject({
  quotedMessageId: optional(string()),
  mentions: optional(array(string())),
  groupMentions: optional(array(looseObject({ subject: string(), id: string() }))),
  linkPreview: optional(boolean()),
  isViewOnce: optional(boolean()),
  sendMediaAsHd: optional(boolean()),
  parseVCards: optional(boolean()),
  sendAudioAsVoice: optional(boolean()),
  sendMediaAsDocument: optional(boolean()),
  sendMediaAsSticker: optional(boolean()),
  stickerName: optional(string()),
  stickerAuthor: optional(string()),
  sendVideoAsGif: optional(boolean()),
});
export type MessageOptions = Infer<typeof MessageOptions>;

/** Every payload but group creation names its chat and may carry options. */
const Addressed = { chatId: string(), options: optional(MessageOptions) };

const MediaSource = {
  ...Addressed,
  mediaUrl: optional(string()),
  mediaBase64: optional(string()),
  mediaId: optional(string()),
  mimetype: optional(string()),
  filename: optional(string()),
};

const STRUCTS = {
  text: looseObject({ ...Addressed, body: string() }),
  media: looseObject({ ...MediaSource, caption: optional(string()) }),
  voice: looseObject(MediaSource),
  document: looseObject({ ...MediaSource, caption: optional(string()) }),
  sticker: looseObject({ ...MediaSource, stickerName: optional(string()), stickerAuthor: optional(string()) }),
  video: looseObject({ ...MediaSource, caption: optional(string()), asGif: optional(literal(true)) }),
  location: looseObject({
    ...Addressed,
    location: looseObject(LOCATION_FIELDS),
  }),
  contact: looseObject({ ...Addressed, contactIds: array(string()) }),
  poll: looseObject({ ...Addressed, name: string(), pollOptions: array(string()), allowMultipleAnswers: boolean() }),
  forward: looseObject({ ...Addressed, msgId: string(), toChatId: string() }),
  group_create: looseObject({ title: string(), participants: array(string()), options: optional(looseObject({})) }),
};

export type PayloadOf = { [K in SendKind]: Infer<(typeof STRUCTS)[K]> };
/** One send of kind `K` (of any kind: a union in which `kind` narrows `payload`). */
export type SendOf<K extends SendKind> = { [P in K]: { kind: P; payload: PayloadOf[P] } }[K];
/** Any send: `kind` narrows `payload`. */
export type Send = SendOf<SendKind>;
export type SendPayload = Send['payload'];

export function isSendKind(value: unknown): value is SendKind {
  return typeof value === 'string' && (SEND_KINDS as readonly string[]).includes(value);
}

/** Pair a kind with its payload (typed: the payload must be that kind's). */
export function sendOf<K extends SendKind>(kind: K, payload: PayloadOf[K]): SendOf<K> {
  return { kind, payload };
}

/** Just the send of something that carries one (a parsed request, a job), without its other fields. */
export function sendPart<K extends SendKind>(x: SendOf<K>): SendOf<K> {
  return sendOf(x.kind, x.payload);
}

export class StoredPayloadInvalid extends Error {}

/**
 * Check a payload against its kind: a stored row (kind column, payload jsonb) or a route's canonical payload.
 * Throws StoredPayloadInvalid naming the kind (never the payload, which may hold a number or text).
 */
export function checkSend(kind: string, payload: unknown): Send {
  if (!isSendKind(kind)) throw new StoredPayloadInvalid(`unknown send kind ${JSON.stringify(kind.slice(0, 40))}`);
  const send = narrow(kind, payload);
  if (!send) throw new StoredPayloadInvalid(`a ${kind} payload does not have the fields a ${kind} send needs`);
  return send;
}

function narrow(kind: SendKind, p: unknown): Send | null {
  switch (kind) {
    case 'text': return STRUCTS.text.is(p) ? sendOf(kind, p) : null;
    case 'media': return STRUCTS.media.is(p) ? sendOf(kind, p) : null;
    case 'voice': return STRUCTS.voice.is(p) ? sendOf(kind, p) : null;
    case 'document': return STRUCTS.document.is(p) ? sendOf(kind, p) : null;
    case 'sticker': return STRUCTS.sticker.is(p) ? sendOf(kind, p) : null;
    case 'video': return STRUCTS.video.is(p) ? sendOf(kind, p) : null;
    case 'location': return STRUCTS.location.is(p) ? sendOf(kind, p) : null;
    case 'contact': return STRUCTS.contact.is(p) ? sendOf(kind, p) : null;
    case 'poll': return STRUCTS.poll.is(p) ? sendOf(kind, p) : null;
    case 'forward': return STRUCTS.forward.is(p) ? sendOf(kind, p) : null;
    case 'group_create': return STRUCTS.group_create.is(p) ? sendOf(kind, p) : null;
  }
}
