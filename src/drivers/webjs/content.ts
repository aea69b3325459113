/**
 * The contract's send input → whatsapp-web.js's `sendMessage(chatId, content, options)` arguments.
 *
 * Everything checked here is checked before the network is touched, so a refusal is provable
 * (DriverError INVALID_INPUT, provablyNotSent = true). Content becomes the library's own classes
 * (MessageMedia, Location, Poll; contact cards are the Contact instances getContactById returned) because
 * the library tells content kinds apart with `instanceof`.
 */
import type WAWebJS from 'whatsapp-web.js';
import type { Location, MessageMedia, Poll, SendContent, SendOptions } from '../contract.js';
import { webjsLibrary, type LibContent } from './library.js';
import { invalidInput } from './outcome.js';

const USER_ID = /^[0-9]{3,32}@(c\.us|lid)$/;
const GROUP_ID = /^[0-9]{3,32}(-[0-9]{3,32})?@g\.us$/;
const MESSAGE_ID = /^(true|false)_[^_\s]+_[^_\s]+(_[^_\s]+)?$/;
const MIMETYPE = /^[a-z0-9.+-]+\/[a-z0-9.+-]+(\s*;.*)?$/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function isUserId(id: string): boolean {
  return USER_ID.test(id);
}

export function isGroupId(id: string): boolean {
  return GROUP_ID.test(id);
}

/** A phone-number id (`…@c.us`), the only kind whose registration the network can be asked about. */
export function isPhoneId(id: string): boolean {
  return USER_ID.test(id) && id.endsWith('@c.us');
}

export function checkChatId(chatId: string): void {
  if (!isUserId(chatId) && !isGroupId(chatId)) throw invalidInput(`invalid chat id: ${chatId}`);
}

export function checkMessageId(msgId: string): void {
  if (!MESSAGE_ID.test(msgId)) throw invalidInput('invalid message id');
}

/** Digits of an international number, as getNumberId and requestPairingCode want them. */
export function checkPhone(phone: string): string {
  const digits = phone.replace(/@c\.us$/, '');
  if (!/^[0-9]{6,20}$/.test(digits)) throw invalidInput('invalid phone number');
  return digits;
}

function checkMedia(media: MessageMedia, options: SendOptions): void {
  if (!MIMETYPE.test(media.mimetype)) throw invalidInput('invalid media mimetype');
  if (media.data.length === 0 || media.data.length % 4 === 1 || !BASE64.test(media.data)) {
    throw invalidInput('media data is not base64');
  }
  if (options.sendMediaAsSticker && !media.mimetype.toLowerCase().startsWith('image/')) {
    throw invalidInput('only images can be sent as stickers');
  }
}

function checkLocation(l: Location): void {
  const lat = l.latitude;
  const lng = l.longitude;
  if (!Number.isFinite(lat) || lat < -90 || lat > 90) throw invalidInput('latitude must be within -90..90');
  if (!Number.isFinite(lng) || lng < -180 || lng > 180) throw invalidInput('longitude must be within -180..180');
}

function checkPoll(p: Poll): void {
  if (p.pollName.trim() === '') throw invalidInput('poll name is empty');
  const n = p.pollOptions.length;
  if (n < 2 || n > 12) throw invalidInput('a poll has 2 to 12 options');
  if (p.pollOptions.some((o) => o.trim() === '')) throw invalidInput('a poll option is empty');
  const secret = p.options.messageSecret;
  if (secret !== undefined && (secret.length !== 32 || secret.some((b) => !Number.isInteger(b) || b < 0 || b > 255))) {
    throw invalidInput('poll messageSecret must be 32 bytes');
  }
}

/** Everything about a send that can be refused without asking the network. */
export function checkSend(chatId: string, content: SendContent, options: SendOptions): void {
  checkChatId(chatId);
  switch (content.kind) {
    case 'text':
      if (content.body.trim() === '') throw invalidInput('message body is empty');
      break;
    case 'media':
      checkMedia(content.media, options);
      break;
    case 'location':
      checkLocation(content.location);
      break;
    case 'poll':
      checkPoll(content.poll);
      break;
    case 'contacts':
      if (content.contactIds.length === 0) throw invalidInput('no contact ids');
      for (const id of content.contactIds) if (!isUserId(id)) throw invalidInput(`invalid contact id: ${id}`);
      break;
  }
  if (options.quotedMessageId !== undefined) checkMessageId(options.quotedMessageId);
  for (const id of options.mentions ?? []) if (!isUserId(id)) throw invalidInput(`invalid mention: ${id}`);
  for (const g of options.groupMentions ?? []) if (!isGroupId(g.id)) throw invalidInput(`invalid group mention: ${g.id}`);
}

/**
 * The library's options for one send. Only the whitelisted keys pass; `waitUntilMsgSent` is always on so a
 * returned id means the network took the message; `sendSeen` is off because marking the chat read is a
 * separate, explicit operation (sendSeen) and one more step that could fail before the send.
 */
export function libSendOptions(options: SendOptions, caption?: string): WAWebJS.MessageSendOptions {
  const out: WAWebJS.MessageSendOptions = { waitUntilMsgSent: true, sendSeen: false };
  if (options.linkPreview !== undefined) out.linkPreview = options.linkPreview;
  if (options.sendAudioAsVoice !== undefined) out.sendAudioAsVoice = options.sendAudioAsVoice;
  if (options.sendVideoAsGif !== undefined) out.sendVideoAsGif = options.sendVideoAsGif;
  if (options.sendMediaAsSticker !== undefined) out.sendMediaAsSticker = options.sendMediaAsSticker;
  if (options.sendMediaAsDocument !== undefined) out.sendMediaAsDocument = options.sendMediaAsDocument;
  if (options.sendMediaAsHd !== undefined) out.sendMediaAsHd = options.sendMediaAsHd;
  if (options.isViewOnce !== undefined) out.isViewOnce = options.isViewOnce;
  if (options.parseVCards !== undefined) out.parseVCards = options.parseVCards;
  if (options.quotedMessageId !== undefined) out.quotedMessageId = options.quotedMessageId;
  if (options.mentions !== undefined) out.mentions = [...options.mentions];
  if (options.groupMentions !== undefined) out.groupMentions = options.groupMentions.map((g) => ({ subject: g.subject, id: g.id }));
  if (options.stickerName !== undefined) out.stickerName = options.stickerName;
  if (options.stickerAuthor !== undefined) out.stickerAuthor = options.stickerAuthor;
  if (options.stickerCategories !== undefined) out.stickerCategories = [...options.stickerCategories];
  if (caption !== undefined && caption !== '') out.caption = caption;
  return out;
}

/** Content other than contact cards (those need a lookup first: see sending.ts). */
export function libContent(content: Exclude<SendContent, { kind: 'contacts' }>): LibContent {
  switch (content.kind) {
    case 'text':
      return content.body;
    case 'media': {
      const m = content.media;
      return new (webjsLibrary().MessageMedia)(m.mimetype, m.data, m.filename ?? null, m.filesize ?? null);
    }
    case 'location': {
      const l = content.location;
      const opts: WAWebJS.LocationSendOptions = {};
      if (l.name !== undefined) opts.name = l.name;
      if (l.address !== undefined) opts.address = l.address;
      if (l.url !== undefined) opts.url = l.url;
      return new (webjsLibrary().Location)(l.latitude, l.longitude, opts);
    }
    case 'poll': {
      const p = content.poll;
      return new (webjsLibrary().Poll)(p.pollName, [...p.pollOptions], {
        allowMultipleAnswers: p.options.allowMultipleAnswers,
        messageSecret: p.options.messageSecret ? [...p.options.messageSecret] : undefined,
      });
    }
  }
}

/** Only image/video captions are separate from the content in the library's API. */
export function captionOf(content: SendContent): string | undefined {
  return content.kind === 'media' ? content.caption : undefined;
}
