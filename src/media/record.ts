/** The media index record and the shapes the API shows of it (SPEC.md "Stored media record", DESIGN.md). */
import { normaliseMimetype } from './mimetype.js';

export type MediaOrigin = 'upload' | 'incoming';

/**
 * A filename as metadata only (it never names a file on disk): no path, no control characters. Every name
 * that comes from outside goes through it, the caller's (an upload, a media URL's answer) and the network's (an
 * incoming attachment: found from the outside, `../../evil.png` came out as the download's filename).
 */
export function cleanFilename(value: string | null | undefined): string | null {
  if (value == null) return null;
  const base = value.split(/[/\\]/).pop() ?? '';
  // 255 characters counted in code points (docs/api.md: lengths count code points): a cut by UTF-16 units split an
  // emoji at the end, and its half was stored as U+FFFD, a character the client never sent
  // control characters are C0, DEL and C1 (U+0080 to U+009F, Unicode's Cc as well: a name of U+0085 alone was sent),
  // and the bidirectional controls (U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069): a right-to-left override
  // shows "invoice\u202Efdp.exe" as "invoiceexe.pdf" where a person reads the name
  const clean = Array.from(base.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '').trim()).slice(0, 255).join('');
  return clean === '' || clean === '.' || clean === '..' ? null : clean;
}

/**
 * The type of an incoming attachment as the sender gave it, in the one spelling the gateway keeps
 * (src/media/mimetype.ts), or `application/octet-stream` when it is not a media type: it is served again as a
 * Content-Type, which cannot carry a line break or a character beyond Latin-1 (found from the outside: a 500 on
 * download), and sent again with its media id.
 */
const incomingType = (mimetype: string | undefined) => (mimetype === undefined ? null : normaliseMimetype(mimetype)) ?? 'application/octet-stream';

/** What an incoming message says of its attachment, its filename cleaned and its type normalised. */
export const incomingInfo = (m: { mimetype: string; filename: string | null; size: number } | null | undefined) =>
  ({ mimetype: incomingType(m?.mimetype), filename: cleanFilename(m?.filename), size: m?.size ?? 0 });

/** An incoming message's attachment as the media store keeps it (its filename cleaned and its type normalised). */
export const incomingMedia = (media: { data: string; mimetype: string; filename?: string | null | undefined }, messageId: string) => ({
  data: Buffer.from(media.data, 'base64'),
  mimetype: incomingType(media.mimetype),
  filename: cleanFilename(media.filename),
  origin: 'incoming' as const,
  messageId,
});

export interface MediaRecord {
  mediaId: string;
  instanceId: string;
  origin: MediaOrigin;
  messageId: string | null;
  mimetype: string;
  filename: string | null;
  size: number;
  sha256: string;
  /** epoch ms */
  createdAt: number;
  /** epoch ms */
  expiresAt: number;
}

export const MEDIA_ID_RE = /^md_[0-9a-f]{24}$/;
export const INSTANCE_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const mediaPath = (mediaId: string) => `/api/v2/media/${mediaId}`;

/** `data` of the upload response (SPEC.md "Stored media record"). */
export function toStoredMedia(r: MediaRecord) {
  return { stored: true as const, mediaId: r.mediaId, url: mediaPath(r.mediaId), expiresAt: new Date(r.expiresAt).toISOString(), size: r.size };
}

/** `data` of GET /api/v2/media/:mediaId without `download` (DESIGN.md). */
export function toMediaMetadata(r: MediaRecord) {
  return {
    mediaId: r.mediaId,
    mimetype: r.mimetype,
    filename: r.filename,
    size: r.size,
    createdAt: new Date(r.createdAt).toISOString(),
    expiresAt: new Date(r.expiresAt).toISOString(),
    url: mediaPath(r.mediaId),
  };
}

export interface MediaRow {
  id: string;
  instance_id: string;
  origin: MediaOrigin;
  message_id: string | null;
  mimetype: string;
  filename: string | null;
  size: number;
  sha256: string;
  created_at: Date;
  expires_at: Date;
}

export const MEDIA_COLUMNS = 'id, instance_id, origin, message_id, mimetype, filename, size, sha256, created_at, expires_at';

export function rowToRecord(row: MediaRow): MediaRecord {
  return {
    mediaId: row.id,
    instanceId: row.instance_id,
    origin: row.origin,
    messageId: row.message_id,
    mimetype: row.mimetype,
    filename: row.filename,
    size: Number(row.size),
    sha256: row.sha256,
    createdAt: row.created_at.getTime(),
    expiresAt: row.expires_at.getTime(),
  };
}

/** What is known of an incoming attachment before (or without) storing it. */
export interface IncomingMediaInfo {
  mimetype: string;
  filename: string | null;
  size: number;
}

/**
 * `data.media` of the `message` event (SPEC.md "Incoming media block"): `stored` only when the operator
 * enabled incoming media storage, `mediaId`/`url`/`expiresAt` only when it was stored.
 */
export function incomingMediaBlock(info: IncomingMediaInfo, storageEnabled: boolean, stored: MediaRecord | null) {
  const block: Record<string, unknown> = { mimetype: info.mimetype, filename: info.filename, size: info.size };
  if (!storageEnabled) return block;
  block.stored = stored !== null;
  if (stored) Object.assign(block, { mediaId: stored.mediaId, url: mediaPath(stored.mediaId), expiresAt: new Date(stored.expiresAt).toISOString() });
  return block;
}

/** `data` of GET /api/v2/messages/:msgId/media without `download` (SPEC.md "Media endpoints"). */
export function messageMediaView(info: IncomingMediaInfo, storageEnabled: boolean, stored: MediaRecord | null) {
  const base = { mimetype: info.mimetype, filename: info.filename, size: info.size };
  if (!storageEnabled) return { ...base, stored: false, reason: 'store_disabled' };
  if (!stored) return { ...base, stored: false };
  return { ...base, stored: true, mediaId: stored.mediaId, url: mediaPath(stored.mediaId), expiresAt: new Date(stored.expiresAt).toISOString() };
}
