/**
 * What a send puts on the network, decided from the contract's SendContent and options the way the real
 * network types messages: a voice note is `ptt`, a sticker `sticker`, an unknown file `document`, one contact
 * card `vcard` and several `multi_vcard`. Malformed input is refused before anything leaves (provably not sent).
 */
import { createHash } from 'node:crypto';
import { DriverError, type Location, type MessageType, type SendContent, type SendOptions } from '../drivers/contract.js';
import type { MediaRef, PollRecord } from './types.js';

/** The network's own ceilings (SPEC.md: files 64 MB, images 5 MB). */
export const MAX_FILE_BYTES = 64 * 1024 * 1024;
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

export interface Draft {
  type: MessageType;
  body: string;
  /** bytes absent when the media is already on the network (a forward) */
  media: { ref: MediaRef; bytes?: Buffer } | null;
  location: Location | null;
  vCards: string[];
  poll: PollRecord | null;
}

const invalid = (message: string) => new DriverError(message, 'INVALID_INPUT', true);

export function decodeBase64(data: string): Buffer {
  const clean = data.replace(/\s+/g, '');
  if (clean.length === 0 || clean.length % 4 === 1 || !/^[A-Za-z0-9+/]*={0,2}$/.test(clean)) {
    throw invalid('media data is not base64 (without a data-URL prefix)');
  }
  return Buffer.from(clean, 'base64');
}

export const sha256Hex = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

function mediaType(mimetype: string, options: SendOptions): MessageType {
  const major = mimetype.split('/')[0] ?? '';
  if (options.sendMediaAsSticker) {
    if (major !== 'image') throw invalid('only images can be sent as stickers');
    return 'sticker';
  }
  if (options.sendMediaAsDocument) return 'document';
  if (major === 'audio') return options.sendAudioAsVoice ? 'ptt' : 'audio';
  if (major === 'image') return 'image';
  if (major === 'video') return 'video';
  return 'document';
}

export function vCardFor(phone: string, name: string): string {
  return [
    'BEGIN:VCARD',
    'VERSION:3.0',
    `N:;${name};;;`,
    `FN:${name}`,
    `TEL;type=CELL;type=VOICE;waid=${phone}:+${phone}`,
    'END:VCARD',
  ].join('\n');
}

export interface DraftContext {
  /** the vCard of a contact id known to the sender, or null when unknown */
  vCardOf(contactId: string): string | null;
}

export function draftFromContent(content: SendContent, options: SendOptions, ctx: DraftContext): Draft {
  const base = { media: null, location: null, vCards: [], poll: null };
  switch (content.kind) {
    case 'text':
      if (typeof content.body !== 'string' || content.body.length === 0) throw invalid('text body is empty');
      return { ...base, type: 'chat', body: content.body };
    case 'media': {
      const { mimetype, data, filename } = content.media;
      if (!/^[\w.+-]+\/[\w.+-]+/.test(mimetype ?? '')) throw invalid('media mimetype is malformed');
      const bytes = decodeBase64(data);
      if (bytes.length === 0) throw invalid('media is empty');
      const type = mediaType(mimetype, options);
      if (bytes.length > MAX_FILE_BYTES) throw invalid('media exceeds the network limit of 64 MB');
      if (type === 'image' && bytes.length > MAX_IMAGE_BYTES) throw invalid('image exceeds the network limit of 5 MB');
      const ref: MediaRef = { sha256: sha256Hex(bytes), mimetype, filename: filename ?? null, size: bytes.length };
      if (type === 'video' && options.sendVideoAsGif) ref.isGif = true;
      if (options.isViewOnce) ref.isViewOnce = true;
      if (options.sendMediaAsHd) ref.hd = true;
      return { ...base, type, body: content.caption ?? '', media: { ref, bytes } };
    }
    case 'location': {
      const l = content.location;
      if (!(Math.abs(l.latitude) <= 90) || !(Math.abs(l.longitude) <= 180)) throw invalid('location is out of range');
      const location: Location = { latitude: l.latitude, longitude: l.longitude };
      for (const k of ['name', 'address', 'url', 'description'] as const) if (l[k] !== undefined) location[k] = l[k];
      return { ...base, type: 'location', body: '', location };
    }
    case 'contacts': {
      if (content.contactIds.length === 0) throw invalid('no contact ids');
      const cards = content.contactIds.map((id) => {
        const card = ctx.vCardOf(id);
        if (!card) throw invalid(`contact ${id} is not known to the linked account`);
        return card;
      });
      const single = cards.length === 1;
      return { ...base, type: single ? 'vcard' : 'multi_vcard', body: single ? (cards[0] ?? '') : '', vCards: cards };
    }
    case 'poll': {
      const { pollName, pollOptions } = content.poll;
      if (!pollName) throw invalid('poll name is empty');
      if (pollOptions.length < 1 || pollOptions.length > 12) throw invalid('a poll has 1 to 12 options');
      if (new Set(pollOptions).size !== pollOptions.length || pollOptions.some((o) => !o)) {
        throw invalid('poll options must be distinct and non-empty');
      }
      const poll: PollRecord = {
        name: pollName,
        options: pollOptions.map((name, localId) => ({ name, localId })),
        allowMultipleAnswers: content.poll.options.allowMultipleAnswers === true,
      };
      return { ...base, type: 'poll_creation', body: pollName, poll };
    }
    default:
      throw invalid('unknown content kind');
  }
}
