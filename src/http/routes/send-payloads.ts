/**
 * From a validated v2 send body to its kind's job payload (send-schemas.ts validates the body first): the
 * media source rules, each kind's content checks (voice mimetypes, stickers, documents) and the options a
 * route sets by itself.
 */
import { DomainError, validationFailed } from '../../errors.js';
import type { SendKind } from '../../queue/payload.js';
import { mimeEssence, sameMimetype, stickerTypeRefusal } from '../../media/mimetype.js';
import { urlRefused } from '../../media/ssrf.js';
import { cleanFilename } from '../../media/record.js';
import { MEDIA_SOURCES } from '../../media/resolve.js';

export const VOICE_MIMETYPES = [
  'audio/ogg', 'audio/ogg;codecs=opus', 'audio/opus', 'audio/mpeg', 'audio/mp3', 'audio/mp4', 'audio/aac',
  'audio/amr', 'audio/wav', 'audio/x-wav', 'audio/webm',
];

/**
 * `mediaBase64` as the job stores it, and so as idempotency fingerprints it (send.ts payloadHash): one spelling
 * for one file's bytes. Line breaks are dropped (as they always were) and the padding is written out, and the
 * last group, the only one that can carry bits the bytes do not have, is encoded again. Found from the outside:
 * the same bytes without `=` padding were 409 IDEMPOTENCY_PAYLOAD_MISMATCH while a line-wrapped spelling
 * replayed. Padded rather than bare: that is what encoders write, so most fingerprints stored before stay valid.
 * A wrong padding, or a length no base64 has, is left as given for the decode at acceptance to refuse
 * (src/media/resolve.ts decodeBase64Media): it is not repaired here.
 */
export function canonicalBase64(value: string): string {
  const compact = value.replace(/[\r\n]/g, '');
  const bare = compact.replace(/={1,2}$/, '');
  if (bare === '' || bare.length % 4 === 1 || (bare !== compact && compact.length % 4 !== 0)) return compact;
  const cut = bare.length - (bare.length % 4 || 4);
  return bare.slice(0, cut) + Buffer.from(bare.slice(cut), 'base64').toString('base64');
}

function mediaSource(b: { mediaUrl?: string | undefined; mediaBase64?: string | undefined; mediaId?: string | undefined; mimetype?: string | undefined; filename?: string | undefined }, mimetypeRequired: boolean) {
  const given = MEDIA_SOURCES.filter((k) => b[k] !== undefined);
  if (given.length !== 1) throw validationFailed(given[1] ?? 'mediaUrl', 'exactly one of mediaUrl, mediaBase64 or mediaId is required');
  if (b.mediaBase64 !== undefined) {
    if (b.mediaBase64.startsWith('data:')) throw validationFailed('mediaBase64', 'mediaBase64 is plain base64 without a data-URL prefix');
    if (!/^[A-Za-z0-9+/\r\n]+={0,2}$/.test(b.mediaBase64)) throw validationFailed('mediaBase64', 'mediaBase64 is not valid base64');
    if (b.mimetype === undefined) throw validationFailed('mimetype', 'mimetype is required with mediaBase64');
  }
  if (mimetypeRequired && b.mimetype === undefined) throw validationFailed('mimetype', 'mimetype is required');
  if (b.mediaUrl !== undefined && !/^https?:\/\//i.test(b.mediaUrl)) {
    // data.reason names the rule, as the later checks' refusals do (src/media/ssrf.ts): another scheme, or not a URL
    const scheme = /^[a-z][a-z0-9+.-]*:/i.test(b.mediaUrl) && !/^https?:/i.test(b.mediaUrl);
    throw urlRefused('mediaUrl', 'must be an http or https URL', { reason: scheme ? 'scheme' : 'invalid_url' });
  }
  const src: Record<string, unknown> = {};
  if (b.mediaUrl !== undefined) src.mediaUrl = b.mediaUrl;
  if (b.mediaBase64 !== undefined) src.mediaBase64 = canonicalBase64(b.mediaBase64);
  if (b.mediaId !== undefined) src.mediaId = b.mediaId;
  if (b.mimetype !== undefined) src.mimetype = b.mimetype.toLowerCase().replace(/\s+/g, '');
  if (b.filename !== undefined) src.filename = b.filename;
  return src;
}

/**
 * A sticker is made from a still image (stickerTypeRefusal): video or GIF is refused as STICKER_VIDEO_UNSUPPORTED,
 * not sent as a sticker. `field` is where the type came from: the request's `mimetype`, or the source whose own
 * type it is.
 */
function checkStickerType(mimetype: string, field: 'mimetype' | 'mediaId' | 'mediaUrl'): void {
  const refusal = stickerTypeRefusal(mimetype);
  if (refusal === null) return;
  const of = field === 'mimetype' ? '' : `${field === 'mediaId' ? 'the stored media' : 'the URL\'s content'} is ${mimeEssence(mimetype)}: `;
  if (refusal === 'animated') throw new DomainError('STICKER_VIDEO_UNSUPPORTED', `${of}video or GIF to sticker is not supported; send an image`, { field });
  throw validationFailed(field, `${of}a sticker needs an image/* mimetype`);
}

/**
 * The kind's rules on the type of a media known only once its source is checked at acceptance (the route calls
 * this after the media validation, send.ts): without `mimetype` in the request, a stored media is sent as its
 * record's type and a URL as its answer's Content-Type (src/media/resolve.ts). Found from the outside: a
 * sticker of an uploaded text file was accepted with the warning "mimetype not given" although the record had
 * its type, and failed at dispatch. Only the sticker's rule reads the type this way: a voice note requires
 * `mimetype`, which is the type it is sent as and was checked with the body. `sourceType` is null when the
 * source says nothing of its type (a URL without Content-Type): then the caller is warned, as SPEC.md says.
 */
export function checkSourceType(kind: SendKind, payload: Record<string, unknown>, sourceType: string | null, warnings: string[]): void {
  if (kind !== 'sticker' || payload.mimetype !== undefined) return;
  if (sourceType === null) {
    warnings.push('mimetype not given: only image/* can be converted to a sticker');
    return;
  }
  checkStickerType(sourceType, payload.mediaId !== undefined ? 'mediaId' : 'mediaUrl');
}

/** A string field of the body, else undefined. */
const stringOf = (b: Record<string, unknown>, k: string) => (typeof b[k] === 'string' ? (b[k] as string) : undefined);

export function buildPayload(kind: Exclude<SendKind, 'group_create' | 'forward'>, b: Record<string, unknown>, warnings: string[]): Record<string, unknown> {
  // the text of every send: before the closure below, which is built for the other kinds only
  if (kind === 'text') return { body: stringOf(b, 'message') };
  const str = (k: string) => stringOf(b, k);
  switch (kind) {
    case 'media':
    case 'video': {
      const src = mediaSource(b, false);
      const caption = str('caption') ?? str('message');
      return { ...src, ...(caption !== undefined ? { caption } : {}), ...(kind === 'video' && b.asGif === true ? { asGif: true } : {}) };
    }
    case 'document': {
      const filename = str('filename');
      if (filename === undefined) throw validationFailed('filename', 'filename is required for documents');
      // what the document is sent with is the cleaned name (src/media/resolve.ts): a name of which cleaning
      // leaves nothing would be sent without one. Found from the outside: "   " was accepted and sent as null.
      if (cleanFilename(filename) === null) {
        throw validationFailed('filename', filename.trim() === '' ? 'filename must not be blank' : 'filename must name a file: nothing is left of it without its path and control characters');
      }
      const src = mediaSource(b, false);
      const caption = str('caption') ?? str('message');
      return { ...src, ...(caption !== undefined ? { caption } : {}) };
    }
    case 'voice': {
      const src = mediaSource(b, true);
      const mt = src.mimetype as string;
      // compared as media types, not as text: found from the outside, audio/ogg; codecs="opus" was refused while
      // codecs=opus was accepted, and RFC 2045 makes a quoted value the same as the token
      if (!VOICE_MIMETYPES.some((accepted) => sameMimetype(accepted, mt))) {
        throw new DomainError('VOICE_MIMETYPE_UNSUPPORTED', `mimetype ${mt} cannot be a voice note; use audio/ogg (Opus)`, { field: 'mimetype', accepted: VOICE_MIMETYPES });
      }
      const essence = mimeEssence(mt);
      if (essence !== 'audio/ogg' && essence !== 'audio/opus') warnings.push('non-ogg audio may not render as PTT on all clients');
      return src;
    }
    case 'sticker': {
      const src = mediaSource(b, false);
      const mt = src.mimetype as string | undefined;
      // without mimetype, the source's own type is checked once it is known (checkSourceType)
      if (mt !== undefined) checkStickerType(mt, 'mimetype');
      return {
        ...src,
        ...(str('stickerName') !== undefined ? { stickerName: str('stickerName') } : {}),
        ...(str('stickerAuthor') !== undefined ? { stickerAuthor: str('stickerAuthor') } : {}),
      };
    }
    case 'location': {
      const loc: Record<string, unknown> = { latitude: b.latitude, longitude: b.longitude };
      for (const k of ['name', 'address', 'url', 'description']) if (str(k) !== undefined) loc[k] = str(k);
      return { location: loc };
    }
    case 'contact':
      return { contactIds: b.contactIds };
    case 'poll':
      return { name: b.name, pollOptions: b.options, allowMultipleAnswers: b.allowMultipleAnswers === true };
  }
}

/** Options set by the route itself (SPEC.md: "set automatically by the matching route"). */
export const ROUTE_OPTIONS: Record<Exclude<SendKind, 'group_create'>, (p: Record<string, unknown>) => Record<string, unknown>> = {
  text: () => ({}),
  media: () => ({}),
  voice: () => ({ sendAudioAsVoice: true }),
  document: () => ({ sendMediaAsDocument: true }),
  sticker: (p) => ({
    sendMediaAsSticker: true,
    ...(p.stickerName !== undefined ? { stickerName: p.stickerName } : {}),
    ...(p.stickerAuthor !== undefined ? { stickerAuthor: p.stickerAuthor } : {}),
  }),
  video: (p) => (p.asGif === true ? { sendVideoAsGif: true } : {}),
  location: () => ({}),
  contact: () => ({}),
  poll: () => ({}),
  forward: () => ({}),
};
