/**
 * Media types read as RFC 2045 reads them, not as text: the send routes' rules on a type (a sticker's, a voice
 * note's; src/http/routes/send-payloads.ts) ask what the type is, whatever its spelling, and an upload's type,
 * a send's type at acceptance and a fetched answer's type (src/media/upload.ts, src/media/resolve.ts) are taken
 * or refused by the same parser and kept in one spelling (`normaliseMimetype`).
 */

/** `type/subtype` of a media type, lower-case, without its parameters ("IMAGE/GIF; x=1" → "image/gif"). */
export function mimeEssence(value: string): string {
  return (value.split(';')[0] ?? '').trim().toLowerCase();
}

/** RFC 2045 `token` characters: a type, subtype, parameter name or unquoted value. */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const ESSENCE = new RegExp(`\\s*(${TOKEN})/(${TOKEN})\\s*`, 'y');
/**
 * A quoted value's characters (RFC 7230 `qdtext` and `quoted-pair`): no control character but HTAB, nothing
 * beyond Latin-1. A type is served again as a Content-Type header, which cannot carry either (Node refuses to
 * set it): a media stored with such a type could not be downloaded.
 */
const QDTEXT = '[\\t\\x20\\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]';
const QUOTED_PAIR = '\\\\[\\t\\x20-\\x7e\\x80-\\xff]';
const PARAMETER = new RegExp(`;\\s*(${TOKEN})\\s*=\\s*(?:"((?:${QDTEXT}|${QUOTED_PAIR})*)"|(${TOKEN}))\\s*`, 'y');
const IS_TOKEN = new RegExp(`^${TOKEN}$`);

export interface ParsedMimetype {
  /** `type/subtype`, lower-case */
  essence: string;
  /** parameter name (lower-case) → value, unquoted (a quoted-pair's backslash removed), its case kept */
  params: Map<string, string>;
}

/**
 * A media type as RFC 2045 defines it, or null when it is not one (or names a parameter twice, or a quoted value
 * holds a character a header cannot carry). Type, subtype and parameter names are case-insensitive; a value is
 * the same quoted or not (`codecs="opus"` is `codecs=opus`).
 */
export function parseMimetype(value: string): ParsedMimetype | null {
  ESSENCE.lastIndex = 0;
  const head = ESSENCE.exec(value);
  if (!head) return null;
  const params = new Map<string, string>();
  let at = ESSENCE.lastIndex;
  while (at < value.length) {
    PARAMETER.lastIndex = at;
    const p = PARAMETER.exec(value);
    if (!p) return null;
    const name = (p[1] ?? '').toLowerCase();
    if (params.has(name)) return null;
    params.set(name, p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : (p[3] ?? ''));
    at = PARAMETER.lastIndex;
  }
  return { essence: `${head[1] ?? ''}/${head[2] ?? ''}`.toLowerCase(), params };
}

/** Whether two media types are the same type with the same parameters (in any order), read as parseMimetype reads them. */
export function sameMimetype(a: string, b: string): boolean {
  const x = parseMimetype(a);
  const y = parseMimetype(b);
  if (!x || !y || x.essence !== y.essence || x.params.size !== y.params.size) return false;
  for (const [name, v] of x.params) if (y.params.get(name) !== v) return false;
  return true;
}

/** The longest media type taken (blanks around it not counted): a stored media's type is served as a header. */
export const MIMETYPE_MAX_LENGTH = 255;

/**
 * A media type in the one spelling it is stored and served in, or null when parseMimetype refuses it (or it is
 * longer than MIMETYPE_MAX_LENGTH): `type/subtype` lower-case, then each parameter in its order as
 * `;name=value`, the name lower-case, the value as written (its case kept), quoted only where it is not a
 * token (`Audio/OGG; Codecs = "opus"` is `audio/ogg;codecs=opus`).
 */
export function normaliseMimetype(value: string | null | undefined): string | null {
  if (value === null || value === undefined || value.trim().length > MIMETYPE_MAX_LENGTH) return null;
  const parsed = parseMimetype(value);
  if (!parsed) return null;
  let spelled = parsed.essence;
  for (const [name, v] of parsed.params) spelled += `;${name}=${IS_TOKEN.test(v) ? v : `"${v.replace(/["\\]/g, '\\$&')}"`}`;
  return spelled;
}

/**
 * Why a media type cannot be a sticker's, or null: a sticker is made from a still image (SPEC.md: video or GIF to
 * sticker is not supported; a GIF is an image type, but it is the animated case SPEC.md names with video). Judged
 * at acceptance (src/http/routes/send-payloads.ts) and again at dispatch on the type the media is sent as
 * (src/queue/dispatch.ts): a URL's answer can change between the two.
 */
export function stickerTypeRefusal(mimetype: string): 'animated' | 'not_image' | null {
  const essence = mimeEssence(mimetype);
  if (essence.startsWith('video/') || essence === 'image/gif') return 'animated';
  return essence.startsWith('image/') ? null : 'not_image';
}
